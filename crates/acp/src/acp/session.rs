//! One ACP session: the agent it drives, its live `session/update` feed, its approval
//! answerer, and the prompt in flight.

use super::files::FsCapabilities;
use super::permission::AcpAnswerer;
use super::updates::Translator;
use crate::host::Workspace;
use crate::rpc::Peer;
use dsh_agent::{AgentCancelCause, AgentHandle, CancelOptions};
use dsh_kernel::Disposer;
use dsh_protocol::{MessageId, SessionId};
use dsh_session::{
    EventData, SessionEvent, SessionEventPublished, TurnEndCancelCause, TurnEndReason,
};
use dsh_tools_builtin::Approvals;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The prompt a session is running.
#[derive(Debug, Default)]
pub struct Flight {
    cancelled: AtomicBool,
}

impl Flight {
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

pub struct AcpSession {
    pub id: SessionId,
    pub workspace: Arc<dyn Workspace>,
    pub handle: AgentHandle,
    subscription: Mutex<Option<Disposer>>,
    flight: Mutex<Option<Arc<Flight>>>,
}

/// How a prompt ended, as the client is told.
#[derive(Clone, Debug, PartialEq)]
pub enum Settled {
    Stop(&'static str),
    Failed(String),
}

impl AcpSession {
    /// Wires `handle` to the client: its files (when the client offers them), the update
    /// feed, then the approval answerer.
    pub fn attach(
        workspace: Arc<dyn Workspace>,
        handle: AgentHandle,
        translator: Translator,
        peer: &Peer,
        fs: FsCapabilities,
    ) -> Result<Arc<Self>, String> {
        super::files::install(workspace.ctx(), handle.agent(), peer, fs)?;
        let id = handle.agent().id().clone();
        let translator = Arc::new(Mutex::new(translator));
        let feed = translator.clone();
        let sink = peer.clone();
        let wire_id = id.as_str().to_owned();
        let own = id.clone();
        let subscription = workspace
            .ctx()
            .on::<SessionEventPublished>(move |published| {
                if published.session.id() != &own {
                    return Ok(());
                }
                let updates = lock(&feed).live(&published.event);
                for update in updates {
                    sink.notify(
                        "session/update",
                        json!({ "sessionId": wire_id, "update": update }),
                    );
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        if let Some(approvals) = workspace.ctx().get::<Approvals>() {
            let answerer = AcpAnswerer::new(peer.clone(), id.clone(), translator.clone());
            approvals.set_session_answerer(handle.agent().session(), Some(Arc::new(answerer)));
        }
        Ok(Arc::new(Self {
            id,
            workspace,
            handle,
            subscription: Mutex::new(Some(subscription)),
            flight: Mutex::new(None),
        }))
    }

    /// Claims the session for one prompt; `None` when one is already in flight.
    pub fn begin(&self) -> Option<Arc<Flight>> {
        let mut slot = lock(&self.flight);
        if slot.is_some() {
            return None;
        }
        let flight = Arc::new(Flight::default());
        *slot = Some(flight.clone());
        Some(flight)
    }

    pub fn end(&self) {
        *lock(&self.flight) = None;
    }

    /// `session/cancel`: the prompt in flight settles `cancelled`, and the agent's work is
    /// cancelled (cause `user`).
    pub fn cancel(&self) {
        if let Some(flight) = lock(&self.flight).as_ref() {
            flight.cancelled.store(true, Ordering::SeqCst);
        }
        if let Err(error) = self
            .handle
            .agent()
            .cancel(AgentCancelCause::User, CancelOptions::default())
        {
            tracing::warn!(session = %self.id, %error, "cancelling the agent failed");
        }
    }

    /// Runs `text` as one prompt and says how it ended (see docs/acp.md for the mapping).
    pub async fn run(&self, flight: &Flight, text: String) -> Settled {
        if flight.is_cancelled() {
            return Settled::Stop("cancelled");
        }
        let agent = self.handle.agent().clone();
        let message = dsh_protocol::Message::user_text(text);
        let message_id = message.id.clone();
        let start = agent.session().events().len() as u64;
        if let Err(error) = agent.followup(message) {
            return Settled::Failed(format!("turn failed: {error}"));
        }
        agent.when_idle().await;
        if flight.is_cancelled() {
            return Settled::Stop("cancelled");
        }
        let events = agent.session().events_from(start);
        settle(&events, &message_id)
    }

    /// Ends the session: no more updates, the agent disposed (which closes its turn and
    /// flushes its log).
    pub async fn close(&self) {
        if let Some(flight) = lock(&self.flight).as_ref() {
            flight.cancelled.store(true, Ordering::SeqCst);
        }
        self.handle.dispose().await;
        if let Some(subscription) = lock(&self.subscription).take() {
            subscription.dispose();
        }
    }
}

/// The stop reason of the turn that ran message `id`.
///
/// Deviation from the original: `max-tokens` reports ACP `max_tokens` (the original's
/// settlement path overrides its own codec to `end_turn`), so an editor can tell a cut-off
/// answer from a finished one.
pub fn settle(events: &[Arc<SessionEvent>], id: &MessageId) -> Settled {
    let asked = events.iter().position(
        |event| matches!(&event.data, EventData::UserMessage(message) if &message.id == id),
    );
    let Some(asked) = asked else {
        // The message never reached a turn (admission discarded it).
        return Settled::Stop("cancelled");
    };
    let end = events[asked..].iter().find_map(|event| match &event.data {
        EventData::TurnEnd(end) => Some(&end.reason),
        _ => None,
    });
    match end {
        None | Some(TurnEndReason::Interrupted) => Settled::Stop("cancelled"),
        Some(TurnEndReason::Aborted { reason }) => match reason {
            TurnEndCancelCause::User | TurnEndCancelCause::Disposed => Settled::Stop("cancelled"),
            _ => Settled::Stop("end_turn"),
        },
        Some(TurnEndReason::MaxTokens) => Settled::Stop("max_tokens"),
        Some(TurnEndReason::Error { error }) => {
            Settled::Failed(format!("turn failed: {}", error.message))
        }
        Some(TurnEndReason::Completed | TurnEndReason::Blocked | TurnEndReason::Other(_)) => {
            Settled::Stop("end_turn")
        }
    }
}

/// The `session/prompt` result.
pub fn stop_value(reason: &str) -> Value {
    json!({ "stopReason": reason })
}
