//! What a tool body reaches of the agent it runs for (`ToolExecution::caller`): the session,
//! the scoped context, the registry (to create agents it owns), and an owned handle that
//! outlives the call (to wake the agent later).

use dsh_agent::{Agent, AgentError, AgentHandle, CreateAgentOptions};
use dsh_protocol::SessionId;
use dsh_testkit::expect::*;
use dsh_testkit::harness::{agent_options, msg, Harness};
use dsh_testkit::scripted::{text_response, tool_call_response};
use dsh_tools::{Tool, ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

fn same_agent(a: &Arc<dyn Agent>, b: &Arc<dyn Agent>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

fn schema(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "parameters": {"type": "object"}})
}

/// The `request/header` of a harness agent whose only tool is `tool`.
fn header_for(tool: Value) -> Events {
    let mut initial = header("initial", &[]);
    initial[0]["data"]["header"]["tools"] = json!([tool]);
    initial
}

/// The first turn of both tests: `go` → one call of `tool` with output `output` → `answer_`.
fn one_call_turn(tool: &str, description: &str, output: &str, answer_: &str) -> Vec<Events> {
    let call = tool_call_response(&[("c1", tool, "{}")]);
    flat(vec![
        vec![
            insert("next-turn", 0, &["go"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(1, 1),
            user("go"),
            header_for(schema(tool, description)),
            context(),
            chunks(1, 1, &call),
        ],
        vec![assistant(
            1,
            1,
            1,
            json!([call_block("c1", tool, "{}")]),
            true,
            7..12,
        )],
        vec![
            tool_call(1, 1, "c1", tool, "{}"),
            tool_ok(1, 1, 2, "c1", output, 13),
        ],
        vec![step_end(1, 1), step_start(1, 2)],
        answer(1, 2, 3, answer_, 17),
        vec![step_end(1, 2), turn_end(1, completed())],
    ])
}

/// Reports what it reaches of its caller and creates a child agent owned by it.
#[derive(Default)]
struct Inspect {
    children: Mutex<Vec<AgentHandle>>,
}

impl Tool for Inspect {
    fn name(&self) -> &str {
        "inspect"
    }
    fn description(&self) -> String {
        "Reports what it reaches of its caller.".into()
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
            let caller = exec.caller().ok_or_else(|| ToolFailure::new("no caller"))?;
            let scoped = caller.ctx().scope() == Some(caller.scope_key())
                && exec.scope() == Some(caller.scope_key());
            let registry = caller
                .registry()
                .ok_or_else(|| ToolFailure::new("no registry"))?;
            let registered = registry
                .get(caller.id())
                .is_some_and(|agent| same_agent(&agent, caller.agent()));
            let child = caller
                .create_child(CreateAgentOptions {
                    session_id: Some(SessionId::from("child-1")),
                    agent_options: agent_options(),
                    ..Default::default()
                })
                .await
                .map_err(|e| ToolFailure::new(e.to_string()))?;
            let child_id = child.agent().id().clone();
            let owned = registry.is_owned_by(&child_id, caller.id());
            self.children.lock().unwrap().push(child);
            Ok(json!(format!(
                "session {} scoped {scoped} registered {registered} child {child_id} owned {owned}",
                caller.session().id()
            )))
        })
    }
}

#[tokio::test]
async fn a_tool_body_reaches_its_callers_session_context_and_registry() {
    let inspect = Arc::new(Inspect::default());
    let h = Harness::builder()
        .custom_tool(inspect.clone())
        .script([
            tool_call_response(&[("c1", "inspect", "{}")]).into(),
            text_response("done").into(),
        ])
        .build();
    let parent = h.create_agent_named("agent-1").await;
    let agent = parent.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;

    let output = "session agent-1 scoped true registered true child child-1 owned true";
    let expected = log(&one_call_turn(
        "inspect",
        "Reports what it reaches of its caller.",
        output,
        "done",
    ));
    assert_log(&h.log_json(), &expected);

    // The child belongs to the caller: disposing the caller disposes it.
    let child = inspect.children.lock().unwrap().pop().unwrap();
    let child_id = SessionId::from("child-1");
    assert!(h.registry().get(&child_id).is_some());
    assert!(h.registry().roots().iter().all(|a| a.id() != &child_id));
    parent.dispose().await;
    // The owner's teardown starts the child's, which completes on its own task.
    for _ in 0..1000 {
        if h.registry().get(&child_id).is_none() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(h.registry().get(&child_id).is_none());
    h.track(child);
    h.finish().await;
}

/// Starts a "job" that keeps only a weak handle to its caller and, once released, wakes it
/// with a follow-up, long after the call returned.
#[derive(Default)]
struct StartJob {
    release: Arc<Notify>,
    job: Mutex<Option<JoinHandle<Result<bool, AgentError>>>>,
}

impl Tool for StartJob {
    fn name(&self) -> &str {
        "start_job"
    }
    fn description(&self) -> String {
        "Starts a background job.".into()
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
            let owner = exec
                .caller()
                .ok_or_else(|| ToolFailure::new("no caller"))?
                .downgrade();
            let release = self.release.clone();
            let job = tokio::spawn(async move {
                release.notified().await;
                match owner.upgrade() {
                    Some(agent) => agent.followup(msg("job done")).map(|()| true),
                    None => Ok(false),
                }
            });
            *self.job.lock().unwrap() = Some(job);
            Ok(json!("started"))
        })
    }
}

#[tokio::test]
async fn a_tool_body_keeps_its_caller_and_wakes_it_after_the_call_returned() {
    let start = Arc::new(StartJob::default());
    let h = Harness::builder()
        .custom_tool(start.clone())
        .script([
            tool_call_response(&[("c1", "start_job", "{}")]).into(),
            text_response("waiting").into(),
            text_response("got it").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let first_turn = one_call_turn(
        "start_job",
        "Starts a background job.",
        "started",
        "waiting",
    );
    assert_log(&h.log_json(), &log(&first_turn));

    // The call returned and the turn ended; the job now wakes the agent.
    start.release.notify_one();
    let job = start.job.lock().unwrap().take().unwrap();
    assert!(job.await.unwrap().unwrap(), "the agent was still alive");
    agent.when_idle().await;
    let expected = log(&flat(vec![
        first_turn,
        vec![
            insert("next-turn", 0, &["job done"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(2, 1), user("job done")],
        answer(2, 1, 4, "got it", 30),
        vec![step_end(2, 1), turn_end(2, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    h.finish().await;
}
