//! The checkpoint policy: the log is durable before a request, a step or a tool body starts.

use std::io;
use std::sync::{Arc, Mutex};

use dsh_agent::{AgentEvents, PreStep, PreStepArgs, PreStepDecision};
use dsh_kernel::BoxError;
use dsh_llm::{ChunkStream, LlmRequest, LlmStream};
use dsh_protocol::{CallId, LlmCallConfig, SessionId};
use dsh_session::{EventData, Session, SessionFlush, StepBoundary};
use dsh_store::{CheckpointError, CheckpointPoint, Compression, StorageProblem};
use dsh_testkit::fake_agent::FakeAgent;
use dsh_tools::{
    codes, InvocationResult, Prepared, Tool, ToolExecution, ToolFailure, ToolInvocation,
    ToolRuntime, ToolsConfig, ToolsPlugin,
};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::support::{log_only, mount, open_step, Harness, RecordingPersistence};

/// (durable events, session length) at the moment something observed them.
type Seen = Arc<Mutex<Vec<(u64, u64)>>>;

fn observe(seen: &Seen, persistence: &RecordingPersistence, session: &Session) {
    seen.lock()
        .unwrap()
        .push((persistence.durable(session.id()), session.len()));
}

fn request_for(session_id: Option<SessionId>) -> Arc<LlmRequest> {
    let config = LlmCallConfig {
        provider: "scripted".into(),
        model: "m".into(),
        ..LlmCallConfig::default()
    };
    let mut request = LlmRequest::new(config, Vec::new());
    request.session_id = session_id;
    Arc::new(request)
}

/// Dispatches `llm/stream` with an innermost step that records what was durable when the
/// request would have been sent.
async fn send_request(
    h: &Harness,
    session: &Session,
    session_id: Option<SessionId>,
    seen: &Seen,
) -> Result<ChunkStream, BoxError> {
    let (persistence, session, seen) = (h.persistence.clone(), session.clone(), seen.clone());
    h.ctx
        .waterfall::<LlmStream, _, _>(None, request_for(session_id), move |_| async move {
            observe(&seen, &persistence, &session);
            let empty: ChunkStream = Box::pin(futures_util::stream::empty());
            Ok(empty)
        })
        .await
}

#[tokio::test]
async fn a_model_request_is_sent_only_after_everything_it_derives_from_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let h = mount(dir.path(), Compression::Zstd);
    let session = h.create("s-1");
    open_step(&session, 1, 1);
    assert_eq!(
        h.persistence.durable(session.id()),
        0,
        "write-behind holds it"
    );

    let seen = Seen::default();
    let _ = send_request(&h, &session, Some(session.id().clone()), &seen)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [(3, 3)]);
    // one append, of exactly the pending events
    assert_eq!(h.persistence.appends(), [(SessionId::from("s-1"), 0, 3)]);
}

#[tokio::test]
async fn requests_without_a_live_session_do_not_flush() {
    let dir = tempfile::tempdir().unwrap();
    let h = mount(dir.path(), Compression::Zstd);
    let session = h.create("s-1");
    open_step(&session, 1, 1);

    let seen = Seen::default();
    let _ = send_request(&h, &session, None, &seen).await.unwrap();
    let _ = send_request(&h, &session, Some(SessionId::from("elsewhere")), &seen)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [(0, 3), (0, 3)]);
    assert!(h.persistence.appends().is_empty());
}

