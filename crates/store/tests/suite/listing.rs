//! The listing index: built from logs when missing, trusted while fresh, refreshed when stale.

use std::fs;
use std::path::Path;
use std::time::Duration;

use dsh_store::{
    Compression, JsonlBackend, JsonlConfig, LogFormat, LogHeader, LogWriter, SessionPersistence,
    SessionSummary, StoreLayout, INDEX_FILE,
};
use serde_json::{json, Value};

use std::sync::Arc;

use dsh_protocol::SessionId;
use dsh_session::{SessionEvent, SessionHeader};

use super::common::{text_delta, turn_end, turn_start};

fn prompt(seq: u64, text: &str) -> Value {
    json!({"type": "user/message", "seq": seq, "time": 1000 + seq, "surfaceOp": "append",
           "data": {"id": format!("m{seq}"), "role": "user", "source": {"kind": "user"},
                    "content": [{"type": "text", "text": text}]}})
}

fn write_session(root: &Path, id: &str, cwd: &str, turns: u64) -> std::path::PathBuf {
    let path = StoreLayout::new(root, Compression::None)
        .session_file(Some(cwd), id)
        .unwrap();
    let mut header = LogHeader::new(id, 7);
    header.cwd = Some(cwd.into());
    let format = LogFormat {
        compression: Compression::None,
        pack_chunks: false,
    };
    let mut writer = LogWriter::create_lazy(&path, format, header);
    let mut seq = 0;
    for turn in 1..=turns {
        writer
            .append(&[
                turn_start(seq, turn),
                prompt(seq + 1, &format!("task {id} {turn}")),
                turn_end(seq + 2, turn),
            ])
            .unwrap();
        seq += 3;
    }
    path
}

fn backend(root: &Path) -> JsonlBackend {
    JsonlBackend::new(JsonlConfig {
        root: root.to_owned(),
        compression: Compression::None,
        pack_chunks: false,
    })
}

/// Replaces a log's bytes with garbage of the same length and keeps its mtime, so only a
/// reader that opens the log can tell.
fn garble_keeping_stamp(path: &Path) {
    let modified = fs::metadata(path).unwrap().modified().unwrap();
    let len = fs::metadata(path).unwrap().len() as usize;
    fs::write(path, vec![b'#'; len]).unwrap();
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(modified)
        .unwrap();
}

#[test]
fn a_missing_index_is_rebuilt_from_the_logs() {
    let dir = tempfile::tempdir().unwrap();
    write_session(dir.path(), "a", "/w/one", 2);
    write_session(dir.path(), "b", "/w/two", 1);
    let listed = backend(dir.path()).list().unwrap();
    let size = |id: &str| {
        fs::metadata(
            StoreLayout::new(dir.path(), Compression::None)
                .session_file(Some(if id == "a" { "/w/one" } else { "/w/two" }), id)
                .unwrap(),
        )
        .unwrap()
        .len()
    };
    assert_eq!(
        listed,
        vec![
            SessionSummary {
                id: "a".into(),
                cwd: Some("/w/one".into()),
                title: Some("task a 1".into()),
                created_at: 7,
                updated_at: 1005,
                turns: 2,
                events: 6,
                size: size("a"),
                last_outcome: Some("completed".into()),
                parent_session: None,
                delegation_depth: None,
                problem: None,
            },
            SessionSummary {
                id: "b".into(),
                cwd: Some("/w/two".into()),
                title: Some("task b 1".into()),
                created_at: 7,
                updated_at: 1002,
                turns: 1,
                events: 3,
                size: size("b"),
                last_outcome: Some("completed".into()),
                parent_session: None,
                delegation_depth: None,
                problem: None,
            },
        ]
    );
    assert!(dir.path().join(INDEX_FILE).exists());
}

