//! Tool-pairing balance: where the surface may be cut without separating a tool call from
//! its result.
//!
//! Walking the surface in order, an `assistant/message` opens one pending call per tool-call
//! block and a `tool/result` closes one. The cut *before* a position is balanced when no call
//! is pending there. A compaction may only shadow a span whose both ends are balanced cuts,
//! so the model never sees a tool result without its call, or a call without its result.

use crate::error::CompactionError;
use dsh_protocol::ContentBlock;
use dsh_session::{EventData, Session, SessionEvent};
use std::sync::Arc;

/// For each cut of the surface `nodes` (the cut before node `i`, for `i` in `0..=len`),
/// whether it is balanced. `result[0]` (before everything) is always true; `result[len]`
/// is false while a step's tool calls still wait for results.
///
/// Errors: a node missing from the log, or a `tool/result` with no pending call (a corrupt
/// surface).
pub fn balanced_cuts(session: &Session, nodes: &[u64]) -> Result<Vec<bool>, CompactionError> {
    balanced_cuts_in(&session.events(), nodes)
}

/// [`balanced_cuts`] over a log snapshot (seq == index).
pub fn balanced_cuts_in(
    events: &[Arc<SessionEvent>],
    nodes: &[u64],
) -> Result<Vec<bool>, CompactionError> {
    let mut cuts = Vec::with_capacity(nodes.len() + 1);
    let mut pending: u64 = 0;
    cuts.push(true);
    for &seq in nodes {
        let event = usize::try_from(seq)
            .ok()
            .and_then(|i| events.get(i))
            .ok_or(CompactionError::MissingEvent { seq })?;
        match &event.data {
            EventData::AssistantMessage(a) => {
                pending += a
                    .message
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::ToolCall { .. }))
                    .count() as u64;
            }
            EventData::ToolResult(_) => {
                pending = pending
                    .checked_sub(1)
                    .ok_or(CompactionError::UnpairedToolResult { seq })?;
            }
            _ => {}
        }
        cuts.push(pending == 0);
    }
    Ok(cuts)
}

/// Whether the cut just before surface node `seq` is balanced.
pub fn balanced_before(session: &Session, seq: u64) -> Result<bool, CompactionError> {
    let (cuts, index) = cuts_around(session, seq)?;
    Ok(cuts[index])
}

/// Whether the cut just after surface node `seq` is balanced (false while the step that
/// produced it still waits for tool results).
pub fn balanced_after(session: &Session, seq: u64) -> Result<bool, CompactionError> {
    let (cuts, index) = cuts_around(session, seq)?;
    Ok(cuts[index + 1])
}

fn cuts_around(session: &Session, seq: u64) -> Result<(Vec<bool>, usize), CompactionError> {
    let nodes = session.surface().nodes;
    let index = nodes
        .iter()
        .position(|&n| n == seq)
        .ok_or(CompactionError::NotOnSurface { seq })?;
    Ok((balanced_cuts(session, &nodes)?, index))
}
