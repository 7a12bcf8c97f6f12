//! The invariant companion's refusals, seed replay, and the original's fixture.

use super::common::{session, turn_start};
use super::rig::register;
use dsh_compaction::checkpoint::checkpoint_message;
use dsh_compaction::{durable_lock, CompactionEnd, CompactionStart, CompactionSummary, SeqRange};
use dsh_protocol::ContentBlock;
use dsh_session::*;
use serde_json::json;
use std::sync::Arc;

fn start(id: &str, turn: Option<u64>) -> CompactionStart {
    CompactionStart {
        compaction_id: id.into(),
        source_command_id: None,
        turn,
    }
}

fn end(id: &str, turn: Option<u64>, error: Option<&str>) -> CompactionEnd {
    CompactionEnd {
        compaction_id: id.into(),
        source_command_id: None,
        turn,
        error: error.map(str::to_owned),
    }
}

fn summary(id: &str, seqs: Vec<u64>) -> CompactionSummary {
    CompactionSummary {
        compaction_id: id.into(),
        source_command_id: None,
        summary: vec![ContentBlock::text("s")],
        raw_output: None,
        llm_stream_call: None,
        shadowed_range: SeqRange {
            start: seqs[0],
            end: *seqs.last().unwrap(),
        },
        shadowed_seqs: seqs,
        shadowed_token_count: 10,
        provider: "p".into(),
        model: "m".into(),
        max_tokens: None,
        usage: None,
    }
}

/// The refusal's reason, asserting it came from the companion.
fn refused<T>(result: Result<T, SessionError>) -> String {
    match result {
        Ok(_) => panic!("the event was accepted"),
        Err(SessionError::InvariantViolation {
            companion, reason, ..
        }) => {
            assert_eq!(companion, "compaction");
            reason
        }
        Err(other) => panic!("refused by something else: {other}"),
    }
}

fn user(id: &str) -> EventData {
    super::common::user(id, "hello")
}

#[test]
fn the_bracket_rules_refuse_what_breaks_them_and_leave_the_log_unchanged() {
    register();
    let s = session("inv-rules");
    s.append(turn_start(1), AppendOptions::log_only()).unwrap();
    // A numbered owner must be the open turn; null needs no open turn.
    assert_eq!(
        refused(s.append_typed(&start("a", Some(2)))),
        "owner turn 2 is not the open turn 1"
    );
    assert_eq!(
        refused(s.append_typed(&start("a", None))),
        "a standalone compaction (turn null) while turn 1 is open"
    );
    let m = s
        .append(user("m1"), AppendOptions::surface_append())
        .unwrap()
        .seq;
    s.append_typed(&start("a", Some(1))).unwrap();
    assert_eq!(
        refused(s.append_typed(&start("b", Some(1)))),
        "compaction \"b\" starts while \"a\" is open"
    );
    assert_eq!(
        refused(s.append(
            EventData::TurnEnd(TurnEnd {
                turn: 1,
                reason: TurnEndReason::Completed
            }),
            AppendOptions::log_only()
        )),
        "turn/end inside the open compaction \"a\""
    );
    assert_eq!(
        refused(s.append_typed(&end("a", Some(1), None))),
        "compaction \"a\" ends successfully without a summary"
    );
    assert_eq!(
        refused(s.append_typed(&summary("b", vec![m]))),
        "compaction \"b\" is not the open \"a\""
    );
    let checkpoint = checkpoint_message("other", None, &[ContentBlock::text("s")]);
    assert_eq!(
        refused(s.append(
            EventData::UserMessage(Arc::new(checkpoint)),
            AppendOptions::surface_replace(m, m).sources(vec![m])
        )),
        "the checkpoint names compaction \"other\", but \"a\" is open"
    );
    s.append_typed(&summary("a", vec![m])).unwrap();
    assert_eq!(
        refused(s.append_typed(&summary("a", vec![m]))),
        "compaction \"a\" already has a summary"
    );
    let mut with_command = end("a", Some(1), None);
    with_command.source_command_id = Some("cmd".into());
    assert!(refused(s.append_typed(&with_command)).starts_with("sourceCommandId"));
    let checkpoint = checkpoint_message("a", None, &[ContentBlock::text("s")]);
    s.append(
        EventData::UserMessage(Arc::new(checkpoint)),
        AppendOptions::surface_replace(m, m).sources(vec![m]),
    )
    .unwrap();
    s.append_typed(&end("a", Some(1), None)).unwrap();
    // Closed: a checkpoint now names no open bracket.
    let late = checkpoint_message("a", None, &[ContentBlock::text("s")]);
    let head = s.surface().nodes[0];
    assert_eq!(
        refused(s.append(
            EventData::UserMessage(Arc::new(late)),
            AppendOptions::surface_replace(head, head).sources(vec![head])
        )),
        "the checkpoint names compaction \"a\", but no compaction is open"
    );
    // A failed attempt may end without a summary.
    s.append_typed(&start("c", Some(1))).unwrap();
    s.append_typed(&end("c", Some(1), Some("boom"))).unwrap();
    s.append(
        EventData::TurnEnd(TurnEnd {
            turn: 1,
            reason: TurnEndReason::Completed,
        }),
        AppendOptions::log_only(),
    )
    .unwrap();
}

