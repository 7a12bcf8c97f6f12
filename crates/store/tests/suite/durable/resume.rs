//! `ResumeSource` over the store: load, repair durably, construct the unpublished session.

use std::path::{Path, PathBuf};

use dsh_agent::{ResumeError, ResumeSource};
use dsh_kernel::Context;
use dsh_protocol::SessionId;
use dsh_session::{
    SeedSource, SessionStore, SessionsPlugin, TOOL_OUTCOME_UNKNOWN, TOOL_OUTCOME_UNKNOWN_TEXT,
};
use dsh_store::{
    read_header, read_log, Compression, JsonlPersistenceConfig, JsonlPersistencePlugin,
    ResumeCancelled, StoreError,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::super::common::{fixture_log, SCENARIOS};
use super::support::{copy_tree, mount, snapshot};

/// A private copy of a fixture's sessions root; returns (root, log path, session id).
fn fixture_copy(
    dir: &Path,
    scenario: &str,
    compression: Compression,
) -> (PathBuf, PathBuf, SessionId) {
    let (root, log) = fixture_log(scenario, compression);
    let copy = dir.join("sessions");
    copy_tree(&root, &copy);
    let log = copy.join(log.strip_prefix(&root).unwrap());
    let id = SessionId::from(read_header(&log, compression).unwrap().id.as_str());
    (copy, log, id)
}

fn values<E: serde::Serialize>(events: &[E]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

#[tokio::test]
async fn every_fixture_resumes_without_repair_and_stores_its_seed_marker() {
    for compression in [Compression::Zstd, Compression::None] {
        for scenario in SCENARIOS {
            let dir = tempfile::tempdir().unwrap();
            let (root, log, id) = fixture_copy(dir.path(), scenario, compression);
            let stored = read_log(&log, compression, Some(id.as_str())).unwrap();
            let before = snapshot(&root);
            let h = mount(&root, compression);

            let session = h
                .resume
                .prepare(&id, CancellationToken::new())
                .await
                .unwrap();
            let what = format!("{scenario} ({compression:?})");
            assert_eq!(
                snapshot(&root),
                before,
                "{what}: a clean log is not rewritten"
            );
            assert_eq!(
                session.seed_source(),
                Some(SeedSource::Persistence),
                "{what}"
            );
            assert_eq!(
                session.first_live_seq(),
                stored.events.len() as u64,
                "{what}"
            );
            let events = values(&session.events());
            let (seed, marker) = events.split_at(stored.events.len());
            assert_eq!(
                seed,
                &stored.events[..],
                "{what}: the seed is the stored log"
            );
            let seq = stored.events.len();
            assert_eq!(
                marker
                    .iter()
                    .map(|e| json!({"type": e["type"], "seq": e["seq"], "data": e["data"]}))
                    .collect::<Vec<_>>(),
                [json!({"type": "session/end-seed", "seq": seq, "data": {}})],
                "{what}"
            );

            // once published and flushed, the marker is durable too
            h.publish(&session);
            h.sessions.flush(&session).await.unwrap();
            let after = read_log(&log, compression, Some(id.as_str())).unwrap();
            assert_eq!(after.events, events, "{what}");
        }
    }
}

#[tokio::test]
async fn a_crashed_log_gets_its_closers_stored_before_the_session_is_returned() {
    let dir = tempfile::tempdir().unwrap();
    let (root, log, id) = fixture_copy(dir.path(), "bash", Compression::None);
    // the process died right after recording the bash call (seq 31), before its result
    let text = std::fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = text.lines().take(1 + 32).collect();
    std::fs::write(&log, kept.join("\n") + "\n").unwrap();
    let h = mount(&root, Compression::None);

    let session = h
        .resume
        .prepare(&id, CancellationToken::new())
        .await
        .unwrap();
    let time = 1_796_012_159_885_u64;
    let closers = json!([
        {"type": "tool/result", "seq": 32, "time": time,
         "data": {"turn": 1, "step": 1,
                  "message": {"id": "interrupted-tool-result-call_0_0_531abae2-32", "role": "user",
                              "content": [{"type": "tool-result", "toolCallId": "call_0_0_531abae2",
                                           "content": [{"type": "text", "text": TOOL_OUTCOME_UNKNOWN_TEXT}],
                                           "isError": true}],
                              "source": {"kind": "tool", "callId": "call_0_0_531abae2"}},
                  "error": {"name": "ToolOutcomeUnknownError", "code": TOOL_OUTCOME_UNKNOWN}},
         "surfaceOp": "append", "sourceEventSeqs": [31]},
        {"type": "step/end", "seq": 33, "time": time, "data": {"turn": 1, "step": 1}},
        {"type": "turn/end", "seq": 34, "time": time,
         "data": {"turn": 1, "reason": {"kind": "interrupted"}}},
    ]);
    // durable before the caller ever sees the session
    let stored = read_log(&log, Compression::None, Some(id.as_str())).unwrap();
    assert_eq!(stored.events.len(), 35);
    assert_eq!(Value::from(stored.events[32..].to_vec()), closers);
    // and the session holds them, followed by the seed marker
    let events = values(&session.events());
    assert_eq!(Value::from(events[32..35].to_vec()), closers);
    assert_eq!(events.len(), 36);
    assert_eq!(events[35]["type"], "session/end-seed");

    // loading again repairs nothing more
    let before = snapshot(&root);
    let again = values(
        &h.resume
            .prepare(&id, CancellationToken::new())
            .await
            .unwrap()
            .events(),
    );
    assert_eq!(again.len(), 36);
    assert!(
        again[..35] == events[..35],
        "the same closers, not new ones"
    );
    assert_eq!(snapshot(&root), before);
}

#[tokio::test]
async fn a_session_that_is_not_stored_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let h = mount(dir.path(), Compression::Zstd);
    let err = h
        .resume
        .prepare(&SessionId::from("nope"), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ResumeError::NotFound { id } if id.as_str() == "nope"),
        "{err:?}"
    );
    assert_eq!(err.code(), "SESSION_NOT_STORED");
}