#[tokio::test]
async fn a_failed_checkpoint_withholds_the_request_and_says_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let h = mount(dir.path(), Compression::Zstd);
    let session = h.create("s-1");
    open_step(&session, 1, 1);
    h.persistence.fail_appends(Some(io::ErrorKind::StorageFull));

    let seen = Seen::default();
    let Err(err) = send_request(&h, &session, Some(session.id().clone()), &seen).await else {
        panic!("the request must not go out");
    };
    assert!(seen.lock().unwrap().is_empty(), "next was never called");
    let err = err.downcast::<CheckpointError>().unwrap();
    assert_eq!(
        (err.code(), &err.session, err.point, err.problem),
        (
            "SESSION_CHECKPOINT_FAILED",
            &SessionId::from("s-1"),
            CheckpointPoint::ModelRequest,
            StorageProblem::DiskFull
        )
    );
    assert_eq!(
        err.to_string(),
        "session \"s-1\" could not be saved to disk, so the model request was not sent; the \
         disk holding the session store is full: free some space, then resume the session"
    );
    let chain = dsh_llm::error_chain(&*err);
    assert!(
        chain.contains("/sessions/s-1/session.jsonl.zstd"),
        "{chain}"
    );

    // through the model runtime the failure reaches the caller as an error, not a stream
    let llm = dsh_llm::LlmRuntime::new(&h.ctx);
    let failure = llm
        .stream(request_for(Some(session.id().clone())))
        .await
        .err()
        .unwrap();
    assert!(
        failure.to_string().contains("model request was not sent"),
        "{failure}"
    );

    // a permission problem says so; once the disk is back the next checkpoint succeeds
    h.persistence
        .fail_appends(Some(io::ErrorKind::PermissionDenied));
    let Err(err) = send_request(&h, &session, Some(session.id().clone()), &seen).await else {
        panic!("the request must not go out");
    };
    let err = err.downcast::<CheckpointError>().unwrap();
    assert_eq!(err.problem, StorageProblem::NotWritable);
    assert!(err.to_string().contains("fix the permissions"), "{err}");
    h.persistence.fail_appends(None);
    let _ = send_request(&h, &session, Some(session.id().clone()), &seen)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [(3, 3)]);
}

async fn pre_step(
    h: &Harness,
    agent: &Arc<dyn dsh_agent::Agent>,
    seen: &Seen,
) -> Result<PreStepDecision, BoxError> {
    let (persistence, session, seen) =
        (h.persistence.clone(), agent.session().clone(), seen.clone());
    let args = PreStepArgs {
        messages: Vec::new(),
        turn: 1,
        step: 2,
        signal: dsh_agent::AbortSignal::new(),
    };
    AgentEvents::for_agent(&h.ctx, agent)
        .waterfall::<PreStep, _, _, _>(args, move |_| async move {
            observe(&seen, &persistence, &session);
            Ok(PreStepDecision::Enter(Vec::new()))
        })
        .await
}

#[tokio::test]
async fn pre_step_persists_the_previous_step_before_the_next_is_derived() {
    let dir = tempfile::tempdir().unwrap();
    let h = mount(dir.path(), Compression::None);
    let session = h.create("s-1");
    let agent = FakeAgent::create(&h.ctx, session.clone()).unwrap();
    open_step(&session, 1, 1);
    log_only(
        &session,
        EventData::StepEnd(StepBoundary { turn: 1, step: 1 }),
    );

    let seen = Seen::default();
    let decision = pre_step(&h, &agent, &seen).await.unwrap();
    assert_eq!(decision, PreStepDecision::Enter(Vec::new()));
    assert_eq!(*seen.lock().unwrap(), [(4, 4)]);

    // a failing disk vetoes the step
    log_only(
        &session,
        EventData::StepStart(StepBoundary { turn: 1, step: 2 }),
    );
    h.persistence
        .fail_appends(Some(io::ErrorKind::ReadOnlyFilesystem));
    let err = pre_step(&h, &agent, &seen).await.unwrap_err();
    let err = err.downcast::<CheckpointError>().unwrap();
    assert_eq!(
        (err.point, err.problem),
        (CheckpointPoint::PreStep, StorageProblem::NotWritable)
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// A tool whose body records what was durable when it started.
struct Probe {
    persistence: Arc<RecordingPersistence>,
    session: Session,
    seen: Seen,
}

impl Tool for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    fn description(&self) -> String {
        "records durability at body start".into()
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
            observe(&self.seen, &self.persistence, &self.session);
            Ok(json!({"ok": true}))
        })
    }
}

