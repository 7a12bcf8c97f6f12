//! The `skill` tool's results and errors, and the catalog section's text.

use super::support::*;
use dsh_skills::render::catalog_entries;
use dsh_skills::{catalog_section, CatalogEntry, SkillTool, Skills};
use serde_json::json;
use std::sync::Arc;

fn tool(config: &dsh_skills::SkillsConfig) -> SkillTool {
    SkillTool::new(Arc::new(Skills::new(config)))
}

#[test]
fn the_tool_returns_the_skill_with_its_directory_and_reads_edits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (project, user, config) = roots(dir.path());
    let bundle = project.join("deploy");
    write(&bundle.join("SKILL.md"), &skill("deploy", "Ship it."));
    write(&user.join("notes.md"), &skill("notes", "Flat skill."));
    let tool = tool(&config);
    let value = serde_json::to_value(tool.call("deploy").unwrap()).unwrap();
    let content = format!(
        "<skill_content name=\"deploy\">\n<skill_resources>\nBase directory for this skill: {}\n\
         Relative paths in this skill resolve against that directory; read its files only when \
         the instructions call for them.\n</skill_resources>\n\n<skill_instructions>\nThe deploy \
         steps.\n</skill_instructions>\n</skill_content>",
        bundle.display()
    );
    assert_eq!(
        value,
        json!({
            "name": "deploy",
            "provider": "filesystem",
            "resourceBase": {"kind": "directory", "path": bundle.display().to_string()},
            "content": content,
        })
    );
    // A flat file's base is its root.
    let flat = tool.call("notes").unwrap();
    assert!(flat.content.contains(&format!(
        "Base directory for this skill: {}\n",
        user.display()
    )));
    // The body is re-read on every call.
    write(
        &bundle.join("SKILL.md"),
        "---\nname: deploy\ndescription: Ship it.\n---\nNew steps.\n",
    );
    assert!(tool
        .call("deploy")
        .unwrap()
        .content
        .contains("\nNew steps.\n"));
}

#[test]
fn the_tool_errors_say_why_in_the_originals_words() {
    let dir = tempfile::tempdir().unwrap();
    let (project, _, config) = roots(dir.path());
    write(
        &project.join("manual.md"),
        "---\nname: manual\ndescription: Only by hand.\ndisable-model-invocation: true\n---\nx\n",
    );
    write(&project.join("later.md"), &skill("later", "Turns hidden."));
    let tool = tool(&config);
    let error = |name: &str| tool.call(name).unwrap_err();
    assert_eq!(error("Bad Name").message, "invalid skill name \"Bad Name\"");
    assert_eq!(error("Bad Name").code(), Some("INVALID_SKILL_NAME"));
    assert_eq!(
        error("nope").message,
        "skill \"nope\" is unknown or no longer available"
    );
    assert_eq!(
        error("manual").message,
        "skill \"manual\" is not available for model invocation"
    );
    // Hidden between listing and loading: the check is repeated on the loaded copy.
    write(
        &project.join("later.md"),
        "---\nname: later\ndescription: Turns hidden.\ndisable-model-invocation: on\n---\nx\n",
    );
    assert_eq!(
        error("later").message,
        "skill \"later\" is not available for model invocation"
    );
}

#[test]
fn the_catalog_lists_model_invocable_skills_escaped_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (project, _, config) = roots(dir.path());
    write(
        &project.join("a.md"),
        "---\nname: alpha\ndescription: >\n  Use <b> & \"quotes\"\n  across   lines.\n---\n",
    );
    write(
        &project.join("b.md"),
        &format!("---\nname: beta\ndescription: {}\n---\n", "x".repeat(600)),
    );
    write(
        &project.join("c.md"),
        "---\nname: gamma\ndescription: Hidden.\ndisable-model-invocation: true\n---\n",
    );
    let skills = Skills::new(&config);
    let entries = catalog_entries(&skills.current().skills, 500);
    assert_eq!(
        entries,
        [
            CatalogEntry {
                name: "alpha".into(),
                description: "Use <b> & \"quotes\" across lines.".into()
            },
            CatalogEntry {
                name: "beta".into(),
                description: format!("{}...", "x".repeat(497))
            },
        ]
    );
    assert_eq!(
        skills.catalog_text(),
        format!(
            "# Skills\n\nSkills are task instructions kept in files. When a task matches one of \
             the skills below, call the `skill` tool with its name before you act, then follow \
             what it returns. A skill the user invoked directly arrives in the conversation as a \
             `<skill_content>` block: follow it without calling the tool again.\n\n\
             <available_skills>\n- `alpha`: Use &lt;b&gt; &amp; \"quotes\" across lines.\n\
             - `beta`: {}...\n</available_skills>",
            "x".repeat(497)
        )
    );
    assert_eq!(catalog_section(&[]), "");
}
