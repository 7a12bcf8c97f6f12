//! The driver loop and one turn (spec §4.1–§4.3).
//!
//! A waking send on an idle agent reserves the driver and runs the turn's synchronous
//! prefix (`turn/start` and the first claim) before it returns; only then is the rest of the
//! activity spawned. Every opened boundary is closed by a guard, so even a dropped driver
//! future leaves a balanced log.

use crate::agent::ReactLoopAgent;
use crate::error::{fail, Failure, Interrupt, OrFail};
use crate::phase::{lock, Phase};
use dsh_agent::{
    initiator, AbortSignal, AgentCancelCause, AgentError, AgentErrorEvent, AgentErrorReport,
    PreStep, PreStepArgs, PreStepDecision, TurnStopping, TurnStoppingArgs,
};
use dsh_kernel::BoxError;
use dsh_prompt::{AssembleContext, Assembly, RuntimeSnapshot};
use dsh_protocol::Message;
use dsh_session::{
    AppendOptions, EventData, InboxTarget, SessionEvent, StepBoundary, TurnEnd, TurnEndReason,
    TurnStart,
};
use std::future::Future;
use std::sync::Arc;

/// Awaits `work` unless `signal` fires first (cancellation wins ties).
pub(crate) async fn race<T>(
    signal: &AbortSignal,
    work: impl Future<Output = T>,
) -> Result<T, Interrupt> {
    tokio::select! {
        biased;
        () = signal.cancelled() => Err(Interrupt::Aborted),
        value = work => Ok(value),
    }
}

/// A turn whose `turn/start` is logged; its guard closes it.
pub(crate) struct OpenTurn {
    turn: u64,
    signal: AbortSignal,
    guard: TurnGuard,
    first_claim: Result<Vec<Arc<Message>>, AgentError>,
}

/// How the turn body ended when it did not throw.
enum Flow {
    /// `return false` inside the turn: the driver stops even if work is pending.
    Stop,
    /// Fell out of the step loop: the next queued prompt may start another turn.
    Break,
}

/// Closes a turn exactly once: explicitly with its reason, or on drop (a dropped driver)
/// as aborted.
pub(crate) struct TurnGuard {
    agent: Arc<ReactLoopAgent>,
    turn: u64,
    signal: AbortSignal,
    open: bool,
}

impl TurnGuard {
    fn close(mut self, reason: TurnEndReason) -> Result<(), Interrupt> {
        self.open = false;
        self.agent
            .append(EventData::TurnEnd(TurnEnd {
                turn: self.turn,
                reason,
            }))
            .map(|_| ())
    }
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        if self.open {
            let reason = aborted_reason(&self.signal);
            let _ = self.agent.append(EventData::TurnEnd(TurnEnd {
                turn: self.turn,
                reason,
            }));
        }
    }
}

/// Closes a step exactly once (`step/end` in the spec's `finally`).
pub(crate) struct StepGuard {
    agent: Arc<ReactLoopAgent>,
    turn: u64,
    step: u64,
    open: bool,
}

impl StepGuard {
    fn close(mut self) -> Result<(), Interrupt> {
        self.open = false;
        self.agent
            .append(EventData::StepEnd(StepBoundary {
                turn: self.turn,
                step: self.step,
            }))
            .map(|_| ())
    }
}

impl Drop for StepGuard {
    fn drop(&mut self) {
        if self.open {
            let _ = self.agent.append(EventData::StepEnd(StepBoundary {
                turn: self.turn,
                step: self.step,
            }));
        }
    }
}

fn aborted_reason(signal: &AbortSignal) -> TurnEndReason {
    TurnEndReason::Aborted {
        reason: signal
            .reason()
            .cloned()
            .unwrap_or(AgentCancelCause::Disposed)
            .into(),
    }
}

/// Ends an activity when the driver future finishes or is dropped (even unpolled).
struct ActivityGuard(Arc<ReactLoopAgent>, u64);

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        self.0.finish_activity(self.1);
    }
}

