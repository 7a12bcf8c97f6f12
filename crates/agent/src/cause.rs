//! Why work was cancelled, and the abort signal that carries that reason.
//!
//! Cancellation is a typed protocol rather than a flag: the first cause given to an
//! [`AbortSignal`] is the one every later check reports, and it ends up verbatim in the
//! durable `turn/end {aborted, reason}`.

use dsh_session::TurnEndCancelCause;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// Why an agent's active work was cancelled (closed set; the durable form adds `legacy`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AgentCancelCause {
    /// A person asked (Esc, Ctrl-C, an API call).
    User,
    /// The owning agent cancelled its child.
    Parent,
    /// A hook or policy stopped the work, with its reason.
    Hook { reason: String },
    /// The agent is being torn down; never latches a wake.
    Disposed,
}

impl AgentCancelCause {
    /// A `hook` cause.
    pub fn hook(reason: impl Into<String>) -> Self {
        Self::Hook {
            reason: reason.into(),
        }
    }
}

impl From<AgentCancelCause> for TurnEndCancelCause {
    fn from(cause: AgentCancelCause) -> Self {
        match cause {
            AgentCancelCause::User => Self::User,
            AgentCancelCause::Parent => Self::Parent,
            AgentCancelCause::Hook { reason } => Self::Hook { reason },
            AgentCancelCause::Disposed => Self::Disposed,
        }
    }
}

impl fmt::Display for AgentCancelCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::User => f.write_str("cancelled by the user"),
            Self::Parent => f.write_str("cancelled by the parent agent"),
            Self::Hook { reason } => write!(f, "cancelled by a hook: {reason}"),
            Self::Disposed => f.write_str("cancelled because the agent was disposed"),
        }
    }
}

/// Options of [`Agent::cancel`](crate::Agent::cancel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CancelOptions {
    /// Keep pending inbox items (and a latched wake); only the active work is aborted.
    pub keep_inbox: bool,
}

impl CancelOptions {
    /// `keep_inbox: true`.
    pub fn keep_inbox() -> Self {
        Self { keep_inbox: true }
    }
}

/// The error an aborted operation reports: carries nothing, the reason is on the signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the operation was aborted")]
pub struct Aborted;

struct SignalInner {
    token: CancellationToken,
    cause: OnceLock<AgentCancelCause>,
}

/// A cancellation token plus a write-once cause: the first [`abort`](Self::abort) wins.
///
/// Clones observe the same signal. The underlying token is never handed out directly (only
/// child tokens are), so nothing can cancel the signal without giving a cause.
#[derive(Clone)]
pub struct AbortSignal {
    inner: Arc<SignalInner>,
}

impl Default for AbortSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl AbortSignal {
    /// A fresh, unaborted signal.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(SignalInner {
                token: CancellationToken::new(),
                cause: OnceLock::new(),
            }),
        }
    }

    /// Aborts with `cause` unless already aborted; returns whether this call decided the cause.
    pub fn abort(&self, cause: AgentCancelCause) -> bool {
        // The cause is published before the token fires, so every woken waiter sees it.
        let first = self.inner.cause.set(cause).is_ok();
        self.inner.token.cancel();
        first
    }

    pub fn is_aborted(&self) -> bool {
        self.inner.cause.get().is_some()
    }

    /// The winning cause, once aborted.
    pub fn reason(&self) -> Option<&AgentCancelCause> {
        self.inner.cause.get()
    }

    /// `Err(Aborted)` once aborted (the `throwIfAborted` of the original).
    pub fn check(&self) -> Result<(), Aborted> {
        if self.is_aborted() {
            Err(Aborted)
        } else {
            Ok(())
        }
    }

    /// Resolves when the signal is aborted.
    pub async fn cancelled(&self) {
        self.inner.token.cancelled().await;
    }

    /// A token cancelled together with this signal, for APIs that take a plain token
    /// (model requests, tool executions, prompt assembly).
    pub fn child_token(&self) -> CancellationToken {
        self.inner.token.child_token()
    }

    /// Whether `a` and `b` are the same signal.
    pub fn ptr_eq(a: &AbortSignal, b: &AbortSignal) -> bool {
        Arc::ptr_eq(&a.inner, &b.inner)
    }
}

impl fmt::Debug for AbortSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortSignal")
            .field("reason", &self.reason())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_cause_wins() {
        let signal = AbortSignal::new();
        assert!(signal.check().is_ok());
        let child = signal.child_token();
        assert!(signal.abort(AgentCancelCause::hook("stop")));
        assert!(!signal.abort(AgentCancelCause::User));
        assert_eq!(signal.reason(), Some(&AgentCancelCause::hook("stop")));
        assert_eq!(signal.check(), Err(Aborted));
        assert!(child.is_cancelled());
    }

    #[test]
    fn causes_use_the_durable_wire_shape() {
        let cause = AgentCancelCause::hook("why");
        assert_eq!(
            serde_json::to_value(&cause).unwrap(),
            json!({"kind": "hook", "reason": "why"})
        );
        let durable: TurnEndCancelCause = AgentCancelCause::Disposed.into();
        assert_eq!(
            serde_json::to_value(durable).unwrap(),
            json!({"kind": "disposed"})
        );
    }

    #[tokio::test]
    async fn cancelled_resolves_after_abort() {
        let signal = AbortSignal::new();
        let waiter = signal.clone();
        let task = tokio::spawn(async move { waiter.cancelled().await });
        signal.abort(AgentCancelCause::User);
        task.await.unwrap();
    }
}
