//! `subagent/descriptor`: the durable record, in a child's own log, of how it was started.
//!
//! A one-shot child writes it inside its first turn (after `turn/start`, before the first
//! `step/start`); a continuable child carries it as the last seed event, before
//! `session/end-seed`, so a later process can tell from the log alone that the session is a
//! continuable child that `send_message` may resume. The wire shape is the original's
//! (version 2).

use dsh_session::{EventData, EventDeclaration, PluginEvent, SessionEvent};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The only descriptor version this build writes and reads.
pub const SUBAGENT_DESCRIPTOR_VERSION: u32 = 2;

/// The event types this crate declares, for `dsh_session::register_event_types`.
pub static EVENT_TYPES: &[EventDeclaration] = &[EventDeclaration::of::<SubagentDescriptor>()];

/// How a child runs: to one result, or as a conversation the parent can continue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SubagentMode {
    OneShot,
    Continuable,
}

/// Which tools a child may use: `allow` keeps only the named tools, `deny` removes them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny: Option<Vec<String>>,
}

impl ToolFilter {
    /// At least one of `allow` and `deny` must be given.
    pub fn validate(&self) -> Result<(), String> {
        if self.allow.is_none() && self.deny.is_none() {
            return Err("toolFilter needs `allow` or `deny`".into());
        }
        Ok(())
    }
}

/// Payload of `subagent/descriptor`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentDescriptor {
    pub version: u32,
    pub mode: SubagentMode,
    /// `spawn` (a fresh child) or `fork` (seeded with the parent's completed turns).
    pub provider: String,
    /// The parent's short description of the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_filter: Option<ToolFilter>,
}

impl PluginEvent for SubagentDescriptor {
    const TYPE: &'static str = "subagent/descriptor";

    fn validate(&self) -> Result<(), String> {
        if self.version != SUBAGENT_DESCRIPTOR_VERSION {
            return Err(format!(
                "version must be {SUBAGENT_DESCRIPTOR_VERSION}, got {}",
                self.version
            ));
        }
        if self.provider.is_empty() {
            return Err("provider must not be empty".into());
        }
        if self.mode == SubagentMode::Continuable && self.label.is_none() {
            return Err("a continuable descriptor needs a label".into());
        }
        if let Some(filter) = &self.tool_filter {
            filter.validate()?;
        }
        Ok(())
    }
}

/// The first descriptor of `events` (a child's own suffix): `None` when there is none or it
/// has another version; `Some(Err)` when a current-version record does not decode.
pub fn fold_descriptor(events: &[Arc<SessionEvent>]) -> Option<Result<SubagentDescriptor, String>> {
    let event = events.iter().find(|e| e.is::<SubagentDescriptor>())?;
    if let EventData::Other { data, .. } = &event.data {
        if data.get("version").and_then(serde_json::Value::as_u64)
            != Some(u64::from(SUBAGENT_DESCRIPTOR_VERSION))
        {
            return None;
        }
    }
    match event.decode::<SubagentDescriptor>()? {
        Ok(descriptor) => Some(Ok(descriptor)),
        Err(error) => Some(Err(error.to_string())),
    }
}
