//! Cancellation windows (spec §2.3, §2.4, §4.8).

use super::harness::{take, until, Harness, Log, TestTool};
use super::normalize::outline;
use super::scripted::{text, text_chunks, tool_calls, Reply};
use super::turns::msg;
use dsh_agent::{Agent, AgentCancelCause, AgentStatus, AgentStatusChanged, CancelOptions, PreStep};
use dsh_protocol::FinishReason;
use std::sync::Arc;
use tokio::sync::Semaphore;

fn cancel(agent: &Arc<dyn Agent>, cause: AgentCancelCause) {
    agent.cancel(cause, CancelOptions::default()).unwrap();
}

fn has(agent: &Arc<dyn Agent>, line: &str) -> bool {
    outline(agent.session()).iter().any(|l| l == line)
}

#[tokio::test]
async fn cancel_before_turn_start_leaves_no_turn_at_all() {
    let h = Harness::new();
    let agent = h.agent("s1").await.agent().clone();
    agent
        .ctx()
        .on::<AgentStatusChanged>(|e| {
            if e.data == AgentStatus::Running {
                e.agent
                    .cancel(AgentCancelCause::User, CancelOptions::default())?;
            }
            Ok(())
        })
        .unwrap()
        .forget();
    let live = h.record();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(agent.session()),
        [
            "splice next-turn @0 -0 +[\"a\"]",
            "splice next-turn @0 -1 +[] canceled"
        ]
    );
    let statuses: Vec<String> = take(&live)
        .into_iter()
        .filter(|l| l.starts_with("status"))
        .collect();
    assert_eq!(statuses, ["status running", "status idle"]);
}

#[tokio::test]
async fn cancel_during_pre_step_closes_a_no_step_turn_as_aborted() {
    let h = Harness::new();
    let agent = h.agent("s1").await.agent().clone();
    agent
        .ctx()
        .on_waterfall::<PreStep, _, _>(|args, next| {
            args.agent
                .cancel(AgentCancelCause::hook("policy"), CancelOptions::default())
                .unwrap();
            next.run()
        })
        .unwrap()
        .forget();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(agent.session()),
        [
            "splice next-turn @0 -0 +[\"a\"]",
            "turn/start 1",
            "splice next-turn @0 -1 +[]",
            "turn/end 1 aborted hook",
        ]
    );
    assert!(h.model.requests().is_empty());
}

#[tokio::test]
async fn cancel_mid_stream_records_exactly_the_visible_prefix() {
    let h = Harness::new();
    h.model.push(Reply::HangAfter(
        text_chunks("partial", FinishReason::Stop),
        2,
    ));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    until(|| has(&agent, "chunk text-delta")).await;
    cancel(&agent, AgentCancelCause::User);
    // The first cause wins.
    cancel(&agent, AgentCancelCause::Parent);
    agent.when_idle().await;
    assert_eq!(
        outline(agent.session())[7..],
        [
            "chunk block-start",
            "chunk text-delta",
            "assistant (interrupted): partial cites [7, 8]",
            "step/end 1.1",
            "turn/end 1 aborted user",
        ]
    );
    let events = agent.session().events();
    let interrupted = serde_json::to_value(&*events[9]).unwrap();
    assert_eq!(interrupted["data"]["interrupted"], serde_json::json!(true));
}

#[tokio::test]
async fn cancel_before_visible_text_records_no_message() {
    let h = Harness::new();
    h.model
        .push(Reply::HangAfter(text_chunks("  ", FinishReason::Stop), 2));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    until(|| has(&agent, "chunk text-delta")).await;
    cancel(&agent, AgentCancelCause::User);
    agent.when_idle().await;
    assert_eq!(
        outline(agent.session())[7..],
        [
            "chunk block-start",
            "chunk text-delta",
            "step/end 1.1",
            "turn/end 1 aborted user"
        ]
    );
}

#[tokio::test]
async fn cancel_during_tools_drains_started_calls_and_pairs_the_rest() {
    let h = Harness::new();
    let log = Log::default();
    let gate = Arc::new(Semaphore::new(0));
    h.register(TestTool::new("wait", &log).gated(&gate).arc());
    h.register(TestTool::new("x", &log).arc());
    h.model.push(tool_calls(&[
        ("g1", "wait", "{}"),
        ("x2", "x", "{}"),
        ("x3", "x", "{}"),
    ]));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    until(|| log.lock().unwrap().contains(&"start g1".to_string())).await;
    cancel(&agent, AgentCancelCause::User);
    agent.when_idle().await;
    let tools: Vec<String> = outline(agent.session())
        .into_iter()
        .skip_while(|l| !l.starts_with("tool/"))
        .collect();
    assert_eq!(
        tools,
        [
            "tool/call g1 wait {}",
            "tool/result ERR Error: tool call aborted [ABORTED] cites [18]",
            "tool/call x2 x {}",
            "tool/result ERR Error: tool call aborted before dispatch [ABORTED_BEFORE_DISPATCH] cites [20]",
            "tool/call x3 x {}",
            "tool/result ERR Error: tool call aborted before dispatch [ABORTED_BEFORE_DISPATCH] cites [22]",
            "step/end 1.1",
            "turn/end 1 aborted user",
        ]
    );
    assert!(!log.lock().unwrap().contains(&"start x2".to_string()));
}

