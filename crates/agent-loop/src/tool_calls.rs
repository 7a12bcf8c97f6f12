//! The tool-call scheduler (spec §7.3).
//!
//! Calls run in groups: a run of concurrency-safe calls forms one parallel group (capped by
//! `maxParallelToolCalls`, read live), anything else runs alone. Calls *start* in model
//! order (`tool/call` logged, then `prepare`, so policy hooks and approvals see model
//! order), *dispatch* concurrently, and *commit* strictly in model order (`finalize`, then
//! `tool/result` citing its `tool/call`, then its additional contexts to next-step).

use crate::agent::ReactLoopAgent;
use crate::error::{fail, Interrupt, OrFail};
use dsh_agent::{initiator, AbortSignal, Agent};
use dsh_protocol::CallId;
use dsh_session::{AppendOptions, EventData, InboxTarget, ToolCall, ToolErrorInfo, ToolResult};
use dsh_tools::{
    Dispatched, ExecutionMode, InvocationResult, Prepared, ToolInvocation, ToolRuntime,
};
use futures_util::stream::FuturesUnordered;
use futures_util::StreamExt;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use tokio::task::JoinHandle;

/// A tool-call block of the assistant message, in model order.
#[derive(Clone, Debug)]
pub(crate) struct PlannedCall {
    pub(crate) call_id: CallId,
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// A spawned dispatch that is aborted if the scheduler is dropped.
struct Dispatch {
    index: usize,
    join: JoinHandle<Dispatched>,
}

impl Future for Dispatch {
    type Output = (usize, Result<Dispatched, tokio::task::JoinError>);
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let index = self.index;
        Pin::new(&mut self.join).poll(cx).map(|r| (index, r))
    }
}

impl Drop for Dispatch {
    fn drop(&mut self) {
        self.join.abort();
    }
}

struct GroupOutcome {
    consumed: usize,
    concluded: bool,
    aborted: bool,
}

/// Per-step scheduling context.
struct Scheduler<'a> {
    agent: &'a Arc<ReactLoopAgent>,
    tools: Arc<ToolRuntime>,
    subject: Arc<dyn Agent>,
    turn: u64,
    step: u64,
    signal: &'a AbortSignal,
}

