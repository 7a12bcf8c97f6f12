//! Finding skills and commands under their roots, with precedence.
//!
//! Roots are visited in the order given (the nearest first); within a root, entries are
//! visited sorted by name. The first skill (or command) of a name wins; a later one of the
//! same name is hidden with a notice naming both files. The results are sorted by name.

use crate::command::{is_command_name, parse_command_in, Command};
use crate::files::{read_text, sorted_entries, MAX_ROOT_ENTRIES};
use crate::notice::Notice;
use crate::skill::{parse_skill, Skill};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One directory searched for skills or commands, and its label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    pub path: PathBuf,
    /// Shown in notices and `skill` results: `project-dsh`, `user-claude`, `custom`, ...
    pub source: String,
}

impl Root {
    pub fn new(path: impl Into<PathBuf>, source: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            source: source.into(),
        }
    }
}

/// What one scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Winners, sorted by name.
    pub skills: Vec<Skill>,
    pub commands: Vec<Command>,
    pub notices: Vec<Notice>,
}

/// The candidate files of a skill root: `<dir>/SKILL.md` one level deep and flat `*.md`.
/// The `user-dsh` root skips its `.system` child.
fn skill_files(root: &Root, notices: &mut Vec<Notice>) -> Vec<(PathBuf, PathBuf)> {
    let Some((entries, cut)) = sorted_entries(&root.path) else {
        return Vec::new();
    };
    if cut {
        notices.push(Notice::new(
            &root.path,
            None,
            format!("only the first {MAX_ROOT_ENTRIES} entries are read"),
        ));
    }
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        if root.source == "user-dsh" && name == ".system" {
            continue;
        }
        // `metadata` follows symlinks.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let file = path.join("SKILL.md");
            if file.is_file() {
                files.push((file, path));
            }
        } else if meta.is_file() && path.extension().is_some_and(|e| e == "md") {
            files.push((path, root.path.clone()));
        }
    }
    files
}

/// Loads every skill under `roots`; see the module docs for precedence.
pub fn scan_skills(roots: &[Root], notices: &mut Vec<Notice>) -> Vec<Skill> {
    let mut winners: BTreeMap<String, Skill> = BTreeMap::new();
    for root in roots {
        for (file, base) in skill_files(root, notices) {
            let skill = read_text(&file)
                .map_err(|why| Notice::new(&file, None, format!("skipped: {why}")))
                .and_then(|text| parse_skill(&text, &file, &base, &root.source));
            match skill {
                Err(notice) => notices.push(notice),
                Ok(skill) => match winners.get(&skill.name) {
                    Some(winner) => notices.push(Notice::new(
                        &skill.file,
                        Some("name"),
                        format!(
                            "skill `{}` is hidden by the one in {}, which takes precedence",
                            skill.name,
                            winner.file.display()
                        ),
                    )),
                    None => {
                        winners.insert(skill.name.clone(), skill);
                    }
                },
            }
        }
    }
    winners.into_values().collect()
}

/// How deep command subdirectories are followed (`frontend/forms/check.md` is depth 2).
const MAX_COMMAND_DEPTH: usize = 3;

/// Loads every command file under `roots`, nearest first: `<root>/<name>.md` is `/name`, and,
/// Claude Code's convention, `<root>/<dir>/<name>.md` is `/dir:name` (nested directories
/// join with `:` too).
pub fn scan_commands(roots: &[Root], notices: &mut Vec<Notice>) -> Vec<Command> {
    let mut winners: BTreeMap<String, Command> = BTreeMap::new();
    for root in roots {
        scan_command_dir(root, &root.path, &[], &mut winners, notices);
    }
    winners.into_values().collect()
}

fn scan_command_dir(
    root: &Root,
    dir: &Path,
    namespace: &[String],
    winners: &mut BTreeMap<String, Command>,
    notices: &mut Vec<Notice>,
) {
    let Some((entries, cut)) = sorted_entries(dir) else {
        return;
    };
    if cut {
        notices.push(Notice::new(
            dir,
            None,
            format!("only the first {MAX_ROOT_ENTRIES} entries are read"),
        ));
    }
    for entry in entries {
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // Hidden directories (`.git`, ...) are no namespace; other bad names are skipped
            // quietly too, since such folders often hold notes, not commands.
            if namespace.len() < MAX_COMMAND_DEPTH && is_command_name(&name) {
                let mut inner = namespace.to_vec();
                inner.push(name);
                scan_command_dir(root, &path, &inner, winners, notices);
            }
            continue;
        }
        let is_md = path.extension().is_some_and(|e| e == "md");
        if !is_md || !meta.is_file() {
            continue;
        }
        let command = read_text(&path)
            .map_err(|why| Notice::new(&path, None, format!("skipped: {why}")))
            .and_then(|text| parse_command_in(&text, &path, &root.source, namespace));
        match command {
            Err(notice) => notices.push(notice),
            Ok(command) => match winners.get(&command.name) {
                Some(winner) => notices.push(Notice::new(
                    &command.file,
                    None,
                    format!(
                        "command `/{}` is hidden by {}, which takes precedence",
                        command.name,
                        winner.file.display()
                    ),
                )),
                None => {
                    winners.insert(command.name.clone(), command);
                }
            },
        }
    }
}

/// One entry of a [`fingerprint`]: a path, its size and its modification time (ns).
pub type Stamp = (PathBuf, u64, i128);

/// A cheap fingerprint of everything a scan reads: each root's entries with their sizes and
/// modification times (and those of bundle `SKILL.md` files, and of files in command
/// namespaces). Equal fingerprints mean a rescan would find the same thing; changes below a
/// skill bundle (`scripts/`, ...) do not count.
pub fn fingerprint(skill_roots: &[Root], command_roots: &[Root]) -> Vec<Stamp> {
    let stamp = |path: &Path| {
        std::fs::metadata(path).ok().map(|m| {
            let modified = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            (path.to_path_buf(), m.len(), modified)
        })
    };
    let mut out = Vec::new();
    for root in skill_roots {
        let Some((entries, _)) = sorted_entries(&root.path) else {
            continue;
        };
        for entry in entries {
            let path = entry.path();
            out.extend(stamp(&path));
            out.extend(stamp(&path.join("SKILL.md")));
        }
    }
    // Command namespaces are directories: stamp what is inside them as well, as deep as the
    // scan reads, so an edited `frontend/test.md` counts.
    fn walk(
        dir: &Path,
        depth: usize,
        stamp: &dyn Fn(&Path) -> Option<Stamp>,
        out: &mut Vec<Stamp>,
    ) {
        let Some((entries, _)) = sorted_entries(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.path();
            out.extend(stamp(&path));
            if depth < MAX_COMMAND_DEPTH && path.is_dir() {
                walk(&path, depth + 1, stamp, out);
            }
        }
    }
    for root in command_roots {
        walk(&root.path, 0, &stamp, &mut out);
    }
    out
}
