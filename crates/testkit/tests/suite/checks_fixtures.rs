//! Every session log written by dsh 0.1.0 passes every checker.

use std::path::{Path, PathBuf};

use dsh_session::SessionEvent;
use dsh_testkit::checks::{check_all, render};

/// `shared/fixtures/dsh-0.1.0` beside the repository clone.
pub fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/dsh-0.1.0")
}

fn find_logs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            find_logs(&path, out);
        } else if path.file_name().is_some_and(|n| n == "session.jsonl") {
            out.push(path);
        }
    }
}

/// Every plain-JSONL fixture log (`*/jsonl/**/session.jsonl`), sorted.
pub fn fixture_logs() -> Vec<PathBuf> {
    let mut logs = Vec::new();
    for scenario in std::fs::read_dir(fixtures_root()).unwrap() {
        let jsonl = scenario.unwrap().path().join("jsonl");
        if jsonl.is_dir() {
            find_logs(&jsonl, &mut logs);
        }
    }
    logs.sort();
    logs
}

/// The events of a JSONL log (the header line skipped).
pub fn load_events(path: &Path) -> Vec<SessionEvent> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .filter(|line| !line.trim().is_empty())
        .map(|line| SessionEvent::from_json(line).unwrap())
        .collect()
}

#[test]
fn every_fixture_log_passes_every_check() {
    let logs = fixture_logs();
    assert!(logs.len() >= 6, "found only {logs:?}");
    for path in logs {
        let events = load_events(&path);
        assert!(!events.is_empty(), "{path:?}");
        if let Err(violations) = check_all(&events) {
            panic!("{path:?}:\n{}", render(&violations));
        }
    }
}

#[test]
fn a_tampered_fixture_is_caught() {
    use dsh_session::EventData;
    use dsh_testkit::checks::Invariant;
    for path in fixture_logs() {
        let mut events = load_events(&path);
        let message = events
            .iter_mut()
            .find(|e| matches!(e.data, EventData::AssistantMessage(_)))
            .unwrap();
        message.source_event_seqs.as_mut().unwrap().pop();
        let seq = message.seq;
        let found = check_all(&events).unwrap_err();
        assert_eq!(
            found
                .iter()
                .map(|v| (v.invariant, v.seq))
                .collect::<Vec<_>>(),
            [(Invariant::CompletionAnchor, Some(seq))],
            "{path:?}"
        );
    }
}
