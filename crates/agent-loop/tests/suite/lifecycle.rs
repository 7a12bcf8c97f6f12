//! Creation, publication, teardown, resume and maintenance (spec §2.5, §10).

use dsh_agent::{
    AgentCreated, AgentError, ConfigStartFailed, CreateAgentOptions, ResumeAgentOptions,
};
use dsh_agent_loop::{AgentLoopConfig, ConfiguredAgent};
use dsh_prompt::Section;
use dsh_testkit::harness::{agent_options, msg, until, Harness, ScriptedTool, MODEL, PROVIDER};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_script, ScriptEntry};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn dispose_closes_the_turn_cancels_the_inbox_then_leaves_in_order() {
    let h = Harness::builder().script([ScriptEntry::Hang]).build();
    let handle = h.create_agent_named("s1").await;
    let agent = handle.agent().clone();
    h.tools()
        .register(agent.ctx(), ScriptedTool::new("mine").build(h.probe()))
        .unwrap()
        .forget();
    agent.followup(msg("a")).unwrap();
    agent.followup(msg("b")).unwrap();
    h.adapter().wait_for_hang(1).await;
    let live = h.record();
    let (first, second) = (handle.dispose(), handle.dispose());
    futures_util::future::join(first, second).await;
    let tail: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .rev()
        .take(3)
        .collect();
    assert_eq!(
        tail,
        [
            "turn/end 1 aborted disposed",
            "step/end 1.1",
            "splice next-turn @0 -1 +[] canceled"
        ]
    );
    let events = live.take();
    assert_eq!(
        events[events.len() - 5..],
        [
            "session step/end",
            "session turn/end",
            "status idle",
            "agent/disposed s1",
            "session/disposed s1",
        ]
    );
    assert!(h.registry().get(agent.id()).is_none());
    assert!(h.sessions().get(agent.id()).is_none());
    assert!(h.tools().get(Some(agent.scope_key()), "mine").is_none());
    // Registering through a disposed agent is refused, not a panic.
    assert!(h
        .tools()
        .register(agent.ctx(), ScriptedTool::new("late").build(h.probe()))
        .is_err());
    // The id can be used again.
    let again = h.create_agent_named("s1").await;
    assert_eq!(again.agent().id().as_str(), "s1");
    h.finish().await;
}

#[tokio::test]
async fn a_vetoed_creation_rolls_back_with_paired_disposal_edges() {
    let h = Harness::builder().build();
    let veto = h.ctx().child("veto").unwrap();
    veto.on::<AgentCreated>(|_| Err("not today".into()))
        .unwrap()
        .forget();
    let live = h.record();
    let err = h
        .registry()
        .create(
            h.ctx(),
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
        live.take(),
        [
            "session/created v",
            "agent/disposed v",
            "session/disposed v"
        ]
    );
    assert!(h.registry().get(&"v".into()).is_none());
    veto.fiber().dispose();
    h.create_agent_named("v").await;
    h.finish().await;
}

#[tokio::test]
async fn setup_composes_a_scoped_world_before_publication() {
    let h = Harness::builder().script(text_script(&["a", "b"])).build();
    h.prompt()
        .section(
            h.ctx(),
            Section::new("whoami", 1.0, "model {{model}} via {{provider}}"),
        )
        .unwrap()
        .forget();
    let tools = h.tools().clone();
    let probe = h.probe().clone();
    let created = h
        .create_agent_with(CreateAgentOptions {
            session_id: Some("with-tool".into()),
            agent_options: agent_options(),
            setup: Some(Box::new(move |ctx| {
                Box::pin(async move {
                    tools
                        .register(&ctx, ScriptedTool::new("mine").build(&probe))?
                        .forget();
                    Ok(None)
                })
            })),
            ..Default::default()
        })
        .await
        .unwrap();
    let plain = h.create_agent_named("plain").await;
    created.agent().followup(msg("x")).unwrap();
    created.agent().when_idle().await;
    plain.agent().followup(msg("y")).unwrap();
    plain.agent().when_idle().await;
    let requests = h.adapter().requests();
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
        .ends_with(&format!("model {MODEL} via {PROVIDER}")));
    h.finish().await;
}

