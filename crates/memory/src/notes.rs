//! Notes that last: one line appended to an AGENTS.md, which the next session reads as its
//! ordinary instructions.
//!
//! A person writes one with a `#` line in the interactive UI (`##` for the user-wide
//! `$DSH_HOME/AGENTS.md`), after seeing the diff; the model proposes one with the `remember`
//! tool, which a person approves (see [`crate::remember`]). Appends never rewrite the file:
//! the note goes at the end as a `- ` bullet, after a newline if the file lacks one.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::MemoryError;
use crate::text::one_line;

/// The instructions file a note goes to.
pub const NOTES_FILE: &str = "AGENTS.md";
/// Characters of one note.
pub const MAX_NOTE_CHARS: usize = 2_000;
/// Largest AGENTS.md a note is appended to (the instructions reader's own cap is larger;
/// this only bounds the read that checks the file's last byte).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Lines of the file's end a preview shows above the new line.
const CONTEXT_LINES: usize = 3;

/// Which AGENTS.md a note goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteScope {
    /// The workspace's (`#`).
    Workspace,
    /// The user's, under `$DSH_HOME` (`##`).
    User,
}

/// A `#` or `##` input line as a note: its scope and its text, or `None` for other input
/// (`#` alone, `###…`, a line not starting with `#`).
pub fn parse_note_line(line: &str) -> Option<(NoteScope, String)> {
    let (scope, rest) = if let Some(rest) = line.strip_prefix("##") {
        (NoteScope::User, rest)
    } else {
        (NoteScope::Workspace, line.strip_prefix('#')?)
    };
    if rest.starts_with('#') {
        return None;
    }
    let text = one_line(rest);
    (!text.is_empty()).then_some((scope, text))
}

/// Where a note of `scope` goes.
pub fn note_path(scope: NoteScope, workspace: &Path, dsh_home: &Path) -> PathBuf {
    match scope {
        NoteScope::Workspace => workspace.join(NOTES_FILE),
        NoteScope::User => dsh_home.join(NOTES_FILE),
    }
}

/// A note ready to be written: the file, the exact bytes appended, and a diff to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotePlan {
    pub path: PathBuf,
    pub note: String,
    pub appended: String,
    /// A unified-style preview: the file's last lines, then `+ ` the new one.
    pub diff: String,
    pub creates_file: bool,
}

fn check_note(note: &str) -> Result<String, MemoryError> {
    let note = one_line(note);
    if note.is_empty() {
        return Err(MemoryError::InvalidInput("the note is empty".into()));
    }
    if note.chars().count() > MAX_NOTE_CHARS {
        return Err(MemoryError::InvalidInput(format!(
            "a note is one line of at most {MAX_NOTE_CHARS} characters"
        )));
    }
    Ok(note)
}

/// Plans appending `note` to `path`, reading (boundedly) what is there.
pub fn plan_note(path: &Path, note: &str) -> Result<NotePlan, MemoryError> {
    let note = check_note(note)?;
    let existing = match dsh_store::read_regular_text(path, MAX_FILE_BYTES) {
        Ok(text) => Some(text),
        Err(err) if err.is_not_found() => None,
        Err(err) => return Err(MemoryError::Note(format!("{}: {err}", path.display()))),
    };
    let bullet = format!("- {note}\n");
    let (appended, context) = match &existing {
        None => (bullet.clone(), Vec::new()),
        Some(text) => {
            let lead = if text.is_empty() || text.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(CONTEXT_LINES)..].to_vec();
            (format!("{lead}{bullet}"), tail)
        }
    };
    let mut diff = format!(
        "{} {}\n",
        if existing.is_some() {
            "---"
        } else {
            "+++ (new file)"
        },
        path.display()
    );
    for line in context {
        diff.push_str(&format!("  {line}\n"));
    }
    diff.push_str(&format!("+ - {note}\n"));
    Ok(NotePlan {
        path: path.to_path_buf(),
        note,
        appended,
        diff,
        creates_file: existing.is_none(),
    })
}

/// Appends a planned note (creating the file and its directory when needed).
pub fn write_note(plan: &NotePlan) -> Result<(), MemoryError> {
    let fail = |e: std::io::Error| MemoryError::Note(format!("{}: {e}", plan.path.display()));
    if let Some(dir) = plan.path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&plan.path)
        .map_err(fail)?;
    file.write_all(plan.appended.as_bytes()).map_err(fail)?;
    file.sync_data().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_lines() {
        assert_eq!(
            parse_note_line("# use cargo nextest "),
            Some((NoteScope::Workspace, "use cargo nextest".into()))
        );
        assert_eq!(
            parse_note_line("##prefer rg"),
            Some((NoteScope::User, "prefer rg".into()))
        );
        assert_eq!(parse_note_line("#"), None);
        assert_eq!(parse_note_line("### heading"), None);
        assert_eq!(parse_note_line("no # note"), None);
    }

    #[test]
    fn appends_after_a_missing_newline_and_shows_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(NOTES_FILE);
        std::fs::write(&path, "# Rules\n- a").unwrap();
        let plan = plan_note(&path, "b  c").unwrap();
        assert_eq!(plan.appended, "\n- b c\n");
        assert!(
            plan.diff.ends_with("  # Rules\n  - a\n+ - b c\n"),
            "{}",
            plan.diff
        );
        write_note(&plan).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# Rules\n- a\n- b c\n"
        );
    }

    #[test]
    fn a_missing_file_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home").join(NOTES_FILE);
        let plan = plan_note(&path, "x").unwrap();
        assert!(plan.creates_file);
        write_note(&plan).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "- x\n");
    }
}