struct ToolHarness {
    h: Harness,
    session: Session,
    agent: Arc<dyn dsh_agent::Agent>,
    tools: Arc<ToolRuntime>,
    seen: Seen,
}

fn tool_harness(dir: &std::path::Path) -> ToolHarness {
    let h = mount(dir, Compression::Zstd);
    h.ctx.plugin::<ToolsPlugin>(ToolsConfig {}).unwrap();
    let tools = h.ctx.require::<ToolRuntime>().unwrap();
    let session = h.create("s-1");
    let agent = FakeAgent::create(&h.ctx, session.clone()).unwrap();
    let seen = Seen::default();
    tools
        .register(
            &h.ctx,
            Arc::new(Probe {
                persistence: h.persistence.clone(),
                session: session.clone(),
                seen: seen.clone(),
            }),
        )
        .unwrap()
        .forget();
    open_step(&session, 1, 1);
    ToolHarness {
        h,
        session,
        agent,
        tools,
        seen,
    }
}

fn call(id: &str, agent: &Arc<dyn dsh_agent::Agent>) -> ToolInvocation {
    ToolInvocation::new(CallId::from(id), "probe", "{}").caller(agent.clone())
}

#[tokio::test]
async fn a_top_level_tool_body_runs_only_after_its_call_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool_harness(dir.path());
    let result = t.tools.execute(call("c1", &t.agent)).await;
    assert!(!result.is_error(), "{result:?}");
    assert_eq!(*t.seen.lock().unwrap(), [(3, 3)]);

    // calls without an agent, and nested calls, are covered by their caller's checkpoint
    log_only(
        &t.session,
        EventData::StepEnd(StepBoundary { turn: 1, step: 1 }),
    );
    t.tools
        .execute(ToolInvocation::new(CallId::from("c2"), "probe", "{}"))
        .await;
    let Prepared::Ready(parent) = t.tools.prepare(call("c3", &t.agent)).await else {
        panic!("the parent call is ready");
    };
    t.tools
        .execute(call("c4", &t.agent).parent(parent.execution().clone()))
        .await;
    assert_eq!(*t.seen.lock().unwrap(), [(3, 3), (3, 4), (3, 4)]);
}

#[tokio::test]
async fn a_call_cancelled_during_its_checkpoint_is_never_dispatched() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool_harness(dir.path());
    let signal = CancellationToken::new();
    // the user presses Esc while the log is being synced
    let cancel = signal.clone();
    t.h.ctx
        .on_parallel::<SessionFlush, _, _>(move |_| {
            let cancel = cancel.clone();
            async move {
                cancel.cancel();
                Ok(())
            }
        })
        .unwrap()
        .forget();

    let result = t
        .tools
        .execute(call("c1", &t.agent).signal(signal.clone()))
        .await;
    assert_eq!(
        result,
        InvocationResult::aborted_before_dispatch(CallId::from("c1"), "probe")
    );
    assert_eq!(
        result.error_info().map(|i| i.code.clone()),
        Some(codes::ABORTED_BEFORE_DISPATCH.to_owned())
    );
    assert!(t.seen.lock().unwrap().is_empty(), "the body never ran");
    assert_eq!(
        t.h.persistence.durable(t.session.id()),
        3,
        "but the log is durable"
    );
}

#[tokio::test]
async fn a_failed_checkpoint_keeps_the_tool_from_running() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool_harness(dir.path());
    t.h.persistence
        .fail_appends(Some(io::ErrorKind::StorageFull));
    let result = t.tools.execute(call("c1", &t.agent)).await;
    assert!(t.seen.lock().unwrap().is_empty(), "the body never ran");
    let error = result.error().unwrap();
    assert_eq!(
        error.info.as_ref().map(|i| i.code.as_str()),
        Some(codes::HOOK_FAILED)
    );
    assert!(
        error
            .message
            .contains("could not be saved to disk, so the tool call was not run"),
        "{}",
        error.message
    );
}