impl ReactLoopAgent {
    /// Appends a log-only event.
    pub(crate) fn append(&self, data: EventData) -> Result<Arc<SessionEvent>, Interrupt> {
        self.session
            .append(data, AppendOptions::log_only())
            .or_fail()
    }

    pub(crate) fn report_error(&self, turn: u64, step: u64, failure: &Failure) {
        self.events.emit::<AgentErrorEvent, _>(AgentErrorReport {
            turn,
            step,
            failure: failure.failure.clone(),
            error: failure.error.clone(),
        });
    }

    /// `wakeDriver`: latch on a busy agent, or start a new activity on an idle one.
    pub(crate) fn wake_driver(self: &Arc<Self>, after_abort: bool) -> Result<(), AgentError> {
        let runtime = self
            .runtime
            .clone()
            .or_else(|| tokio::runtime::Handle::try_current().ok());
        let activity = {
            let mut state = lock(&self.state);
            match &mut state.phase {
                Phase::Idle { last_turn } => {
                    let Some(_) = runtime else {
                        return Err(AgentError::NoRuntime);
                    };
                    state.phase = Phase::Running {
                        abort: AbortSignal::new(),
                        turn: *last_turn,
                        step: 0,
                        wake_requested: false,
                    };
                    self.status.transition(&mut state);
                    self.busy.send_replace(true);
                    state.activity += 1;
                    state.activity
                }
                phase => {
                    // Never latch during teardown; a live driver claims at its boundaries.
                    if !phase.aborted_by_disposal() {
                        let maintenance = matches!(phase, Phase::Maintenance { .. });
                        if let Phase::Maintenance { wake_requested, .. }
                        | Phase::Running { wake_requested, .. } = phase
                        {
                            if maintenance || after_abort {
                                *wake_requested = true;
                            }
                        }
                    }
                    return Ok(());
                }
            }
        };
        self.status.drain(&self.events);
        let subject = self.as_dyn();
        let first = initiator::sync_with_initiator(subject.clone(), || self.open_turn());
        // Created before spawning: even a driver future that is never polled converges.
        let activity = ActivityGuard(self.clone(), activity);
        let driver = self.clone();
        let work = initiator::with_initiator(subject, async move {
            let _activity = activity;
            driver.drive(first).await;
        });
        if let Some(runtime) = runtime {
            runtime.spawn(work);
        }
        Ok(())
    }

    /// The activity: `while (await turn()) {}`, then converge to idle.
    async fn drive(self: Arc<Self>, first: Option<OpenTurn>) {
        let mut next = first;
        while let Some(open) = next.take() {
            if !self.run_turn(open).await {
                break;
            }
            next = self.open_turn();
        }
    }

    /// Phase → idle; replay a latched wake if work is still pending; resolve `when_idle`
    /// only when no replacement activity started.
    pub(crate) fn finish_activity(self: &Arc<Self>, activity: u64) {
        let latched = {
            let mut state = lock(&self.state);
            if state.activity != activity {
                return; // a newer activity owns the phase
            }
            let (last_turn, latched) = match &state.phase {
                Phase::Idle { .. } => return,
                Phase::Running {
                    turn,
                    wake_requested,
                    ..
                } => (*turn, *wake_requested),
                Phase::Maintenance {
                    last_turn,
                    wake_requested,
                    ..
                } => (*last_turn, *wake_requested),
            };
            state.phase = Phase::Idle { last_turn };
            self.status.transition(&mut state);
            latched
        };
        self.status.drain(&self.events);
        if latched && self.inbox.has_pending() {
            if let Err(error) = self.wake_driver(false) {
                tracing::warn!(agent = %self.session.id(), %error, "could not replay a latched wake");
            }
        }
        let state = lock(&self.state);
        if state.phase.is_idle() {
            self.busy.send_replace(false);
        }
    }

