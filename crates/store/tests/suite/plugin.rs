//! The plugin on a real kernel context: the session store's events drive persistence.

use std::sync::Arc;

use dsh_kernel::Context;
use dsh_protocol::SessionId;
use dsh_session::{
    AppendOptions, EventData, SessionOptions, SessionStore, SessionsPlugin, StepBoundary, TurnStart,
};
use dsh_store::{
    read_log, Compression, JsonlPersistenceConfig, JsonlPersistencePlugin, SessionPersistence,
    WriteCoordinator,
};
use serde_json::Value;

fn mount(root: &std::path::Path) -> (Context, Arc<SessionStore>, Arc<WriteCoordinator>) {
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(()).unwrap();
    ctx.plugin::<JsonlPersistencePlugin>(JsonlPersistenceConfig::new(root))
        .unwrap();
    let store = ctx.require::<SessionStore>().unwrap();
    let coordinator = ctx.require::<WriteCoordinator>().unwrap();
    (ctx, store, coordinator)
}

fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn session_store_events_drive_persistence_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, store, _) = mount(dir.path());
    let opts = SessionOptions {
        cwd: Some("/home/user/project".into()),
        ..SessionOptions::default()
    };
    let session = store.create(&ctx, Some("s-1".into()), opts).unwrap();
    let path = dir
        .path()
        .join("--home-user-project--/s-1/session.jsonl.zstd");
    assert!(!path.exists(), "created but unused: nothing on disk");

    session
        .append(
            EventData::TurnStart(TurnStart { turn: 1 }),
            AppendOptions::log_only(),
        )
        .unwrap();
    session
        .append(
            EventData::StepStart(StepBoundary { turn: 1, step: 1 }),
            AppendOptions::log_only(),
        )
        .unwrap();
    store.flush(&session).await.unwrap();
    let stored = read_log(&path, Compression::Zstd, Some("s-1")).unwrap();
    assert_eq!(types(&stored.events), ["turn/start", "step/start"]);

    // disposal writes the rest (in the background) and lets the log go
    session
        .append(
            EventData::StepEnd(StepBoundary { turn: 1, step: 1 }),
            AppendOptions::log_only(),
        )
        .unwrap();
    store.dispose(&session).unwrap();
    let coordinator = ctx.require::<WriteCoordinator>().unwrap();
    for _ in 0..200 {
        if coordinator.stored_next(session.id()).is_none() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let persistence = ctx.require::<dyn SessionPersistence>().unwrap();
    assert_eq!(persistence.next_seq(session.id()).unwrap(), 3);
    ctx.fiber().dispose();
    drop((persistence, coordinator));

    // a new process resumes it: the open turn is closed durably, the marker stored on flush
    let (ctx, store, coordinator) = mount(dir.path());
    let prepared = coordinator.prepare(&SessionId::from("s-1")).await.unwrap();
    let closers: Vec<&str> = prepared.closers.iter().map(|e| e.type_name()).collect();
    assert_eq!(closers, ["turn/end"]);
    let _detach = store.enter(&ctx, &prepared.session).unwrap();
    store.announce(&prepared.session).unwrap();
    store.flush(&prepared.session).await.unwrap();
    let stored = read_log(&path, Compression::Zstd, Some("s-1")).unwrap();
    assert_eq!(
        types(&stored.events),
        [
            "turn/start",
            "step/start",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    assert_eq!(stored.events[3]["data"]["reason"]["kind"], "interrupted");

    // a live session with an open turn is never "repaired"
    prepared
        .session
        .append(
            EventData::TurnStart(TurnStart { turn: 2 }),
            AppendOptions::log_only(),
        )
        .unwrap();
    let err = coordinator
        .prepare(prepared.session.id())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "OPEN_TURN");
    // and the flush that preceded the refusal stored the live event
    let stored = read_log(&path, Compression::Zstd, Some("s-1")).unwrap();
    assert_eq!(stored.events.len(), 6);
}

#[tokio::test]
async fn creating_over_an_existing_log_is_vetoed() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, store, _) = mount(dir.path());
    let session = store
        .create(&ctx, Some("dup".into()), SessionOptions::default())
        .unwrap();
    session
        .append(
            EventData::TurnStart(TurnStart { turn: 1 }),
            AppendOptions::log_only(),
        )
        .unwrap();
    store.flush(&session).await.unwrap();
    store.dispose(&session).unwrap();
    ctx.fiber().dispose();

    let (ctx, store, _) = mount(dir.path());
    let err = store
        .create(&ctx, Some("dup".into()), SessionOptions::default())
        .unwrap_err();
    assert_eq!(err.code(), "CREATION_VETOED");
}

#[test]
fn config_uses_the_original_keys() {
    let config: JsonlPersistenceConfig = serde_json::from_value(serde_json::json!({
        "root": "/home/user/.dsh/sessions", "compression": "none", "packChunks": false,
        "writeBatchMaxDelayMs": 50, "preparedSessionCacheSize": 5
    }))
    .unwrap();
    assert_eq!(config.compression, Compression::None);
    assert!(!config.pack_chunks);
    assert_eq!(config.write_batch_max_delay_ms, 50);
    let defaults: JsonlPersistenceConfig =
        serde_json::from_value(serde_json::json!({"root": "/r"})).unwrap();
    assert_eq!(defaults, JsonlPersistenceConfig::new("/r"));
    assert!(serde_json::from_value::<JsonlPersistenceConfig>(serde_json::json!({})).is_err());
}
