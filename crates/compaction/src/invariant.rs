//! The compaction invariant companion: the bracket rules every log must keep (spec §2.1).
//!
//! Registered process-wide ([`register`]), so it runs on every append and on every seed
//! replay (resume, fork, verify), whatever is mounted. The state is the open turn and the open
//! bracket, so each event costs O(1): only compaction events are decoded, and a `user/message`
//! is looked at only when it is a replace.
//!
//! Rules:
//! - ids are non-empty and `sourceCommandId` is the same on every record of a bracket;
//! - no start while a bracket is open;
//! - a numbered owner is the open turn, a `null` owner needs no open turn;
//! - no `turn/start` or `turn/end` inside a live bracket (during seed replay an inherited
//!   orphan is exempt: a crash left it open and the repair closers follow it);
//! - a summary needs the open bracket, at most one per bracket, with non-empty `shadowedSeqs`
//!   whose first and last seqs are the range, and a safe token count;
//! - an end closes the open bracket (same id and owner); a successful end needs a summary;
//! - a checkpoint replace (`source {kind:'plugin', plugin:'compact'}`) names the open bracket.
//!
//! A `session/end-seed` retires an open bracket: it was left by a process that is gone (the
//! durable lock's staleness rule), so nothing after the marker is judged against it.

use crate::checkpoint::checkpoint_compaction_id;
use crate::events::{CompactionEnd, CompactionStart, CompactionSummary, MAX_SAFE_INTEGER};
use dsh_session::{
    CompanionState, EventData, EventOrigin, InvariantCompanion, SessionError, SessionEvent,
    SurfaceOp,
};

/// The companion; register it once per process with [`register`].
#[derive(Debug)]
pub struct CompactionInvariant;

/// The registered instance.
pub static COMPACTION_INVARIANT: CompactionInvariant = CompactionInvariant;

/// Registers the companion for every session of this process (idempotent). The binary calls it
/// beside `register_event_types(EVENT_TYPES)`.
pub fn register() -> Result<(), SessionError> {
    dsh_session::register_invariant_companion(&COMPACTION_INVARIANT)
}

impl InvariantCompanion for CompactionInvariant {
    fn name(&self) -> &'static str {
        "compaction"
    }

    fn start(&self) -> Box<dyn CompanionState> {
        Box::new(BracketFold::default())
    }
}

/// The open bracket of one session.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Bracket {
    id: String,
    source_command_id: Option<String>,
    turn: Option<u64>,
    summarized: bool,
}

#[derive(Debug, Default)]
struct BracketFold {
    open_turn: Option<u64>,
    bracket: Option<Bracket>,
}

/// What one event means to the fold, decided by `check` and reused by `apply`.
enum Effect {
    None,
    TurnOpened(u64),
    TurnClosed,
    Opened(Bracket),
    Summarized,
    Closed,
    Retired,
}

impl BracketFold {
    fn judge(&self, event: &SessionEvent, origin: EventOrigin) -> Result<Effect, String> {
        match &event.data {
            EventData::TurnStart(t) => {
                self.outside_bracket("turn/start", origin)?;
                Ok(Effect::TurnOpened(t.turn))
            }
            EventData::TurnEnd(_) => {
                self.outside_bracket("turn/end", origin)?;
                Ok(Effect::TurnClosed)
            }
            EventData::EndSeed => Ok(Effect::Retired),
            EventData::UserMessage(message) => {
                if !matches!(event.surface_op, Some(SurfaceOp::Replace { .. })) {
                    return Ok(Effect::None);
                }
                let Some(id) = checkpoint_compaction_id(&message.source) else {
                    return Ok(Effect::None);
                };
                match &self.bracket {
                    Some(open) if open.id == id => Ok(Effect::None),
                    Some(open) => Err(format!(
                        "the checkpoint names compaction {id:?}, but {:?} is open",
                        open.id
                    )),
                    None => Err(format!(
                        "the checkpoint names compaction {id:?}, but no compaction is open"
                    )),
                }
            }
            EventData::Other { .. } => self.judge_bracket_event(event),
            _ => Ok(Effect::None),
        }
    }

    fn outside_bracket(&self, what: &str, origin: EventOrigin) -> Result<(), String> {
        match &self.bracket {
            Some(open) if !origin.is_seed() => {
                Err(format!("{what} inside the open compaction {:?}", open.id))
            }
            _ => Ok(()),
        }
    }

