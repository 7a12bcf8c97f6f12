//! What only the PostgreSQL backend has: migrations, server faults, locks across
//! connections, concurrent writers.

use std::sync::Arc;
use std::time::Duration;

use dsh_session::SessionEvent;
use dsh_store::SessionPersistence;
use dsh_store_postgres::{PgConfig, PostgresBackend, SCHEMA_VERSION};

use super::conformance::{fixture, open_pg, values};
use dsh_testkit::pg_cluster::Cluster;

/// Runs one SQL statement on the cluster (as a second client would).
fn sql(url: &str, statement: &str) {
    let status = std::process::Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-qc", statement])
        .status();
    match status {
        Ok(status) => assert!(status.success(), "psql {statement}"),
        Err(_) => {
            // Without psql on PATH, use the server's own.
            let bin = std::fs::read_dir("/usr/lib/postgresql")
                .expect("postgresql dir")
                .flatten()
                .map(|e| e.path().join("bin/psql"))
                .find(|p| p.is_file())
                .expect("psql");
            let status = std::process::Command::new(bin)
                .args([url, "-v", "ON_ERROR_STOP=1", "-qc", statement])
                .status()
                .expect("psql runs");
            assert!(status.success(), "psql {statement}");
        }
    }
}

#[test]
fn migrations_apply_once_and_a_newer_schema_is_refused() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let config = PgConfig::parse(&cluster.url(), None).expect("url");
    let (_, first) = PostgresBackend::open(config.clone()).expect("open");
    assert_eq!((first.from, first.to), (0, SCHEMA_VERSION));
    assert!(first.applied());
    let (_, second) = PostgresBackend::open(config.clone()).expect("open again");
    assert!(!second.applied(), "{second:?}");
    sql(
        &cluster.url(),
        "INSERT INTO dsh_schema_migrations (version) VALUES (99)",
    );
    let err = PostgresBackend::open(config).expect_err("too new");
    assert_eq!(err.code(), "PG_STORE_SCHEMA_TOO_NEW");
    let message = err.to_string();
    assert!(message.contains("schema version 99"), "{message}");
    assert!(message.contains("upgrade dsh"), "{message}");
}

#[test]
fn a_server_that_is_down_is_a_clear_error_naming_the_target() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    cluster.stop_server();
    let url = format!("postgres://dsh:hunter2@127.0.0.1:{}/postgres", cluster.port);
    let err = PostgresBackend::open(PgConfig::parse(&url, None).expect("url")).expect_err("down");
    assert_eq!(err.code(), "PG_STORE_CONNECT");
    let message = err.to_string();
    assert!(
        message.contains(&format!("dsh@127.0.0.1:{}/postgres", cluster.port)),
        "{message}"
    );
    assert!(!message.contains("hunter2"), "{message}");
}

