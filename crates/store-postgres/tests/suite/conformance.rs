//! The persistence seam's contract, run against both backends: the file backend (the
//! reference) and PostgreSQL on a throwaway cluster.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_session::{SessionEvent, SessionHeader};
use dsh_store::{
    read_typed_log, Compression, JsonlBackend, JsonlConfig, SessionPersistence, StoreError,
};
use dsh_store_postgres::{PgConfig, PostgresBackend};
use serde_json::Value;

use dsh_testkit::pg_cluster::Cluster;

pub const SCENARIOS: [&str; 6] = [
    "text",
    "bash",
    "read-edit",
    "multi-turn",
    "retry",
    "parallel-tools",
];

/// One backend under test, and what must live as long as it.
pub struct Store {
    pub open: Box<dyn Fn() -> Arc<dyn SessionPersistence>>,
    _keep: Box<dyn std::any::Any>,
}

pub fn files() -> Option<Store> {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().to_owned();
    Some(Store {
        open: Box::new(move || Arc::new(JsonlBackend::new(JsonlConfig::new(&root)))),
        _keep: Box::new(dir),
    })
}

pub fn open_pg(url: &str) -> PostgresBackend {
    let config = PgConfig::parse(url, None).expect("url");
    PostgresBackend::open(config).expect("open the store").0
}

pub fn postgres() -> Option<Store> {
    let cluster = Cluster::start()?;
    let url = cluster.url();
    Some(Store {
        open: Box::new(move || Arc::new(open_pg(&url))),
        _keep: Box::new(cluster),
    })
}

/// The original's fixture session of a scenario: its header and events.
pub fn fixture(scenario: &str) -> (SessionHeader, Vec<Arc<SessionEvent>>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/dsh-0.1.0")
        .join(scenario)
        .join("jsonl/sessions/--home-user-project--");
    let dir: PathBuf = std::fs::read_dir(&root)
        .expect("fixture dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a session dir");
    let log = read_typed_log(&dir.join("session.jsonl"), Compression::None, None).expect("read");
    let header = serde_json::from_value(log.header.to_value()).expect("header");
    (header, log.events)
}

pub fn values(events: &[Arc<SessionEvent>]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(&**e).expect("json"))
        .collect()
}

fn store_in_batches(
    store: &dyn SessionPersistence,
    header: &SessionHeader,
    events: &[Arc<SessionEvent>],
) {
    store.create(header).expect("create");
    for batch in events.chunks(7) {
        store.append(&header.id, batch).expect("append");
    }
}

macro_rules! both_backends {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            #[test]
            fn files() {
                if let Some(store) = super::files() {
                    super::$case(&store);
                }
            }
            #[test]
            fn postgres() {
                if let Some(store) = super::postgres() {
                    super::$case(&store);
                }
            }
        }
    )*};
}

both_backends!(
    fixture_sessions_round_trip,
    appends_must_continue_the_stored_seq,
    a_session_id_is_created_once,
    a_crashed_turn_is_closed_durably,
    one_writer_per_session,
    listing_summarizes_without_events,
);

fn fixture_sessions_round_trip(store: &Store) {
    let backend = (store.open)();
    for scenario in SCENARIOS {
        let (header, events) = fixture(scenario);
        store_in_batches(&*backend, &header, &events);
        assert_eq!(
            backend.next_seq(&header.id).expect("seq"),
            events.len() as u64
        );
        let loaded = backend.load(&header.id).expect("load");
        assert_eq!(values(&loaded.events), values(&events), "{scenario}");
        assert_eq!(loaded.header, header);
        let tail = backend.read_from(&header.id, 3).expect("read from");
        assert_eq!(values(&tail), values(&events[3..]));
        // A second process reads the same.
        backend.release(&header.id);
        let other = (store.open)();
        assert_eq!(
            values(&other.load(&header.id).expect("load").events),
            values(&events)
        );
        let inspection = other.inspect(&header.id).expect("inspect");
        assert!(!inspection.needs_repair(), "{scenario}");
        assert_eq!(inspection.events, events.len() as u64);
    }
}

