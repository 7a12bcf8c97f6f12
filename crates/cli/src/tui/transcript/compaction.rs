//! Compactions and prunes in the transcript, folded from the `compaction/*` events and the
//! checkpoint `user/message` that replaces the compacted span.
//!
//! One attempt is one entry: [`CompactionCard`], live while the summary is requested, then a
//! card with the summary (successful), a one-line note (failed: `compaction/end` with
//! `error`), or a note that dsh stopped before it finished (a start left open by a crash,
//! which the next resume's end-seed makes stale). Consecutive prunes share one
//! [`PruneNote`]. The events a compaction or a prune shadows stay in the transcript as they
//! were shown; their replacements are not shown again.

use super::{clean, Entry, Transcript};
use dsh_compaction::estimate::{estimate_blocks, estimate_message, OVERHEAD};
use dsh_compaction::events::{CompactionEnd, CompactionPrune, CompactionStart, CompactionSummary};
use dsh_compaction::is_compact_checkpoint_source;
use dsh_protocol::{ContentBlock, Message, MessageSource};
use dsh_session::SessionEvent;

/// One compaction attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionCard {
    pub id: String,
    /// Asked for with `/compact` (no owning turn) rather than by context pressure.
    pub manual: bool,
    pub state: CompactionState,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CompactionState {
    /// The summary is being requested.
    Running,
    /// The summary is recorded; the checkpoint and the end follow at once.
    Summarized(Compacted),
    /// The checkpoint replaced the span.
    Done(Compacted),
    /// The attempt failed; the conversation is unchanged. The text is the logged error.
    Failed { error: String },
    /// dsh stopped before the attempt finished; a resume ignores it.
    Abandoned,
}

/// What a successful compaction did.
#[derive(Clone, Debug, PartialEq)]
pub struct Compacted {
    /// Surface nodes (messages) the summary replaced.
    pub messages: usize,
    /// Their estimated tokens.
    pub shadowed_tokens: u64,
    /// Estimated tokens of the checkpoint that replaced them (framing included).
    pub summary_tokens: u64,
    /// The summary text, terminal-safe.
    pub summary: String,
}

/// Old tool results cut down to their head and tail, one note per run of prunes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PruneNote {
    pub results: usize,
    /// Estimated tokens of the results before pruning.
    pub tokens_before: u64,
    /// Estimated tokens of the pruned replacements seen so far.
    pub tokens_after: u64,
}

impl CompactionCard {
    /// Whether the card will not change any more.
    pub fn is_settled(&self) -> bool {
        !matches!(
            self.state,
            CompactionState::Running | CompactionState::Summarized(_)
        )
    }

    /// What it compacted, once the summary is known.
    pub fn compacted(&self) -> Option<&Compacted> {
        match &self.state {
            CompactionState::Summarized(done) | CompactionState::Done(done) => Some(done),
            _ => None,
        }
    }
}

impl Transcript {
    /// Folds a compaction event in; `false` when `event` is not one.
    pub(super) fn apply_compaction(&mut self, event: &SessionEvent) -> bool {
        if let Some(start) = event.decode::<CompactionStart>() {
            if let Ok(start) = start {
                self.entries.push(Entry::Compaction(CompactionCard {
                    id: start.compaction_id,
                    manual: start.turn.is_none(),
                    state: CompactionState::Running,
                }));
            }
        } else if let Some(summary) = event.decode::<CompactionSummary>() {
            if let Ok(summary) = summary {
                self.summarized(summary);
            }
        } else if let Some(end) = event.decode::<CompactionEnd>() {
            if let Ok(end) = end {
                self.ended(end);
            }
        } else if let Some(prune) = event.decode::<CompactionPrune>() {
            if let Ok(prune) = prune {
                self.pruned(&prune);
            }
        } else {
            return false;
        }
        true
    }

    fn card(&mut self, id: &str) -> Option<&mut CompactionCard> {
        self.entries.iter_mut().rev().find_map(|entry| match entry {
            Entry::Compaction(card) if card.id == id => Some(card),
            _ => None,
        })
    }

    fn summarized(&mut self, summary: CompactionSummary) {
        let texts: Vec<&str> = summary
            .summary
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        let compacted = Compacted {
            messages: summary.shadowed_seqs.len(),
            shadowed_tokens: summary.shadowed_token_count,
            // Until the checkpoint arrives: the summary as a message of its own.
            summary_tokens: estimate_blocks(&summary.summary) + OVERHEAD,
            summary: clean(texts.join("\n").trim()),
        };
        let state = CompactionState::Summarized(compacted);
        match self.card(&summary.compaction_id) {
            Some(card) => card.state = state,
            // A log whose start this view never saw (it cannot happen in a valid log).
            None => self.entries.push(Entry::Compaction(CompactionCard {
                id: summary.compaction_id,
                manual: false,
                state,
            })),
        }
    }

    fn ended(&mut self, end: CompactionEnd) {
        let Some(card) = self.card(&end.compaction_id) else {
            return;
        };
        card.state = match (
            end.error,
            std::mem::replace(&mut card.state, CompactionState::Abandoned),
        ) {
            (Some(error), _) => CompactionState::Failed {
                error: clean(&error),
            },
            (None, CompactionState::Summarized(done) | CompactionState::Done(done)) => {
                CompactionState::Done(done)
            }
            (None, _) => CompactionState::Failed {
                error: "it ended without a summary".into(),
            },
        };
    }

    fn pruned(&mut self, prune: &CompactionPrune) {
        let results = prune.shadowed_seqs.len().max(1);
        if let Some(Entry::Pruned(note)) = self.entries.last_mut() {
            note.results += results;
            note.tokens_before += prune.shadowed_token_count;
            return;
        }
        self.entries.push(Entry::Pruned(PruneNote {
            results,
            tokens_before: prune.shadowed_token_count,
            tokens_after: 0,
        }));
    }

    /// A `tool/result` that replaces one on the surface (a pruned result): the card keeps
    /// the original output; the prune note learns the new size.
    pub(super) fn replaced_tool_result(&mut self, message: &Message) {
        if let Some(Entry::Pruned(note)) = self.entries.last_mut() {
            note.tokens_after += estimate_message(message);
        }
    }

    /// A `user/message` that replaces a span: the checkpoint of a compaction (never shown
    /// as a prompt; it gives the card the checkpoint's size), or another plugin's rewrite.
    pub(super) fn replaced_user_message(&mut self, message: &Message) {
        if !is_compact_checkpoint_source(&message.source) {
            return;
        }
        let MessageSource::Plugin { extra, .. } = &message.source else {
            return;
        };
        let Some(id) = extra.get("compactionId").and_then(|id| id.as_str()) else {
            return;
        };
        let tokens = estimate_message(message);
        if let Some(card) = self.card(id) {
            if let CompactionState::Summarized(done) | CompactionState::Done(done) = &mut card.state
            {
                done.summary_tokens = tokens;
            }
        }
    }

    /// dsh stopped (a resume's end-seed, a turn closed by crash repair): attempts still
    /// open will never finish.
    pub(super) fn abandon_compactions(&mut self) {
        for entry in &mut self.entries {
            if let Entry::Compaction(card) = entry {
                if !card.is_settled() {
                    card.state = CompactionState::Abandoned;
                }
            }
        }
    }
}
