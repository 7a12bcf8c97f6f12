//! Driver phases, status reporting and the activity watch behind `when_idle`.

use dsh_agent::{AbortSignal, AgentCancelCause, AgentEvents, AgentStatus, AgentStatusChanged};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// What the driver is doing. Status is `running` iff the phase is `Running`.
#[derive(Debug)]
pub(crate) enum Phase {
    Idle {
        last_turn: u64,
    },
    Maintenance {
        abort: AbortSignal,
        last_turn: u64,
        wake_requested: bool,
    },
    Running {
        abort: AbortSignal,
        turn: u64,
        step: u64,
        wake_requested: bool,
    },
}

impl Phase {
    pub(crate) fn abort(&self) -> Option<&AbortSignal> {
        match self {
            Self::Idle { .. } => None,
            Self::Maintenance { abort, .. } | Self::Running { abort, .. } => Some(abort),
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        matches!(self, Self::Idle { .. })
    }

    pub(crate) fn aborted_by_disposal(&self) -> bool {
        self.abort()
            .and_then(AbortSignal::reason)
            .is_some_and(|cause| *cause == AgentCancelCause::Disposed)
    }

    pub(crate) fn clear_wake(&mut self) {
        match self {
            Self::Idle { .. } => {}
            Self::Maintenance { wake_requested, .. } | Self::Running { wake_requested, .. } => {
                *wake_requested = false
            }
        }
    }

    pub(crate) fn status(&self) -> AgentStatus {
        match self {
            Self::Running { .. } => AgentStatus::Running,
            _ => AgentStatus::Idle,
        }
    }
}

/// Phase plus the last status handed to the reporter (to never report one twice in a row).
#[derive(Debug)]
pub(crate) struct DriverState {
    pub(crate) phase: Phase,
    pub(crate) reported: AgentStatus,
    /// Identifies the current activity, so a finishing activity never ends a newer one.
    pub(crate) activity: u64,
}

pub(crate) use dsh_kernel::sync::lock;

/// Reports status transitions in the order they happened, outside the state lock.
///
/// Transitions are queued while the state lock is held; whoever drains emits them. A
/// listener that causes another transition (on this or another thread) only queues it, and
/// the active drainer emits it after the current listener returns, so order is preserved and
/// nothing deadlocks.
#[derive(Debug, Default)]
pub(crate) struct StatusReporter {
    pending: Mutex<VecDeque<AgentStatus>>,
    draining: AtomicBool,
}

impl StatusReporter {
    /// Queues `status` if it differs from the last one; call with the state lock held.
    pub(crate) fn transition(&self, state: &mut DriverState) {
        let status = state.phase.status();
        if status != state.reported {
            state.reported = status;
            lock(&self.pending).push_back(status);
        }
    }

    pub(crate) fn drain(&self, events: &AgentEvents) {
        loop {
            if self.draining.swap(true, Ordering::SeqCst) {
                return;
            }
            loop {
                let next = lock(&self.pending).pop_front();
                match next {
                    Some(status) => events.emit::<AgentStatusChanged, _>(status),
                    None => break,
                }
            }
            self.draining.store(false, Ordering::SeqCst);
            if lock(&self.pending).is_empty() {
                return;
            }
        }
    }
}
