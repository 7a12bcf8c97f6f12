//! What the UI says and does for a `#` / `##` note (the state machine decides when).

use dsh_memory::{note_path, plan_note, write_note, NoteScope};
use std::path::PathBuf;

type Dirs = Option<(PathBuf, PathBuf)>;

fn path(dirs: Dirs, scope: NoteScope) -> Result<PathBuf, String> {
    let (workspace, home) = dirs.ok_or("notes are not available in this UI")?;
    Ok(note_path(scope, &workspace, &home))
}

/// The diff the note would make, and how to confirm it.
pub fn preview(dirs: Dirs, scope: NoteScope, note: &str) -> Vec<String> {
    let plan = match path(dirs, scope).and_then(|p| plan_note(&p, note).map_err(|e| e.to_string()))
    {
        Ok(plan) => plan,
        Err(error) => return vec![format!("note not added: {error}")],
    };
    let mut lines = vec![format!(
        "note for {} (read as instructions by every new session{}):",
        plan.path.display(),
        match scope {
            NoteScope::Workspace => " in this workspace",
            NoteScope::User => "",
        }
    )];
    lines.extend(plan.diff.lines().map(|l| format!("  {l}")));
    lines.push("Enter adds it; edit or clear the line to change or drop it.".into());
    lines
}

/// Appends the note; one line saying what happened.
pub fn write(dirs: Dirs, scope: NoteScope, note: &str) -> Vec<String> {
    let written = path(dirs, scope)
        .and_then(|p| plan_note(&p, note).map_err(|e| e.to_string()))
        .and_then(|plan| write_note(&plan).map(|()| plan).map_err(|e| e.to_string()));
    match written {
        Ok(plan) => vec![format!(
            "added to {}: {} (sessions started from now on read it)",
            plan.path.display(),
            plan.note
        )],
        Err(error) => vec![format!("note not added: {error}")],
    }
}