#[test]
fn fresh_entries_are_trusted_and_stale_ones_refreshed() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_session(dir.path(), "a", "/w", 1);
    let first = backend(dir.path()).list().unwrap();
    garble_keeping_stamp(&path);
    // a new process (empty memory) trusts the index file without opening the log
    assert_eq!(backend(dir.path()).list().unwrap(), first);
    // a log that changed since its entry is read again
    fs::write(&path, b"garbage of another size\n").unwrap();
    let listed = backend(dir.path()).list().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0]
        .problem
        .as_deref()
        .unwrap()
        .starts_with("SESSION_PERSISTENCE_CORRUPTION"));
    // a deleted log leaves the listing
    fs::remove_dir_all(path.parent().unwrap()).unwrap();
    assert_eq!(backend(dir.path()).list().unwrap(), vec![]);
}

#[test]
fn appends_keep_the_index_fresh_without_rereading() {
    use dsh_session::{AppendOptions, EventData, Session, SessionHeader, TurnStart};
    let dir = tempfile::tempdir().unwrap();
    let store = backend(dir.path());
    let mut header = SessionHeader::new("live".into(), 3);
    header.cwd = Some("/w".into());
    store.create(&header).unwrap();
    let session = Session::new(header).unwrap();
    for turn in 1..=3 {
        let event = session
            .append(
                EventData::TurnStart(TurnStart { turn }),
                AppendOptions::log_only(),
            )
            .unwrap();
        store.append(session.id(), &[event]).unwrap();
    }
    let path = store.locate(session.id()).unwrap();
    // make sure the mtime moves past the coarse timestamp of the last append
    std::thread::sleep(Duration::from_millis(5));
    garble_keeping_stamp(&path);
    let listed = backend(dir.path()).list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].turns, listed[0].events, listed[0].problem.clone()),
        (3, 3, None)
    );
}

/// Lists `n` sessions twice; the second listing must not open a single log.
fn bulk_listing(root: &Path, n: usize) {
    let mut paths = Vec::new();
    // written directly: hundreds of fsyncing writers would dominate the suite's time
    let layout = StoreLayout::new(root, Compression::None);
    for i in 0..n {
        let id = format!("s{i:05}");
        let cwd = format!("/w/{}", i % 10);
        let path = layout.session_file(Some(&cwd), &id).unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut header = LogHeader::new(id.as_str(), 7);
        header.cwd = Some(cwd);
        let mut text = format!("{}\n", header.to_value());
        for event in [
            turn_start(0, 1),
            prompt(1, &format!("task {i}")),
            turn_end(2, 1),
        ] {
            text += &format!("{event}\n");
        }
        fs::write(&path, text).unwrap();
        paths.push(path);
    }
    let first = backend(root).list().unwrap();
    assert_eq!(first.len(), n);
    for path in &paths {
        garble_keeping_stamp(path);
    }
    let started = std::time::Instant::now();
    let second = backend(root).list().unwrap();
    eprintln!(
        "listed {n} sessions from the index in {:?}",
        started.elapsed()
    );
    assert_eq!(second, first);
}

#[test]
fn listing_many_sessions_reads_only_the_index() {
    let dir = tempfile::tempdir().unwrap();
    bulk_listing(dir.path(), 200);
}

#[test]
#[ignore = "slow: creates 10,000 sessions; run with --ignored"]
fn listing_ten_thousand_sessions_reads_only_the_index() {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .unwrap();
    bulk_listing(dir.path(), 10_000);
}

/// The names directly under the store root.
fn root_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_index_that_is_a_directory_is_listed_around_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    write_session(dir.path(), "a", "/w/one", 1);
    fs::create_dir(dir.path().join(INDEX_FILE)).unwrap();
    let before = root_names(dir.path());
    for n in 1..=3 {
        let store = backend(dir.path());
        let listed = store.list().unwrap();
        assert_eq!(listed.len(), n);
        assert_eq!(listed.iter().map(|s| s.turns).sum::<u64>(), n as u64);
        let problem = store.index_problem().unwrap();
        assert!(problem.contains("is a directory"), "{problem}");
        // an append updates the index too, and must not create anything either
        use dsh_session::{AppendOptions, EventData, Session, SessionHeader, TurnStart};
        let mut header = SessionHeader::new(format!("live{n}").into(), 3);
        header.cwd = Some("/w/one".into());
        store.create(&header).unwrap();
        let session = Session::new(header).unwrap();
        let event = session
            .append(
                EventData::TurnStart(TurnStart { turn: 1 }),
                AppendOptions::log_only(),
            )
            .unwrap();
        store.append(session.id(), &[event]).unwrap();
    }
    assert_eq!(root_names(dir.path()), before);
    assert!(dir.path().join(INDEX_FILE).is_dir());
}

