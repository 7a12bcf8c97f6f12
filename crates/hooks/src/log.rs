//! The `hook/*` records: one adjacent `hook/invoked` + `hook/result` pair per hook run at a
//! point with an open turn (UserPromptSubmit, PreToolUse, PostToolUse, Stop). Log-only.
//! The type names and shapes are the original's.

use crate::config::Dialect;
use dsh_session::{EventDeclaration, PluginEvent};
use serde::{Deserialize, Serialize};

/// The hook event types, for `dsh_session::register_event_types`.
pub static EVENT_TYPES: &[EventDeclaration] = &[
    EventDeclaration::of::<HookInvoked>(),
    EventDeclaration::of::<HookResult>(),
];

/// `hook/invoked`: a hook process is about to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookInvoked {
    pub turn: u64,
    /// The event, e.g. `PreToolUse`.
    pub point: String,
    pub dialect: Dialect,
    /// Omitted when the group matches everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// `<dialect>:<point>:<n>`, `n` a process-wide counter.
    pub handler_id: String,
}

impl PluginEvent for HookInvoked {
    const TYPE: &'static str = "hook/invoked";
}

/// `hook/result`: how that run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookResult {
    pub turn: u64,
    pub point: String,
    pub handler_id: String,
    /// The hook's own decision (`approve`, `allow`, `block`, `deny`, `ask`), `stop` for a
    /// bare `continue: false`, `pass` otherwise.
    pub decision: String,
    /// Omitted when the hook was killed, timed out or never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Trimmed stderr, cut with `…`; omitted when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_summary: Option<String>,
    /// Wall-clock time of the run.
    pub duration_ms: f64,
}

impl PluginEvent for HookResult {
    const TYPE: &'static str = "hook/result";
}

/// `stderr` trimmed and cut at `max` characters with `…` appended; `None` when empty.
pub fn stderr_summary(stderr: &str, max: usize) -> Option<String> {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        return None;
    }
    if trimmed.chars().count() <= max {
        return Some(trimmed.to_owned());
    }
    let mut cut: String = trimmed.chars().take(max).collect();
    cut.push('…');
    Some(cut)
}
