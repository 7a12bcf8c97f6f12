//! The surface: the ordered seqs of message-producing events, the sole source of model
//! history.
//!
//! `append` pushes an event's seq; `replace {start, end}` swaps the nodes from `start` to
//! `end` (inclusive, by surface position) for the new seq and bumps the replace generation,
//! which tells message caches to rebuild. Every transition is planned (validated) against
//! the current fold before anything changes, so a refused event leaves the fold untouched.

use crate::error::{SessionError, SurfaceViolation};
use crate::event::{EventData, SessionEvent, SurfaceOp};
use crate::validate::json_eq;
use dsh_protocol::ContentBlock;
use std::collections::HashSet;
use std::sync::Arc;

/// A snapshot of the surface.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Surface {
    /// Current surface seqs, in model-visible order.
    pub nodes: Vec<u64>,
    /// How many replaces have been folded.
    pub replace_generation: u64,
}

/// One validated transition, not yet applied.
#[derive(Debug)]
pub(crate) enum SurfacePlan {
    /// The event does not touch the surface.
    None,
    Append(u64),
    Replace {
        seq: u64,
        start_idx: usize,
        end_idx: usize,
    },
}

/// The incremental fold.
#[derive(Clone, Debug, Default)]
pub(crate) struct SurfaceFold {
    pub(crate) surface: Surface,
}

impl SurfaceFold {
    /// Validates the candidate event at `seq` (the next seq of `log`).
    pub(crate) fn plan(
        &self,
        seq: u64,
        data: &EventData,
        surface_op: Option<&SurfaceOp>,
        sources: Option<&[u64]>,
        log: &[Arc<SessionEvent>],
    ) -> Result<SurfacePlan, SurfaceViolation> {
        if !data.is_surface() {
            if surface_op.is_some() {
                return Err(SurfaceViolation::UnexpectedSurfaceOp);
            }
            if sources.is_some() {
                return Err(SurfaceViolation::UnexpectedSourceSeqs);
            }
            return Ok(SurfacePlan::None);
        }
        let op = surface_op.ok_or(SurfaceViolation::MissingSurfaceOp)?;
        check_sources(seq, data, sources)?;
        let (start, end) = match *op {
            SurfaceOp::Append => return Ok(SurfacePlan::Append(seq)),
            SurfaceOp::Replace { start, end } => (start, end),
        };
        let nodes = &self.surface.nodes;
        let start_idx =
            position(nodes, start).ok_or(SurfaceViolation::ReplaceStartNotFound(start))?;
        let end_idx = position(nodes, end).ok_or(SurfaceViolation::ReplaceEndNotFound(end))?;
        if start_idx > end_idx {
            return Err(SurfaceViolation::ReplaceRangeInverted { start, end });
        }
        let shadowed = &nodes[start_idx..=end_idx];
        let cited: HashSet<u64> = sources.unwrap_or(&[]).iter().copied().collect();
        let missing: Vec<u64> = shadowed
            .iter()
            .copied()
            .filter(|s| !cited.contains(s))
            .collect();
        if !missing.is_empty() {
            return Err(SurfaceViolation::ShadowedNotCited(missing));
        }
        if let EventData::ToolResult(_) = data {
            check_tool_result_rewrite(data, shadowed, log)?;
        }
        Ok(SurfacePlan::Replace {
            seq,
            start_idx,
            end_idx,
        })
    }

    pub(crate) fn apply(&mut self, plan: SurfacePlan) {
        match plan {
            SurfacePlan::None => {}
            SurfacePlan::Append(seq) => self.surface.nodes.push(seq),
            SurfacePlan::Replace {
                seq,
                start_idx,
                end_idx,
            } => {
                self.surface
                    .nodes
                    .splice(start_idx..=end_idx, std::iter::once(seq));
                self.surface.replace_generation += 1;
            }
        }
    }
}

/// Folds a whole log (events in seq order, seq == index), validating every transition.
pub fn fold_surface(events: &[Arc<SessionEvent>]) -> Result<Surface, SessionError> {
    let mut fold = SurfaceFold::default();
    for (index, event) in events.iter().enumerate() {
        let plan = fold
            .plan(
                event.seq,
                &event.data,
                event.surface_op.as_ref(),
                event.source_event_seqs.as_deref(),
                &events[..index],
            )
            .map_err(|violation| SessionError::InvalidSurface {
                seq: event.seq,
                type_name: event.type_name().to_owned(),
                violation,
            })?;
        fold.apply(plan);
    }
    Ok(fold.surface)
}

/// Nodes are usually ascending (appends); a replace puts a later seq in front of older
/// ones, so fall back to a scan when the binary search misses.
fn position(nodes: &[u64], seq: u64) -> Option<usize> {
    match nodes.binary_search(&seq) {
        Ok(i) => Some(i),
        Err(_) => nodes.iter().position(|&n| n == seq),
    }
}

fn check_sources(
    seq: u64,
    data: &EventData,
    sources: Option<&[u64]>,
) -> Result<(), SurfaceViolation> {
    let Some(sources) = sources else {
        return Ok(());
    };
    if sources.is_empty() && !matches!(data, EventData::AssistantMessage(_)) {
        return Err(SurfaceViolation::EmptySourceSeqs);
    }
    if let Some(&bad) = sources.iter().find(|&&s| s >= seq) {
        return Err(SurfaceViolation::ForwardSourceSeq {
            source_seq: bad,
            seq,
        });
    }
    // Chunk citations are ascending; only an unordered list needs the set.
    if sources.windows(2).all(|w| w[0] < w[1]) {
        return Ok(());
    }
    let mut seen = HashSet::with_capacity(sources.len());
    for &s in sources {
        if !seen.insert(s) {
            return Err(SurfaceViolation::DuplicateSourceSeq(s));
        }
    }
    Ok(())
}

/// A tool/result replace (the pruner) may rewrite only the inner content of exactly one
/// current tool/result; everything else, message id included, must stay as it was.
fn check_tool_result_rewrite(
    data: &EventData,
    shadowed: &[u64],
    log: &[Arc<SessionEvent>],
) -> Result<(), SurfaceViolation> {
    if shadowed.len() != 1 {
        return Err(SurfaceViolation::ToolResultReplaceCount(shadowed.len()));
    }
    let original = usize::try_from(shadowed[0])
        .ok()
        .and_then(|i| log.get(i))
        .ok_or(SurfaceViolation::ToolResultReplaceTarget)?;
    if !matches!(original.data, EventData::ToolResult(_)) {
        return Err(SurfaceViolation::ToolResultReplaceTarget);
    }
    if json_eq(
        &without_inner_content(&original.data),
        &without_inner_content(data),
    ) {
        Ok(())
    } else {
        Err(SurfaceViolation::ToolResultReplaceChangedMore)
    }
}

fn without_inner_content(data: &EventData) -> serde_json::Value {
    let EventData::ToolResult(result) = data else {
        return data.to_value();
    };
    let mut result = result.clone();
    let mut message = (*result.message).clone();
    for block in &mut message.content {
        if let ContentBlock::ToolResult { content, .. } = block {
            content.clear();
        }
    }
    result.message = Arc::new(message);
    EventData::ToolResult(result).to_value()
}
