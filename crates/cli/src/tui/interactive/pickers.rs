//! The pickers' rows, built from what the driver reports: sessions (title, age, turns,
//! outcome), the configured models with their context windows, the permission presets.

use super::driver::{CurrentModel, SessionListing};
use crate::sanitize::sanitize;
use crate::tui::picker::{Picker, PickerKind, PickerRow};
use crate::tui::text::{compact_count, one_line, truncate};
use dsh_protocol::SessionId;
use dsh_tools_builtin::PermissionPreset;

/// `/resume` and `/sessions`: newest first, the session on screen marked.
pub fn session_picker(sessions: &[SessionListing], current: Option<&SessionId>) -> Picker {
    let rows = sessions
        .iter()
        .map(|session| {
            let turns = if session.turns == 1 {
                "1 turn".to_owned()
            } else {
                format!("{} turns", session.turns)
            };
            let title = truncate(&one_line(&sanitize(&session.title)), 32);
            // The id's start tells sessions apart; the whole id is wider than most panes.
            let id = session.id.as_str();
            let short: String = id
                .strip_prefix("session-")
                .unwrap_or(id)
                .chars()
                .take(8)
                .collect();
            PickerRow {
                text: format!(
                    "{title:<32}  {:>8}  {turns:>9}  {:<11}  {}",
                    session.updated,
                    session.outcome.as_deref().unwrap_or("-"),
                    short
                ),
                value: session.id.as_str().to_owned(),
                current: Some(&session.id) == current,
            }
        })
        .collect();
    let title = if sessions.is_empty() {
        "no sessions in this workspace yet"
    } else {
        "resume a session"
    };
    Picker::new(PickerKind::Session, title, rows).with_header(format!(
        "{:<32}  {:>8}  {:>9}  {:<11}  id",
        "title", "updated", "turns", "last turn"
    ))
}

/// `/model`: the provider's catalogue with context windows, the model in use marked (and
/// listed even when the catalogue lacks it).
pub fn model_picker(model: &CurrentModel) -> Picker {
    let mut rows: Vec<PickerRow> = model
        .catalog
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let window = model.windows.get(i).copied().flatten();
            model_row(id, window, *id == model.model)
        })
        .collect();
    if !model.catalog.contains(&model.model) {
        rows.insert(0, model_row(&model.model, None, true));
    }
    Picker::new(
        PickerKind::Model,
        format!(
            "choose a model ({}; applies from the next step)",
            model.provider
        ),
        rows,
    )
    .with_header(format!("{:<32}  context window", "model"))
}

fn model_row(id: &str, window: Option<u64>, current: bool) -> PickerRow {
    let window = window.map_or_else(|| "unknown".to_owned(), compact_count);
    PickerRow {
        text: format!("{:<32}  {window}", sanitize(id)),
        value: id.to_owned(),
        current,
    }
}

/// `/permission`: the three presets, the one in force marked.
pub fn permission_picker(current: PermissionPreset) -> Picker {
    let rows = [
        (
            PermissionPreset::ReadOnly,
            "read-only sandbox, ask before risky calls",
        ),
        (
            PermissionPreset::WorkspaceWrite,
            "writes confined to the workspace, ask before risky calls",
        ),
        (
            PermissionPreset::DangerFullAccess,
            "no confinement, never ask",
        ),
    ]
    .into_iter()
    .map(|(preset, what)| PickerRow {
        text: format!("{:<19}{what}", preset.as_str()),
        value: preset.as_str().to_owned(),
        current: preset == current,
    })
    .collect();
    Picker::new(PickerKind::Permission, "choose a permission preset", rows)
}
