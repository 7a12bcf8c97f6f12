//! `SessionStore`: publication lifecycle, scope routing, flush, fork.

use super::common::*;
use dsh_kernel::{Context, ScopeKey};
use dsh_session::*;
use std::sync::{Arc, Mutex};

type Journal = Arc<Mutex<Vec<String>>>;

fn journal() -> Journal {
    Arc::new(Mutex::new(Vec::new()))
}

fn entries(j: &Journal) -> Vec<String> {
    j.lock().unwrap().clone()
}

/// Records created/event/disposed notifications heard through `ctx` under `tag`.
fn observe(ctx: &Context, j: &Journal, tag: &str) {
    let (j1, t1) = (j.clone(), tag.to_owned());
    ctx.on::<SessionCreated>(move |s| {
        j1.lock().unwrap().push(format!("{t1} created {}", s.id()));
        Ok(())
    })
    .unwrap()
    .forget();
    let (j2, t2) = (j.clone(), tag.to_owned());
    ctx.on::<SessionEventPublished>(move |p| {
        // Post-commit: the event is already in the log.
        assert_eq!(p.session.len(), p.event.seq + 1);
        j2.lock().unwrap().push(format!(
            "{t2} event {} {} {}",
            p.session.id(),
            p.event.seq,
            p.event.type_name()
        ));
        Ok(())
    })
    .unwrap()
    .forget();
    let (j3, t3) = (j.clone(), tag.to_owned());
    ctx.on::<SessionDisposed>(move |s| {
        j3.lock().unwrap().push(format!("{t3} disposed {}", s.id()));
        Ok(())
    })
    .unwrap()
    .forget();
}

fn fixed() -> SessionOptions {
    SessionOptions {
        clock: Some(Arc::new(|| TIME)),
        ..SessionOptions::default()
    }
}

#[test]
fn create_publish_and_dispose_in_order() {
    let root = Context::root();
    let store = SessionStore::new(&root);
    let j = journal();
    observe(&root, &j, "root");
    // A failing observer is contained: the append still commits and later observers run.
    root.on::<SessionEventPublished>(|_| Err("observer broke".into()))
        .unwrap()
        .forget();
    let owner = root.child("owner").unwrap();
    let session = store.create(&owner, None, fixed()).unwrap();
    assert_eq!(session.id().as_str(), "session-1");
    assert!(store.is_live(&session));
    session.append(turn_start(1), log_only()).unwrap();
    session.append(turn_end(1), log_only()).unwrap();
    owner.fiber().dispose();
    assert!(!store.is_live(&session));
    // Appends still work on the detached session, but nobody hears them.
    session.append(turn_start(2), log_only()).unwrap();
    owner.fiber().dispose();
    assert_eq!(
        entries(&j),
        [
            "root created session-1",
            "root event session-1 0 turn/start",
            "root event session-1 1 turn/end",
            "root disposed session-1",
        ]
    );
    assert!(store.get(&"session-1".into()).is_none());
}

#[test]
fn an_observer_cannot_append_to_the_session_it_observes() {
    let root = Context::root();
    let store = SessionStore::new(&root);
    let outcomes = journal();
    let o = outcomes.clone();
    root.on::<SessionEventPublished>(move |p| {
        if p.event.seq == 0 {
            let err = p.session.append(turn_start(9), log_only()).unwrap_err();
            o.lock().unwrap().push(err.code().to_owned());
        }
        Ok(())
    })
    .unwrap()
    .forget();
    let session = store.create(&root, Some("s".into()), fixed()).unwrap();
    session.append(turn_start(1), log_only()).unwrap();
    assert_eq!(entries(&outcomes), ["APPEND_REENTERED"]);
    assert_eq!(session.len(), 1);
    // Outside the notification the session accepts appends again.
    session.append(turn_end(1), log_only()).unwrap();
    assert_eq!(session.len(), 2);
}

#[test]
fn a_created_listener_error_vetoes_and_is_paired_with_disposal() {
    let root = Context::root();
    let store = SessionStore::new(&root);
    let j = journal();
    observe(&root, &j, "root");
    root.on::<SessionCreated>(|_| Err("no".into()))
        .unwrap()
        .forget();
    let err = store.create(&root, Some("s".into()), fixed()).unwrap_err();
    assert_eq!(err.code(), "CREATION_VETOED");
    assert!(store.get(&"s".into()).is_none());
    assert_eq!(entries(&j), ["root created s", "root disposed s"]);
}

