//! The typed layer: fixtures as `SessionEvent`s, resume with crash repair, and the
//! write-behind coordinator over the real backend.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_protocol::SessionId;
use dsh_session::{EventData, SessionEvent, TOOL_OUTCOME_UNKNOWN};
use dsh_store::{
    read_log, Compression, JsonlBackend, JsonlConfig, LogFormat, LogHeader, LogLock, LogWriter,
    SessionPersistence, TornReason, WriteBehindConfig, WriteCoordinator,
};
use serde_json::{json, Value};

use super::common::{fixture_log, SCENARIOS};

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A scratch copy of one fixture's sessions root and a backend over it.
fn fixture_backend(
    scenario: &str,
    compression: Compression,
) -> (tempfile::TempDir, JsonlBackend, SessionId, PathBuf) {
    let (root, log) = fixture_log(scenario, compression);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root, dir.path());
    let log = dir.path().join(log.strip_prefix(&root).unwrap());
    let id = SessionId::from(read_log(&log, compression, None).unwrap().header.id);
    let config = JsonlConfig {
        root: dir.path().to_owned(),
        compression,
        pack_chunks: compression == Compression::Zstd,
    };
    (dir, JsonlBackend::new(config), id, log)
}

fn values(events: &[Arc<SessionEvent>]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(&**e).unwrap())
        .collect()
}

#[test]
fn fixture_events_are_typed_without_loss() {
    for scenario in SCENARIOS {
        for compression in [Compression::Zstd, Compression::None] {
            let (_, path) = fixture_log(scenario, compression);
            let log = read_log(&path, compression, None).unwrap();
            for value in &log.events {
                // Equal as JSON values; key order inside messages may differ from the
                // original's, which no reader depends on.
                let typed = SessionEvent::from_value(value).unwrap();
                assert_eq!(&serde_json::to_value(&typed).unwrap(), value, "{scenario}");
            }
        }
    }
}

#[test]
fn balanced_fixtures_resume_without_touching_the_log() {
    for scenario in SCENARIOS {
        for compression in [Compression::Zstd, Compression::None] {
            let (_dir, backend, id, log) = fixture_backend(scenario, compression);
            let before = fs::read(&log).unwrap();
            let inspection = backend.inspect(&id).unwrap();
            assert!(!inspection.needs_repair(), "{scenario}");
            let stored = backend.load(&id).unwrap();
            let prepared = backend.prepare(&id).unwrap();
            assert!(prepared.closers.is_empty());
            assert_eq!(prepared.torn_tail, None);
            let events = prepared.session.events();
            // the stored events, then the end-seed marker the resume adds (not stored yet)
            assert_eq!(values(&events[..events.len() - 1]), values(&stored.events));
            assert!(matches!(events.last().unwrap().data, EventData::EndSeed));
            assert_eq!(backend.next_seq(&id).unwrap(), stored.events.len() as u64);
            assert_eq!(fs::read(&log).unwrap(), before, "{scenario}");
            assert_eq!(backend.read_from(&id, 30).unwrap().first().unwrap().seq, 30);
        }
    }
}