#[tokio::test]
async fn corruption_fails_with_the_store_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (root, log, id) = fixture_copy(dir.path(), "text", Compression::None);
    let mut lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines[5] = "{\"type\": not json".into();
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let before = snapshot(&root);
    let h = mount(&root, Compression::None);

    let err = h
        .resume
        .prepare(&id, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RESUME_FAILED");
    let ResumeError::Failed(inner) = err else {
        panic!("expected a failure");
    };
    let store = inner.downcast::<StoreError>().unwrap();
    let StoreError::Corruption { path, at, .. } = &*store else {
        panic!("expected corruption, got {store:?}");
    };
    assert_eq!((path, at.line), (&log, 6));
    assert!(store.to_string().contains("line 6"), "{store}");
    assert_eq!(snapshot(&root), before, "a corrupt log is never modified");
}

#[tokio::test]
async fn a_cancelled_resume_fails_without_loading() {
    let dir = tempfile::tempdir().unwrap();
    let (root, _, id) = fixture_copy(dir.path(), "text", Compression::Zstd);
    let h = mount(&root, Compression::Zstd);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let Err(ResumeError::Failed(inner)) = h.resume.prepare(&id, cancel).await else {
        panic!("a cancelled resume fails");
    };
    let cancelled = inner.downcast::<ResumeCancelled>().unwrap();
    assert_eq!(
        (cancelled.code(), cancelled.id.as_str()),
        ("RESUME_CANCELLED", id.as_str())
    );
}

#[tokio::test]
async fn the_persistence_plugin_provides_the_resume_source() {
    let dir = tempfile::tempdir().unwrap();
    let (root, _, id) = fixture_copy(dir.path(), "multi-turn", Compression::Zstd);
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(()).unwrap();
    ctx.plugin::<JsonlPersistencePlugin>(JsonlPersistenceConfig::new(&root))
        .unwrap();
    let resume = ctx.require::<dyn ResumeSource>().unwrap();
    let session = resume.prepare(&id, CancellationToken::new()).await.unwrap();
    assert_eq!(session.len(), 98);

    // the session is live now: preparing it again is refused while it runs a turn
    let sessions = ctx.require::<SessionStore>().unwrap();
    let _detach = sessions.enter(&ctx, &session).unwrap();
    sessions.announce(&session).unwrap();
    session
        .append(
            dsh_session::EventData::TurnStart(dsh_session::TurnStart { turn: 4 }),
            dsh_session::AppendOptions::log_only(),
        )
        .unwrap();
    let Err(ResumeError::Failed(inner)) = resume.prepare(&id, CancellationToken::new()).await
    else {
        panic!("a running session cannot be resumed");
    };
    let store = inner.downcast::<StoreError>().unwrap();
    assert_eq!(store.code(), "OPEN_TURN");
}