#[test]
fn scoped_listeners_hear_only_their_sessions() {
    let root = Context::root();
    let store = SessionStore::new(&root);
    let agent_a = root.create_scope(ScopeKey::new("agent-a"), None).unwrap();
    let agent_b = root.create_scope(ScopeKey::new("agent-b"), None).unwrap();
    let j = journal();
    observe(&root, &j, "root");
    observe(&agent_a, &j, "a");
    let a = store.create(&agent_a, Some("sa".into()), fixed()).unwrap();
    let b = store.create(&agent_b, Some("sb".into()), fixed()).unwrap();
    assert_eq!(
        store.carrier(&a).map(|k| k.name().to_owned()),
        Some("agent-a".into())
    );
    a.append(turn_start(1), log_only()).unwrap();
    b.append(turn_start(1), log_only()).unwrap();
    agent_b.fiber().dispose();
    agent_a.fiber().dispose();
    assert_eq!(
        entries(&j),
        [
            "root created sa",
            "a created sa",
            "root created sb",
            "root event sa 0 turn/start",
            "a event sa 0 turn/start",
            "root event sb 0 turn/start",
            "root disposed sb",
            // Effects unwind in reverse: the session (created last) detaches while agent a's
            // listeners are still registered.
            "root disposed sa",
            "a disposed sa",
        ]
    );
}

#[test]
fn entry_rules_ids_and_stale_detaches() {
    let root = Context::root();
    let store = SessionStore::new(&root);
    let first = store.prepare(None, fixed()).unwrap();
    let detach = store.enter(&root, &first).unwrap();
    assert_eq!(
        store.enter(&root, &first).unwrap_err().code(),
        "SESSION_ALREADY_EXISTS"
    );
    // Minted ids skip live ones; explicit duplicates are refused.
    assert_eq!(
        store.prepare(None, fixed()).unwrap().id().as_str(),
        "session-2"
    );
    assert_eq!(
        store
            .prepare(Some("session-1".into()), fixed())
            .unwrap_err()
            .code(),
        "SESSION_ALREADY_EXISTS"
    );
    store.announce(&first).unwrap();
    assert_eq!(
        store.announce(&first).unwrap_err().code(),
        "ALREADY_ANNOUNCED"
    );
    detach.detach();
    detach.detach();
    assert_eq!(
        store.announce(&first).unwrap_err().code(),
        "SESSION_NOT_FOUND"
    );
    // A new entry with the same id survives the old handle.
    let second = store.prepare(Some("session-1".into()), fixed()).unwrap();
    let _keep = store.enter(&root, &second).unwrap();
    detach.detach();
    assert!(store.is_live(&second));
    assert_eq!(store.list(), vec![second.clone()]);
    // Another object with a live id is not the live instance.
    let impostor = Session::new(SessionHeader::new("session-1".into(), 1)).unwrap();
    assert_eq!(
        store.dispose(&impostor).unwrap_err().code(),
        "SESSION_NOT_LIVE"
    );
    // A session attached to one store cannot enter another.
    let other = SessionStore::new(&root);
    assert_eq!(
        other.enter(&root, &second).unwrap_err().code(),
        "SESSION_ALREADY_ATTACHED"
    );
    // Creating on a disposed fiber fails and leaves nothing behind.
    let dead = root.child("dead").unwrap();
    dead.fiber().dispose();
    assert_eq!(
        store
            .create(&dead, Some("x".into()), fixed())
            .unwrap_err()
            .code(),
        "INACTIVE_EFFECT"
    );
    assert!(store.get(&"x".into()).is_none());
}

#[test]
fn a_detach_requested_during_publication_waits_for_it() {
    let root = Context::root();
    let store = Arc::new(SessionStore::new(&root));
    let j = journal();
    let (s, j1) = (store.clone(), j.clone());
    root.on::<SessionEventPublished>(move |p| {
        s.dispose(&p.session).unwrap();
        j1.lock()
            .unwrap()
            .push(format!("first saw {}", p.event.seq));
        Ok(())
    })
    .unwrap()
    .forget();
    observe(&root, &j, "root");
    let session = store.create(&root, Some("s".into()), fixed()).unwrap();
    session.append(turn_start(1), log_only()).unwrap();
    // Every observer of the event ran before the disposal edge.
    assert_eq!(
        entries(&j),
        [
            "root created s",
            "first saw 0",
            "root event s 0 turn/start",
            "root disposed s"
        ]
    );
    assert!(!store.is_live(&session));
}