    /// The synchronous prefix of a turn: abort check, `turn/start`, the first claim.
    fn open_turn(self: &Arc<Self>) -> Option<OpenTurn> {
        let (signal, turn, step) = match &lock(&self.state).phase {
            Phase::Running {
                abort, turn, step, ..
            } => (abort.clone(), turn + 1, *step),
            _ => return None,
        };
        if signal.is_aborted() {
            return None; // no durable turn at all
        }
        if let Err(Interrupt::Failed(failure)) =
            self.append(EventData::TurnStart(TurnStart { turn }))
        {
            self.report_error(turn, step, &failure);
            return None;
        }
        if let Phase::Running { turn: current, .. } = &mut lock(&self.state).phase {
            *current = turn;
        }
        let guard = TurnGuard {
            agent: self.clone(),
            turn,
            signal: signal.clone(),
            open: true,
        };
        let first_claim = self.inbox.claim(InboxTarget::NextTurn, turn);
        Some(OpenTurn {
            turn,
            signal,
            guard,
            first_claim,
        })
    }

    /// One turn after its prefix; true when another turn should follow in this activity.
    async fn run_turn(self: &Arc<Self>, open: OpenTurn) -> bool {
        let OpenTurn {
            turn,
            signal,
            guard,
            first_claim,
        } = open;
        let mut ends: Option<TurnEndReason> = None;
        let mut step = 0;
        let outcome = self
            .turn_body(turn, &signal, first_claim, &mut ends, &mut step)
            .await;
        let flow = match outcome {
            Ok(flow) => Some(flow),
            Err(interrupt) => {
                if signal.is_aborted() {
                    ends = Some(aborted_reason(&signal));
                } else {
                    let failure = match interrupt {
                        Interrupt::Failed(failure) => failure,
                        // A race lost to a signal that is not aborted cannot happen; keep
                        // the log honest anyway.
                        Interrupt::Aborted => match fail("the turn was interrupted") {
                            Interrupt::Failed(failure) => failure,
                            Interrupt::Aborted => return false,
                        },
                    };
                    ends = Some(TurnEndReason::Error {
                        error: failure.failure.clone(),
                    });
                    self.report_error(turn, step, &failure);
                }
                None
            }
        };
        if let Err(Interrupt::Failed(failure)) =
            guard.close(ends.unwrap_or(TurnEndReason::Completed))
        {
            self.report_error(turn, step, &failure);
            return false;
        }
        let Some(Flow::Break) = flow else {
            return false;
        };
        let mut state = lock(&self.state);
        if !self.inbox.has_pending() {
            // Decided under the state lock: a waking send either lands before this check
            // (and is run by the next turn) or finds the agent idle (and starts a new
            // activity). Without this, a send racing the driver's exit could be parked.
            if let Phase::Running { turn, .. } = state.phase {
                state.phase = Phase::Idle { last_turn: turn };
                self.status.transition(&mut state);
                self.busy.send_replace(false);
            }
            drop(state);
            self.status.drain(&self.events);
            return false;
        }
        match &mut state.phase {
            // A cancel that raced the close of this turn stops the driver instead of
            // being swallowed by the fresh signal.
            Phase::Running {
                abort,
                step,
                wake_requested,
                ..
            } if !abort.is_aborted() => {
                *abort = AbortSignal::new();
                *step = 0;
                *wake_requested = false;
                true
            }
            _ => false,
        }
    }

