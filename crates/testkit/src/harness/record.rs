//! Live-event recordings and a gate that parks model requests.

use dsh_agent::{
    AgentCreated, AgentDisposed, AgentErrorEvent, AgentEvent, AgentRequest, AgentStatus,
    AgentStatusChanged, ClaimedMessage, InboxClaimed, InboxDiscarded, InboxInserted, PreStep,
    SessionStart, SessionStartSource, TurnStopping,
};
use dsh_kernel::{Context, Event, KernelError};
use dsh_llm::LlmStream;
use dsh_prompt::SystemPromptAssemble;
use dsh_protocol::Message;
use dsh_session::{
    PublishedEvent, Session, SessionCreated, SessionDisposed, SessionEventPublished,
};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::{watch, Semaphore};

/// Live events in the order they were heard, one short line each:
///
/// | event | line |
/// |---|---|
/// | `agent/status` | `status running` / `status idle` |
/// | `agent/inbox/inserted` | `inserted <message id>` |
/// | `agent/inbox/claimed` | `claimed <message id> turn <n>` |
/// | `agent/inbox/discarded` | `discarded <message id>` |
/// | `agent/created` / `agent/disposed` | `agent/created <agent id>` / `agent/disposed <agent id>` |
/// | `agent/session-start` | `session-start startup` (or `resume`, …) |
/// | `agent/error` | `agent/error <failure code>` |
/// | `session/created` / `session/disposed` | `session/created <id>` / `session/disposed <id>` |
/// | `session/event` | `session <event type>` |
///
/// Listeners are unscoped, so they hear every agent and session of the kernel.
/// [`install_with_hooks`](Self::install_with_hooks) also notes the extension points of a
/// turn as they run, as `hook <name>`: `system-prompt/assemble`, `agent/pre-step`,
/// `agent/request`, `llm/stream` and `agent/turn-stopping`. Those listeners only note and
/// pass on (`next`, or no decision), so they do not change what the loop does.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    lines: Arc<Mutex<Vec<String>>>,
}

impl Recording {
    /// Starts recording everything `ctx`'s kernel dispatches (owned by `ctx`'s fiber).
    pub fn install(ctx: &Context) -> Result<Self, KernelError> {
        let recording = Self::default();
        macro_rules! on {
            ($event:ty, $line:expr) => {{
                let sink = recording.clone();
                let line = $line;
                ctx.on::<$event>(move |payload| {
                    sink.push(line(payload));
                    Ok(())
                })?
                .forget();
            }};
        }
        on!(
            AgentStatusChanged,
            |e: &AgentEvent<AgentStatus>| match e.data {
                AgentStatus::Running => "status running".to_owned(),
                AgentStatus::Idle => "status idle".to_owned(),
            }
        );
        on!(InboxInserted, |e: &AgentEvent<Arc<Message>>| format!(
            "inserted {}",
            e.data.id
        ));
        on!(InboxClaimed, |e: &AgentEvent<ClaimedMessage>| format!(
            "claimed {} turn {}",
            e.data.message.id, e.data.turn
        ));
        on!(InboxDiscarded, |e: &AgentEvent<Arc<Message>>| format!(
            "discarded {}",
            e.data.id
        ));
        on!(AgentCreated, |e: &AgentEvent<()>| format!(
            "agent/created {}",
            e.agent.id()
        ));
        on!(AgentDisposed, |e: &AgentEvent<()>| format!(
            "agent/disposed {}",
            e.agent.id()
        ));
        on!(SessionStart, |e: &AgentEvent<SessionStartSource>| {
            let source = match e.data {
                SessionStartSource::Startup => "startup",
                SessionStartSource::Resume => "resume",
                SessionStartSource::Clear => "clear",
                SessionStartSource::Compact => "compact",
            };
            format!("session-start {source}")
        });
        on!(AgentErrorEvent, |e: &AgentEvent<
            dsh_agent::AgentErrorReport,
        >| {
            format!("agent/error {}", e.data.failure.code)
        });
        on!(SessionCreated, |s: &Session| format!(
            "session/created {}",
            s.id()
        ));
        on!(SessionDisposed, |s: &Session| format!(
            "session/disposed {}",
            s.id()
        ));
        on!(SessionEventPublished, |p: &PublishedEvent| format!(
            "session {}",
            p.event.type_name()
        ));
        Ok(recording)
    }

    /// Like [`install`](Self::install), also noting the extension points of a turn.
    pub fn install_with_hooks(ctx: &Context) -> Result<Self, KernelError> {
        let recording = Self::install(ctx)?;
        macro_rules! waterfall {
            ($event:ty) => {{
                let sink = recording.clone();
                ctx.on_waterfall::<$event, _, _>(move |_, next| {
                    sink.push(format!("hook {}", <$event as Event>::NAME));
                    next.run()
                })?
                .forget();
            }};
        }
        waterfall!(SystemPromptAssemble);
        waterfall!(PreStep);
        waterfall!(AgentRequest);
        waterfall!(LlmStream);
        let sink = recording.clone();
        ctx.on_serial::<TurnStopping, _, _>(move |_| {
            sink.push(format!("hook {}", TurnStopping::NAME));
            async { Ok(None) }
        })?
        .forget();
        Ok(recording)
    }

    fn lock(&self) -> MutexGuard<'_, Vec<String>> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, line: String) {
        self.lock().push(line);
    }

    /// Adds a line of the test's own (e.g. from an effect), to check its place among events.
    pub fn note(&self, line: impl Into<String>) {
        self.push(line.into());
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<String> {
        self.lock().clone()
    }

    /// Every line so far, clearing the recording.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.lock())
    }

    /// The lines starting with one of `prefixes` (e.g. `["status"]`), in order.
    pub fn only(&self, prefixes: &[&str]) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|line| prefixes.iter().any(|p| line.starts_with(p)))
            .cloned()
            .collect()
    }

    /// The lines that are not `session <type>` events.
    pub fn live(&self) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|line| !line.starts_with("session "))
            .cloned()
            .collect()
    }
}

/// Parks every model request in the `llm/stream` chain until the test lets it through, so
/// a test can act while a step is "waiting for the model" without hanging the stream.
///
/// A parked request still counts as dispatched (the reconstruction check, which sits first
/// in the chain, has already seen it); a turn cancelled meanwhile simply drops it.
#[derive(Clone, Debug)]
pub struct RequestGate {
    permits: Arc<Semaphore>,
    parked: watch::Sender<usize>,
}

impl RequestGate {
    /// Installs the gate on `ctx` (owned by its fiber).
    pub fn install(ctx: &Context) -> Result<Self, KernelError> {
        let gate = Self {
            permits: Arc::new(Semaphore::new(0)),
            parked: watch::Sender::new(0),
        };
        let listener = gate.clone();
        ctx.on_waterfall::<LlmStream, _, _>(move |_request, next| {
            let gate = listener.clone();
            async move {
                gate.parked.send_modify(|n| *n += 1);
                // The semaphore is never closed, so acquiring only fails if it were.
                if let Ok(permit) = gate.permits.acquire().await {
                    permit.forget();
                }
                next.run().await
            }
        })?
        .forget();
        Ok(gate)
    }

    /// Resolves once `n` requests have reached the gate in total.
    pub async fn wait_parked(&self, n: usize) {
        let mut rx = self.parked.subscribe();
        let _ = rx.wait_for(|parked| *parked >= n).await;
    }

    /// Lets `n` more requests through.
    pub fn release(&self, n: usize) {
        self.permits.add_permits(n);
    }
}
