//! Cancellation windows (spec §2.3, §2.4, §4.8).

use dsh_agent::{Agent, AgentCancelCause, AgentStatus, AgentStatusChanged, CancelOptions, PreStep};
use dsh_testkit::harness::{msg, until, Harness, ScriptedTool};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response, ScriptEntry};
use std::sync::Arc;

fn cancel(agent: &Arc<dyn Agent>, cause: AgentCancelCause) {
    agent.cancel(cause, CancelOptions::default()).unwrap();
}

fn has(agent: &Arc<dyn Agent>, line: &str) -> bool {
    outline(&agent.session().events()).iter().any(|l| l == line)
}

#[tokio::test]
async fn cancel_before_turn_start_leaves_no_turn_at_all() {
    let h = Harness::builder().build();
    let agent = h.create_agent_named("s1").await.agent().clone();
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
        outline(&agent.session().events()),
        [
            "splice next-turn @0 -0 +[\"a\"]",
            "splice next-turn @0 -1 +[] canceled"
        ]
    );
    assert_eq!(live.only(&["status"]), ["status running", "status idle"]);
    h.finish().await;
}

#[tokio::test]
async fn cancel_during_pre_step_closes_a_no_step_turn_as_aborted() {
    let h = Harness::builder().build();
    let agent = h.create_agent_named("s1").await.agent().clone();
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
        outline(&agent.session().events()),
        [
            "splice next-turn @0 -0 +[\"a\"]",
            "turn/start 1",
            "splice next-turn @0 -1 +[]",
            "turn/end 1 aborted hook",
        ]
    );
    assert!(h.adapter().requests().is_empty());
    h.finish().await;
}

#[tokio::test]
async fn cancel_mid_stream_records_exactly_the_visible_prefix() {
    let h = Harness::builder()
        .script([ScriptEntry::HangAfter(2, text_response("partial"))])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(1).await;
    assert!(has(&agent, "chunk text-delta"));
    cancel(&agent, AgentCancelCause::User);
    // The first cause wins.
    cancel(&agent, AgentCancelCause::Parent);
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events())[7..],
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
    h.finish().await;
}

#[tokio::test]
async fn cancel_before_visible_text_records_no_message() {
    let h = Harness::builder()
        .script([ScriptEntry::HangAfter(2, text_response("  "))])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(1).await;
    assert!(has(&agent, "chunk text-delta"));
    cancel(&agent, AgentCancelCause::User);
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events())[7..],
        [
            "chunk block-start",
            "chunk text-delta",
            "step/end 1.1",
            "turn/end 1 aborted user"
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn cancel_during_tools_drains_started_calls_and_pairs_the_rest() {
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("wait").held(), ScriptedTool::new("x")])
        .script([
            tool_call_response(&[("g1", "wait", "{}"), ("x2", "x", "{}"), ("x3", "x", "{}")])
                .into(),
        ])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.probe().wait_for("start g1").await;
    cancel(&agent, AgentCancelCause::User);
    agent.when_idle().await;
    let tools: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .skip_while(|l| !l.starts_with("tool/"))
        .collect();
    assert_eq!(
        tools,
        [
            "tool/call g1 wait {}",
            "tool/result ERR Error: tool call aborted [ABORTED] cites [19]",
            "tool/call x2 x {}",
            "tool/result ERR Error: tool call aborted before dispatch [ABORTED_BEFORE_DISPATCH] cites [21]",
            "tool/call x3 x {}",
            "tool/result ERR Error: tool call aborted before dispatch [ABORTED_BEFORE_DISPATCH] cites [23]",
            "step/end 1.1",
            "turn/end 1 aborted user",
        ]
    );
    assert_eq!(h.probe().journal(), ["start g1", "end g1"]);
    h.finish().await;
}

/// Turn 1 of agent `s1` blocks in tool call `t1`, which ignores cancellation until the
/// probe releases it.
async fn stuck_in_a_tool() -> (Harness, Arc<dyn Agent>) {
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("stuck").stubborn()])
        .script([tool_call_response(&[("t1", "stuck", "{}")]).into()])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.probe().wait_for("start t1").await;
    (h, agent)
}

