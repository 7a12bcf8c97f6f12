//! Spec §12 invariants about the agent around the loop (9, 10, 11, 12, 20, 24, 25): inbox
//! durability, cancellation, the wake latch, status, scoping and teardown.

use dsh_agent::{
    Agent, AgentCancelCause, AgentEvents, AgentStatus, AgentStatusChanged, CancelOptions,
    CreateAgentOptions, Inbox, SessionMeta,
};
use dsh_kernel::ScopeKey;
use dsh_prompt::Section;
use dsh_protocol::SessionId;
use dsh_session::{
    AppendOptions, EventData, InboxSplice, InboxTarget, Session, SessionEventPublished,
    SessionHeader,
};
use dsh_testkit::expect::*;
use dsh_testkit::harness::{agent_options, msg, msg_json, run_followup, Harness, TestTool};
use dsh_testkit::scripted::{text_response, tool_call_response, ScriptEntry};
use dsh_tools::ToolResultEvent;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

fn ids(list: Vec<Arc<dsh_protocol::Message>>) -> Vec<String> {
    list.iter().map(|m| m.id.to_string()).collect()
}

/// `(next-turn, next-step)` ids of an inbox.
fn lists(inbox: &Inbox) -> (Vec<String>, Vec<String>) {
    (ids(inbox.next_turn()), ids(inbox.next_step()))
}

/// The inbox a fresh process would rebuild from `session`'s log.
fn replayed(h: &Harness, session: &Session) -> (Vec<String>, Vec<String>) {
    let events = AgentEvents::new(h.ctx().clone(), ScopeKey::new("replay"));
    lists(&Inbox::restore(session.clone(), events).unwrap())
}