#[test]
fn an_index_that_is_a_fifo_or_a_device_is_never_read() {
    for target in ["fifo", "/dev/zero"] {
        let dir = tempfile::tempdir().unwrap();
        write_session(dir.path(), "a", "/w/one", 2);
        let index = dir.path().join(INDEX_FILE);
        if target == "fifo" {
            let name = std::ffi::CString::new(index.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: `name` is a NUL-terminated path that outlives the call.
            assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        } else {
            std::os::unix::fs::symlink(target, &index).unwrap();
        }
        // Would block forever (FIFO) or read without end (/dev/zero) before the fix.
        let store = backend(dir.path());
        let listed = store.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].turns, 2);
        let problem = store.index_problem().unwrap();
        assert!(problem.contains("not a regular file"), "{problem}");
        // the rewrite replaced the odd entry with a real index, which the next process uses
        assert!(fs::symlink_metadata(&index).unwrap().is_file());
        let next = backend(dir.path());
        assert_eq!(next.list().unwrap(), listed);
        assert_eq!(next.index_problem(), None);
    }
}

/// A live session written the way the agent loop writes it: a turn opened, then small
/// batches that only grow the log (a step's checkpoints), as typed events.
fn live_session(root: &Path) -> (JsonlBackend, SessionId, std::path::PathBuf) {
    let store = backend(root);
    let mut header = SessionHeader::new("live".into(), 7);
    header.cwd = Some("/w".into());
    store.create(&header).unwrap();
    let id = SessionId::from("live");
    let typed = |values: Vec<Value>| -> Vec<Arc<SessionEvent>> {
        values
            .into_iter()
            .map(|v| Arc::new(SessionEvent::from_value(&v).unwrap()))
            .collect()
    };
    store
        .append(&id, &typed(vec![turn_start(0, 1), prompt(1, "first task")]))
        .unwrap();
    for seq in 2..8 {
        store
            .append(&id, &typed(vec![text_delta(seq, "growing ")]))
            .unwrap();
    }
    let path = store.layout().session_file(Some("/w"), "live").unwrap();
    (store, id, path)
}

/// The last line the index file holds for `path`'s log.
fn last_line_size(root: &Path) -> u64 {
    let text = fs::read_to_string(root.join(INDEX_FILE)).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    last["size"].as_u64().unwrap()
}

/// Checkpoints that only grow a log do not each append to the index file; the process's
/// own listing is current anyway, and a process that dies mid-turn leaves an entry that a
/// new process sees is stale and recomputes, so its listing is the same.
#[test]
fn the_listing_stays_right_across_a_crash_mid_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, path) = live_session(dir.path());
    let size = fs::metadata(&path).unwrap().len();
    let own = store.list().unwrap();
    assert_eq!((own.len(), own[0].events, own[0].size), (1, 8, size));
    assert_eq!(own[0].title.as_deref(), Some("first task"));
    // The file holds the entry of the turn's start, not of every checkpoint since.
    assert!(last_line_size(dir.path()) < size);
    // The process dies: no release, no drop.
    std::mem::forget(store);
    assert_eq!(backend(dir.path()).list().unwrap(), own);
}

/// Releasing a session (its agent is done) writes the entry held back, so a new process
/// trusts it without opening the log; so does dropping the store.
#[test]
fn releasing_or_dropping_the_store_writes_the_held_back_entry() {
    for release in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (store, id, path) = live_session(dir.path());
        let own = store.list().unwrap();
        if release {
            store.release(&id);
        }
        drop(store);
        assert_eq!(
            last_line_size(dir.path()),
            fs::metadata(&path).unwrap().len()
        );
        garble_keeping_stamp(&path);
        assert_eq!(
            backend(dir.path()).list().unwrap(),
            own,
            "release: {release}"
        );
    }
}
