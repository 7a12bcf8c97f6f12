//! Seeded construction (resume, import) and its validation.

use super::common::*;
use dsh_session::*;
use serde_json::{json, Value};
use std::sync::Arc;

fn closed_log() -> Vec<Arc<SessionEvent>> {
    let session = session("source");
    tool_turn(&session, 1);
    session.events().to_vec()
}

fn parse(values: Vec<Value>) -> Vec<Arc<SessionEvent>> {
    values
        .iter()
        .map(|v| Arc::new(SessionEvent::from_value(v).unwrap()))
        .collect()
}

#[test]
fn a_seed_is_kept_verbatim_and_gets_one_end_marker() {
    let seed = closed_log();
    let session = seeded("s", seed.clone()).unwrap();
    assert_eq!(session.first_live_seq(), 11);
    assert_eq!(session.seed_source(), Some(SeedSource::Import));
    let events = session.events();
    assert_eq!(&events[..11], &seed[..]);
    assert_eq!(
        serde_json::to_value(&*events[11]).unwrap(),
        json!({"type": "session/end-seed", "seq": 11, "time": TIME, "data": {}})
    );
    assert_eq!(session.derive_messages().len(), 4);
    // Live appends continue after the marker.
    assert_eq!(session.append(turn_start(2), log_only()).unwrap().seq, 12);

    // A seed that already ends with the marker gets no second one.
    let again = seeded("s2", session.events()[..12].to_vec()).unwrap();
    assert_eq!((again.len(), again.first_live_seq()), (12, 12));
    // An empty seed is still a seed.
    let empty = seeded("s3", Vec::new()).unwrap();
    assert_eq!((empty.len(), empty.first_live_seq()), (1, 0));
    // No seed, no marker.
    assert_eq!(session_without_seed().len(), 0);
}

fn session_without_seed() -> Session {
    Session::new(header("bare")).unwrap()
}

/// Asserts the seed is refused at `index` with a root error of `code`.
fn refused_at(seed: Vec<Arc<SessionEvent>>, index: usize, code: &str) {
    let err = seeded("s", seed).unwrap_err();
    match &err {
        SessionError::InvalidSeed { index: at, .. } => assert_eq!(*at, index, "{err}"),
        other => panic!("expected INVALID_SEED, got {other:?}"),
    }
    assert_eq!(err.code(), "INVALID_SEED");
    assert_eq!(err.root().code(), code, "{err}");
}

