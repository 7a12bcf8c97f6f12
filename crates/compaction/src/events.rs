//! The compaction log events: the original's four log-only types, with their exact wire names
//! and camelCase payloads.
//!
//! | type | written by |
//! |---|---|
//! | `compaction/start` | the region transaction, before the summary is requested |
//! | `compaction/summary` | the region transaction, right before the replacing `user/message` |
//! | `compaction/end` | the region transaction, last (with `error` for a failed attempt) |
//! | `compaction/prune` | the tool-result pruner, right before its `tool/result` replace |
//!
//! The names are already known to every build ([`dsh_session::event_types`] lists the
//! original's plugin types), so logs holding them load without registration; declaring them in
//! [`EVENT_TYPES`] adds the typed decode and the validation hooks on append.

use dsh_protocol::{ContentBlock, TokenUsage};
use dsh_session::{EventDeclaration, PluginEvent};
use serde::{Deserialize, Serialize};

/// The largest integer a JavaScript reader of the log represents exactly (2^53 − 1).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A span of the surface by its first and last node seq (surface positions, not a numeric
/// interval: after a replace a high-seq checkpoint sits at an old position, so `start > end`
/// is legal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SeqRange {
    pub start: u64,
    pub end: u64,
}

/// `compaction/start`: a compaction attempt opened its bracket (the durable lock).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionStart {
    pub compaction_id: String,
    /// The `/compact` command that asked for it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_command_id: Option<String>,
    /// The owning turn; `null` (always written) for a standalone manual compaction.
    pub turn: Option<u64>,
}

/// `compaction/summary`: the summary that replaces the shadowed span, with its shadow price.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummary {
    pub compaction_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_command_id: Option<String>,
    /// The summary's text blocks (what the checkpoint frames).
    pub summary: Vec<ContentBlock>,
    /// Every block the model returned; required and complete when `llm_stream_call` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Vec<ContentBlock>>,
    /// Written as `true` when the summary came from a normal llm stream call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_stream_call: Option<bool>,
    pub shadowed_range: SeqRange,
    /// The shadowed surface nodes in surface order (authoritative over the range).
    pub shadowed_seqs: Vec<u64>,
    /// The estimated price of the shadowed nodes.
    pub shadowed_token_count: u64,
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}

/// `compaction/end`: the bracket closed; `error` marks a failed attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEnd {
    pub compaction_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_command_id: Option<String>,
    /// As on the matching start; `null` for a standalone manual compaction.
    pub turn: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `compaction/prune`: the shadow price of one pruned tool result; the `tool/result` replace
/// follows immediately.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionPrune {
    pub shadowed_range: SeqRange,
    pub shadowed_seqs: Vec<u64>,
    pub shadowed_token_count: u64,
}

impl PluginEvent for CompactionStart {
    const TYPE: &'static str = "compaction/start";

    fn validate(&self) -> Result<(), String> {
        check_id("compactionId", &self.compaction_id)?;
        check_optional_id(self.source_command_id.as_deref())?;
        check_turn(self.turn)
    }
}

impl PluginEvent for CompactionSummary {
    const TYPE: &'static str = "compaction/summary";

    fn validate(&self) -> Result<(), String> {
        check_id("compactionId", &self.compaction_id)?;
        check_optional_id(self.source_command_id.as_deref())?;
        check_shadow(
            self.shadowed_range,
            &self.shadowed_seqs,
            self.shadowed_token_count,
        )?;
        if self.llm_stream_call == Some(true) && self.raw_output.is_none() {
            return Err("llmStreamCall requires rawOutput".into());
        }
        if self.max_tokens.is_some_and(|m| m > MAX_SAFE_INTEGER) {
            return Err("maxTokens must be a safe integer".into());
        }
        Ok(())
    }
}

impl PluginEvent for CompactionEnd {
    const TYPE: &'static str = "compaction/end";

    fn validate(&self) -> Result<(), String> {
        check_id("compactionId", &self.compaction_id)?;
        check_optional_id(self.source_command_id.as_deref())?;
        check_turn(self.turn)?;
        if self.error.as_deref().is_some_and(str::is_empty) {
            return Err("error must not be empty (omit it for a successful end)".into());
        }
        Ok(())
    }
}

impl PluginEvent for CompactionPrune {
    const TYPE: &'static str = "compaction/prune";

    fn validate(&self) -> Result<(), String> {
        check_shadow(
            self.shadowed_range,
            &self.shadowed_seqs,
            self.shadowed_token_count,
        )
    }
}

/// The four compaction types, for `dsh_session::register_event_types`.
pub static EVENT_TYPES: &[EventDeclaration] = &[
    EventDeclaration::of::<CompactionStart>(),
    EventDeclaration::of::<CompactionSummary>(),
    EventDeclaration::of::<CompactionEnd>(),
    EventDeclaration::of::<CompactionPrune>(),
];

fn check_id(name: &str, id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err(format!("{name} must not be empty"));
    }
    Ok(())
}

fn check_optional_id(id: Option<&str>) -> Result<(), String> {
    match id {
        Some(id) => check_id("sourceCommandId", id),
        None => Ok(()),
    }
}

fn check_turn(turn: Option<u64>) -> Result<(), String> {
    if turn.is_some_and(|t| t > MAX_SAFE_INTEGER) {
        return Err("turn must be a safe integer".into());
    }
    Ok(())
}

/// The shadow-price shape shared by summaries and prunes: a non-empty seq list whose first
/// and last seqs are the range, and a safe token count.
fn check_shadow(range: SeqRange, seqs: &[u64], tokens: u64) -> Result<(), String> {
    let (Some(&first), Some(&last)) = (seqs.first(), seqs.last()) else {
        return Err("shadowedSeqs must not be empty".into());
    };
    if range.start != first || range.end != last {
        return Err(format!(
            "shadowedRange {}-{} must be the first and last shadowed seqs ({first}-{last})",
            range.start, range.end
        ));
    }
    if tokens > MAX_SAFE_INTEGER {
        return Err("shadowedTokenCount must be a safe integer".into());
    }
    Ok(())
}
