//! Compatibility with real logs written by the original dsh 0.1.0.

use dsh_session::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn fixture_logs() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dsh-0.1.0");
    assert!(
        root.is_dir(),
        "fixture directory {} is missing; these compatibility tests need /work/shared/fixtures",
        root.display()
    );
    let mut logs = Vec::new();
    for scenario in std::fs::read_dir(&root).unwrap() {
        let scenario = scenario.unwrap().path();
        let sessions = scenario.join("jsonl/sessions");
        if !sessions.is_dir() {
            continue;
        }
        for project in std::fs::read_dir(&sessions).unwrap() {
            for session in std::fs::read_dir(project.unwrap().path()).unwrap() {
                let log = session.unwrap().path().join("session.jsonl");
                assert!(log.is_file(), "{} is missing", log.display());
                let name = scenario.file_name().unwrap().to_string_lossy().into_owned();
                logs.push((name, log));
            }
        }
    }
    logs.sort();
    assert_eq!(logs.len(), 6, "expected the six plain fixture logs");
    logs
}

struct Fixture {
    name: String,
    header: SessionHeader,
    events: Vec<SessionEvent>,
    raw_events: Vec<Value>,
}

fn load(name: String, path: &Path) -> Fixture {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header_line = lines.next().unwrap();
    let raw_header: Value = serde_json::from_str(header_line).unwrap();
    let header: SessionHeader = serde_json::from_str(header_line).unwrap();
    assert_eq!(
        serde_json::to_value(&header).unwrap(),
        raw_header,
        "{name}: header"
    );
    let mut events = Vec::new();
    let mut raw_events = Vec::new();
    for (i, line) in lines.enumerate() {
        let raw: Value = serde_json::from_str(line).unwrap();
        let event = SessionEvent::from_json(line)
            .unwrap_or_else(|e| panic!("{name}: line {} does not parse: {e}", i + 2));
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            raw,
            "{name}: event {i} does not re-serialize unchanged"
        );
        // The serde path agrees with the typed-error path.
        assert_eq!(serde_json::from_str::<SessionEvent>(line).unwrap(), event);
        events.push(event);
        raw_events.push(raw);
    }
    Fixture {
        name,
        header,
        events,
        raw_events,
    }
}

/// The model history a fixture implies, computed from the raw JSON alone: every surface
/// event's message in log order (all fixture surface events are appends), minus empty
/// assistant messages.
fn expected_history(raw_events: &[Value]) -> Vec<Value> {
    raw_events
        .iter()
        .filter(|e| e.get("surfaceOp").is_some())
        .map(|e| match e["type"].as_str().unwrap() {
            "user/message" => e["data"].clone(),
            "assistant/message" | "tool/result" => e["data"]["message"].clone(),
            other => panic!("unexpected surface type {other}"),
        })
        .filter(|m| m["content"].as_array().is_some_and(|c| !c.is_empty()))
        .collect()
}

#[test]
fn every_fixture_line_round_trips_and_every_log_resumes() {
    let mut histories = Vec::new();
    for (name, path) in fixture_logs() {
        let fixture = load(name, &path);
        let Fixture {
            name,
            header,
            events,
            raw_events,
        } = fixture;
        let count = events.len() as u64;
        let session = Session::with_seed(header.clone(), events.clone(), SeedSource::Persistence)
            .unwrap_or_else(|e| panic!("{name}: seed refused: {e}"));
        assert_eq!(session.id(), &header.id);
        assert_eq!(session.first_live_seq(), count);
        // The fixtures end with a turn/end, so resuming adds the end-seed marker.
        assert_eq!(session.len(), count + 1, "{name}");
        assert_eq!(
            session.last_event().unwrap().data,
            EventData::EndSeed,
            "{name}"
        );
        let prefix: Vec<SessionEvent> = session.events()[..count as usize]
            .iter()
            .map(|e| (**e).clone())
            .collect();
        assert_eq!(prefix, events, "{name}: seed kept verbatim");

        let history = serde_json::to_value(session.derive_messages()).unwrap();
        let expected = Value::Array(expected_history(&raw_events));
        assert_eq!(history, expected, "{name}: derived history");
        let arcs: Vec<Arc<SessionEvent>> = events.iter().cloned().map(Arc::new).collect();
        assert_eq!(
            serde_json::to_value(derive_messages(&arcs).unwrap()).unwrap(),
            expected,
            "{name}: pure derivation agrees"
        );

        // Header and context folds track the last records of their kind.
        let last_header = raw_events
            .iter()
            .rev()
            .find(|e| e["type"] == "request/header")
            .unwrap();
        let header_json = serde_json::to_value(&*session.request_header().unwrap()).unwrap();
        assert_eq!(header_json, last_header["data"]["header"], "{name}");
        let context = session.request_context().unwrap();
        assert_eq!(
            (context.provider.as_str(), context.context_window),
            ("deepseek-official", Some(1_000_000))
        );

        // Balanced logs need no repair, and can be forked whole.
        assert!(interrupted_turn_closers(&arcs).is_empty(), "{name}");
        let child = fork(&session, Some(count - 1), "child".into()).unwrap();
        assert_eq!(child.seed.len() as u64, count);
        child.build(&session).unwrap();

        histories.push((name, history.as_array().unwrap().len()));
    }
    let expected_counts = [
        ("bash", 5),
        ("multi-turn", 11),
        ("parallel-tools", 6),
        ("read-edit", 7),
        ("retry", 3),
        ("text", 3),
    ];
    let got: Vec<(&str, usize)> = histories.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(got, expected_counts);
}

#[test]
fn fixture_retry_events_are_typed() {
    let (name, path) = fixture_logs()
        .into_iter()
        .find(|(n, _)| n == "retry")
        .unwrap();
    let fixture = load(name, &path);
    let retry = fixture
        .events
        .iter()
        .find_map(|e| match &e.data {
            EventData::LlmRetry(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (retry.retry, retry.max_retries, retry.failure.code.as_str()),
        (1, Some(5), "SERVER")
    );
    assert!(fixture
        .events
        .iter()
        .any(|e| matches!(&e.data, EventData::LlmRetryStarted(s) if s.retry_id == retry.retry_id)));
    // Plugin-owned records this build does not model stay verbatim.
    assert!(fixture.events.iter().any(|e| matches!(&e.data,
        EventData::Other { type_name, .. } if type_name == "session/title")));
    let _ = fixture.raw_events;
    let _ = fixture.header;
}