#[test]
fn a_crashed_turn_is_closed_durably_on_resume() {
    for format in [
        LogFormat {
            compression: Compression::Zstd,
            pack_chunks: true,
        },
        LogFormat {
            compression: Compression::None,
            pack_chunks: false,
        },
    ] {
        let (_, source) = fixture_log("bash", Compression::None);
        let original = read_log(&source, Compression::None, None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let id = "session-crashed";
        let path = dsh_store::StoreLayout::new(dir.path(), format.compression)
            .session_file(Some("/home/user/project"), id)
            .unwrap();
        let mut header = LogHeader::new(id, original.header.created_at);
        header.cwd = original.header.cwd.clone();
        let mut writer = LogWriter::create_lazy(&path, format, header);
        // the process died right after recording the bash call (seq 31) ...
        writer.append(&original.events[..20]).unwrap();
        writer.append(&original.events[20..32]).unwrap();
        drop(writer);
        // ... while writing the next batch
        let mut torn = fs::read(&path).unwrap();
        let partial: &[u8] = match format.compression {
            Compression::None => br#"{"type":"tool/result","seq":32"#,
            Compression::Zstd => &[0x28, 0xb5, 0x2f, 0xfd, 0x04],
        };
        torn.extend_from_slice(partial);
        fs::write(&path, &torn).unwrap();

        let backend = JsonlBackend::new(JsonlConfig {
            root: dir.path().to_owned(),
            compression: format.compression,
            pack_chunks: format.pack_chunks,
        });
        let id = SessionId::from(id);
        let inspection = backend.inspect(&id).unwrap();
        assert!(inspection.needs_repair());
        assert_eq!(inspection.events, 32);
        assert_eq!(fs::read(&path).unwrap(), torn, "inspect changes nothing");

        let prepared = backend.prepare(&id).unwrap();
        let tail = prepared.torn_tail.clone().unwrap();
        let expected_reason = match format.compression {
            Compression::None => TornReason::IncompleteLine,
            Compression::Zstd => TornReason::IncompleteFrame,
        };
        assert_eq!(tail.reason, expected_reason);
        let closer_types: Vec<&str> = prepared.closers.iter().map(|e| e.type_name()).collect();
        assert_eq!(closer_types, ["tool/result", "step/end", "turn/end"]);
        let result = serde_json::to_value(&prepared.closers[0]).unwrap();
        assert_eq!(result["data"]["error"]["code"], TOOL_OUTCOME_UNKNOWN);
        assert_eq!(result["sourceEventSeqs"], json!([31]));
        let end = serde_json::to_value(&prepared.closers[2]).unwrap();
        assert_eq!(
            end["data"],
            json!({"turn": 1, "reason": {"kind": "interrupted"}})
        );

        // the repair is on disk: the log reads back whole and balanced
        let repaired = read_log(&path, format.compression, Some(id.as_str())).unwrap();
        assert_eq!(repaired.torn_tail, None);
        let mut expected = original.events[..32].to_vec();
        expected.extend(
            prepared
                .closers
                .iter()
                .map(|e| serde_json::to_value(e).unwrap()),
        );
        assert_eq!(repaired.events, expected);
        backend.release(&id);
        assert!(!backend.inspect(&id).unwrap().needs_repair());
        // and resuming again is a no-op
        let again = backend.prepare(&id).unwrap();
        assert!(again.closers.is_empty());
    }
}

#[test]
fn refused_logs_are_reported_and_left_alone() {
    let (_dir, backend, id, log) = fixture_backend("text", Compression::None);
    let mut text = fs::read_to_string(&log).unwrap();
    text += "{\"type\":\"acme/required\",\"seq\":35,\"time\":1,\"data\":{}}\n";
    fs::write(&log, &text).unwrap();
    for err in [
        backend.prepare(&id).unwrap_err(),
        backend.inspect(&id).unwrap_err(),
    ] {
        assert_eq!(err.code(), "UNKNOWN_EVENT_TYPE");
    }
    assert_eq!(fs::read_to_string(&log).unwrap(), text);
    // an ignorable plugin event is carried through
    let text = text.replace("\"data\":{}}\n", "\"data\":{},\"ignorable\":true}\n");
    fs::write(&log, &text).unwrap();
    let prepared = backend.prepare(&id).unwrap();
    assert_eq!(prepared.session.events()[35].type_name(), "acme/required");

    let header = text
        .lines()
        .next()
        .unwrap()
        .replace("\"version\":0", "\"version\":1");
    fs::write(&log, format!("{header}\n")).unwrap();
    assert_eq!(
        backend.prepare(&id).unwrap_err().code(),
        "SESSION_FORMAT_UNSUPPORTED"
    );
}

#[test]
fn a_held_writer_lock_refuses_every_other_writer_and_a_repair_works_under_it() {
    let (_dir, backend, id, log) = fixture_backend("multi-turn", Compression::None);
    // A crash in turn 2: the log stops mid-write of a line.
    let original = fs::read_to_string(&log).unwrap();
    let kept: Vec<&str> = original.lines().take(60).collect();
    let crashed = kept.join("\n") + "\n{\"type\":\"assistant/chu";
    fs::write(&log, &crashed).unwrap();

    let held = LogLock::acquire(&log).unwrap();
    assert_eq!(held.path(), log);
    assert_eq!(LogLock::acquire(&log).unwrap_err().code(), "SESSION_LOCKED");
    // A writer that did not take part in the lock (a resume) is refused, the log untouched.
    assert_eq!(backend.prepare(&id).unwrap_err().code(), "SESSION_LOCKED");
    assert_eq!(fs::read_to_string(&log).unwrap(), crashed);

    let prepared = backend.prepare_locked(&id, &held).unwrap();
    assert!(prepared.torn_tail.is_some());
    assert!(!prepared.closers.is_empty());
    backend.release(&id);
    // The lock is still held (the writer shared it), until it is dropped.
    assert_eq!(LogLock::acquire(&log).unwrap_err().code(), "SESSION_LOCKED");
    drop(held);
    let again = LogLock::acquire(&log).unwrap();
    // Restoring in place keeps the same file (and so the lock).
    again.rewrite(crashed.as_bytes()).unwrap();
    assert_eq!(fs::read_to_string(&log).unwrap(), crashed);
    again.truncate(10).unwrap();
    assert_eq!(fs::metadata(&log).unwrap().len(), 10);
}

/// A backend over `root` that writes new logs in `compression`.
fn backend_writing(root: &Path, compression: Compression) -> JsonlBackend {
    JsonlBackend::new(JsonlConfig {
        root: root.to_owned(),
        compression,
        pack_chunks: true,
    })
}

#[test]
fn logs_in_either_encoding_are_found_whatever_is_configured() {
    for stored in [Compression::None, Compression::Zstd] {
        let (dir, native, id, log) = fixture_backend("multi-turn", stored);
        let expected = values(&native.load(&id).unwrap().events);
        // configured the other way, as a plain log under the default zstd setting is
        let other = backend_writing(dir.path(), stored.other());
        assert_eq!(other.locate(&id).unwrap(), log);
        assert_eq!(Compression::of_path(&log), Some(stored));
        let listed = other.list().unwrap();
        assert_eq!(
            listed
                .iter()
                .map(|s| (&s.id[..], s.problem.is_none()))
                .collect::<Vec<_>>(),
            vec![(id.as_str(), true)]
        );
        assert_eq!(values(&other.load(&id).unwrap().events), expected);
        assert!(!other.inspect(&id).unwrap().needs_repair());
        assert_eq!(other.read_from(&id, 0).unwrap().len(), expected.len());

        // resuming keeps the log's own encoding: appends land in the same file
        let prepared = other.prepare(&id).unwrap();
        let marker = prepared.session.events().last().unwrap().clone();
        other.append(&id, &[marker]).unwrap();
        other.release(&id);
        let reread = read_log(&log, stored, Some(id.as_str())).unwrap();
        assert_eq!(reread.events.len(), expected.len() + 1);
        assert!(!log.with_file_name(stored.other().file_name()).exists());

        // a fork is a new session: it is written in the configured encoding
        let child = dsh_store::fork_stored(&other, &id, None, SessionId::from("child")).unwrap();
        let child_log = other.locate(&child.id).unwrap();
        assert_eq!(Compression::of_path(&child_log), Some(stored.other()));
        assert_eq!(
            native.locate(&child.id).unwrap(),
            child_log,
            "the native backend finds the child too"
        );
    }
}

#[test]
fn new_sessions_use_the_configured_encoding_and_never_shadow_an_existing_log() {
    let (dir, _, id, log) = fixture_backend("text", Compression::None);
    let zstd = backend_writing(dir.path(), Compression::Zstd);
    let header = zstd.load(&id).unwrap().header;
    // the id is taken, even though its log is in the other encoding
    let err = zstd.create(&header).unwrap_err();
    assert_eq!(err.code(), "SESSION_ALREADY_EXISTS");
    assert!(
        err.to_string().contains(&log.display().to_string()),
        "{err}"
    );

    let mut fresh = header.clone();
    fresh.id = SessionId::from("fresh");
    zstd.create(&fresh).unwrap();
    let session = dsh_session::Session::new(fresh.clone()).unwrap();
    let event = session
        .append(
            EventData::TurnStart(dsh_session::TurnStart { turn: 1 }),
            dsh_session::AppendOptions::log_only(),
        )
        .unwrap();
    zstd.append(&fresh.id, &[event]).unwrap();
    assert_eq!(
        Compression::of_path(&zstd.locate(&fresh.id).unwrap()),
        Some(Compression::Zstd)
    );
}

#[test]
fn a_log_stored_in_both_encodings_is_an_error_naming_both() {
    let (dir, backend, id, log) = fixture_backend("text", Compression::None);
    let (_, zstd_fixture) = fixture_log("text", Compression::Zstd);
    let zstd_log = log.with_file_name(Compression::Zstd.file_name());
    fs::copy(zstd_fixture, &zstd_log).unwrap();
    let plain_before = fs::read(&log).unwrap();
    let for_each_call = |backend: &JsonlBackend| {
        let errors = [
            backend.locate(&id).unwrap_err(),
            backend.load(&id).unwrap_err(),
            backend.inspect(&id).unwrap_err(),
            backend.prepare(&id).unwrap_err(),
        ];
        for err in errors {
            assert_eq!(err.code(), "SESSION_LOG_DUPLICATED");
            assert_eq!(
                err.to_string(),
                format!(
                    "session log exists twice, as {} and as {}; keep the one with the \
                     session's latest events and move the other out of the directory",
                    log.display(),
                    zstd_log.display()
                )
            );
        }
    };
    for_each_call(&backend);
    for_each_call(&backend_writing(dir.path(), Compression::Zstd));
    // listing still shows the session once
    assert_eq!(backend.list().unwrap().len(), 1);
    assert_eq!(fs::read(&log).unwrap(), plain_before);
    assert_eq!(
        backend
            .prepare(&SessionId::from("nope"))
            .unwrap_err()
            .code(),
        "SESSION_NOT_FOUND"
    );
}

#[tokio::test]
async fn the_coordinator_persists_live_and_resumed_sessions() {
    let (_, source) = fixture_log("bash", Compression::Zstd);
    let original = read_log(&source, Compression::Zstd, None).unwrap();
    let typed: Vec<SessionEvent> = original
        .events
        .iter()
        .map(|v| SessionEvent::from_value(v).unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(JsonlBackend::new(JsonlConfig::new(dir.path())));
    let coordinator = WriteCoordinator::new(backend.clone(), WriteBehindConfig::default());

    let mut header = dsh_session::SessionHeader::new("live".into(), 1);
    header.cwd = Some("/home/user/project".into());
    let session = dsh_session::Session::new(header).unwrap();
    coordinator.register(&session).unwrap();
    let path = backend
        .layout()
        .session_file(Some("/home/user/project"), "live")
        .unwrap();
    for event in &typed {
        let opts = dsh_session::AppendOptions {
            surface_op: event.surface_op,
            source_event_seqs: event.source_event_seqs.clone(),
            ignorable: event.ignorable,
        };
        session.append(event.data.clone(), opts).unwrap();
        coordinator.notify(session.id());
        if event.seq == 20 {
            assert!(
                !path.exists(),
                "nothing is written before a flush or the window"
            );
            coordinator.flush(session.id()).await.unwrap();
            assert!(path.exists());
        }
    }
    coordinator.release(session.id()).await.unwrap();
    let stored = read_log(&path, Compression::Zstd, Some("live")).unwrap();
    let data = |events: &[Value]| {
        events
            .iter()
            .map(|e| (e["type"].clone(), e["data"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(data(&stored.events), data(&original.events));
    assert_eq!(stored.events, values(&session.events()));
    // the deltas the typed layer produced were packed like the original's
    let text = zstd::stream::decode_all(fs::read(&path).unwrap().as_slice()).unwrap();
    let rows = String::from_utf8(text)
        .unwrap()
        .lines()
        .filter(|l| {
            dsh_store::chunk_rows::is_packed_row_type(
                serde_json::from_str::<Value>(l).unwrap()["type"]
                    .as_str()
                    .unwrap(),
            )
        })
        .count();
    assert!(rows >= 3, "packed rows: {rows}");

    // resume: the end-seed marker is stored by the first flush
    let prepared = backend.prepare(session.id()).unwrap();
    coordinator.register(&prepared.session).unwrap();
    coordinator.flush(session.id()).await.unwrap();
    let stored = read_log(&path, Compression::Zstd, Some("live")).unwrap();
    assert_eq!(stored.events.len(), typed.len() + 1);
    assert_eq!(stored.events.last().unwrap()["type"], "session/end-seed");
    let listed = backend.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].events, typed.len() as u64 + 1);
    assert_eq!(listed[0].last_outcome.as_deref(), Some("completed"));
}

#[test]
fn a_log_moved_to_another_workspace_is_refused() {
    let (dir, backend, id, log) = fixture_backend("text", Compression::None);
    let moved = dir.path().join("--elsewhere--");
    fs::create_dir_all(&moved).unwrap();
    fs::rename(log.parent().unwrap(), moved.join(id.as_str())).unwrap();
    let err = backend.prepare(&id).unwrap_err();
    assert_eq!(err.code(), "SESSION_PERSISTENCE_CORRUPTION");
    assert!(err.to_string().contains("--home-user-project--"), "{err}");
}