/// Appends `batch`, retrying as the write-behind queue does while the server is away.
fn append_retrying(
    backend: &dyn SessionPersistence,
    id: &dsh_protocol::SessionId,
    batch: &[Arc<SessionEvent>],
) -> Vec<String> {
    let mut failures = Vec::new();
    for _ in 0..50 {
        match backend.append(id, batch) {
            Ok(()) => return failures,
            Err(err) => {
                assert_eq!(err.code(), "SESSION_PERSISTENCE_BACKEND", "{err}");
                failures.push(err.to_string());
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    panic!("the append never succeeded: {failures:?}");
}

#[test]
fn a_server_restart_mid_session_loses_nothing_and_appends_resume() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let backend = open_pg(&cluster.url());
    let (header, events) = fixture("multi-turn");
    let half = events.len() / 2;
    backend.create(&header).expect("create");
    backend.append(&header.id, &events[..half]).expect("append");
    cluster.stop_server();
    let err = backend
        .append(&header.id, &events[half..half + 1])
        .expect_err("the server is down");
    assert_eq!(err.code(), "SESSION_PERSISTENCE_BACKEND", "{err}");
    assert!(
        err.to_string().starts_with("postgres session store"),
        "{err}"
    );
    cluster.restart();
    append_retrying(&backend, &header.id, &events[half..half + 1]);
    append_retrying(&backend, &header.id, &events[half + 1..]);
    let loaded = open_pg(&cluster.url()).load(&header.id).expect("load");
    assert_eq!(values(&loaded.events), values(&events));
    // The writer took its lock back on the new connection.
    let err = open_pg(&cluster.url())
        .append(&header.id, &events[events.len() - 1..])
        .expect_err("locked");
    assert_eq!(err.code(), "SESSION_LOCKED", "{err}");
}

#[test]
fn a_dead_writers_lock_goes_with_its_connection() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let (header, events) = fixture("text");
    let writer = open_pg(&cluster.url());
    writer.create(&header).expect("create");
    writer.append(&header.id, &events[..2]).expect("append");
    let other = open_pg(&cluster.url());
    let err = other.append(&header.id, &events[2..3]).expect_err("locked");
    assert_eq!(err.code(), "SESSION_LOCKED");
    // The writer dies without releasing: its connections close with its runtime.
    drop(writer);
    let mut outcome = Err(err);
    for _ in 0..50 {
        outcome = other.append(&header.id, &events[2..3]);
        if outcome.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    outcome.expect("the dead writer's lock was released");
}

#[test]
fn concurrent_writers_never_interleave_seqs() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let (header, events) = fixture("parallel-tools");
    let setup = open_pg(&cluster.url());
    setup.create(&header).expect("create");
    setup.append(&header.id, &events[..1]).expect("first event");
    setup.release(&header.id);
    drop(setup);
    let events = Arc::new(events);
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let url = cluster.url();
            let events = Arc::clone(&events);
            let id = header.id.clone();
            std::thread::spawn(move || {
                let backend = open_pg(&url);
                let mut stored = 0usize;
                let mut refused = Vec::new();
                // Until the session is complete (bounded, should a writer starve).
                for _ in 0..events.len() * 50 {
                    let next = match backend.next_seq(&id) {
                        Ok(next) => next as usize,
                        Err(err) => {
                            refused.push(err.code());
                            continue;
                        }
                    };
                    if next >= events.len() {
                        break;
                    }
                    match backend.append(&id, &events[next..next + 1]) {
                        Ok(()) => stored += 1,
                        Err(err) => refused.push(err.code()),
                    }
                    backend.release(&id);
                }
                (stored, refused)
            })
        })
        .collect();
    let mut stored = 0;
    for writer in writers {
        let (count, refused) = writer.join().expect("writer thread");
        stored += count;
        assert!(
            refused
                .iter()
                .all(|c| *c == "SESSION_LOCKED" || *c == "SESSION_SEQ_MISMATCH"),
            "{refused:?}"
        );
    }
    assert_eq!(stored, events.len() - 1);
    let loaded = open_pg(&cluster.url()).load(&header.id).expect("load");
    assert_eq!(values(&loaded.events), values(&events));
}

#[test]
fn listing_agrees_with_the_file_backend() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let pg = open_pg(&cluster.url());
    let dir = tempfile::tempdir().expect("temp dir");
    let files = dsh_store::JsonlBackend::new(dsh_store::JsonlConfig::new(dir.path()));
    for scenario in super::conformance::SCENARIOS {
        let (header, events) = fixture(scenario);
        for backend in [&pg as &dyn SessionPersistence, &files] {
            backend.create(&header).expect("create");
            backend.append(&header.id, &events).expect("append");
            backend.release(&header.id);
        }
    }
    let strip = |list: Vec<dsh_store::SessionSummary>| {
        let mut list: Vec<_> = list
            .into_iter()
            // Sizes differ by encoding (zstd frames and packed rows on files).
            .map(|s| dsh_store::SessionSummary { size: 0, ..s })
            .collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        serde_json::to_value(list).expect("json")
    };
    assert_eq!(
        strip(pg.list().expect("list")),
        strip(files.list().expect("list"))
    );
}