fn appends_must_continue_the_stored_seq(store: &Store) {
    let backend = (store.open)();
    let (header, events) = fixture("text");
    backend.create(&header).expect("create");
    backend.append(&header.id, &events[..3]).expect("append");
    let err = backend.append(&header.id, &events[4..6]).expect_err("gap");
    assert_eq!(err.code(), "SESSION_SEQ_MISMATCH", "{err}");
    let err = backend
        .append(&header.id, &events[1..3])
        .expect_err("overlap");
    assert_eq!(err.code(), "SESSION_SEQ_MISMATCH", "{err}");
    backend.append(&header.id, &events[3..]).expect("continue");
    assert_eq!(
        values(&backend.load(&header.id).expect("load").events),
        values(&events)
    );
}

fn a_session_id_is_created_once(store: &Store) {
    let backend = (store.open)();
    let (header, events) = fixture("text");
    backend.create(&header).expect("create");
    backend.append(&header.id, &events[..2]).expect("append");
    backend.release(&header.id);
    let err = backend.create(&header).expect_err("exists");
    assert_eq!(err.code(), "SESSION_ALREADY_EXISTS", "{err}");
    let err = (store.open)()
        .load(&dsh_protocol::SessionId::new("no-such-session"))
        .expect_err("missing");
    assert_eq!(err.code(), "SESSION_NOT_FOUND", "{err}");
}

fn a_crashed_turn_is_closed_durably(store: &Store) {
    let (header, events) = fixture("multi-turn");
    let last_end = events
        .iter()
        .rposition(|e| e.type_name() == "turn/end")
        .expect("a turn/end");
    {
        let crashed = (store.open)();
        store_in_batches(&*crashed, &header, &events[..last_end]);
        crashed.release(&header.id);
    }
    let backend = (store.open)();
    let inspection = backend.inspect(&header.id).expect("inspect");
    assert!(!inspection.pending_closers.is_empty());
    let prepared = backend.prepare(&header.id).expect("prepare");
    assert_eq!(prepared.closers.len(), inspection.pending_closers.len());
    let stored = last_end as u64 + prepared.closers.len() as u64;
    assert_eq!(backend.next_seq(&header.id).expect("seq"), stored);
    backend.release(&header.id);
    let again = (store.open)();
    assert!(!again.inspect(&header.id).expect("inspect").needs_repair());
    let loaded = again.load(&header.id).expect("load");
    assert_eq!(loaded.events.len() as u64, stored);
    assert_eq!(
        loaded
            .events
            .last()
            .map(|e| e.type_name().to_owned())
            .as_deref(),
        Some("turn/end")
    );
}

fn one_writer_per_session(store: &Store) {
    let (header, events) = fixture("text");
    let first = (store.open)();
    first.create(&header).expect("create");
    first.append(&header.id, &events[..2]).expect("append");
    let second = (store.open)();
    let err = second
        .append(&header.id, &events[2..4])
        .expect_err("locked");
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    assert_eq!(err.code(), "SESSION_LOCKED");
    assert!(
        err.to_string().contains("already open for writing"),
        "{err}"
    );
    first.release(&header.id);
    second
        .append(&header.id, &events[2..4])
        .expect("the lock was released");
    let err = first
        .append(&header.id, &events[4..5])
        .expect_err("now the second writes");
    assert_eq!(err.code(), "SESSION_LOCKED", "{err}");
}

fn listing_summarizes_without_events(store: &Store) {
    let backend = (store.open)();
    let mut expected = Vec::new();
    for scenario in ["text", "multi-turn", "bash"] {
        let (header, events) = fixture(scenario);
        store_in_batches(&*backend, &header, &events);
        backend.release(&header.id);
        expected.push(header.id.as_str().to_owned());
    }
    let listed = backend.list().expect("list");
    let mut ids: Vec<String> = listed.iter().map(|s| s.id.clone()).collect();
    ids.sort();
    expected.sort();
    assert_eq!(ids, expected);
    assert!(listed
        .windows(2)
        .all(|w| w[0].updated_at >= w[1].updated_at));
    let multi = listed
        .iter()
        .find(|s| s.id == fixture("multi-turn").0.id.as_str())
        .expect("listed");
    assert!(multi.turns >= 2, "{multi:?}");
    assert_eq!(multi.last_outcome.as_deref(), Some("completed"));
    assert!(multi.title.is_some());
}