#[test]
fn a_stored_summary_with_a_bad_range_is_refused_on_seed_replay() {
    register();
    let s = session("inv-seed-bad");
    s.append(turn_start(1), AppendOptions::log_only()).unwrap();
    let m = s
        .append(user("m1"), AppendOptions::surface_append())
        .unwrap()
        .seq;
    s.append_typed(&start("a", Some(1))).unwrap();
    let mut events = s.events().to_vec();
    // Written by another writer: a range that is not the first and last seqs. The payload's
    // own check does not run on stored logs; the companion's does.
    let mut data = serde_json::to_value(summary("a", vec![m])).unwrap();
    data["shadowedRange"] = json!({"start": 0, "end": m});
    events.push(Arc::new(SessionEvent {
        seq: events.len() as u64,
        time: 7,
        data: EventData::other("compaction/summary", data),
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    }));
    let err = Session::with_seed(
        SessionHeader::new("inv-seed-bad-2".into(), 1),
        events,
        SeedSource::Import,
    )
    .unwrap_err();
    assert_eq!(err.root().code(), "INVARIANT_VIOLATION", "{err}");
}

/// A crash mid-compaction leaves an orphan start; resume appends the turn's closer (inside the
/// bracket, exempt during seed replay) and the end-seed, after which the lock is stale and a
/// new compaction may start.
#[test]
fn an_orphan_start_is_exempt_on_replay_and_stale_after_the_end_seed() {
    register();
    let s = session("inv-orphan");
    s.append(turn_start(1), AppendOptions::log_only()).unwrap();
    s.append(user("m1"), AppendOptions::surface_append())
        .unwrap();
    s.append_typed(&start("a", Some(1))).unwrap();
    assert!(durable_lock(&s.events()).is_some());
    let mut events = s.events().to_vec();
    events.extend(interrupted_turn_closers(&events).into_iter().map(Arc::new));
    let resumed = Session::with_seed(
        SessionHeader::new("inv-orphan".into(), 1),
        events,
        SeedSource::Persistence,
    )
    .unwrap();
    assert_eq!(
        durable_lock(&resumed.events()),
        None,
        "stale after the end-seed"
    );
    resumed
        .append(turn_start(2), AppendOptions::log_only())
        .unwrap();
    resumed.append_typed(&start("b", Some(2))).unwrap();
    resumed.append_typed(&end("b", Some(2), Some("x"))).unwrap();
}

/// The log the original wrote (44 starts, 22 summaries, 22 failed attempts) loads with the
/// companion, and resumes: its derived history is the last checkpoint plus the tail.
#[test]
fn the_original_compaction_fixture_loads_and_derives_the_last_checkpoint() {
    register();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/dsh-0.1.0-compaction/sessions");
    let file = find_log(&dir);
    let bytes = zstd::decode_all(std::fs::File::open(&file).unwrap()).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let mut lines = text.lines();
    let header: SessionHeader = serde_json::from_str(lines.next().unwrap()).unwrap();
    let events: Vec<SessionEvent> = lines.map(|l| SessionEvent::from_json(l).unwrap()).collect();
    let starts = events.iter().filter(|e| e.is::<CompactionStart>()).count();
    assert_eq!(starts, 44);
    let session = Session::with_seed(header, events, SeedSource::Persistence).unwrap();
    let messages = session.derive_messages();
    let first = &messages[0];
    assert!(dsh_compaction::select::is_compact_checkpoint_source(
        &first.source
    ));
    assert_eq!(durable_lock(&session.events()), None);
}

fn find_log(dir: &std::path::Path) -> std::path::PathBuf {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            return find_log(&path);
        }
        if path.to_string_lossy().ends_with(".zstd") {
            return path;
        }
    }
    panic!("no log under {}", dir.display());
}
