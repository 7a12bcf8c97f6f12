//! The per-call pipeline: `prepare → dispatch → finalize`. Every stage is total: hook
//! errors, panics, timeouts, cancellation and bad arguments all become [`InvocationResult`]s.

use crate::approval::{Approval, ApprovalRequest, NO_ANSWERER};
use crate::args::{argument_problem, parse_arguments};
use crate::definition::render_json;
use crate::error::{codes, ToolFailure};
use crate::events::{
    Execute, ExecuteArgs, PostExecute, PostExecuteArgs, PostExecuteDecision, PreExecute,
    PreExecuteArgs, PreExecuteDecision, ToolResultEvent, ToolResultNotice,
};
use crate::execution::{ToolExecution, ToolInvocation};
use crate::registry::{GuardDecision, ToolRuntime};
use crate::result::{InvocationResult, ToolOutcome};
use dsh_kernel::{BoxError, Event};
use futures_util::FutureExt;
use serde_json::Value;
use std::future::{pending, Future};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

/// How long a body that ignores cancellation may keep running before it is dropped.
const ABORT_GRACE: Duration = Duration::from_secs(2);

/// What `prepare` produced: a call ready to dispatch, or an already settled outcome.
// Moved once per call; boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Prepared {
    Ready(ReadyCall),
    Done(Dispatched),
}

/// A call that passed policy and may be dispatched.
#[derive(Debug)]
pub struct ReadyCall {
    exec: Arc<ToolExecution>,
}

impl ReadyCall {
    pub fn execution(&self) -> &Arc<ToolExecution> {
        &self.exec
    }
}

/// An outcome waiting for `finalize`. Final outcomes (bad arguments, aborted before
/// dispatch, hook failures in `prepare`) skip post-execute.
#[derive(Debug)]
pub struct Dispatched {
    exec: Arc<ToolExecution>,
    result: InvocationResult,
    is_final: bool,
}

impl Dispatched {
    pub fn execution(&self) -> &Arc<ToolExecution> {
        &self.exec
    }

    /// The result before post-execute and finalization.
    pub fn result(&self) -> &InvocationResult {
        &self.result
    }

    pub fn is_final(&self) -> bool {
        self.is_final
    }

    fn failure(exec: Arc<ToolExecution>, failure: ToolFailure, is_final: bool) -> Self {
        let mut result = InvocationResult::failure(exec.call_id().clone(), exec.name(), failure);
        if !is_final {
            result.additional_contexts = exec.take_deferred();
        }
        Self {
            exec,
            result,
            is_final,
        }
    }
}

impl ToolRuntime {
    /// Runs a whole call: prepare, dispatch, finalize.
    pub async fn execute(&self, call: ToolInvocation) -> InvocationResult {
        let done = match self.prepare(call).await {
            Prepared::Ready(ready) => self.dispatch(ready).await,
            Prepared::Done(done) => done,
        };
        self.finalize(done).await
    }

    /// Creates the execution and applies policy: argument checks, the caller's signal,
    /// `tools/pre-execute` (with approval for `ask`) and guards. The scheduler awaits this
    /// in model order.
    pub async fn prepare(&self, call: ToolInvocation) -> Prepared {
        let entry = self.resolve(call.scope_key(), call.name());
        let args = parse_arguments(call.arguments());
        let problem = entry.as_ref().and_then(|entry| {
            let tool = entry.tool.as_ref();
            argument_problem(
                call.name(),
                &entry.schema.parameters,
                call.arguments(),
                &args,
                |args| {
                    catch_unwind(AssertUnwindSafe(|| tool.check_arguments(args)))
                        .unwrap_or_else(|_| Err("the tool's argument check failed".into()))
                },
            )
        });
        let exec = Arc::new(ToolExecution::new(
            call,
            args,
            entry.map(|e| e.tool.clone()),
        ));
        if let Some(message) = problem {
            return Prepared::Done(Dispatched::failure(
                exec,
                ToolFailure::invalid_arguments(message),
                true,
            ));
        }
        if exec.caller_signal().is_cancelled() {
            return Prepared::Done(Dispatched::failure(
                exec,
                ToolFailure::aborted_before_dispatch(),
                true,
            ));
        }
        match self.policy(&exec).await {
            Ok(None) => Prepared::Ready(ReadyCall { exec }),
            Ok(Some(reason)) => Prepared::Done(Dispatched::failure(
                exec,
                ToolFailure::denied(reason),
                false,
            )),
            Err(failure) => Prepared::Done(Dispatched::failure(exec, failure, true)),
        }
    }