#[tokio::test]
async fn the_write_behind_queue_retries_until_the_server_is_back() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let backend: Arc<dyn SessionPersistence> = Arc::new(open_pg(&cluster.url()));
    let coordinator = dsh_store::WriteCoordinator::new(
        Arc::clone(&backend),
        dsh_store::WriteBehindConfig::default(),
    );
    let (header, events) = fixture("multi-turn");
    let session = dsh_session::Session::new(header.clone()).expect("session");
    coordinator.register(&session).expect("register");
    let append = |event: &SessionEvent| {
        let opts = dsh_session::AppendOptions {
            surface_op: event.surface_op,
            source_event_seqs: event.source_event_seqs.clone(),
            ignorable: event.ignorable,
        };
        session.append(event.data.clone(), opts).expect("append");
        coordinator.notify(session.id());
    };
    let half = events.len() / 2;
    events[..half].iter().for_each(|e| append(e));
    coordinator.flush(session.id()).await.expect("flush");
    cluster.stop_server();
    events[half..].iter().for_each(|e| append(e));
    // A checkpoint that cannot commit is a typed error (the turn stops before the model).
    let err = coordinator
        .flush(session.id())
        .await
        .expect_err("server down");
    assert_eq!(err.code(), "SESSION_PERSISTENCE_BACKEND", "{err}");
    cluster.restart();
    let mut flushed = coordinator.flush(session.id()).await;
    for _ in 0..50 {
        if flushed.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        flushed = coordinator.flush(session.id()).await;
    }
    flushed.expect("the queue drained once the server was back");
    let loaded = open_pg(&cluster.url()).load(&header.id).expect("load");
    // The session stamps its own times: compare with what it holds.
    assert_eq!(loaded.events.len(), events.len());
    assert!(values(&loaded.events) == values(&session.events()));
}

#[test]
fn passwords_come_from_password_env_and_a_wrong_one_is_a_clear_error() {
    let Some(cluster) = Cluster::start_with_password("right-horse") else {
        return;
    };
    let url = format!(
        "postgres://dsh:wrong-battery@127.0.0.1:{}/postgres",
        cluster.port
    );
    let err = PostgresBackend::open(PgConfig::parse(&url, None).expect("url"))
        .expect_err("wrong password");
    assert_eq!(err.code(), "PG_STORE_CONNECT");
    let message = err.to_string();
    assert!(
        message.contains("password authentication failed"),
        "{message}"
    );
    assert!(!message.contains("wrong-battery"), "{message}");

    let config: dsh_store_postgres::PostgresPersistenceConfig = serde_json::from_value(
        serde_json::json!({"url": url, "passwordEnv": "DSH_TEST_PG_PASSWORD_UNSET"}),
    )
    .expect("config");
    let err = config.pg_config().expect_err("unset variable");
    assert!(
        err.to_string().contains("DSH_TEST_PG_PASSWORD_UNSET"),
        "{err}"
    );
    assert!(!format!("{config:?}").contains("wrong-battery"));

    // The variable's password overrides the URL's.
    std::env::set_var("DSH_TEST_PG_PASSWORD", "right-horse");
    let config: dsh_store_postgres::PostgresPersistenceConfig = serde_json::from_value(
        serde_json::json!({"url": url, "passwordEnv": "DSH_TEST_PG_PASSWORD"}),
    )
    .expect("config");
    let (backend, _) = PostgresBackend::open(config.pg_config().expect("password")).expect("open");
    assert!(backend.list().expect("list").is_empty());
}

#[test]
fn a_connection_cut_mid_session_is_retried_and_the_lock_retaken() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let backend = open_pg(&cluster.url());
    let (header, events) = fixture("bash");
    backend.create(&header).expect("create");
    backend.append(&header.id, &events[..5]).expect("append");
    // Another client kills every dsh connection (an admin, a failover, a proxy timeout).
    sql(
        &cluster.url(),
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = 'dsh' AND pid <> pg_backend_pid()",
    );
    append_retrying(&backend, &header.id, &events[5..]);
    assert_eq!(
        values(&backend.load(&header.id).expect("load").events),
        values(&events)
    );
    let err = open_pg(&cluster.url())
        .append(&header.id, &events[events.len() - 1..])
        .expect_err("still ours");
    assert_eq!(err.code(), "SESSION_LOCKED", "{err}");
}

#[test]
fn a_huge_event_is_stored_and_read_back() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let backend = open_pg(&cluster.url());
    let (header, events) = fixture("text");
    backend.create(&header).expect("create");
    backend.append(&header.id, &events).expect("append");
    let prompt = "x".repeat(50 * 1024 * 1024);
    let huge = SessionEvent::from_value(&serde_json::json!({
        "type": "acme/huge", "seq": events.len(), "time": 1, "ignorable": true,
        "data": {"text": prompt}
    }))
    .expect("event");
    backend
        .append(&header.id, &[Arc::new(huge)])
        .expect("a 50 MB event");
    let back = backend
        .read_from(&header.id, events.len() as u64)
        .expect("read");
    assert_eq!(back.len(), 1);
    let value = serde_json::to_value(&*back[0]).expect("json");
    assert_eq!(
        value["data"]["text"].as_str().map(str::len),
        Some(prompt.len())
    );
}
