//! Invariant companions: stateful pre-commit rules, registered process-wide.
//!
//! Registration is process-wide, so the companions here only ever refuse events of their own
//! `test-bracket/*` types (or a `turn/start` inside such a bracket), which no other test writes.

use super::common::*;
use dsh_session::*;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const OPEN: &str = "test-bracket/open";
const CLOSE: &str = "test-bracket/close";

/// No nested open, no close without an open, no `turn/start` inside a live bracket (except
/// while replaying a seed); a `session/end-seed` makes an inherited bracket stale.
struct Brackets;

#[derive(Default)]
struct BracketState {
    open: bool,
    applied: u64,
}

impl InvariantCompanion for Brackets {
    fn name(&self) -> &'static str {
        "test-brackets"
    }
    fn start(&self) -> Box<dyn CompanionState> {
        Box::new(BracketState::default())
    }
}

impl CompanionState for BracketState {
    fn check(&self, event: &SessionEvent, origin: EventOrigin) -> Result<(), String> {
        match (&event.data, self.open) {
            (EventData::Other { type_name, .. }, true) if type_name == OPEN => {
                Err("a bracket is already open".into())
            }
            (EventData::Other { type_name, .. }, false) if type_name == CLOSE => {
                Err("no bracket is open".into())
            }
            (EventData::Other { type_name, data }, _)
                if type_name == OPEN && data.get("applied").is_some_and(|n| n != self.applied) =>
            {
                Err(format!("expected applied {}", self.applied))
            }
            (EventData::TurnStart(_), true) if !origin.is_seed() => {
                Err("turn/start inside a live bracket".into())
            }
            _ => Ok(()),
        }
    }
    fn apply(&mut self, event: &SessionEvent, _origin: EventOrigin) {
        self.applied += 1;
        match &event.data {
            EventData::Other { type_name, .. } if type_name == OPEN => self.open = true,
            EventData::Other { type_name, .. } if type_name == CLOSE => self.open = false,
            EventData::EndSeed => self.open = false,
            _ => {}
        }
    }
}

static BRACKETS: Brackets = Brackets;

fn bracket(type_name: &str, data: serde_json::Value) -> EventData {
    EventData::other(type_name, data)
}

fn ignorable() -> AppendOptions {
    AppendOptions::log_only().ignorable()
}

fn turn_start(turn: u64) -> EventData {
    EventData::TurnStart(TurnStart { turn })
}

#[test]
fn a_refused_candidate_leaves_the_log_unchanged_and_names_the_rule() {
    register_invariant_companion(&BRACKETS).unwrap();
    let s = session("companion-refuse");
    s.append(bracket(OPEN, json!({})), ignorable()).unwrap();
    let err = s
        .append(turn_start(1), AppendOptions::log_only())
        .unwrap_err();
    assert_eq!(err.code(), "INVARIANT_VIOLATION");
    assert_eq!(
        err.to_string(),
        "session event \"turn/start\" at seq 1 breaks the test-brackets invariant: \
         turn/start inside a live bracket"
    );
    let err = s.append(bracket(OPEN, json!({})), ignorable()).unwrap_err();
    assert!(
        err.to_string().ends_with("a bracket is already open"),
        "{err}"
    );
    assert_eq!(s.len(), 1);
    // A refused candidate was never applied: the state counts one event, not three.
    s.append(bracket(CLOSE, json!({})), ignorable()).unwrap();
    s.append(bracket(OPEN, json!({"applied": 2})), ignorable())
        .unwrap();
    assert_eq!(s.len(), 3);
}

#[test]
fn seed_replay_is_told_apart_and_the_end_marker_makes_an_inherited_bracket_stale() {
    register_invariant_companion(&BRACKETS).unwrap();
    let s = session("companion-live");
    s.append(turn_start(1), AppendOptions::log_only()).unwrap();
    s.append(bracket(OPEN, json!({})), ignorable()).unwrap();
    // A crashed log: the bracket never closed and a repair-closer-like event follows it.
    let mut events: Vec<Arc<SessionEvent>> = s.events().to_vec();
    events.push(Arc::new(SessionEvent {
        seq: 2,
        time: TIME,
        data: turn_start(2),
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    }));
    // The same event is refused live...
    assert_eq!(
        s.append(turn_start(2), AppendOptions::log_only())
            .unwrap_err()
            .code(),
        "INVARIANT_VIOLATION"
    );
    // ...and exempt during seed replay; the marker then retires the orphan, so live appends
    // are accepted again.
    let resumed = seeded("companion-resumed", events).unwrap();
    assert!(matches!(
        resumed.last_event().unwrap().data,
        EventData::EndSeed
    ));
    resumed
        .append(turn_start(3), AppendOptions::log_only())
        .unwrap();
}

#[test]
fn a_seed_the_rule_refuses_is_an_invalid_seed_at_its_index() {
    register_invariant_companion(&BRACKETS).unwrap();
    let seed: Vec<Arc<SessionEvent>> = [bracket(CLOSE, json!({}))]
        .into_iter()
        .enumerate()
        .map(|(i, data)| {
            Arc::new(SessionEvent {
                seq: i as u64,
                time: TIME,
                data,
                ignorable: true,
                surface_op: None,
                source_event_seqs: None,
            })
        })
        .collect();
    let err = seeded("companion-bad-seed", seed).unwrap_err();
    assert_eq!(err.code(), "INVALID_SEED");
    assert_eq!(err.root().code(), "INVARIANT_VIOLATION");
}

/// Counts what its states were told, to show a late registration folds the existing log.
struct Counter;

static APPLIED: AtomicU64 = AtomicU64::new(0);

struct CounterState {
    seen: u64,
}

impl InvariantCompanion for Counter {
    fn name(&self) -> &'static str {
        "test-counter"
    }
    fn start(&self) -> Box<dyn CompanionState> {
        Box::new(CounterState { seen: 0 })
    }
}

impl CompanionState for CounterState {
    fn check(&self, event: &SessionEvent, _origin: EventOrigin) -> Result<(), String> {
        // The state has folded every earlier event of its session, however late it came.
        if event.seq != self.seen {
            return Err(format!("saw {} events before seq {}", self.seen, event.seq));
        }
        Ok(())
    }
    fn apply(&mut self, _event: &SessionEvent, _origin: EventOrigin) {
        self.seen += 1;
        APPLIED.fetch_add(1, Ordering::Relaxed);
    }
}

static COUNTER: Counter = Counter;

/// Another type under a taken name.
struct Impostor;

impl InvariantCompanion for Impostor {
    fn name(&self) -> &'static str {
        "test-counter"
    }
    fn start(&self) -> Box<dyn CompanionState> {
        Box::new(CounterState { seen: 0 })
    }
}

static IMPOSTOR: Impostor = Impostor;

#[test]
fn a_late_registration_folds_the_existing_log_and_names_are_unique() {
    let s = session("companion-late");
    for turn in 1..=3 {
        s.append(turn_start(turn), AppendOptions::log_only())
            .unwrap();
    }
    register_invariant_companion(&COUNTER).unwrap();
    register_invariant_companion(&COUNTER).unwrap();
    assert_eq!(
        registered_invariant_companions()
            .filter(|n| *n == "test-counter")
            .count(),
        1
    );
    s.append(turn_start(4), AppendOptions::log_only()).unwrap();
    assert_eq!(s.len(), 4);
    let err = register_invariant_companion(&IMPOSTOR).unwrap_err();
    assert_eq!(err.code(), "INVALID_EVENT_DECLARATION");
    assert!(APPLIED.load(Ordering::Relaxed) >= 4);
}
