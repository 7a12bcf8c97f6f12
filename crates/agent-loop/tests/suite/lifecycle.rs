//! Creation, publication, teardown, resume and maintenance (spec §2.5, §10).

use super::harness::{take, until, Harness, Log, TestTool};
use super::normalize::outline;
use super::scripted::{text, Reply};
use super::turns::msg;
use dsh_agent::{
    AgentCreated, AgentError, ConfigStartFailed, CreateAgentOptions, ResumeAgentOptions,
    ResumeError, ResumeSource,
};
use dsh_agent_loop::{AgentLoopConfig, ConfiguredAgent};
use dsh_prompt::Section;
use dsh_protocol::SessionId;
use dsh_session::{interrupted_turn_closers, SeedSource, Session, SessionEvent};
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn dispose_closes_the_turn_cancels_the_inbox_then_leaves_in_order() {
    let h = Harness::new();
    h.model.push(Reply::Hang);
    let handle = h.agent("s1").await;
    let agent = handle.agent().clone();
    let log = Log::default();
    h.tools
        .register(agent.ctx(), TestTool::new("mine", &log).arc())
        .unwrap()
        .forget();
    agent.followup(msg("a")).unwrap();
    agent.followup(msg("b")).unwrap();
    h.model.wait_requests(1).await;
    let live = h.record();
    let (first, second) = (handle.dispose(), handle.dispose());
    futures_util::future::join(first, second).await;
    let tail: Vec<String> = outline(agent.session()).into_iter().rev().take(3).collect();
    assert_eq!(
        tail,
        [
            "turn/end 1 aborted disposed",
            "step/end 1.1",
            "splice next-turn @0 -1 +[] canceled"
        ]
    );
    let events = take(&live);
    assert_eq!(
        events[events.len() - 5..],
        [
            "session step/end",
            "session turn/end",
            "status idle",
            "agent/disposed",
            "session/disposed",
        ]
    );
    assert!(h.registry.get(agent.id()).is_none());
    assert!(h.sessions.get(agent.id()).is_none());
    assert!(h.tools.get(Some(agent.scope_key()), "mine").is_none());
    // Registering through a disposed agent is refused, not a panic.
    assert!(h
        .tools
        .register(agent.ctx(), TestTool::new("late", &log).arc())
        .is_err());
    // The id can be used again.
    let again = h.agent("s1").await;
    assert_eq!(again.agent().id().as_str(), "s1");
}