#[tokio::test]
async fn a_wake_after_abort_is_latched_and_runs_once_idle() {
    let (h, agent) = stuck_in_a_tool().await;
    let live = h.record();
    cancel(&agent, AgentCancelCause::User);
    // Aborted but not idle: a steer is routed to next-turn and latched.
    agent.steer(msg("again")).unwrap();
    assert_eq!(agent.inbox().next_turn().len(), 1);
    h.adapter().push(text_response("fine"));
    h.probe().release("t1");
    until(|| has(&agent, "turn/end 2 completed")).await;
    agent.when_idle().await;
    let turns: Vec<String> = outline(&agent.session().events())
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
    assert_eq!(
        live.only(&["status"]),
        ["status idle", "status running", "status idle"]
    );
    h.finish().await;
}

#[tokio::test]
async fn inject_after_abort_parks_and_a_disposed_cancel_never_latches() {
    let (h, agent) = stuck_in_a_tool().await;
    cancel(&agent, AgentCancelCause::Disposed);
    agent.steer(msg("lost")).unwrap();
    agent.inject(msg("parked")).unwrap();
    h.probe().release("t1");
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events()).last().unwrap(),
        "turn/end 1 aborted disposed"
    );
    assert_eq!(
        agent.inbox().next_turn().len(),
        1,
        "not latched during disposal"
    );
    assert_eq!(agent.inbox().next_step().len(), 1);
    h.finish().await;
}

#[tokio::test]
async fn a_latched_wake_whose_message_was_removed_does_not_replay() {
    let (h, agent) = stuck_in_a_tool().await;
    cancel(&agent, AgentCancelCause::User);
    agent.steer(msg("again")).unwrap();
    assert!(agent.inbox().remove(&msg("again").id).unwrap());
    h.probe().release("t1");
    agent.when_idle().await;
    assert!(has(&agent, "splice next-turn @0 -1 +[] canceled"));
    assert_eq!(
        outline(&agent.session().events()).last().unwrap(),
        "turn/end 1 aborted user"
    );
    h.finish().await;
}

#[tokio::test]
async fn keep_inbox_cancels_the_turn_but_keeps_pending_work() {
    let h = Harness::builder().script([ScriptEntry::Hang]).build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("a")).unwrap();
    agent.followup(msg("b")).unwrap();
    h.adapter().wait_for_hang(1).await;
    agent
        .cancel(AgentCancelCause::User, CancelOptions::keep_inbox())
        .unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events()).last().unwrap(),
        "turn/end 1 aborted user"
    );
    assert!(!outline(&agent.session().events())
        .iter()
        .any(|l| l.ends_with("canceled")));
    // The driver stopped after the abort; the queued prompt waits for a wake.
    assert_eq!(agent.inbox().next_turn().len(), 1);
    h.adapter().push(text_response("b done"));
    h.adapter().push(text_response("c done"));
    agent.followup(msg("c")).unwrap();
    agent.when_idle().await;
    let users: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("user:"))
        .collect();
    assert_eq!(users, ["user: a", "user: b", "user: c"]);
    // Cancel on an idle agent starts nothing.
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    assert!(!has(&agent, "turn/start 4"));
    h.finish().await;
}

#[test]
fn dropping_the_driver_mid_turn_still_leaves_a_balanced_log() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (h, agent) = runtime.block_on(async {
        let h = Harness::builder()
            .script([ScriptEntry::HangAfter(2, text_response("half"))])
            .build();
        let agent = h.create_agent_named("s1").await.agent().clone();
        agent.followup(msg("a")).unwrap();
        h.adapter().wait_for_hang(1).await;
        (h, agent)
    });
    // Shutting the runtime down drops the driver future mid-stream.
    drop(runtime);
    assert_eq!(
        outline(&agent.session().events())[7..],
        [
            "chunk block-start",
            "chunk text-delta",
            "assistant (interrupted): half cites [7, 8]",
            "step/end 1.1",
            "turn/end 1 aborted disposed",
        ]
    );
    assert_eq!(agent.status(), AgentStatus::Idle);
    // The checks need a runtime for their idle wait; the agent already is idle.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(h.finish());
}