    /// `Ok(None)` to proceed, `Ok(Some(reason))` for a denial, `Err` for a final failure.
    async fn policy(&self, exec: &Arc<ToolExecution>) -> Result<Option<String>, ToolFailure> {
        let args = Arc::new(PreExecuteArgs { exec: exec.clone() });
        let waterfall =
            self.inner
                .ctx
                .waterfall::<PreExecute, _, _>(exec.scope(), args, |_| async {
                    Ok(PreExecuteDecision::Allow)
                });
        match contained(PreExecute::NAME, waterfall).await? {
            PreExecuteDecision::Allow => {}
            PreExecuteDecision::Deny { reason } => return Ok(Some(reason)),
            PreExecuteDecision::Ask { reason } => {
                let Some(approval) = self.inner.ctx.get::<Approval>() else {
                    return Ok(Some(NO_ANSWERER.into()));
                };
                let request = ApprovalRequest {
                    exec: exec.clone(),
                    reason,
                };
                let answer = AssertUnwindSafe(approval.request(request)).catch_unwind();
                tokio::select! {
                    outcome = answer => match outcome {
                        Ok(outcome) => {
                            if let Some(denial) = outcome.denial() {
                                return Ok(Some(denial));
                            }
                        }
                        Err(_) => return Ok(Some("the approval answerer failed".into())),
                    },
                    () = exec.caller_signal().cancelled() => {
                        return Err(ToolFailure::aborted_before_dispatch());
                    }
                }
            }
        }
        for guard in self.guards(exec.scope()) {
            match catch_unwind(AssertUnwindSafe(|| guard(exec))) {
                Ok(GuardDecision::Pass) => {}
                Ok(GuardDecision::Deny(reason)) => return Ok(Some(reason)),
                Err(_) => return Ok(Some("a tool guard failed".into())),
            }
        }
        Ok(None)
    }

    /// Runs `tools/execute` around the body and settles the outcome into a result. Safe to
    /// run concurrently with other dispatches.
    pub async fn dispatch(&self, ready: ReadyCall) -> Dispatched {
        let exec = ready.exec;
        let args = Arc::new(ExecuteArgs::new(exec.clone()));
        let waterfall = self
            .inner
            .ctx
            .waterfall::<Execute, _, _>(exec.scope(), args, run_body);
        let outcome = contained(Execute::NAME, waterfall)
            .await
            .and_then(|inner| inner);
        let value = match outcome {
            Ok(_) if exec.signal().is_cancelled() => Err(ToolFailure::aborted()),
            Ok(value) => dsh_protocol::json::check_lossless(&value)
                .map(|()| value)
                .map_err(|error| invalid_output(&error)),
            Err(failure) => Err(failure),
        };
        let result = match value {
            Ok(value) => {
                let mut result = settle_success(&exec, value);
                result.additional_contexts = exec.take_deferred();
                result.concludes_turn = exec.concludes_turn();
                result
            }
            Err(failure) => return Dispatched::failure(exec, failure, false),
        };
        Dispatched {
            exec,
            result,
            is_final: false,
        }
    }

    /// Applies `tools/post-execute` (unless the outcome is final), the tool's
    /// `finalize_content`, and announces the result on `tools/result`.
    pub async fn finalize(&self, done: Dispatched) -> InvocationResult {
        let Dispatched {
            exec,
            mut result,
            is_final,
        } = done;
        if !is_final {
            result = self.post_execute(&exec, result).await;
        }
        if let Some(tool) = exec.definition() {
            let content = result.content.clone();
            if let Ok(content) =
                catch_unwind(AssertUnwindSafe(|| tool.finalize_content(&exec, content)))
            {
                result.content = content;
            }
        }
        let notice = ToolResultNotice {
            exec: exec.clone(),
            result: result.clone(),
        };
        self.inner
            .ctx
            .emit::<ToolResultEvent>(exec.scope(), &notice);
        result
    }

