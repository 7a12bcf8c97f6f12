//! Skills and custom commands end to end: the real binary against the mock model server,
//! with skill and command files in the workspace and the home directory.

use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::{json, Value};
use std::path::Path;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const DEPLOY: &str = "---\nname: deploy\ndescription: Ship the service to an environment.\n---\n\nRun scripts/ship.sh with the environment name.\n";

/// The messages of one recorded request, as the model received them.
fn messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let content = match &m["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            (m["role"].as_str().unwrap_or_default().to_owned(), content)
        })
        .collect()
}

fn system_prompt(body: &Value) -> String {
    messages(body)
        .into_iter()
        .find(|(role, _)| role == "system")
        .map(|(_, text)| text)
        .unwrap_or_default()
}

#[tokio::test]
async fn the_catalog_is_in_the_system_prompt_and_the_model_loads_a_skill() {
    let script = Script::new()
        .respond(Reply::tool_call("skill", json!({"name": "deploy"})))
        .respond(Reply::text("deployed"));
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let bundle = sandbox.workspace().join(".claude/skills/deploy");
    write(&bundle.join("SKILL.md"), DEPLOY);
    // Hidden from the model: never in the catalog.
    write(
        &sandbox.home.path().join("skills/secret.md"),
        "---\nname: secret\ndescription: Hidden.\ndisable-model-invocation: true\n---\nshh\n",
    );
    let output = sandbox.dsh(&["run", "ship it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "deployed\n");

    let requests = server.requests();
    let system = system_prompt(&requests[0].body);
    assert!(
        system.contains(
            "<available_skills>\n- `deploy`: Ship the service to an environment.\n</available_skills>"
        ),
        "{system}"
    );
    assert!(!system.contains("secret"), "{system}");
    let tool_names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tool_names.contains(&"skill"), "{tool_names:?}");
    let second = messages(&requests[1].body);
    let (role, result) = second.last().unwrap();
    assert_eq!(role, "tool");
    assert_eq!(
        result,
        &format!(
            "<skill_content name=\"deploy\">\n<skill_resources>\nBase directory for this skill: {}\n\
             Relative paths in this skill resolve against that directory; read its files only \
             when the instructions call for them.\n</skill_resources>\n\n<skill_instructions>\n\
             Run scripts/ship.sh with the environment name.\n</skill_instructions>\n</skill_content>",
            bundle.display()
        )
    );

    let events = sandbox.events(&session_of(&output));
    assert_log_ok(&events);
    let catalog: Vec<Value> = events
        .iter()
        .filter(|e| e.type_name() == "skills/catalog")
        .map(|e| serde_json::to_value(&**e).unwrap()["data"].clone())
        .collect();
    assert_eq!(
        catalog,
        [json!({
            "entries": [{"name": "deploy", "description": "Ship the service to an environment."}],
            "added": ["deploy"], "removed": [], "changed": [], "update": false
        })]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_slash_skill_in_a_run_prompt_brings_the_skill_along() {
    let server = serve(Script::new().respond(Reply::text("ok"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let bundle = sandbox.workspace().join(".dsh/skills/deploy");
    write(&bundle.join("SKILL.md"), DEPLOY);
    let output = sandbox.dsh(&["run", "/deploy prod"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let sent = messages(&server.requests()[0].body);
    let users: Vec<&str> = sent
        .iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text.as_str())
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert_eq!(users[0], "/deploy prod");
    assert!(
        users[1].starts_with("<skill_content name=\"deploy\">"),
        "{}",
        users[1]
    );
    assert!(users[1].contains("Run scripts/ship.sh"), "{}", users[1]);
    assert!(
        users[1].contains(&bundle.display().to_string()),
        "{}",
        users[1]
    );
    let events = sandbox.events(&session_of(&output));
    assert_log_ok(&events);
    let source = events
        .iter()
        .filter(|e| e.type_name() == "user/message")
        .map(|e| serde_json::to_value(&**e).unwrap()["data"]["source"].clone())
        .nth(1)
        .unwrap();
    assert_eq!(
        source,
        json!({"kind": "skill-invocation", "name": "deploy", "form": "instructions"})
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_custom_command_with_arguments_becomes_the_prompt() {
    let server = serve(Script::new().respond(Reply::text("fixed"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    write(
        &sandbox.workspace().join(".claude/commands/fix-issue.md"),
        "---\ndescription: Fix a tracked issue\nargument-hint: NUMBER PRIORITY\n---\n\
         Fix issue #$1 with priority $2. Context: $ARGUMENTS\n",
    );
    let output = sandbox.dsh(&["run", "/fix-issue 123 \"very high\""]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let sent = messages(&server.requests()[0].body);
    let users: Vec<&str> = sent
        .iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text.as_str())
        .collect();
    assert_eq!(
        users,
        ["Fix issue #123 with priority very high. Context: 123 \"very high\""]
    );
    // Commands are for people: never offered to the model.
    let system = system_prompt(&server.requests()[0].body);
    assert!(!system.contains("fix-issue"), "{system}");
    let events = sandbox.events(&session_of(&output));
    assert_log_ok(&events);
    let source = events
        .iter()
        .find(|e| e.type_name() == "user/message")
        .map(|e| serde_json::to_value(&**e).unwrap()["data"]["source"].clone())
        .unwrap();
    assert_eq!(
        source,
        json!({"kind": "user", "command": {"name": "fix-issue", "args": "123 \"very high\""}})
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_broken_skill_is_a_notice_and_the_run_goes_on() {
    let server = serve(Script::new().respond(Reply::text("fine"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let broken = sandbox.workspace().join(".agents/skills/broken/SKILL.md");
    write(
        &broken,
        "---\nname: broken\ndescription: x\nuser-invocable: perhaps\n---\nbody\n",
    );
    let output = sandbox.dsh(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "fine\n");
    assert!(
        text(&output.stderr).contains(&format!(
            "dsh: skills: {}: `user-invocable`: skipped: must be a boolean",
            broken.display()
        )),
        "{}",
        text(&output.stderr)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn config_show_lists_the_skill_dirs_with_their_line() {
    let sandbox = Sandbox::new();
    write(
        &sandbox.home.path().join("settings.toml"),
        "[skills]\ndirs = [\"~/team\", \"shared\"]\n",
    );
    let output = sandbox.dsh(&["config", "show"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let home = sandbox.home.path().display().to_string();
    assert!(
        text(&output.stdout).contains(&format!(
            "[skills]\ndirs = [\"{home}/team\", \"{home}/shared\"]  # settings.toml:2\n"
        )),
        "{}",
        text(&output.stdout)
    );
}

#[tokio::test]
async fn a_resumed_session_records_the_catalog_only_when_it_changed() {
    let script = Script::new()
        .respond(Reply::text("first"))
        .respond(Reply::text("second"))
        .respond(Reply::text("third"));
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let skills = sandbox.workspace().join(".dsh/skills");
    write(&skills.join("deploy/SKILL.md"), DEPLOY);
    let first = sandbox.dsh(&["run", "one"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    // Same skills: the log's last record is the baseline, nothing new is recorded.
    let second = sandbox.dsh(&["run", "--continue", "two"]).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    write(
        &skills.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Ship it, carefully.\n---\nSteps.\n",
    );
    write(
        &skills.join("review.md"),
        "---\nname: review\ndescription: Review.\n---\nLook.\n",
    );
    let third = sandbox.dsh(&["run", "--continue", "three"]).await;
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
    let events = sandbox.events(&session_of(&first));
    assert_log_ok(&events);
    let records: Vec<Value> = events
        .iter()
        .filter(|e| e.type_name() == "skills/catalog")
        .map(|e| serde_json::to_value(&**e).unwrap()["data"].clone())
        .collect();
    assert_eq!(
        records,
        [
            json!({"entries": [{"name": "deploy", "description": "Ship the service to an environment."}],
                   "added": ["deploy"], "removed": [], "changed": [], "update": false}),
            json!({"entries": [{"name": "deploy", "description": "Ship it, carefully."},
                               {"name": "review", "description": "Review."}],
                   "added": ["review"], "removed": [], "changed": ["deploy"], "update": true}),
        ]
    );
    server.shutdown().await;
}
