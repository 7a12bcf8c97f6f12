//! Invariant companions: stateful rules a plugin adds to what a log may contain.
//!
//! A payload's own [`PluginEvent::validate`](crate::PluginEvent::validate) sees one event. Some
//! rules span events: a bracket opened by one record and closed by another, a core event that
//! is illegal while such a bracket is open. An [`InvariantCompanion`] states such a rule as a
//! small fold: each session gets its own [`CompanionState`], which is asked to
//! [`check`](CompanionState::check) every candidate event before it is committed (a refusal
//! leaves the log unchanged) and is told to [`apply`](CompanionState::apply) it after.
//!
//! Candidates are every live append and every event of a constructor seed (resume, fork,
//! `dsh sessions verify`), told apart by [`EventOrigin`]: a rule may be lenient with what a
//! stored log inherited (a crash leaves an unmatched bracket behind) while strict with what
//! is written now.
//!
//! # Why process-wide, like event types
//!
//! For the same reason as [`register_event_types`](crate::register_event_types): a rule about
//! what a log may hold must be the same for every reader, and verify and resume read logs
//! with nothing mounted. The binary registers each companion once at startup, beside its
//! event types.
//!
//! # Cost
//!
//! Per event, one lock-free walk of the registered companions (an atomic load each) plus each
//! state's own `check` and `apply`, which should be O(1). With nothing registered the walk is
//! one atomic load. A state is created the first time its session sees an event after the
//! companion was registered; if the session already holds events then, the state first
//! applies them (once), so a late registration still folds the whole log.

use crate::error::SessionError;
use crate::event::SessionEvent;
use std::any::TypeId;
use std::sync::{Mutex, OnceLock, PoisonError};

/// How a candidate event reaches the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventOrigin {
    /// A live append ([`Session::append`](crate::Session::append) and friends).
    Append,
    /// An event of a constructor seed, or the `session/end-seed` marker construction adds.
    Seed,
}

impl EventOrigin {
    /// Whether the event is replayed from a seed.
    pub fn is_seed(self) -> bool {
        self == Self::Seed
    }
}

/// A rule over the whole log, registered once per process
/// ([`register_invariant_companion`]).
pub trait InvariantCompanion: Send + Sync + 'static {
    /// A short stable name, quoted in refusals (`"compaction"`).
    fn name(&self) -> &'static str;

    /// The state for one new session (empty log).
    fn start(&self) -> Box<dyn CompanionState>;
}

/// One session's fold of an [`InvariantCompanion`].
pub trait CompanionState: Send {
    /// Whether `event` may be committed next. `event.seq` is its final seq. `Err(reason)`
    /// refuses it ([`SessionError::InvariantViolation`]); the state must not change.
    fn check(&self, event: &SessionEvent, origin: EventOrigin) -> Result<(), String>;

    /// Folds a committed event (one that passed `check` for every companion).
    fn apply(&mut self, event: &SessionEvent, origin: EventOrigin);
}

#[derive(Clone, Copy)]
struct Entry {
    companion: &'static dyn InvariantCompanion,
    rust_type: TypeId,
}

const SLOTS: usize = 16;

static COMPANIONS: [OnceLock<Entry>; SLOTS] = [const { OnceLock::new() }; SLOTS];

static REGISTERING: Mutex<()> = Mutex::new(());

/// Adds `companion` to every session of this process (those that exist already fold their
/// log first, see the module docs). Registering the same companion again is a no-op.
///
/// Refused (`INVALID_EVENT_DECLARATION`) when another Rust type already registered the same
/// name, the name is empty, or the process has more than 16 companions.
pub fn register_invariant_companion<C: InvariantCompanion>(
    companion: &'static C,
) -> Result<(), SessionError> {
    let _registering = REGISTERING.lock().unwrap_or_else(PoisonError::into_inner);
    let name = companion.name();
    let refuse = |reason: String| SessionError::InvalidDeclaration {
        type_name: format!("invariant companion {name}"),
        reason,
    };
    if name.is_empty() {
        return Err(refuse("the name is empty".into()));
    }
    let rust_type = TypeId::of::<C>();
    for entry in entries() {
        if entry.companion.name() == name {
            if entry.rust_type == rust_type {
                return Ok(());
            }
            return Err(refuse(format!(
                "already registered by another type, not {}",
                std::any::type_name::<C>()
            )));
        }
    }
    let Some(slot) = COMPANIONS.iter().find(|slot| slot.get().is_none()) else {
        return Err(refuse(format!("more than {SLOTS} companions")));
    };
    // Only registrations fill slots, and they hold the lock, so the slot is still empty.
    let _ = slot.set(Entry {
        companion,
        rust_type,
    });
    Ok(())
}

/// The names of the registered companions, in registration order.
pub fn registered_invariant_companions() -> impl Iterator<Item = &'static str> {
    entries().map(|e| e.companion.name())
}

fn entries() -> impl Iterator<Item = Entry> {
    COMPANIONS.iter().map_while(|slot| slot.get().copied())
}

/// The companion states of one session, one per registered companion, in registry order.
#[derive(Default)]
pub(crate) struct Companions {
    states: Vec<(&'static str, Box<dyn CompanionState>)>,
}

impl Companions {
    /// Creates the states of companions registered since the last call; each new state folds
    /// `log` first (`seed_len`: events below it came from the constructor seed).
    fn catch_up(&mut self, log: &[std::sync::Arc<SessionEvent>], seed_len: u64) {
        for entry in entries().skip(self.states.len()) {
            let mut state = entry.companion.start();
            for event in log {
                state.apply(event, origin_of(event.seq, seed_len));
            }
            self.states.push((entry.companion.name(), state));
        }
    }

    /// Asks every companion whether `event` may be committed.
    pub(crate) fn check(
        &mut self,
        log: &[std::sync::Arc<SessionEvent>],
        seed_len: u64,
        event: &SessionEvent,
        origin: EventOrigin,
    ) -> Result<(), SessionError> {
        self.catch_up(log, seed_len);
        for (name, state) in &self.states {
            state
                .check(event, origin)
                .map_err(|reason| SessionError::InvariantViolation {
                    seq: event.seq,
                    type_name: event.type_name().to_owned(),
                    companion: (*name).to_owned(),
                    reason,
                })?;
        }
        Ok(())
    }

    /// Folds a committed event into every state (those `check` created).
    pub(crate) fn apply(&mut self, event: &SessionEvent, origin: EventOrigin) {
        for (_, state) in &mut self.states {
            state.apply(event, origin);
        }
    }
}

fn origin_of(seq: u64, seed_len: u64) -> EventOrigin {
    if seq < seed_len {
        EventOrigin::Seed
    } else {
        EventOrigin::Append
    }
}