impl Scheduler<'_> {
    fn call(&self, planned: &PlannedCall) -> ToolInvocation {
        ToolInvocation::new(
            planned.call_id.clone(),
            planned.name.clone(),
            planned.arguments.clone(),
        )
        .scope(self.subject.scope_key().clone())
        .signal(self.signal.child_token())
        .caller(self.subject.clone())
    }

    fn log_call(&self, planned: &PlannedCall) -> Result<u64, Interrupt> {
        let event = self.agent.append(EventData::ToolCall(ToolCall {
            turn: self.turn,
            step: self.step,
            call_id: planned.call_id.clone(),
            name: planned.name.clone(),
            arguments: planned.arguments.clone(),
        }))?;
        Ok(event.seq)
    }

    fn log_result(&self, result: &InvocationResult, call_seq: u64) -> Result<(), Interrupt> {
        let data = EventData::ToolResult(ToolResult {
            turn: self.turn,
            step: self.step,
            message: Arc::new(result.to_message()),
            error: result.error_info().map(|info| ToolErrorInfo {
                name: info.name.clone(),
                code: info.code.clone(),
            }),
            meta: result.meta.as_ref().map(dsh_protocol::RawJson::from_value),
        });
        self.agent
            .session
            .append(
                data,
                AppendOptions::surface_append().sources(vec![call_seq]),
            )
            .or_fail()?;
        Ok(())
    }

    /// Finalizes and records one result; returns whether it concludes the turn.
    async fn commit(&self, done: Dispatched, call_seq: u64) -> Result<bool, Interrupt> {
        let result = self.tools.finalize(done).await;
        self.log_result(&result, call_seq)?;
        for context in &result.additional_contexts {
            self.agent
                .inbox
                .append(InboxTarget::NextStep, context.clone())
                .or_fail()?;
        }
        Ok(!result.is_error() && result.concludes_turn)
    }

    /// Synthetic `tool/call` + `tool/result` pairs for calls the abort kept from starting.
    fn skip(&self, calls: &[PlannedCall]) -> Result<(), Interrupt> {
        for planned in calls {
            let seq = self.log_call(planned)?;
            let result = InvocationResult::aborted_before_dispatch(
                planned.call_id.clone(),
                planned.name.clone(),
            );
            self.log_result(&result, seq)?;
        }
        Ok(())
    }

    /// Runs `group` from its first call, `first` being that call already built (its mode
    /// decided the group).
    async fn run_group(
        &self,
        group: &[PlannedCall],
        mode: ExecutionMode,
        first: ToolInvocation,
    ) -> Result<GroupOutcome, Interrupt> {
        let mut first = Some(first);
        let cap = self.agent.services.max_parallel();
        let mut pool: FuturesUnordered<Dispatch> = FuturesUnordered::new();
        let mut settled: BTreeMap<usize, Dispatched> = BTreeMap::new();
        let mut call_seqs: Vec<u64> = Vec::new();
        let mut started = 0;
        let mut committed = 0;
        let mut filling = true;
        let mut aborted = false;
        let mut concluded = false;
        let mut failure: Option<Interrupt> = None;
        loop {
            while filling && failure.is_none() && started < group.len() && pool.len() < cap {
                if self.signal.is_aborted() {
                    aborted = true;
                    filling = false;
                    break;
                }
                let planned = &group[started];
                // Each call is built once: its mode is read from the call it dispatches.
                let call = first.take().unwrap_or_else(|| self.call(planned));
                if started > 0 && self.tools.execution_mode(&call) != ExecutionMode::Parallel {
                    filling = false; // becomes the next group's barrier
                    break;
                }
                match self.log_call(planned) {
                    Ok(seq) => call_seqs.push(seq),
                    Err(error) => {
                        failure = Some(error);
                        break;
                    }
                }
                match self.tools.prepare(call).await {
                    Prepared::Done(done) => {
                        settled.insert(started, done);
                    }
                    Prepared::Ready(ready) => {
                        let tools = self.tools.clone();
                        // The body keeps the initiator (tools may create sub-agents).
                        let work = initiator::with_initiator(self.subject.clone(), async move {
                            tools.dispatch(ready).await
                        });
                        pool.push(Dispatch {
                            index: started,
                            join: tokio::spawn(work),
                        });
                    }
                }
                started += 1;
                if mode == ExecutionMode::Exclusive {
                    filling = false;
                }
            }
            if failure.is_none() {
                while let Some(done) = settled.remove(&committed) {
                    match self.commit(done, call_seqs[committed]).await {
                        Ok(concludes) => concluded |= concludes,
                        Err(error) => {
                            failure = Some(error);
                            break;
                        }
                    }
                    committed += 1;
                }
            }
            if failure.is_some() {
                // Stop dispatching, let started calls finish, then fail without synthetics.
                while pool.next().await.is_some() {}
                break;
            }
            if pool.is_empty() && committed == started {
                if !filling || started == group.len() {
                    break;
                }
                continue;
            }
            match pool.next().await {
                Some((index, Ok(done))) => {
                    settled.insert(index, done);
                }
                Some((_, Err(join))) => failure = Some(fail(join)),
                None => {}
            }
        }
        if let Some(error) = failure {
            return Err(error);
        }
        Ok(GroupOutcome {
            consumed: started,
            concluded,
            aborted,
        })
    }
}

impl ReactLoopAgent {
    /// Runs the calls of one assistant message; returns whether a result concluded the turn.
    pub(crate) async fn execute_tool_calls(
        self: &Arc<Self>,
        turn: u64,
        step: u64,
        calls: Vec<PlannedCall>,
        signal: &AbortSignal,
    ) -> Result<bool, Interrupt> {
        let subject = initiator::require_initiator().or_fail()?;
        let scheduler = Scheduler {
            agent: self,
            tools: self.services.tools.clone(),
            subject,
            turn,
            step,
            signal,
        };
        let mut next = 0;
        let mut concluded = false;
        while next < calls.len() {
            if signal.is_aborted() {
                scheduler.skip(&calls[next..])?;
                break;
            }
            let first = scheduler.call(&calls[next]);
            let mode = scheduler.tools.execution_mode(&first);
            let end = match mode {
                ExecutionMode::Parallel => calls.len(),
                ExecutionMode::Exclusive => next + 1,
            };
            let outcome = scheduler.run_group(&calls[next..end], mode, first).await?;
            next += outcome.consumed;
            concluded |= outcome.concluded;
            if outcome.aborted {
                scheduler.skip(&calls[next..])?;
                break;
            }
        }
        Ok(concluded)
    }
}
