//! Cancellation in every window of a turn (spec §4.8), each asserted on the whole log:
//! before `turn/start`, during pre-step, mid-stream, during tools, after the abort but
//! before idle (with a latched wake), and by disposal. Synchronization uses the scripted
//! adapter's progress watches and `Notify`, never sleeps.

use dsh_agent::{Agent, AgentCancelCause, AgentStatus, AgentStatusChanged, CancelOptions, PreStep};
use dsh_testkit::expect::*;
use dsh_testkit::harness::{msg, Harness, TestTool};
use dsh_testkit::normalize::log_json;
use dsh_testkit::scripted::{text_response, tool_call_response, Response, ScriptEntry};
use dsh_tools::{Tool, ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::Notify;

fn cancel_user(agent: &Arc<dyn Agent>) {
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
}

/// Cancels its own agent from the `agent/status running` listener.
fn cancel_when_running(agent: &Arc<dyn Agent>, options: CancelOptions) {
    agent
        .ctx()
        .on::<AgentStatusChanged>(move |e| {
            if e.data == AgentStatus::Running {
                e.agent.cancel(AgentCancelCause::User, options)?;
            }
            Ok(())
        })
        .unwrap()
        .forget();
}

#[tokio::test]
async fn cancel_before_turn_start_leaves_no_turn() {
    let h = Harness::builder().build();
    let live = h.record();
    let agent = h.create_agent().await.agent().clone();
    cancel_when_running(&agent, CancelOptions::default());
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    assert_log(
        &h.log_json(),
        &log(&[insert("next-turn", 0, &["a"]), cancel("next-turn", 0, 1)]),
    );
    // With keepInbox the prompt survives, unrun (nothing latched a wake).
    let keeping = h.create_agent().await.agent().clone();
    cancel_when_running(&keeping, CancelOptions::keep_inbox());
    keeping.followup(msg("a")).unwrap();
    keeping.when_idle().await;
    assert_log(
        &log_json(&keeping.session().events()),
        &log(&[insert("next-turn", 0, &["a"])]),
    );
    assert_eq!(keeping.inbox().next_turn().len(), 1);
    assert_eq!(h.adapter().calls(), 0);
    assert_eq!(
        live.only(&["status", "discarded"]),
        [
            "status running",
            "discarded m-a",
            "status idle",
            "status running",
            "status idle"
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn cancel_during_pre_step_closes_a_balanced_no_step_turn() {
    let h = Harness::builder().build();
    let agent = h.create_agent().await.agent().clone();
    let reached = Arc::new(Notify::new());
    let signal = reached.clone();
    agent
        .ctx()
        .on_waterfall::<PreStep, _, _>(move |_, next| {
            signal.notify_one();
            async move {
                // Holds the pre-step until the turn is cancelled (the race drops it).
                std::future::pending::<()>().await;
                next.run().await
            }
        })
        .unwrap()
        .forget();
    agent.followup(msg("a")).unwrap();
    reached.notified().await;
    cancel_user(&agent);
    agent.when_idle().await;
    assert_log(
        &h.log_json(),
        &log(&[
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
            turn_end(1, aborted("user")),
        ]),
    );
    assert_eq!(h.adapter().calls(), 0);
    h.finish().await;
}

#[tokio::test]
async fn cancel_mid_stream_keeps_the_visible_prefix() {
    let reply = Response::new()
        .reasoning("weighing")
        .text("half an answer")
        .tool_call("c1", "echo", r#"{"text":"x"}"#)
        .split(2)
        .chunks();
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script([ScriptEntry::HangAfter(6, reply.clone())])
        .build();
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(1).await;
    cancel_user(&agent);
    agent.when_idle().await;
    let expected = log(&[
        insert("next-turn", 0, &["a"]),
        turn_start(1),
        claim("next-turn", 0, 1),
        step_start(1, 1),
        user("a"),
        header("initial", &[TestTool::Echo]),
        context(),
        chunks(1, 1, &reply[..6]),
        interrupted_assistant(
            1,
            1,
            1,
            json!([{"type": "reasoning", "text": "weighing"}, {"type": "text", "text": "half an answer"}]),
            7..13,
        ),
        step_end(1, 1),
        turn_end(1, aborted("user")),
    ]);
    assert_log(&h.log_json(), &expected);
    assert!(h.probe().journal().is_empty(), "no tool ran");
    h.finish().await;
}

/// Waits for cancellation, then defers a context note (an accepted context of a call
/// that was still running when the turn was aborted).
struct NoteOnCancel {
    started: Arc<Notify>,
}

impl Tool for NoteOnCancel {
    fn name(&self) -> &str {
        "note"
    }
    fn description(&self) -> String {
        "Leaves a note once cancelled.".into()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute<'a>(
        &'a self,
        _args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            self.started.notify_one();
            exec.signal().cancelled().await;
            exec.defer_context(msg("noted"));
            Ok(json!("noted"))
        })
    }
}

fn note_schema() -> Value {
    json!({"name": "note", "description": "Leaves a note once cancelled.",
        "parameters": {"type": "object"}})
}

#[tokio::test]
async fn cancel_during_tools_drains_started_calls_and_pairs_the_rest() {
    let calls = tool_call_response(&[
        ("n1", "note", "{}"),
        ("e2", "echo", r#"{"text":"x"}"#),
        ("r3", "read", r#"{"path":"p"}"#),
    ]);
    let started = Arc::new(Notify::new());
    let h = Harness::builder()
        .tools([TestTool::Echo, TestTool::Read])
        .custom_tool(Arc::new(NoteOnCancel {
            started: started.clone(),
        }))
        .script([calls.clone().into()])
        .build();
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("a")).unwrap();
    started.notified().await;
    cancel_user(&agent);
    agent.when_idle().await;

    let mut initial = header("initial", &[TestTool::Echo, TestTool::Read]);
    initial[0]["data"]["header"]["tools"] = json!([
        TestTool::Echo.schema_json(),
        note_schema(),
        TestTool::Read.schema_json()
    ]);
    let blocks = json!([
        call_block("n1", "note", "{}"),
        call_block("e2", "echo", r#"{"text":"x"}"#),
        call_block("r3", "read", r#"{"path":"p"}"#),
    ]);
    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(1, 1), user("a"), initial, context()],
        vec![
            chunks(1, 1, &calls),
            assistant(1, 1, 1, blocks, true, 7..18),
        ],
        // The started call drains: its result is the abort, its context stays parked.
        vec![
            tool_call(1, 1, "n1", "note", "{}"),
            tool_result(
                1,
                1,
                2,
                "n1",
                "Error: tool call aborted",
                Some(("AbortError", "ABORTED")),
                19,
            ),
            insert("next-step", 0, &["noted"]),
        ],
        // The calls the abort kept from starting get synthetic pairs.
        vec![skipped(1, 1, 3, "e2", "echo", r#"{"text":"x"}"#, 22)],
        vec![skipped(1, 1, 4, "r3", "read", r#"{"path":"p"}"#, 24)],
        vec![step_end(1, 1), turn_end(1, aborted("user"))],
    ]));
    assert_log(&h.log_json(), &expected);
    assert!(h.probe().journal().is_empty(), "e2 and r3 never ran");
    assert_eq!(agent.inbox().next_step()[0].id.as_str(), "m-noted");
    h.finish().await;
}

/// Ignores cancellation until released, keeping an aborted activity alive.
struct Stubborn {
    started: Arc<Notify>,
    release: Arc<Notify>,
}

impl Tool for Stubborn {
    fn name(&self) -> &str {
        "stubborn"
    }
    fn description(&self) -> String {
        "Finishes only when released.".into()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute<'a>(
        &'a self,
        _args: Value,
        _exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            self.started.notify_one();
            self.release.notified().await;
            Ok(json!("done anyway"))
        })
    }
}

#[tokio::test]
async fn a_wake_after_the_abort_but_before_idle_is_latched_and_runs() {
    let call = tool_call_response(&[("t1", "stubborn", "{}")]);
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let h = Harness::builder()
        .custom_tool(Arc::new(Stubborn {
            started: started.clone(),
            release: release.clone(),
        }))
        .script([call.clone().into(), text_response("again").into()])
        .build();
    let live = h.record();
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("a")).unwrap();
    started.notified().await;
    cancel_user(&agent);
    // Aborted but still draining the tool: the steer is routed to next-turn and latched.
    agent.steer(msg("s")).unwrap();
    assert_eq!(agent.status(), AgentStatus::Running);
    assert_eq!(agent.inbox().next_turn().len(), 1);
    release.notify_one();
    agent.when_idle().await;

    let mut initial = header("initial", &[]);
    initial[0]["data"]["header"]["tools"] = json!([{"name": "stubborn",
        "description": "Finishes only when released.", "parameters": {"type": "object"}}]);
    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(1, 1), user("a"), initial, context()],
        vec![
            chunks(1, 1, &call),
            assistant(
                1,
                1,
                1,
                json!([call_block("t1", "stubborn", "{}")]),
                true,
                7..12,
            ),
        ],
        vec![tool_call(1, 1, "t1", "stubborn", "{}")],
        vec![insert("next-turn", 0, &["s"])],
        vec![tool_result(
            1,
            1,
            2,
            "t1",
            "Error: tool call aborted",
            Some(("AbortError", "ABORTED")),
            13,
        )],
        vec![step_end(1, 1), turn_end(1, aborted("user"))],
        // Nobody sent anything else: the latched wake ran the steer as its own turn.
        vec![
            turn_start(2),
            claim("next-turn", 0, 1),
            step_start(2, 1),
            user("s"),
        ],
        vec![
            chunks(2, 1, &text_response("again")),
            assistant(2, 1, 3, text("again"), true, 22..27),
        ],
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
    h.finish().await;
}

#[tokio::test]
async fn disposal_closes_the_turn_cancels_the_inbox_and_leaves_in_order() {
    let reply = Response::new().text("partial").chunks();
    let h = Harness::builder()
        .script([ScriptEntry::HangAfter(2, reply.clone())])
        .build();
    let handle = h.create_agent().await;
    let agent = handle.agent().clone();
    agent.followup(msg("a")).unwrap();
    agent.followup(msg("b")).unwrap();
    agent.inject(msg("c")).unwrap();
    h.adapter().wait_for_hang(1).await;
    let live = h.record();
    handle.dispose().await;

    let expected = log(&[
        insert("next-turn", 0, &["a"]),
        turn_start(1),
        claim("next-turn", 0, 1),
        insert("next-turn", 0, &["b"]),
        insert("next-step", 0, &["c"]),
        step_start(1, 1),
        user("a"),
        header("initial", &[]),
        context(),
        chunks(1, 1, &reply[..2]),
        cancel("next-step", 0, 1),
        cancel("next-turn", 0, 1),
        interrupted_assistant(1, 1, 1, text("partial"), [9, 10]),
        step_end(1, 1),
        turn_end(1, aborted("disposed")),
    ]);
    assert_log(&h.log_json(), &expected);
    assert_eq!(
        live.lines(),
        [
            "session agent/inbox/spliced",
            "discarded m-c",
            "session agent/inbox/spliced",
            "discarded m-b",
            "session assistant/message",
            "session step/end",
            "session turn/end",
            "status idle",
            "agent/disposed agent-1",
            "session/disposed agent-1",
        ]
    );
    assert!(h.registry().get(agent.id()).is_none());
    h.finish().await;
}
