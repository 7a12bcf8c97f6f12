//! Choosing what a compaction may summarise: `select_compactable_range`.
//!
//! The range is head-anchored: it starts at the first surface node (after an earlier
//! compaction, that is the previous checkpoint, so each summary absorbs the one before). It
//! ends where the newest `retain_tokens` of the surface begin, moved back until the cut is
//! tool-pairing balanced, and at least the newest node is always kept. [`SelectFloor`] then
//! refuses a range that could not shrink the context enough to be worth a model call.

use crate::error::CompactionError;
use crate::meter::TokenMeter;
use crate::pairing::balanced_cuts_in;
use dsh_protocol::MessageSource;
use dsh_session::{EventData, Session, SessionEvent};
use std::sync::Arc;

/// The `plugin` of a compaction checkpoint's message source
/// (`{kind: "plugin", plugin: "compact", compactionId, sourceCommandId?}`).
pub const CHECKPOINT_PLUGIN: &str = "compact";

/// Whether `source` is a compaction checkpoint's source.
pub fn is_compact_checkpoint_source(source: &MessageSource) -> bool {
    matches!(source, MessageSource::Plugin { plugin, .. } if plugin == CHECKPOINT_PLUGIN)
}

/// Whether `event` is a compaction checkpoint: a `user/message` with the checkpoint source.
pub fn is_compact_checkpoint(event: &SessionEvent) -> bool {
    matches!(&event.data, EventData::UserMessage(m) if is_compact_checkpoint_source(&m.source))
}

/// A selected span of the surface, from its head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactRange {
    /// The first shadowed node (the surface head).
    pub start: u64,
    /// The last shadowed node.
    pub end: u64,
    /// Every shadowed node, in surface order.
    pub shadowed_seqs: Vec<u64>,
    /// The sum of the shadowed nodes' prices.
    pub shadowed_tokens: u64,
}

/// The least a range must bring beyond earlier checkpoints to be worth summarising.
///
/// A range is refused (selection returns `None`) when
/// - it holds nothing but compaction checkpoints, or
/// - it holds checkpoints worth `c` tokens and its other nodes are worth less than
///   `max(min_new_tokens, c)`, or
/// - it holds no checkpoint and is worth less than `min_new_tokens`.
///
/// See docs/compaction.md ("Selection floor") for why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectFloor {
    pub min_new_tokens: u64,
}

impl SelectFloor {
    /// The default absolute floor, in estimated tokens.
    pub const DEFAULT_MIN_NEW_TOKENS: u64 = 1024;

    /// Only the relative rules (checkpoint-only ranges, new material below the previous
    /// checkpoint's price); no absolute minimum.
    pub const RELATIVE_ONLY: SelectFloor = SelectFloor { min_new_tokens: 0 };

    /// The relative rules plus the least a checkpoint costs: new material worth no more than
    /// an empty checkpoint's framing ([`framing_tokens`](crate::checkpoint::framing_tokens))
    /// cannot shrink. The floor of manual and overflow compaction, which have no threshold
    /// but must still never spend a model call on a span that cannot get smaller.
    pub fn framing() -> SelectFloor {
        Self::new(crate::checkpoint::framing_tokens() + 1)
    }

    /// A floor of `min_new_tokens` plus the relative rules.
    pub const fn new(min_new_tokens: u64) -> Self {
        Self { min_new_tokens }
    }

    /// Whether a range worth `shadowed` tokens, `checkpoints` of them in earlier
    /// checkpoints, clears the floor.
    pub fn admits(&self, shadowed: u64, checkpoints: u64) -> bool {
        let new = shadowed.saturating_sub(checkpoints);
        new > 0 && new >= self.min_new_tokens.max(checkpoints)
    }
}

impl Default for SelectFloor {
    fn default() -> Self {
        Self::new(Self::DEFAULT_MIN_NEW_TOKENS)
    }
}

/// A head-anchored span before the floor is applied, with the part of its price that is
/// earlier checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub range: CompactRange,
    /// The price of the compaction checkpoints inside the range.
    pub checkpoint_tokens: u64,
}

/// The head-anchored span a compaction may summarise now, keeping at least `retain_tokens`
/// of the newest surface verbatim; `None` when there is nothing worth compacting (see
/// [`SelectFloor`]).
///
/// `meter` must have folded the session's whole log (its nodes must be the session's current
/// surface), else [`CompactionError::SurfaceMismatch`].
pub fn select_compactable_range(
    session: &Session,
    meter: &TokenMeter,
    retain_tokens: u64,
    floor: SelectFloor,
) -> Result<Option<CompactRange>, CompactionError> {
    Ok(compactable_candidate(session, meter, retain_tokens)?
        .filter(|c| floor.admits(c.range.shadowed_tokens, c.checkpoint_tokens))
        .map(|c| c.range))
}

/// The span the original would select (spec steps 1-6: retain from the newest node, at least
/// the newest node kept, moved back to a balanced cut), without the floor.
pub fn compactable_candidate(
    session: &Session,
    meter: &TokenMeter,
    retain_tokens: u64,
) -> Result<Option<Candidate>, CompactionError> {
    let nodes = meter.nodes();
    if nodes.is_empty() {
        return Ok(None);
    }
    let surface = session.surface();
    if surface.nodes.len() != nodes.len()
        || surface.nodes.iter().zip(nodes).any(|(&s, n)| s != n.seq)
    {
        return Err(CompactionError::SurfaceMismatch);
    }
    // The newest position whose suffix is worth at least `retain_tokens`.
    let mut kept = 0u64;
    let mut keep_from = nodes.len();
    for (i, node) in nodes.iter().enumerate().rev() {
        kept += node.tokens;
        keep_from = i;
        if kept >= retain_tokens {
            break;
        }
    }
    if keep_from == 0 {
        return Ok(None);
    }
    let events = session.events();
    let cuts = balanced_cuts_in(&events, &surface.nodes)?;
    while keep_from > 0 && !cuts[keep_from] {
        keep_from -= 1;
    }
    let shadowed = &nodes[..keep_from];
    let (Some(first), Some(last)) = (shadowed.first(), shadowed.last()) else {
        return Ok(None);
    };
    let checkpoint_tokens = shadowed
        .iter()
        .filter(|n| is_checkpoint_seq(&events, n.seq))
        .map(|n| n.tokens)
        .sum();
    Ok(Some(Candidate {
        range: CompactRange {
            start: first.seq,
            end: last.seq,
            shadowed_seqs: shadowed.iter().map(|n| n.seq).collect(),
            shadowed_tokens: shadowed.iter().map(|n| n.tokens).sum(),
        },
        checkpoint_tokens,
    }))
}

fn is_checkpoint_seq(events: &[Arc<SessionEvent>], seq: u64) -> bool {
    usize::try_from(seq)
        .ok()
        .and_then(|i| events.get(i))
        .is_some_and(|e| is_compact_checkpoint(e))
}