#[test]
fn malformed_seeds_are_refused_with_the_offending_index() {
    // seq must equal index.
    let mut seed = closed_log();
    seed.remove(3);
    refused_at(seed, 3, "INVALID_ENVELOPE");

    // Unknown required types are refused; ignorable ones are carried.
    let unknown = parse(vec![
        json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}),
        json!({"type": "future/thing", "seq": 1, "time": 1, "data": {"a": 1}}),
    ]);
    refused_at(unknown, 1, "UNKNOWN_EVENT_TYPE");
    let ignorable = parse(vec![
        json!({"type": "future/thing", "seq": 0, "time": 1, "data": {"a": 1}, "ignorable": true}),
    ]);
    assert_eq!(seeded("s", ignorable).unwrap().len(), 2);

    // Message events need identified messages of the right shape.
    let wrong_role = parse(vec![
        json!({"type": "user/message", "seq": 0, "time": 1, "surfaceOp": "append",
        "data": {"id": "m", "role": "assistant", "content": [], "source": {"kind": "user"}}}),
    ]);
    refused_at(wrong_role, 0, "INVALID_EVENT_DATA");
    let no_model = parse(vec![
        json!({"type": "assistant/message", "seq": 0, "time": 1, "surfaceOp": "append",
        "data": {"turn": 1, "step": 1, "message": {"id": "m", "role": "assistant", "content": [],
            "source": {"kind": "model", "provider": "p", "model": ""}}}}),
    ]);
    refused_at(no_model, 0, "INVALID_EVENT_DATA");
    let two_blocks = parse(vec![
        json!({"type": "tool/result", "seq": 0, "time": 1, "surfaceOp": "append",
        "data": {"turn": 1, "step": 1, "message": {"id": "m", "role": "user",
            "content": [{"type": "tool-result", "toolCallId": "c", "content": []}, {"type": "text", "text": "x"}],
            "source": {"kind": "tool", "callId": "c"}}}}),
    ]);
    refused_at(two_blocks, 0, "INVALID_EVENT_DATA");

    // Request headers need provider and model.
    let no_provider = parse(vec![json!({"type": "request/header", "seq": 0, "time": 1,
        "data": {"reason": "initial", "header": {"config": {"provider": "", "model": "m"}}}})]);
    refused_at(no_provider, 0, "INVALID_EVENT_DATA");

    // Surface rules apply: a forward citation, a message without surfaceOp.
    let forward = parse(vec![
        json!({"type": "user/message", "seq": 0, "time": 1, "surfaceOp": "append",
        "sourceEventSeqs": [0], "data": {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}}),
    ]);
    refused_at(forward, 0, "INVALID_SURFACE");
    let unmarked = parse(vec![json!({"type": "user/message", "seq": 0, "time": 1,
        "data": {"id": "m", "role": "user", "content": [], "source": {"kind": "user"}}})]);
    refused_at(unmarked, 0, "INVALID_SURFACE");

    // Times must be safe integers.
    let late = parse(vec![
        json!({"type": "turn/start", "seq": 0, "time": 9_007_199_254_740_992u64, "data": {"turn": 1}}),
    ]);
    refused_at(late, 0, "INVALID_ENVELOPE");
}

#[test]
fn a_bad_header_is_refused() {
    let mut bad = header("s");
    bad.cwd = Some("not/absolute".into());
    let err = Session::with_seed(bad, closed_log(), SeedSource::Persistence).unwrap_err();
    assert_eq!(err.code(), "INVALID_HEADER");
    let mut bad = header("s");
    bad.version = 3;
    assert_eq!(Session::new(bad).unwrap_err().code(), "INVALID_HEADER");
}

/// A seed checked event by event as a reader types it builds what the whole seed builds,
/// and refuses the same event at the same index, after the header.
#[test]
fn a_seed_checked_as_it_arrives_builds_what_the_whole_seed_builds() {
    let build = |header: SessionHeader, log: SeedLog| {
        Session::builder(header)
            .seed_log(log)
            .clock(Arc::new(|| TIME))
            .build()
    };
    let seed = closed_log();
    let mut log = SeedLog::new(SeedSource::Import);
    for event in &seed {
        log.push(event.clone());
    }
    assert_eq!(log.events(), &seed[..]);
    let session = build(header("s"), log).unwrap();
    let whole = seeded("s", seed.clone()).unwrap();
    assert_eq!(log_json(&session), log_json(&whole));
    assert_eq!(history_json(&session), history_json(&whole));
    assert_eq!(
        (session.first_live_seq(), session.seed_source()),
        (11, Some(SeedSource::Import))
    );

    // The first refusal is the error, at its index; nothing after it is taken.
    let mut broken = seed.clone();
    broken.remove(3);
    let refusing = || {
        let mut log = SeedLog::new(SeedSource::Import);
        log.extend(broken.iter().cloned());
        log
    };
    assert_eq!(refusing().events(), &broken[..3]);
    let err = build(header("s"), refusing()).unwrap_err();
    assert!(
        matches!(err, SessionError::InvalidSeed { index: 3, .. }),
        "{err}"
    );
    assert_eq!(err.root().code(), "INVALID_ENVELOPE");
    // A bad header is reported before the seed's refusal, as for a whole seed.
    let mut bad = header("s");
    bad.cwd = Some("not/absolute".into());
    assert_eq!(build(bad, refusing()).unwrap_err().code(), "INVALID_HEADER");
}