/// Turn 1 blocks in a tool that ignores cancellation until `gate` opens.
async fn stuck_in_a_tool(h: &Harness, gate: &Arc<Semaphore>) -> Arc<dyn Agent> {
    let log = Log::default();
    let mut tool = TestTool::new("stuck", &log).gated(gate);
    tool.stubborn = true;
    h.register(tool.arc());
    h.model.push(tool_calls(&[("t1", "stuck", "{}")]));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    until(|| log.lock().unwrap().contains(&"start t1".to_string())).await;
    agent
}

#[tokio::test]
async fn a_wake_after_abort_is_latched_and_runs_once_idle() {
    let h = Harness::new();
    let gate = Arc::new(Semaphore::new(0));
    let agent = stuck_in_a_tool(&h, &gate).await;
    let live = h.record();
    cancel(&agent, AgentCancelCause::User);
    // Aborted but not idle: a steer is routed to next-turn and latched.
    agent.steer(msg("again")).unwrap();
    assert_eq!(agent.inbox().next_turn().len(), 1);
    h.model.push(text("fine"));
    gate.add_permits(1);
    until(|| has(&agent, "turn/end 2 completed")).await;
    agent.when_idle().await;
    let turns: Vec<String> = outline(agent.session())
        .into_iter()
        .filter(|l| l.starts_with("turn/") || l.starts_with("user:"))
        .collect();
    assert_eq!(
        turns,
        [
            "turn/start 1",
            "user: a",
            "turn/end 1 aborted user",
            "turn/start 2",
            "user: again",
            "turn/end 2 completed"
        ]
    );
    let statuses: Vec<String> = take(&live)
        .into_iter()
        .filter(|l| l.starts_with("status"))
        .collect();
    assert_eq!(statuses, ["status idle", "status running", "status idle"]);
}

#[tokio::test]
async fn inject_after_abort_parks_and_a_disposed_cancel_never_latches() {
    let h = Harness::new();
    let gate = Arc::new(Semaphore::new(0));
    let agent = stuck_in_a_tool(&h, &gate).await;
    cancel(&agent, AgentCancelCause::Disposed);
    agent.steer(msg("lost")).unwrap();
    agent.inject(msg("parked")).unwrap();
    gate.add_permits(1);
    agent.when_idle().await;
    assert_eq!(
        outline(agent.session()).last().unwrap(),
        "turn/end 1 aborted disposed"
    );
    assert_eq!(
        agent.inbox().next_turn().len(),
        1,
        "not latched during disposal"
    );
    assert_eq!(agent.inbox().next_step().len(), 1);
}

#[tokio::test]
async fn a_latched_wake_whose_message_was_removed_does_not_replay() {
    let h = Harness::new();
    let gate = Arc::new(Semaphore::new(0));
    let agent = stuck_in_a_tool(&h, &gate).await;
    cancel(&agent, AgentCancelCause::User);
    agent.steer(msg("again")).unwrap();
    assert!(agent.inbox().remove(&msg("again").id).unwrap());
    gate.add_permits(1);
    agent.when_idle().await;
    assert!(has(&agent, "splice next-turn @0 -1 +[] canceled"));
    assert_eq!(
        outline(agent.session()).last().unwrap(),
        "turn/end 1 aborted user"
    );
}

#[tokio::test]
async fn keep_inbox_cancels_the_turn_but_keeps_pending_work() {
    let h = Harness::new();
    h.model.push(Reply::Hang);
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    agent.followup(msg("b")).unwrap();
    h.model.wait_requests(1).await;
    agent
        .cancel(AgentCancelCause::User, CancelOptions::keep_inbox())
        .unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(agent.session()).last().unwrap(),
        "turn/end 1 aborted user"
    );
    assert!(!outline(agent.session())
        .iter()
        .any(|l| l.ends_with("canceled")));
    // The driver stopped after the abort; the queued prompt waits for a wake.
    assert_eq!(agent.inbox().next_turn().len(), 1);
    h.model.push(text("b done"));
    h.model.push(text("c done"));
    agent.followup(msg("c")).unwrap();
    agent.when_idle().await;
    let users: Vec<String> = outline(agent.session())
        .into_iter()
        .filter(|l| l.starts_with("user:"))
        .collect();
    assert_eq!(users, ["user: a", "user: b", "user: c"]);
    // Cancel on an idle agent starts nothing.
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    assert!(!has(&agent, "turn/start 4"));
}

#[test]
fn dropping_the_driver_mid_turn_still_leaves_a_balanced_log() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (h, agent) = runtime.block_on(async {
        let h = Harness::new();
        h.model
            .push(Reply::HangAfter(text_chunks("half", FinishReason::Stop), 2));
        let agent = h.agent("s1").await.agent().clone();
        agent.followup(msg("a")).unwrap();
        until(|| has(&agent, "chunk text-delta")).await;
        (h, agent)
    });
    // Shutting the runtime down drops the driver future mid-stream.
    drop(runtime);
    assert_eq!(
        outline(agent.session())[7..],
        [
            "chunk block-start",
            "chunk text-delta",
            "assistant (interrupted): half cites [7, 8]",
            "step/end 1.1",
            "turn/end 1 aborted disposed",
        ]
    );
    assert_eq!(agent.status(), AgentStatus::Idle);
    drop(h);
}