#[tokio::test]
async fn a_vetoed_creation_rolls_back_with_paired_disposal_edges() {
    let h = Harness::new();
    let veto = h.root.child("veto").unwrap();
    veto.on::<AgentCreated>(|_| Err("not today".into()))
        .unwrap()
        .forget();
    let live = h.record();
    let err = h
        .registry
        .create(
            &h.root,
            CreateAgentOptions {
                session_id: Some("v".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "AGENT_CREATION_VETOED");
    // The veto listener came first, so later created-listeners never ran; the rollback
    // still pairs both announcements with disposals.
    assert_eq!(
        take(&live),
        ["session/created", "agent/disposed", "session/disposed"]
    );
    assert!(h.registry.get(&"v".into()).is_none());
    veto.fiber().dispose();
    h.agent("v").await;
}

#[tokio::test]
async fn setup_composes_a_scoped_world_before_publication() {
    let h = Harness::new();
    h.prompt
        .section(
            &h.root,
            Section::new("whoami", 1.0, "model {{model}} via {{provider}}"),
        )
        .unwrap()
        .forget();
    let log = Log::default();
    let tools = h.tools.clone();
    let tool_log = log.clone();
    let created = h
        .registry
        .create(
            &h.root,
            CreateAgentOptions {
                session_id: Some("with-tool".into()),
                agent_options: Harness::options(),
                setup: Some(Box::new(move |ctx| {
                    Box::pin(async move {
                        tools
                            .register(&ctx, TestTool::new("mine", &tool_log).arc())?
                            .forget();
                        Ok(None)
                    })
                })),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let plain = h.agent("plain").await;
    h.model.push(text("a"));
    h.model.push(text("b"));
    created.agent().followup(msg("x")).unwrap();
    created.agent().when_idle().await;
    plain.agent().followup(msg("y")).unwrap();
    plain.agent().when_idle().await;
    let requests = h.model.requests();
    let names = |i: usize| -> Vec<String> {
        requests[i]
            .tools
            .iter()
            .flatten()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(names(0), ["mine"]);
    assert!(names(1).is_empty());
    assert!(requests[0]
        .system
        .as_deref()
        .unwrap()
        .ends_with("model m via mock"));
}

#[tokio::test]
async fn a_cancelled_setup_aborts_creation() {
    let h = Harness::new();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let err = h
        .registry
        .create(
            &h.root,
            CreateAgentOptions {
                session_id: Some("c".into()),
                cancel: Some(cancel),
                setup: Some(Box::new(move |_ctx| {
                    Box::pin(async move {
                        trigger.cancel();
                        std::future::pending::<()>().await;
                        Ok(None)
                    })
                })),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "CREATION_ABORTED");
    assert!(h.sessions.get(&"c".into()).is_none());
}

#[tokio::test]
async fn agents_created_through_an_agent_are_owned_and_die_with_it() {
    let h = Harness::new();
    let parent = h.agent("p").await;
    let child = h
        .registry
        .create(
            parent.agent().ctx(),
            CreateAgentOptions {
                session_id: Some("c".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(h
        .registry
        .is_owned_by(child.agent().id(), parent.agent().id()));
    let roots: Vec<String> = h
        .registry
        .roots()
        .iter()
        .map(|a| a.id().to_string())
        .collect();
    assert_eq!(roots, ["p"]);
    parent.dispose().await;
    until(|| h.registry.get(&"c".into()).is_none()).await;
}

#[tokio::test]
async fn maintenance_keeps_status_idle_and_defers_wakes() {
    let h = Harness::new();
    h.model.push(text("ok"));
    let agent = h.agent("s1").await.agent().clone();
    let gate = Arc::new(Semaphore::new(0));
    let wait = gate.clone();
    let live = h.record();
    let task = agent
        .run_maintenance(move |signal| async move {
            drop(wait.acquire().await);
            signal.is_aborted()
        })
        .unwrap();
    assert_eq!(
        agent.run_maintenance(|_| async {}).unwrap_err().code(),
        "AGENT_BUSY"
    );
    agent.followup(msg("later")).unwrap();
    assert!(!outline(agent.session())
        .iter()
        .any(|l| l.starts_with("turn/start")));
    gate.add_permits(1);
    assert!(!task.await.unwrap());
    until(|| {
        outline(agent.session())
            .iter()
            .any(|l| l == "turn/end 1 completed")
    })
    .await;
    agent.when_idle().await;
    let statuses: Vec<String> = take(&live)
        .into_iter()
        .filter(|l| l.starts_with("status"))
        .collect();
    assert_eq!(statuses, ["status running", "status idle"]);
}

/// What dsh-store will provide: a stored log, repaired and loaded as an unpublished session.
#[derive(Default)]
struct MemoryStore {
    logs: Mutex<HashMap<SessionId, Vec<Arc<SessionEvent>>>>,
}

impl MemoryStore {
    fn save(&self, session: &Session) {
        self.logs
            .lock()
            .unwrap()
            .insert(session.id().clone(), session.events().to_vec());
    }
}

impl ResumeSource for MemoryStore {
    fn prepare(
        &self,
        id: &SessionId,
        _cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Session, ResumeError>> {
        let stored = self.logs.lock().unwrap().get(id).cloned();
        let id = id.clone();
        Box::pin(async move {
            let mut events = stored.ok_or(ResumeError::NotFound { id: id.clone() })?;
            events.extend(interrupted_turn_closers(&events).into_iter().map(Arc::new));
            let header = dsh_session::SessionHeader::new(id, 1);
            Session::with_seed(header, events, SeedSource::Persistence)
                .map_err(|e| ResumeError::Failed(Box::new(e)))
        })
    }
}

fn mount_store(h: &Harness) -> Arc<MemoryStore> {
    let store = Arc::new(MemoryStore::default());
    h.root
        .provide::<dyn ResumeSource>(store.clone())
        .unwrap()
        .forget();
    store
}

#[tokio::test]
async fn resume_continues_numbering_keeps_pending_input_and_logs_a_resume_header() {
    let h = Harness::new();
    let err = h
        .registry
        .resume(&h.root, ResumeAgentOptions::new("s1".into()))
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::NoPersistence));
    let store = mount_store(&h);
    h.model.push(text("one"));
    let first = h.agent("s1").await;
    first.agent().followup(msg("a")).unwrap();
    first.agent().when_idle().await;
    first.agent().inject(msg("pending")).unwrap();
    store.save(first.agent().session()); // as if the process died here
    first.dispose().await;

    let live = h.record();
    let mut options = ResumeAgentOptions::new("s1".into());
    options.agent_options = Harness::options();
    let resumed = h.registry.resume(&h.root, options).await.unwrap();
    let agent = resumed.agent().clone();
    assert!(take(&live).contains(&"session-start resume".to_string()));
    assert_eq!(
        agent.inbox().next_step().len(),
        1,
        "pending input survives, nothing runs"
    );
    assert!(!outline(agent.session()).iter().any(|l| l == "turn/start 2"));
    h.model.push(text("two"));
    agent.followup(msg("b")).unwrap();
    agent.when_idle().await;
    let lines = outline(agent.session());
    let tail: Vec<&String> = lines
        .iter()
        .skip_while(|l| *l != "turn/start 2")
        .filter(|l| {
            l.starts_with("turn/") || l.starts_with("user:") || l.starts_with("request/header")
        })
        .collect();
    assert_eq!(
        tail,
        [
            "turn/start 2",
            "user: pending",
            "user: b",
            "request/header resume",
            "turn/end 2 completed"
        ]
    );
}

#[tokio::test]
async fn resuming_a_crashed_turn_repairs_it_first() {
    let h = Harness::new();
    let store = mount_store(&h);
    h.model.push(Reply::Hang);
    let first = h.agent("s1").await;
    first.agent().followup(msg("a")).unwrap();
    h.model.wait_requests(1).await;
    store.save(first.agent().session());
    first.dispose().await;
    let resumed = h
        .registry
        .resume(&h.root, ResumeAgentOptions::new("s1".into()))
        .await
        .unwrap();
    let lines = outline(resumed.agent().session());
    assert_eq!(
        lines[lines.len() - 3..],
        ["step/end 1.1", "turn/end 1 interrupted", "session/end-seed"]
    );
}

#[tokio::test]
async fn configured_agents_start_with_the_loop_and_failures_are_reported() {
    let h = Harness::with_config(AgentLoopConfig {
        agents: vec![
            ConfiguredAgent {
                id: "main".into(),
                provider: Some("mock".into()),
                model: Some("m".into()),
                ..Default::default()
            },
            ConfiguredAgent {
                id: "old".into(),
                resume_session_id: Some("gone".into()),
                ..Default::default()
            },
        ],
        ..Default::default()
    });
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = failures.clone();
    h.root
        .on::<ConfigStartFailed>(move |e| {
            seen.lock()
                .unwrap()
                .push(format!("{} {}", e.config_id, e.error));
            Ok(())
        })
        .unwrap()
        .forget();
    until(|| {
        h.registry
            .list()
            .iter()
            .any(|a| a.id().as_str().starts_with("main-session-"))
    })
    .await;
    until(|| !failures.lock().unwrap().is_empty()).await;
    assert_eq!(
        *failures.lock().unwrap(),
        ["old resuming an agent requires a session persistence service"]
    );
}

#[tokio::test]
async fn unloading_the_loop_disposes_its_agents() {
    let h = Harness::new();
    h.model.push(Reply::Hang);
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.model.wait_requests(1).await;
    let loop_fiber = h.agent_loop_fiber();
    loop_fiber.dispose();
    until(|| h.registry.get(&"s1".into()).is_none()).await;
    assert_eq!(
        outline(agent.session()).last().unwrap(),
        "turn/end 1 aborted disposed"
    );
    let err = h
        .registry
        .create(&h.root, CreateAgentOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NO_AGENT_FACTORY");
}

#[tokio::test]
async fn a_resumed_agent_does_not_resend_a_retained_runtime_context() {
    let h = Harness::new();
    let store = mount_store(&h);
    h.prompt
        .context(&h.root, dsh_prompt::ContextEntry::new("mode", 1.0, "plan"))
        .unwrap()
        .forget();
    h.model.push(text("one"));
    let first = h.agent("s1").await;
    first.agent().followup(msg("a")).unwrap();
    first.agent().when_idle().await;
    store.save(first.agent().session());
    first.dispose().await;
    let resumed = h
        .registry
        .resume(&h.root, {
            let mut options = ResumeAgentOptions::new("s1".into());
            options.agent_options = Harness::options();
            options
        })
        .await
        .unwrap();
    h.model.push(text("two"));
    resumed.agent().followup(msg("b")).unwrap();
    resumed.agent().when_idle().await;
    let users: Vec<String> = outline(resumed.agent().session())
        .into_iter()
        .filter(|l| l.starts_with("user:"))
        .map(|l| l.chars().take(30).collect())
        .collect();
    assert_eq!(
        users,
        ["user: a", "user: Current runtime context.", "user: b"]
    );
}
