//! The tool-result pruner: shortens oversized tool results on the surface without a model.
//!
//! A result whose text holds more than `threshold_chars` code points keeps its first
//! `head_chars` and last `tail_chars` code points with [`PRUNE_MARKER`] between them. Each
//! pruned result is logged as a `compaction/prune` event (its shadow price) immediately
//! followed by a `tool/result` replace of that one node that changes only the result's
//! content. The original result stays in the log; a second pass finds nothing to prune.

use crate::error::CompactionError;
use crate::estimate::estimate_message;
use crate::events::{CompactionPrune, SeqRange};
use dsh_protocol::{CallId, ContentBlock, Message};
use dsh_session::{AppendOptions, EventData, Session, ToolResult};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Put where the middle of a pruned result was (39 code points).
pub const PRUNE_MARKER: &str = "\n\n[... tool result middle pruned ...]\n\n";

/// The pruner's limits, in Unicode code points of the result's text blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PrunerConfig {
    /// Results longer than this are pruned; must be positive.
    pub threshold_chars: usize,
    /// Code points kept from the start.
    pub head_chars: usize,
    /// Code points kept from the end.
    pub tail_chars: usize,
}

impl Default for PrunerConfig {
    /// The original's shipped values: 8,192 / 4,096 / 1,024 (a pruned result has 5,159).
    fn default() -> Self {
        Self {
            threshold_chars: 8192,
            head_chars: 4096,
            tail_chars: 1024,
        }
    }
}

impl PrunerConfig {
    /// The threshold is positive, and a pruned result (head + marker + tail) fits under it.
    pub fn validate(&self) -> Result<(), CompactionError> {
        let fail = |reason: String| Err(CompactionError::PrunerConfig { reason });
        if self.threshold_chars == 0 {
            return fail("thresholdChars must be positive".into());
        }
        let marker = PRUNE_MARKER.chars().count();
        let emitted = self
            .head_chars
            .checked_add(marker)
            .and_then(|n| n.checked_add(self.tail_chars));
        match emitted {
            Some(n) if n <= self.threshold_chars => Ok(()),
            _ => fail(format!(
                "headChars + {marker} (the marker) + tailChars must not exceed thresholdChars \
                 ({} + {marker} + {} > {})",
                self.head_chars, self.tail_chars, self.threshold_chars
            )),
        }
    }
}

/// The number of code points in the text blocks of `blocks` (other blocks count 0).
pub fn measure_content(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.chars().count(),
            _ => 0,
        })
        .sum()
}

/// The pruned form of a tool result's content, or `None` when it is not over the threshold.
///
/// The code points `[head, total - tail)` of the text blocks (counted across blocks) are
/// removed; the marker goes once into the first text block that overlaps the removed span; a
/// text block the cut empties is dropped; non-text blocks (images) keep their position.
/// Slicing is per code point, so a character outside the BMP is never split.
pub fn prune_content(
    blocks: &[ContentBlock],
    config: &PrunerConfig,
) -> Result<Option<Vec<ContentBlock>>, CompactionError> {
    config.validate()?;
    let total = measure_content(blocks);
    if total <= config.threshold_chars {
        return Ok(None);
    }
    let (cut_start, cut_end) = (config.head_chars, total - config.tail_chars);
    let mut out = Vec::with_capacity(blocks.len());
    let mut offset = 0;
    let mut marked = false;
    for block in blocks {
        let ContentBlock::Text { text } = block else {
            out.push(block.clone());
            continue;
        };
        let len = text.chars().count();
        let (from, to) = (cut_start.max(offset), cut_end.min(offset + len));
        if from < to {
            let mut kept =
                String::with_capacity(text.len().min(config.threshold_chars.saturating_mul(4)));
            kept.push_str(&text[..byte_offset(text, from - offset)]);
            if !marked {
                kept.push_str(PRUNE_MARKER);
                marked = true;
            }
            kept.push_str(&text[byte_offset(text, to - offset)..]);
            if !kept.is_empty() {
                out.push(ContentBlock::Text { text: kept });
            }
        } else {
            out.push(block.clone());
        }
        offset += len;
    }
    let after = measure_content(&out);
    if after > config.threshold_chars || after >= total {
        return Err(CompactionError::Prune {
            reason: format!(
                "pruned content has {after} code points (input {total}, threshold {})",
                config.threshold_chars
            ),
        });
    }
    Ok(Some(out))
}

/// The byte offset of code point `index` in `text` (its length when past the end).
fn byte_offset(text: &str, index: usize) -> usize {
    text.char_indices()
        .nth(index)
        .map_or(text.len(), |(byte, _)| byte)
}

/// One pruned tool result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrunedResult {
    /// The `tool/result` that was on the surface.
    pub original_seq: u64,
    /// The replacing `tool/result`.
    pub replacement_seq: u64,
    pub call_id: CallId,
    /// Code points of the result's text before and after.
    pub chars_before: usize,
    pub chars_after: usize,
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// In surface order.
    pub pruned: Vec<PrunedResult>,
    /// Code points removed in total.
    pub chars_removed: usize,
}

/// Prunes every oversized `tool/result` on the current surface, the newest included, each as
/// a `compaction/prune` (shadow price: the original message's estimate) followed by the
/// content-only `tool/result` replace of that node.
///
/// A refused append ends the pass with the error; replacements made before it stay in the
/// log (each is complete on its own).
pub fn prune_session(
    session: &Session,
    config: &PrunerConfig,
) -> Result<PruneReport, CompactionError> {
    config.validate()?;
    let nodes = session.surface().nodes;
    let events = session.events();
    let mut report = PruneReport::default();
    for seq in nodes {
        let Some(event) = usize::try_from(seq).ok().and_then(|i| events.get(i)) else {
            return Err(CompactionError::MissingEvent { seq });
        };
        let EventData::ToolResult(result) = &event.data else {
            continue;
        };
        let [ContentBlock::ToolResult {
            tool_call_id,
            content,
            is_error,
        }] = result.message.content.as_slice()
        else {
            continue;
        };
        let Some(pruned) = prune_content(content, config)? else {
            continue;
        };
        let (chars_before, chars_after) = (measure_content(content), measure_content(&pruned));
        session.append_typed(&CompactionPrune {
            shadowed_range: SeqRange {
                start: seq,
                end: seq,
            },
            shadowed_seqs: vec![seq],
            shadowed_token_count: estimate_message(&result.message),
        })?;
        let message = Message {
            content: vec![ContentBlock::ToolResult {
                tool_call_id: tool_call_id.clone(),
                content: pruned,
                is_error: *is_error,
            }],
            ..(*result.message).clone()
        };
        let replacement = session.append(
            EventData::ToolResult(ToolResult {
                message: Arc::new(message),
                ..result.clone()
            }),
            AppendOptions::surface_replace(seq, seq).sources(vec![seq]),
        )?;
        report.chars_removed += chars_before - chars_after;
        report.pruned.push(PrunedResult {
            original_seq: seq,
            replacement_seq: replacement.seq,
            call_id: tool_call_id.clone(),
            chars_before,
            chars_after,
        });
    }
    Ok(report)
}
