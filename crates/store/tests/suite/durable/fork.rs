//! Forking a stored session into a new stored session.

use dsh_agent::{AgentEvents, Inbox};
use dsh_kernel::ScopeKey;
use dsh_protocol::{Message, SessionId};
use dsh_session::{EventData, InboxTarget, SessionHeader, StepBoundary, TurnEnd, TurnEndReason};
use dsh_store::{fork_stored, read_header, read_log, Compression, ForkError, SessionPersistence};
use dsh_testkit::fake_agent::FakeAgent;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::support::{log_only, mount, open_step, Harness, CWD};

/// A stored parent: turn 1 completed, a prompt queued for the next turn (seq 5), then
/// turn 2 left open (seqs 6..=8), all flushed.
async fn stored_parent(h: &Harness) -> Vec<Value> {
    let session = h.create("parent");
    let agent = FakeAgent::create(&h.ctx, session.clone()).unwrap();
    open_step(&session, 1, 1);
    log_only(
        &session,
        EventData::StepEnd(StepBoundary { turn: 1, step: 1 }),
    );
    log_only(
        &session,
        EventData::TurnEnd(TurnEnd {
            turn: 1,
            reason: TurnEndReason::Completed,
        }),
    );
    agent
        .send(Message::user_text("queued"), InboxTarget::NextTurn, false)
        .unwrap();
    open_step(&session, 2, 1);
    h.sessions.flush(&session).await.unwrap();
    let stored = h.persistence.load(session.id()).unwrap();
    assert_eq!(stored.events.len(), 9);
    stored
        .events
        .iter()
        .map(|e| serde_json::to_value(&**e).unwrap())
        .collect()
}

fn child_path(root: &std::path::Path, id: &str) -> std::path::PathBuf {
    root.join("--home-user-project--")
        .join(id)
        .join("session.jsonl.zstd")
}

fn inbox_of(session: &dsh_session::Session, ctx: &dsh_kernel::Context) -> Inbox {
    Inbox::restore(
        session.clone(),
        AgentEvents::new(ctx.clone(), ScopeKey::new("probe")),
    )
    .unwrap()
}

#[tokio::test]
async fn a_fork_writes_a_seeded_child_that_lists_and_resumes_with_an_empty_inbox() {
    let dir = tempfile::tempdir().unwrap();
    let h = mount(dir.path(), Compression::Zstd);
    let parent = stored_parent(&h).await;

    let header = fork_stored(
        h.persistence.as_ref(),
        &SessionId::from("parent"),
        Some(5),
        SessionId::from("child"),
    )
    .unwrap();
    assert_eq!(
        header,
        SessionHeader {
            version: 0,
            id: SessionId::from("child"),
            created_at: header.created_at,
            cwd: Some(CWD.into()),
            parent_session: Some(SessionId::from("parent")),
            seed_length: Some(6),
            origin: None,
            delegation_depth: None,
            agent_preset: None,
        }
    );

    // on disk: the header records the lineage; the seed is the parent's prefix, then the marker
    let path = child_path(dir.path(), "child");
    assert_eq!(
        read_header(&path, Compression::Zstd).unwrap().to_value(),
        json!({"type": "session", "version": 0, "id": "child", "createdAt": header.created_at,
               "cwd": CWD, "parentSession": "parent", "seedLength": 6, "delegationDepth": 0})
    );
    let stored = read_log(&path, Compression::Zstd, Some("child")).unwrap();
    assert_eq!(stored.events[..6], parent[..6]);
    let marker = &stored.events[6];
    assert_eq!(
        json!({"type": marker["type"], "seq": marker["seq"], "data": marker["data"]}),
        json!({"type": "session/end-seed", "seq": 6, "data": {}})
    );
    assert_eq!(stored.events.len(), 7);

    let listed = h.persistence.list().unwrap();
    let child = listed.iter().find(|s| s.id == "child").unwrap();
    assert_eq!(
        (
            child.cwd.as_deref(),
            child.events,
            child.turns,
            child.last_outcome.as_deref()
        ),
        (Some(CWD), 7, 1, Some("completed"))
    );

    // the child resumes as itself (its seed already ends with the marker)
    let resumed = h
        .resume
        .prepare(&SessionId::from("child"), CancellationToken::new())
        .await
        .unwrap();
    // (stored headers always carry the delegation depth, 0 for a top-level session)
    let stored_header = SessionHeader {
        delegation_depth: Some(0),
        ..header.clone()
    };
    assert_eq!(resumed.header(), &stored_header);
    let events: Vec<Value> = resumed
        .events()
        .iter()
        .map(|e| serde_json::to_value(&**e).unwrap())
        .collect();
    assert_eq!(events, stored.events);

    // the parent's queued prompt stays the parent's
    let parent_session = h.sessions.get(&SessionId::from("parent")).unwrap();
    assert_eq!(inbox_of(&parent_session, &h.ctx).next_turn().len(), 1);
    assert!(!inbox_of(&resumed, &h.ctx).has_pending());
}

#[tokio::test]
async fn a_fork_may_not_cut_a_turn_or_reuse_an_id() {
    let dir = tempfile::tempdir().unwrap();
    let h = mount(dir.path(), Compression::Zstd);
    stored_parent(&h).await;
    let fork = |at: Option<u64>, child: &str| {
        fork_stored(
            h.persistence.as_ref(),
            &SessionId::from("parent"),
            at,
            SessionId::from(child),
        )
    };

    // by default through the last stored event, which is inside turn 2
    let err = fork(None, "c").unwrap_err();
    assert!(
        matches!(
            &err,
            ForkError::Boundary(dsh_session::SessionError::OpenTurn {
                boundary: 8,
                turn: 2,
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), "OPEN_TURN");
    assert_eq!(fork(Some(2), "c").unwrap_err().code(), "OPEN_TURN");
    assert_eq!(fork(Some(6), "c").unwrap_err().code(), "OPEN_TURN");
    let err = fork(Some(9), "c").unwrap_err();
    assert!(
        matches!(
            &err,
            ForkError::Boundary(dsh_session::SessionError::InvalidBoundary {
                boundary: 9,
                len: 9,
                ..
            })
        ),
        "{err:?}"
    );
    assert!(
        !child_path(dir.path(), "c").exists(),
        "refusals write nothing"
    );

    // a closed turn is a valid boundary; its id is then taken, as is a live session's
    fork(Some(4), "c").unwrap();
    assert_eq!(
        fork(Some(4), "c").unwrap_err().code(),
        "SESSION_ALREADY_EXISTS"
    );
    assert_eq!(
        fork(Some(4), "parent").unwrap_err().code(),
        "SESSION_ALREADY_EXISTS"
    );
    let missing = fork_stored(
        h.persistence.as_ref(),
        &SessionId::from("missing"),
        None,
        SessionId::from("d"),
    )
    .unwrap_err();
    assert_eq!(missing.code(), "SESSION_NOT_FOUND");
    let stored = read_log(&child_path(dir.path(), "c"), Compression::Zstd, Some("c")).unwrap();
    assert_eq!(stored.events.len(), 6, "the existing child is untouched");
}