fn spliced(target: &str, start: u64, removed: u64, inserted: &[&str], canceled: bool) -> Events {
    let mut data = json!({"target": target, "start": start, "removedCount": removed,
        "inserted": inserted.iter().map(|t| msg_json(t)).collect::<Vec<_>>()});
    if canceled {
        data["outcome"] = json!("canceled");
    }
    vec![json!({"type": "agent/inbox/spliced", "data": data})]
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn inv09_inbox_durability() {
    let h = Harness::builder()
        .script([text_response("r1").into(), text_response("r2").into()])
        .build();
    let agent = h.create_agent().await.agent().clone();
    let live = h.record();
    let inbox = agent.inbox();
    agent.inject(msg("a")).unwrap();
    agent.inject(msg("b")).unwrap();
    inbox.append(InboxTarget::NextTurn, msg("p1")).unwrap();
    inbox.prepend(InboxTarget::NextTurn, msg("p0")).unwrap();
    assert!(inbox.replace(&msg("b").id, msg("b2")).unwrap());
    assert!(inbox.remove(&msg("a").id).unwrap());
    inbox
        .splice(InboxTarget::NextTurn, -1, 1, vec![msg("p9")])
        .unwrap();
    let pending = (strings(&["m-p0", "m-p9"]), strings(&["m-b2"]));
    assert_eq!(lists(inbox), pending);
    assert_eq!(replayed(&h, agent.session()), pending);

    // Duplicate pending ids are refused (in either list) without a trace.
    let before = h.log_json();
    assert_eq!(
        agent.inject(msg("b2")).unwrap_err().code(),
        "DUPLICATE_PENDING_MESSAGE"
    );
    assert_eq!(
        agent.steer(msg("p0")).unwrap_err().code(),
        "DUPLICATE_PENDING_MESSAGE"
    );
    assert_eq!(h.log_json(), before);
    assert_eq!(lists(inbox), pending);
    assert_eq!(agent.status(), AgentStatus::Idle);

    // Claims are durable too: after two turns only the new items are pending.
    agent.steer(msg("q")).unwrap();
    agent.when_idle().await;
    agent.inject(msg("c")).unwrap();
    inbox.append(InboxTarget::NextTurn, msg("d")).unwrap();
    let pending = (strings(&["m-d"]), strings(&["m-c"]));
    assert_eq!(lists(inbox), pending);
    assert_eq!(replayed(&h, agent.session()), pending);

    let expected = log(&flat(vec![
        vec![
            insert("next-step", 0, &["a"]),
            insert("next-step", 1, &["b"]),
        ],
        vec![
            insert("next-turn", 0, &["p1"]),
            insert("next-turn", 0, &["p0"]),
        ],
        vec![spliced("next-step", 1, 1, &["b2"], true)],
        vec![cancel("next-step", 0, 1)],
        vec![spliced("next-turn", 1, 1, &["p9"], true)],
        vec![insert("next-step", 1, &["q"]), turn_start(1)],
        vec![claim("next-step", 0, 2), claim("next-turn", 0, 1)],
        vec![step_start(1, 1), user("b2"), user("q"), user("p0")],
        vec![header("initial", &[]), context()],
        answer(1, 1, 1, "r1", 17),
        vec![step_end(1, 1), turn_end(1, completed())],
        vec![
            turn_start(2),
            claim("next-turn", 0, 1),
            step_start(2, 1),
            user("p9"),
        ],
        answer(2, 1, 2, "r2", 29),
        vec![step_end(2, 1), turn_end(2, completed())],
        vec![
            insert("next-step", 0, &["c"]),
            insert("next-turn", 0, &["d"]),
        ],
    ]));
    assert_log(&h.log_json(), &expected);
    assert_eq!(
        live.only(&["inserted", "discarded"]),
        [
            "inserted m-a",
            "inserted m-b",
            "inserted m-p1",
            "inserted m-p0",
            "discarded m-b",
            "inserted m-b2",
            "discarded m-a",
            "discarded m-p1",
            "inserted m-p9",
            "inserted m-q",
            "inserted m-c",
            "inserted m-d",
        ]
    );

    // A fork replays only its own splices: it does not inherit pending items.
    let events = agent.session().events();
    let child = h
        .create_agent_with(CreateAgentOptions {
            session_id: Some(SessionId::from("child")),
            seed: Some(events.to_vec()),
            meta: SessionMeta {
                parent_session: Some(agent.id().clone()),
                seed_length: Some(events.len() as u64),
                ..Default::default()
            },
            agent_options: agent_options(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(lists(child.agent().inbox()), (vec![], vec![]));

    // A persisted splice that does not fit the lists is refused on restore.
    let broken = Session::new(SessionHeader::new(SessionId::from("broken"), 1)).unwrap();
    broken
        .append(
            EventData::InboxSpliced(InboxSplice {
                target: InboxTarget::NextStep,
                start: 0,
                removed_count: 1,
                inserted: vec![],
                outcome: None,
            }),
            AppendOptions::log_only(),
        )
        .unwrap();
    let events = AgentEvents::new(h.ctx().clone(), ScopeKey::new("broken"));
    let err = Inbox::restore(broken, events).unwrap_err();
    assert_eq!(err.code(), "INVALID_PERSISTED_SPLICE");
    assert_eq!(
        err.to_string(),
        "invalid persisted inbox splice at session seq 0: removing 1 messages from 0 exceeds 0 pending messages"
    );
    h.finish().await;
}

#[tokio::test]
async fn inv10_cancel_clears_unless_keep_inbox() {
    let h = Harness::builder().script([ScriptEntry::Hang]).build();
    let agent = h.create_agent().await.agent().clone();
    let live = h.record();
    agent.inject(msg("a")).unwrap();
    agent.inject(msg("b")).unwrap();
    agent
        .inbox()
        .append(InboxTarget::NextTurn, msg("p"))
        .unwrap();
    // Idle, keepInbox: nothing at all.
    let before = h.log_json();
    agent
        .cancel(AgentCancelCause::User, CancelOptions::keep_inbox())
        .unwrap();
    assert_eq!(h.log_json(), before);
    // Idle: canceled splices, next-step first; no turn.
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    assert!(!agent.inbox().has_pending());

    // Running, keepInbox: the turn is aborted, pending input survives...
    agent.followup(msg("x")).unwrap();
    h.adapter().wait_for_hang(1).await;
    agent.inject(msg("y")).unwrap();
    agent.followup(msg("z")).unwrap();
    agent
        .cancel(AgentCancelCause::User, CancelOptions::keep_inbox())
        .unwrap();
    agent.when_idle().await;
    assert_eq!(lists(agent.inbox()), (strings(&["m-z"]), strings(&["m-y"])));
    // ...until a clearing cancel, which again starts nothing.
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    agent.when_idle().await;

    let expected = log(&flat(vec![
        vec![
            insert("next-step", 0, &["a"]),
            insert("next-step", 1, &["b"]),
        ],
        vec![insert("next-turn", 0, &["p"])],
        vec![cancel("next-step", 0, 2), cancel("next-turn", 0, 1)],
        vec![
            insert("next-turn", 0, &["x"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(1, 1),
            user("x"),
            header("initial", &[]),
            context(),
        ],
        vec![
            insert("next-step", 0, &["y"]),
            insert("next-turn", 0, &["z"]),
        ],
        vec![step_end(1, 1), turn_end(1, aborted("user"))],
        vec![cancel("next-step", 0, 1), cancel("next-turn", 0, 1)],
    ]));
    assert_log(&h.log_json(), &expected);
    assert_eq!(
        live.only(&["discarded", "status"]),
        [
            "discarded m-a",
            "discarded m-b",
            "discarded m-p",
            "status running",
            "status idle",
            "discarded m-y",
            "discarded m-z",
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn inv11_abort_outcome_keeps_the_first_cause() {
    let h = Harness::builder()
        .script([ScriptEntry::Hang, ScriptEntry::Hang])
        .build();
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(1).await;
    for cause in [
        AgentCancelCause::hook("policy"),
        AgentCancelCause::User,
        AgentCancelCause::Parent,
    ] {
        agent.cancel(cause, CancelOptions::default()).unwrap();
    }
    agent.when_idle().await;
    let turn = |reason| {
        log(&[
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
            step_start(1, 1),
            user("a"),
            header("initial", &[]),
            context(),
            step_end(1, 1),
            turn_end(1, reason),
        ])
    };
    assert_log(&h.log_json(), &turn(aborted_by_hook("policy")));

    // Disposal aborts with `disposed`; a later cancel does not change it.
    let handle = h.create_agent().await;
    let second = handle.agent().clone();
    second.followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(2).await;
    let disposal = handle.dispose();
    second
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    disposal.await;
    assert_log(
        &dsh_testkit::normalize::log_json(&second.session().events()),
        &turn(aborted("disposed")),
    );
    h.finish().await;
}

/// Starts a turn on `agent` that hangs in the model (the `n`th hang of the script).
async fn hanging(h: &Harness, agent: &Arc<dyn Agent>, n: usize) {
    agent.followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(n).await;
}

fn aborted_turn() -> Vec<Events> {
    aborted_turn_with(&[])
}

/// Turn 1 of prompt `a`, cut while waiting for the model, with `tools` in its header.
fn aborted_turn_with(tools: &[TestTool]) -> Vec<Events> {
    vec![
        insert("next-turn", 0, &["a"]),
        turn_start(1),
        claim("next-turn", 0, 1),
        step_start(1, 1),
        user("a"),
        header("initial", tools),
        context(),
    ]
}

#[tokio::test]
async fn inv12_wake_latch() {
    let h = Harness::builder()
        .script([ScriptEntry::Hang, text_response("fine").into()])
        .build();
    let live = h.record();

    // A steer during an aborted, not yet idle activity goes to next-turn, is latched, and
    // runs on its own once the activity converges.
    let latched = h.create_agent().await.agent().clone();
    hanging(&h, &latched, 1).await;
    latched
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    latched.steer(msg("s")).unwrap();
    latched.when_idle().await;
    let expected = log(&flat(vec![
        aborted_turn(),
        vec![
            insert("next-turn", 0, &["s"]),
            step_end(1, 1),
            turn_end(1, aborted("user")),
        ],
        vec![
            turn_start(2),
            claim("next-turn", 0, 1),
            step_start(2, 1),
            user("s"),
        ],
        answer(2, 1, 1, "fine", 14),
        vec![step_end(2, 1), turn_end(2, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    assert_eq!(
        live.only(&["status"]),
        [
            "status running",
            "status idle",
            "status running",
            "status idle"
        ]
    );

    // A disposed-cause cancel never latches: the steer stays parked.
    let rest = |agent: &Arc<dyn Agent>| dsh_testkit::normalize::log_json(&agent.session().events());
    h.adapter().push(ScriptEntry::Hang);
    let disposing = h.create_agent().await.agent().clone();
    hanging(&h, &disposing, 2).await;
    disposing
        .cancel(AgentCancelCause::Disposed, CancelOptions::default())
        .unwrap();
    disposing.steer(msg("lost")).unwrap();
    disposing.when_idle().await;
    let expected = log(&flat(vec![
        aborted_turn(),
        vec![insert("next-turn", 0, &["lost"]), step_end(1, 1)],
        vec![turn_end(1, aborted("disposed"))],
    ]));
    assert_log(&rest(&disposing), &expected);

    // A latched message removed before convergence: nothing else pending, no replay.
    h.adapter().push(ScriptEntry::Hang);
    let removed = h.create_agent().await.agent().clone();
    hanging(&h, &removed, 3).await;
    removed
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    removed.steer(msg("gone")).unwrap();
    assert!(removed.inbox().remove(&msg("gone").id).unwrap());
    removed.when_idle().await;
    let expected = log(&flat(vec![
        aborted_turn(),
        vec![insert("next-turn", 0, &["gone"]), cancel("next-turn", 0, 1)],
        vec![step_end(1, 1), turn_end(1, aborted("user"))],
    ]));
    assert_log(&rest(&removed), &expected);

    // inject() during an aborted activity parks in next-step and is not latched.
    h.adapter().push(ScriptEntry::Hang);
    let parked = h.create_agent().await.agent().clone();
    hanging(&h, &parked, 4).await;
    parked
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    parked.inject(msg("parked")).unwrap();
    parked.when_idle().await;
    let expected = log(&flat(vec![
        aborted_turn(),
        vec![insert("next-step", 0, &["parked"]), step_end(1, 1)],
        vec![turn_end(1, aborted("user"))],
    ]));
    assert_log(&rest(&parked), &expected);
    assert_eq!(lists(parked.inbox()), (vec![], strings(&["m-parked"])));
    h.finish().await;
}

#[tokio::test]
async fn inv20_status_contract() {
    let h = Harness::builder()
        .script([
            ScriptEntry::Hang,
            text_response("s done").into(),
            text_response("m done").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    let live = h.record();

    // when_idle follows a replacement activity: it resolves only after the latched replay.
    hanging(&h, &agent, 1).await;
    let idle = agent.when_idle();
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    agent.steer(msg("s")).unwrap();
    idle.await;
    assert_eq!(agent.status(), AgentStatus::Idle);
    let last = agent.session().last_event().unwrap();
    assert_eq!(
        last.data.to_value(),
        json!({"turn": 2, "reason": {"kind": "completed"}})
    );

    // Maintenance keeps status idle and defers a wake until the task settles.
    let gate = Arc::new(Semaphore::new(0));
    let hold = gate.clone();
    let task = agent
        .run_maintenance(move |signal| async move {
            drop(hold.acquire().await);
            signal.is_aborted()
        })
        .unwrap();
    assert_eq!(
        agent.run_maintenance(|_| async {}).unwrap_err().code(),
        "AGENT_BUSY"
    );
    let before = agent.session().len();
    agent.followup(msg("m")).unwrap();
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert_eq!(agent.session().len(), before + 1, "only the insertion");
    gate.add_permits(1);
    assert!(!task.await.unwrap());
    agent.when_idle().await;

    assert_eq!(
        live.only(&["status"]),
        [
            "status running",
            "status idle",
            "status running",
            "status idle",
            "status running",
            "status idle",
        ]
    );
    let expected = log(&flat(vec![
        aborted_turn(),
        vec![
            insert("next-turn", 0, &["s"]),
            step_end(1, 1),
            turn_end(1, aborted("user")),
        ],
        vec![
            turn_start(2),
            claim("next-turn", 0, 1),
            step_start(2, 1),
            user("s"),
        ],
        answer(2, 1, 1, "s done", 14),
        vec![step_end(2, 1), turn_end(2, completed())],
        vec![
            insert("next-turn", 0, &["m"]),
            turn_start(3),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(3, 1), user("m")],
        answer(3, 1, 2, "m done", 27),
        vec![step_end(3, 1), turn_end(3, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    h.finish().await;
}

/// An `echo` that answers differently, to tell a scoped registration from the global one.
struct ScopedEcho;

impl dsh_tools::Tool for ScopedEcho {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> String {
        "A's own echo.".into()
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn execute<'a>(
        &'a self,
        _args: serde_json::Value,
        _exec: &'a dsh_tools::ToolExecution,
    ) -> futures_util::future::BoxFuture<'a, Result<serde_json::Value, dsh_tools::ToolFailure>>
    {
        Box::pin(async { Ok(json!("from A")) })
    }
}

#[tokio::test]
async fn inv24_scoping() {
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script([
            tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]).into(),
            text_response("a done").into(),
            tool_call_response(&[("c2", "echo", r#"{"text":"y"}"#)]).into(),
            text_response("b done").into(),
        ])
        .build();
    h.prompt()
        .section(h.ctx(), Section::new("flavor", 1.0, "Flavor: {{flavor}}."))
        .unwrap()
        .forget();
    h.prompt()
        .variable(h.ctx(), "flavor", |_| Some("plain".into()))
        .unwrap()
        .forget();
    let a = h.create_agent_named("a").await;
    let b = h.create_agent_named("b").await;
    let (agent_a, agent_b) = (a.agent().clone(), b.agent().clone());
    h.tools()
        .register(agent_a.ctx(), Arc::new(ScopedEcho))
        .unwrap()
        .forget();
    h.prompt()
        .section(
            agent_a.ctx(),
            Section::new("a-only", 2.0, "Only A reads this."),
        )
        .unwrap()
        .forget();
    h.prompt()
        .variable(agent_a.ctx(), "flavor", |_| Some("sour".into()))
        .unwrap()
        .forget();
    // Scoped listeners hear their own agent only; unscoped ones hear everyone.
    let heard: Arc<Mutex<Vec<String>>> = Arc::default();
    let push = |heard: &Arc<Mutex<Vec<String>>>, line: String| heard.lock().unwrap().push(line);
    let sink = heard.clone();
    agent_a
        .ctx()
        .on::<AgentStatusChanged>(move |e| {
            push(&sink, format!("A hears status of {}", e.agent.id()));
            Ok(())
        })
        .unwrap()
        .forget();
    let sink = heard.clone();
    agent_a
        .ctx()
        .on::<ToolResultEvent>(move |e| {
            push(&sink, format!("A hears tool result {}", e.exec.call_id()));
            Ok(())
        })
        .unwrap()
        .forget();
    let sink = heard.clone();
    agent_a
        .ctx()
        .on::<SessionEventPublished>(move |e| {
            if e.event.type_name() == "turn/end" {
                push(&sink, format!("A hears turn/end of {}", e.session.id()));
            }
            Ok(())
        })
        .unwrap()
        .forget();
    let sink = heard.clone();
    h.ctx()
        .on::<ToolResultEvent>(move |e| {
            push(
                &sink,
                format!("root hears tool result {}", e.exec.call_id()),
            );
            Ok(())
        })
        .unwrap()
        .forget();

    run_followup(&agent_a, "x").await;
    run_followup(&agent_b, "y").await;
    assert_eq!(
        *heard.lock().unwrap(),
        [
            "A hears status of a",
            "A hears tool result c1",
            "root hears tool result c1",
            "A hears turn/end of a",
            "A hears status of a",
            "root hears tool result c2",
        ]
    );
    let requests = h.adapter().requests();
    let shown = |i: usize| {
        let request = &requests[i];
        let tools: Vec<String> = request
            .tools
            .iter()
            .flatten()
            .map(|t| format!("{}: {}", t.name, t.description))
            .collect();
        (request.system.as_deref().unwrap().to_owned(), tools)
    };
    assert_eq!(
        shown(0),
        (
            format!("{SYSTEM}\n\nFlavor: sour.\n\nOnly A reads this."),
            strings(&["echo: A's own echo."])
        )
    );
    assert_eq!(
        shown(2),
        (
            format!("{SYSTEM}\n\nFlavor: plain."),
            strings(&["echo: Echoes its text."])
        )
    );
    // A's scoped echo ran for A; B ran the global one.
    let output = |agent: &Arc<dyn Agent>| {
        let events = agent.session().events();
        let result = events
            .iter()
            .find(|e| e.type_name() == "tool/result")
            .unwrap();
        result.data.to_value()["message"]["content"][0]["content"].clone()
    };
    assert_eq!(
        (output(&agent_a), output(&agent_b)),
        (
            json!([{"type": "text", "text": "from A"}]),
            json!([{"type": "text", "text": "y"}])
        )
    );

    // Disposal removes every scoped registration.
    a.dispose().await;
    let scope = Some(agent_a.scope_key());
    assert_eq!(
        h.tools().get(scope, "echo").unwrap().description(),
        "Echoes its text."
    );
    assert_eq!(h.prompt().scoped_layer_count(), 0);
    h.finish().await;
}

#[tokio::test]
async fn inv25_ordered_teardown() {
    let h = Harness::builder().script([ScriptEntry::Hang]).build();
    let handle = h.create_agent().await;
    let agent = handle.agent().clone();
    h.tools()
        .register(agent.ctx(), TestTool::Echo.build(h.probe()))
        .unwrap()
        .forget();
    let live = h.record();
    let marker = live.clone();
    agent
        .ctx()
        .effect("test/scope-probe", move || marker.note("scope unwound"))
        .unwrap()
        .forget();
    hanging(&h, &agent, 1).await;
    agent.followup(msg("b")).unwrap();
    agent.inject(msg("c")).unwrap();
    live.take();

    // Two concurrent disposals share one teardown.
    futures_util::future::join(handle.dispose(), handle.dispose()).await;
    assert_eq!(
        live.take(),
        [
            "session agent/inbox/spliced",
            "discarded m-c",
            "session agent/inbox/spliced",
            "discarded m-b",
            "session step/end",
            "session turn/end",
            "status idle",
            "scope unwound",
            "agent/disposed agent-1",
            "session/disposed agent-1",
        ]
    );
    let expected = log(&flat(vec![
        aborted_turn_with(&[TestTool::Echo]),
        vec![
            insert("next-turn", 0, &["b"]),
            insert("next-step", 0, &["c"]),
        ],
        vec![cancel("next-step", 0, 1), cancel("next-turn", 0, 1)],
        vec![step_end(1, 1), turn_end(1, aborted("disposed"))],
    ]));
    assert_log(&h.log_json(), &expected);
    assert!(h.registry().get(agent.id()).is_none());
    assert!(h.sessions().get(agent.id()).is_none());
    assert!(h.tools().get(Some(agent.scope_key()), "echo").is_none());
    assert_eq!(
        h.tools()
            .register(agent.ctx(), TestTool::Echo.build(h.probe()))
            .unwrap_err()
            .code(),
        "INACTIVE_EFFECT"
    );
    // The id is free again.
    let again = h.create_agent_named("agent-1").await;
    assert_eq!(again.agent().id().as_str(), "agent-1");
    h.finish().await;
}
