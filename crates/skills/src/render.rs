//! The texts the model reads: the catalog section and a skill's content.

use crate::skill::Skill;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The default cut of a catalog description, in characters.
pub const DEFAULT_DESCRIPTION_MAX: usize = 500;

/// One catalog line: a model-invocable skill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    pub name: String,
    pub description: String,
}

/// The catalog entries of `skills`: model-invocable ones only, descriptions with whitespace
/// runs collapsed and cut to `max` characters (`max - 3` plus `...`).
pub fn catalog_entries<'a>(
    skills: impl IntoIterator<Item = &'a Skill>,
    max: usize,
) -> Vec<CatalogEntry> {
    skills
        .into_iter()
        .filter(|s| s.model_invocable)
        .map(|s| CatalogEntry {
            name: s.name.clone(),
            description: shorten(&s.description, max),
        })
        .collect()
}

fn shorten(description: &str, max: usize) -> String {
    let collapsed = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(max.saturating_sub(3)).collect();
    cut.push_str("...");
    cut
}

fn escape_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn escape_attr(text: &str) -> String {
    escape_text(text).replace('"', "&quot;")
}

/// The system-prompt section listing `entries`; empty (no section) when there are none.
pub fn catalog_section(entries: &[CatalogEntry]) -> String {
    if entries.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "# Skills\n\n\
         Skills are task instructions kept in files. When a task matches one of the skills \
         below, call the `skill` tool with its name before you act, then follow what it \
         returns. A skill the user invoked directly arrives in the conversation as a \
         `<skill_content>` block: follow it without calling the tool again.\n\n\
         <available_skills>\n",
    );
    for entry in entries {
        text.push_str(&format!(
            "- `{}`: {}\n",
            escape_text(&entry.name),
            escape_text(&entry.description)
        ));
    }
    text.push_str("</available_skills>");
    text
}

/// A skill's instructions as the model receives them, from the tool or the `/name` gesture.
pub fn skill_content(skill: &Skill) -> String {
    render_content(&skill.name, &skill.base_dir, &skill.body)
}

fn render_content(name: &str, base: &Path, body: &str) -> String {
    format!(
        "<skill_content name=\"{}\">\n<skill_resources>\n\
         Base directory for this skill: {}\n\
         Relative paths in this skill resolve against that directory; read its files only \
         when the instructions call for them.\n\
         </skill_resources>\n\n<skill_instructions>\n{}\n</skill_instructions>\n</skill_content>",
        escape_attr(name),
        base.display(),
        body
    )
}
