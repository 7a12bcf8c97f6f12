//! Skill trees in a temporary directory.

use dsh_skills::{Root, SkillsConfig};
use std::path::{Path, PathBuf};

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub fn skill(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\nThe {name} steps.\n")
}

/// A project root and a user root under `dir`, nearest first.
pub fn roots(dir: &Path) -> (PathBuf, PathBuf, SkillsConfig) {
    let project = dir.join("project/.dsh/skills");
    let user = dir.join("home/.claude/skills");
    let config = SkillsConfig {
        skill_roots: vec![
            Root::new(&project, "project-dsh"),
            Root::new(&user, "user-claude"),
        ],
        command_roots: vec![
            Root::new(dir.join("project/.dsh/commands"), "project-dsh"),
            Root::new(dir.join("home/.claude/commands"), "user-claude"),
        ],
        ..SkillsConfig::default()
    };
    (project, user, config)
}