    /// The `try` block of a turn.
    async fn turn_body(
        self: &Arc<Self>,
        turn: u64,
        signal: &AbortSignal,
        first_claim: Result<Vec<Arc<Message>>, AgentError>,
        ends: &mut Option<TurnEndReason>,
        step_no: &mut u64,
    ) -> Result<Flow, Interrupt> {
        let mut target = InboxTarget::NextTurn;
        let mut first_claim = Some(first_claim);
        loop {
            signal.check()?;
            let step = self.phase_step() + 1;
            *step_no = step;
            let claimed = match first_claim.take() {
                Some(claim) => claim.or_fail()?,
                None => self.inbox.claim(target, turn).or_fail()?,
            };
            let Some((messages, assembly)) = self.pre_step(claimed, turn, step, signal).await?
            else {
                *ends = Some(TurnEndReason::Blocked);
                return Ok(Flow::Stop);
            };
            if ends.is_some() && messages.is_empty() {
                break;
            }
            if self.phase_step() == 0 && messages.is_empty() {
                *ends = Some(TurnEndReason::Completed);
                return Ok(Flow::Stop);
            }
            signal.check()?;
            self.append(EventData::StepStart(StepBoundary { turn, step }))?;
            if let Phase::Running { step: current, .. } = &mut lock(&self.state).phase {
                *current = step;
            }
            let step_guard = StepGuard {
                agent: self.clone(),
                turn,
                step,
                open: true,
            };
            let result = self
                .enter_step(messages, turn, step, &assembly, signal)
                .await;
            step_guard.close()?;
            let step_end = result?;
            if *ends != Some(TurnEndReason::MaxTokens) {
                *ends = step_end; // max-tokens is sticky within the turn
            }
            signal.check()?;
            if ends.is_some() && !self.inbox.has_next_step() {
                let stopping = self.events.serial::<TurnStopping, _>(TurnStoppingArgs {
                    turn,
                    signal: signal.clone(),
                });
                race(signal, stopping).await?.or_fail()?;
                signal.check()?;
            }
            if ends.is_some() && !self.inbox.has_next_step() {
                break;
            }
            target = InboxTarget::NextStep;
        }
        Ok(Flow::Break)
    }

    /// Logs the entered messages, then runs the step.
    async fn enter_step(
        self: &Arc<Self>,
        messages: Vec<Arc<Message>>,
        turn: u64,
        step: u64,
        assembly: &Assembly,
        signal: &AbortSignal,
    ) -> Result<Option<TurnEndReason>, Interrupt> {
        for message in messages {
            self.session
                .append(
                    EventData::UserMessage(message),
                    AppendOptions::surface_append(),
                )
                .or_fail()?;
        }
        self.step(turn, step, assembly, signal).await
    }

    /// Pre-step after the claim: assemble, run the gate, whose default projects the runtime
    /// context.
    /// `None` = rejected.
    async fn pre_step(
        self: &Arc<Self>,
        claimed: Vec<Arc<Message>>,
        turn: u64,
        step: u64,
        signal: &AbortSignal,
    ) -> Result<Option<(Vec<Arc<Message>>, Assembly)>, Interrupt> {
        let context =
            AssembleContext::new(Some(self.scope.clone())).with_cancel(signal.child_token());
        let assembly = race(signal, self.services.prompt.assemble(&self.ctx, context))
            .await?
            .or_fail()?;
        signal.check()?;
        let snapshot = RuntimeSnapshot::render(&assembly).or_fail()?;
        let mut proposal = claimed.clone();
        let args = PreStepArgs {
            messages: claimed,
            turn,
            step,
            signal: signal.clone(),
        };
        // The runtime-context snapshot is projected inside the default, after the outer
        // listeners ran: a compaction there may shadow the retained snapshot, and projecting
        // against the surface it leaves re-emits the snapshot in this very step instead of
        // sending one request without it (spec agent-features 9.1).
        let this = Arc::clone(self);
        let gate = self
            .events
            .waterfall::<PreStep, _, _, _>(args, move |_| async move {
                let snapshot_message = {
                    let mut projection = lock(&this.projection);
                    projection.catch_up(&this.session);
                    projection.project(&snapshot)
                };
                proposal.extend(snapshot_message.map(Arc::new));
                Ok::<_, BoxError>(PreStepDecision::Enter(proposal))
            });
        let decision = race(signal, gate).await?.or_fail()?;
        signal.check()?;
        Ok(match decision {
            PreStepDecision::Reject => None,
            PreStepDecision::Enter(messages) => Some((messages, assembly)),
        })
    }
}