#[tokio::test]
async fn a_cancelled_setup_aborts_creation() {
    let h = Harness::builder().build();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let err = h
        .registry()
        .create(
            h.ctx(),
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
    assert!(h.sessions().get(&"c".into()).is_none());
    h.finish().await;
}

#[tokio::test]
async fn agents_created_through_an_agent_are_owned_and_die_with_it() {
    let h = Harness::builder().build();
    let parent = h.create_agent_named("p").await;
    let child = h
        .registry()
        .create(
            parent.agent().ctx(),
            CreateAgentOptions {
                session_id: Some("c".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    h.track(child.clone());
    assert!(h
        .registry()
        .is_owned_by(child.agent().id(), parent.agent().id()));
    let roots: Vec<String> = h
        .registry()
        .roots()
        .iter()
        .map(|a| a.id().to_string())
        .collect();
    assert_eq!(roots, ["p"]);
    parent.dispose().await;
    until(|| h.registry().get(&"c".into()).is_none()).await;
    h.finish().await;
}

#[tokio::test]
async fn maintenance_keeps_status_idle_and_defers_wakes() {
    let h = Harness::builder().script(text_script(&["ok"])).build();
    let agent = h.create_agent_named("s1").await.agent().clone();
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
    assert!(!outline(&agent.session().events())
        .iter()
        .any(|l| l.starts_with("turn/start")));
    gate.add_permits(1);
    assert!(!task.await.unwrap());
    until(|| {
        outline(&agent.session().events())
            .iter()
            .any(|l| l == "turn/end 1 completed")
    })
    .await;
    agent.when_idle().await;
    assert_eq!(live.only(&["status"]), ["status running", "status idle"]);
    h.finish().await;
}

#[tokio::test]
async fn resume_continues_numbering_keeps_pending_input_and_logs_a_resume_header() {
    let h = Harness::builder()
        .script(text_script(&["one", "two"]))
        .build();
    let err = h
        .resume_agent(ResumeAgentOptions::new("s1".into()))
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::NoPersistence));
    let store = h.mount_memory_source();
    let first = h.create_agent_named("s1").await;
    first.agent().followup(msg("a")).unwrap();
    first.agent().when_idle().await;
    first.agent().inject(msg("pending")).unwrap();
    store.save_session(first.agent().session()); // as if the process died here
    first.dispose().await;

    let live = h.record();
    let mut options = ResumeAgentOptions::new("s1".into());
    options.agent_options = agent_options();
    let resumed = h.resume_agent(options).await.unwrap();
    let agent = resumed.agent().clone();
    assert!(live.take().contains(&"session-start resume".to_string()));
    assert_eq!(
        agent.inbox().next_step().len(),
        1,
        "pending input survives, nothing runs"
    );
    assert!(!outline(&agent.session().events())
        .iter()
        .any(|l| l == "turn/start 2"));
    agent.followup(msg("b")).unwrap();
    agent.when_idle().await;
    let lines = outline(&agent.session().events());
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
    h.finish().await;
}

#[tokio::test]
async fn resuming_a_crashed_turn_repairs_it_first() {
    let h = Harness::builder().script([ScriptEntry::Hang]).build();
    let store = h.mount_memory_source();
    let first = h.create_agent_named("s1").await;
    first.agent().followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(1).await;
    store.save_session(first.agent().session());
    first.dispose().await;
    let resumed = h
        .resume_agent(ResumeAgentOptions::new("s1".into()))
        .await
        .unwrap();
    let lines = outline(&resumed.agent().session().events());
    assert_eq!(
        lines[lines.len() - 3..],
        ["step/end 1.1", "turn/end 1 interrupted", "session/end-seed"]
    );
    h.finish().await;
}

#[tokio::test]
async fn configured_agents_start_with_the_loop_and_failures_are_reported() {
    let h = Harness::builder()
        .loop_config(AgentLoopConfig {
            agents: vec![
                ConfiguredAgent {
                    id: "main".into(),
                    provider: Some(PROVIDER.into()),
                    model: Some(MODEL.into()),
                    ..Default::default()
                },
                ConfiguredAgent {
                    id: "old".into(),
                    resume_session_id: Some("gone".into()),
                    ..Default::default()
                },
            ],
            ..Default::default()
        })
        .build();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = failures.clone();
    h.ctx()
        .on::<ConfigStartFailed>(move |e| {
            seen.lock()
                .unwrap()
                .push(format!("{} {}", e.config_id, e.error));
            Ok(())
        })
        .unwrap()
        .forget();
    until(|| {
        h.registry()
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
    h.finish().await;
}

#[tokio::test]
async fn unloading_the_loop_disposes_its_agents() {
    let h = Harness::builder().script([ScriptEntry::Hang]).build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(1).await;
    h.loop_fiber().dispose();
    until(|| h.registry().get(&"s1".into()).is_none()).await;
    assert_eq!(
        outline(&agent.session().events()).last().unwrap(),
        "turn/end 1 aborted disposed"
    );
    let err = h
        .registry()
        .create(h.ctx(), CreateAgentOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "NO_AGENT_FACTORY");
    h.finish().await;
}

#[tokio::test]
async fn a_resumed_agent_does_not_resend_a_retained_runtime_context() {
    let h = Harness::builder()
        .script(text_script(&["one", "two"]))
        .build();
    let store = h.mount_memory_source();
    h.prompt()
        .context(h.ctx(), dsh_prompt::ContextEntry::new("mode", 1.0, "plan"))
        .unwrap()
        .forget();
    let first = h.create_agent_named("s1").await;
    first.agent().followup(msg("a")).unwrap();
    first.agent().when_idle().await;
    store.save_session(first.agent().session());
    first.dispose().await;
    let resumed = h
        .resume_agent({
            let mut options = ResumeAgentOptions::new("s1".into());
            options.agent_options = agent_options();
            options
        })
        .await
        .unwrap();
    resumed.agent().followup(msg("b")).unwrap();
    resumed.agent().when_idle().await;
    let users: Vec<String> = outline(&resumed.agent().session().events())
        .into_iter()
        .filter(|l| l.starts_with("user:"))
        .map(|l| l.chars().take(30).collect())
        .collect();
    assert_eq!(
        users,
        ["user: a", "user: Current runtime context.", "user: b"]
    );
    h.finish().await;
}