    fn judge_bracket_event(&self, event: &SessionEvent) -> Result<Effect, String> {
        if let Some(start) = event.decode::<CompactionStart>() {
            let start = start.map_err(|e| e.to_string())?;
            check_ids(&start.compaction_id, start.source_command_id.as_deref())?;
            if let Some(open) = &self.bracket {
                return Err(format!(
                    "compaction {:?} starts while {:?} is open",
                    start.compaction_id, open.id
                ));
            }
            match (start.turn, self.open_turn) {
                (Some(owner), Some(open)) if owner == open => {}
                (Some(owner), open) => {
                    return Err(match open {
                        Some(open) => format!("owner turn {owner} is not the open turn {open}"),
                        None => format!("owner turn {owner} is not open"),
                    })
                }
                (None, Some(open)) => {
                    return Err(format!(
                        "a standalone compaction (turn null) while turn {open} is open"
                    ))
                }
                (None, None) => {}
            }
            return Ok(Effect::Opened(Bracket {
                id: start.compaction_id,
                source_command_id: start.source_command_id,
                turn: start.turn,
                summarized: false,
            }));
        }
        if let Some(summary) = event.decode::<CompactionSummary>() {
            let summary = summary.map_err(|e| e.to_string())?;
            let open =
                self.matching(&summary.compaction_id, summary.source_command_id.as_deref())?;
            if open.summarized {
                return Err(format!("compaction {:?} already has a summary", open.id));
            }
            let (Some(&first), Some(&last)) =
                (summary.shadowed_seqs.first(), summary.shadowed_seqs.last())
            else {
                return Err("shadowedSeqs must not be empty".into());
            };
            if summary.shadowed_range.start != first || summary.shadowed_range.end != last {
                return Err(format!(
                    "shadowedRange {}-{} is not the first and last shadowed seqs ({first}-{last})",
                    summary.shadowed_range.start, summary.shadowed_range.end
                ));
            }
            if summary.shadowed_token_count > MAX_SAFE_INTEGER {
                return Err("shadowedTokenCount is not a safe integer".into());
            }
            return Ok(Effect::Summarized);
        }
        if let Some(end) = event.decode::<CompactionEnd>() {
            let end = end.map_err(|e| e.to_string())?;
            let open = self.matching(&end.compaction_id, end.source_command_id.as_deref())?;
            if end.turn != open.turn {
                return Err(format!(
                    "compaction {:?} ends with owner {:?}, but started with {:?}",
                    open.id, end.turn, open.turn
                ));
            }
            if end.error.is_none() && !open.summarized {
                return Err(format!(
                    "compaction {:?} ends successfully without a summary",
                    open.id
                ));
            }
            return Ok(Effect::Closed);
        }
        Ok(Effect::None)
    }

    /// The open bracket, which `id` and `source_command_id` must name.
    fn matching(&self, id: &str, source_command_id: Option<&str>) -> Result<&Bracket, String> {
        check_ids(id, source_command_id)?;
        let Some(open) = &self.bracket else {
            return Err(format!("compaction {id:?} is not open"));
        };
        if open.id != id {
            return Err(format!("compaction {id:?} is not the open {:?}", open.id));
        }
        if open.source_command_id.as_deref() != source_command_id {
            return Err(format!(
                "sourceCommandId {source_command_id:?} differs from the start's {:?}",
                open.source_command_id
            ));
        }
        Ok(open)
    }
}

fn check_ids(id: &str, source_command_id: Option<&str>) -> Result<(), String> {
    if id.is_empty() {
        return Err("compactionId is empty".into());
    }
    if source_command_id.is_some_and(str::is_empty) {
        return Err("sourceCommandId is empty".into());
    }
    Ok(())
}

impl CompanionState for BracketFold {
    fn check(&self, event: &SessionEvent, origin: EventOrigin) -> Result<(), String> {
        self.judge(event, origin).map(|_| ())
    }

    fn apply(&mut self, event: &SessionEvent, origin: EventOrigin) {
        // Committed events passed `check`, so this judges them the same way; an error here
        // means the event came in before this state existed and was judged by no one, and the
        // fold then keeps its state rather than guess.
        let Ok(effect) = self.judge(event, origin) else {
            return;
        };
        match effect {
            Effect::None => {}
            Effect::TurnOpened(turn) => self.open_turn = Some(turn),
            Effect::TurnClosed => self.open_turn = None,
            Effect::Opened(bracket) => self.bracket = Some(bracket),
            Effect::Summarized => {
                if let Some(open) = &mut self.bracket {
                    open.summarized = true;
                }
            }
            Effect::Closed | Effect::Retired => self.bracket = None,
        }
    }
}