#[tokio::test(flavor = "current_thread")]
async fn flush_awaits_every_listener_and_reports_the_first_failure() {
    let root = Context::root();
    let store = SessionStore::new(&root);
    let session = store.create(&root, Some("s".into()), fixed()).unwrap();
    store.flush(&session).await.unwrap();
    let j = journal();
    for name in ["disk", "index"] {
        let j = j.clone();
        root.on_parallel::<SessionFlush, _, _>(move |s| {
            let j = j.clone();
            async move {
                tokio::task::yield_now().await;
                j.lock().unwrap().push(format!("{name} flushed {}", s.id()));
                Ok(())
            }
        })
        .unwrap()
        .forget();
    }
    store.flush(&session).await.unwrap();
    let mut seen = entries(&j);
    seen.sort();
    assert_eq!(seen, ["disk flushed s", "index flushed s"]);
    root.on_parallel::<SessionFlush, _, _>(|_| async { Err("disk full".into()) })
        .unwrap()
        .forget();
    let err = store.flush(&session).await.unwrap_err();
    assert_eq!(err.code(), "FLUSH_FAILED");
    assert!(err.to_string().contains("disk full"));
    assert_eq!(entries(&j).len(), 4, "the healthy listeners still ran");
    let stray = Session::new(SessionHeader::new("stray".into(), 1)).unwrap();
    assert_eq!(
        store.flush(&stray).await.unwrap_err().code(),
        "SESSION_NOT_FOUND"
    );
}

#[test]
fn store_fork_checks_the_source_and_the_child_id() {
    let root = Context::root();
    let store = SessionStore::new(&root);
    let j = journal();
    let source = store
        .create(
            &root,
            Some("src".into()),
            SessionOptions {
                cwd: Some("/w".into()),
                ..fixed()
            },
        )
        .unwrap();
    tool_turn(&source, 1);
    observe(&root, &j, "root");
    let child = store
        .fork(&root, &source, None, Some("child".into()))
        .unwrap();
    assert!(store.is_live(&child));
    assert_eq!(
        child.header().parent_session.as_ref().map(|p| p.as_str()),
        Some("src")
    );
    assert_eq!(
        (child.header().seed_length, child.header().cwd.as_deref()),
        (Some(11), Some("/w"))
    );
    assert_eq!(child.len(), 12);
    // The seed and its end marker were never published.
    assert_eq!(entries(&j), ["root created child"]);

    let err = store
        .fork(&root, &source, None, Some("child".into()))
        .unwrap_err();
    assert_eq!(err.code(), "SESSION_ALREADY_EXISTS");
    let stranger = session("stranger");
    assert_eq!(
        store.fork(&root, &stranger, None, None).unwrap_err().code(),
        "SESSION_NOT_FOUND"
    );
    let impostor = session("src");
    assert_eq!(
        store.fork(&root, &impostor, None, None).unwrap_err().code(),
        "SESSION_NOT_LIVE"
    );
    assert_eq!(
        store
            .fork(&root, &source, Some(99), None)
            .unwrap_err()
            .code(),
        "INVALID_BOUNDARY"
    );
    assert_eq!(
        store
            .fork(&root, &source, Some(3), None)
            .unwrap_err()
            .code(),
        "OPEN_TURN"
    );
}

#[test]
fn the_plugin_provides_the_store() {
    let root = Context::root();
    let fiber = root.plugin::<SessionsPlugin>(()).unwrap();
    let store = root.require::<SessionStore>().unwrap();
    let session = store.create(&root, None, fixed()).unwrap();
    assert!(store.is_live(&session));
    fiber.dispose();
    assert!(root.get::<SessionStore>().is_none());
}

#[test]
fn concurrent_appends_are_published_in_seq_order() {
    let root = Context::root();
    let store = SessionStore::new(&root);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    root.on::<SessionEventPublished>(move |p| {
        s.lock().unwrap().push(p.event.seq);
        Ok(())
    })
    .unwrap()
    .forget();
    let session = store.create(&root, Some("s".into()), fixed()).unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let session = session.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    session
                        .append(turn_start(t * 1000 + i), log_only())
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*seen.lock().unwrap(), (0..400).collect::<Vec<u64>>());
}