    async fn post_execute(
        &self,
        exec: &Arc<ToolExecution>,
        mut result: InvocationResult,
    ) -> InvocationResult {
        let args = Arc::new(PostExecuteArgs {
            exec: exec.clone(),
            result: result.clone(),
        });
        let waterfall =
            self.inner
                .ctx
                .waterfall::<PostExecute, _, _>(exec.scope(), args, |_| async {
                    Ok(PostExecuteDecision::accept())
                });
        match contained(PostExecute::NAME, waterfall).await {
            Ok(PostExecuteDecision::Accept {
                content,
                value,
                additional_contexts,
            }) => {
                if let (Some(value), ToolOutcome::Success { .. }) = (value, &result.outcome) {
                    let contexts = std::mem::take(&mut result.additional_contexts);
                    let concludes = result.concludes_turn;
                    result = match dsh_protocol::json::check_lossless(&value) {
                        Ok(()) => settle_success(exec, value),
                        Err(error) => InvocationResult::failure(
                            exec.call_id().clone(),
                            exec.name(),
                            invalid_output(&error),
                        ),
                    };
                    result.additional_contexts = contexts;
                    result.concludes_turn = concludes && !result.is_error();
                }
                if let Some(content) = content {
                    result.content = content;
                }
                result.additional_contexts.extend(additional_contexts);
                result
            }
            Ok(PostExecuteDecision::Block {
                feedback,
                additional_contexts,
            }) => {
                let blocked = ToolFailure::coded("ToolBlockedError", codes::TOOL_BLOCKED, feedback);
                let mut blocked =
                    InvocationResult::failure(exec.call_id().clone(), exec.name(), blocked);
                blocked.additional_contexts = additional_contexts;
                blocked
            }
            Err(failure) => {
                let mut failed =
                    InvocationResult::failure(exec.call_id().clone(), exec.name(), failure);
                failed.additional_contexts = result.additional_contexts;
                failed
            }
        }
    }
}

/// The innermost `tools/execute` step: the body itself, with the wrapper's signal fused in,
/// the tool's timeout, and a grace period after cancellation.
async fn run_body(args: Arc<ExecuteArgs>) -> Result<Result<Value, ToolFailure>, BoxError> {
    let exec = args.execution().clone();
    let Some(tool) = exec.definition().cloned() else {
        return Ok(Err(ToolFailure::unknown_tool(exec.name())));
    };
    let wrapper = args.signal();
    let fused = exec.signal().clone();
    let timeout = tool.timeout();
    // A tool may panic while building its future as well as while running it.
    let started = catch_unwind(AssertUnwindSafe(|| {
        tool.execute(exec.arguments().clone(), &exec)
    }));
    let body = async {
        match started {
            Ok(body) => AssertUnwindSafe(body).catch_unwind().await,
            Err(panic) => Err(panic),
        }
    };
    let forward = async {
        wrapper.cancelled().await;
        fused.cancel();
        pending::<()>().await;
    };
    let deadline = async {
        match timeout {
            Some(limit) => tokio::time::sleep(limit).await,
            None => pending::<()>().await,
        }
    };
    let abandon = async {
        fused.cancelled().await;
        tokio::time::sleep(ABORT_GRACE).await;
    };
    let outcome = tokio::select! {
        biased;
        outcome = body => match outcome {
            Ok(outcome) => outcome,
            Err(panic) => Err(ToolFailure::coded(
                "PanicError",
                codes::TOOL_PANICKED,
                format!("tool panicked: {}", panic_text(&*panic)),
            )),
        },
        () = deadline => {
            fused.cancel();
            Err(ToolFailure::coded(
                "ToolTimeoutError",
                codes::TOOL_TIMEOUT,
                format!("tool \"{}\" timed out after {}", exec.name(), describe_duration(timeout)),
            ))
        }
        () = abandon => Err(ToolFailure::aborted()),
        () = forward => Err(ToolFailure::aborted()),
    };
    Ok(outcome)
}

/// A success result: rendered content and presentation meta from the visible definition.
fn settle_success(exec: &ToolExecution, value: Value) -> InvocationResult {
    let (content, meta) = match exec.definition() {
        Some(tool) => {
            let args = exec.arguments();
            let content = catch_unwind(AssertUnwindSafe(|| tool.render(args, &value)))
                .unwrap_or_else(|_| render_json(&value));
            let meta = catch_unwind(AssertUnwindSafe(|| tool.presentation_meta(args, &value)))
                .ok()
                .flatten();
            (content, meta)
        }
        None => (render_json(&value), None),
    };
    let mut result = InvocationResult::success(exec.call_id().clone(), exec.name(), value, content);
    result.meta = meta;
    result
}

fn invalid_output(error: &dyn std::fmt::Display) -> ToolFailure {
    ToolFailure::coded(
        "InvalidToolOutputError",
        codes::INVALID_TOOL_OUTPUT,
        format!("the tool returned an invalid value: {error}"),
    )
}

/// Awaits a hook dispatch, turning listener errors and panics into a `HOOK_FAILED` failure.
async fn contained<T>(
    stage: &str,
    dispatch: impl Future<Output = Result<T, BoxError>>,
) -> Result<T, ToolFailure> {
    match AssertUnwindSafe(dispatch).catch_unwind().await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(ToolFailure::hook_failed(stage, &error)),
        Err(panic) => Err(ToolFailure::hook_failed(stage, &panic_text(&*panic))),
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn describe_duration(limit: Option<Duration>) -> String {
    let millis = limit.map_or(0, |d| d.as_millis());
    if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}
