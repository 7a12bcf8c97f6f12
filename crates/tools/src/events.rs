//! The `tools/*` extension points. Execution events are dispatched with the execution's
//! scope key as carrier, so a listener registered in an agent's scope hears only that agent's
//! (and its descendants') calls; `tools/change` is unscoped.

use crate::error::ToolFailure;
use crate::execution::{lock, ToolExecution};
use crate::result::InvocationResult;
use dsh_kernel::{Event, Notification, ScopeKey, Waterfall};
use dsh_protocol::{ContentBlock, Message};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// `tools/pre-execute`: policy before a call runs. Default [`PreExecuteDecision::Allow`].
#[derive(Debug)]
pub struct PreExecute;

impl Event for PreExecute {
    const NAME: &'static str = "tools/pre-execute";
}

impl Waterfall for PreExecute {
    type Args = PreExecuteArgs;
    type Output = PreExecuteDecision;
}

#[derive(Debug)]
pub struct PreExecuteArgs {
    pub exec: Arc<ToolExecution>,
}

/// What policy decided about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreExecuteDecision {
    Allow,
    /// Refuse; the model sees `Error: <reason>`.
    Deny {
        reason: String,
    },
    /// Ask the [`crate::Approval`] service; refused when there is none.
    Ask {
        reason: Option<String>,
    },
}

/// `tools/execute`: middleware around the body. Wrappers may observe and transform the
/// outcome and may replace the signal the body sees; the caller's signal stays fused in.
#[derive(Debug)]
pub struct Execute;

impl Event for Execute {
    const NAME: &'static str = "tools/execute";
}

impl Waterfall for Execute {
    type Args = ExecuteArgs;
    type Output = Result<Value, ToolFailure>;
}

#[derive(Debug)]
pub struct ExecuteArgs {
    exec: Arc<ToolExecution>,
    signal: Mutex<CancellationToken>,
}

impl ExecuteArgs {
    pub(crate) fn new(exec: Arc<ToolExecution>) -> Self {
        let signal = exec.caller_signal().clone();
        Self {
            exec,
            signal: Mutex::new(signal),
        }
    }

    pub fn execution(&self) -> &Arc<ToolExecution> {
        &self.exec
    }

    /// The signal currently installed for the body (initially the caller's).
    pub fn signal(&self) -> CancellationToken {
        lock(&self.signal).clone()
    }

    /// Installs another signal for the body (a timeout or budget policy, say). Cancelling it
    /// cancels the body; the caller's signal keeps working regardless.
    pub fn replace_signal(&self, token: CancellationToken) {
        *lock(&self.signal) = token;
    }
}

/// `tools/post-execute`: policy after the body (or a denial). Default: accept unchanged.
#[derive(Debug)]
pub struct PostExecute;

impl Event for PostExecute {
    const NAME: &'static str = "tools/post-execute";
}

impl Waterfall for PostExecute {
    type Args = PostExecuteArgs;
    type Output = PostExecuteDecision;
}

#[derive(Debug)]
pub struct PostExecuteArgs {
    pub exec: Arc<ToolExecution>,
    /// The result so far.
    pub result: InvocationResult,
}

/// What post-execute policy made of a result.
#[derive(Debug, Clone, PartialEq)]
pub enum PostExecuteDecision {
    /// Keep the result, optionally replacing its content or (for successes) its value, which
    /// re-renders the content; contexts are appended after the tool's deferred ones.
    Accept {
        content: Option<Vec<ContentBlock>>,
        value: Option<Value>,
        additional_contexts: Vec<Message>,
    },
    /// Turn the result into a `TOOL_BLOCKED` failure carrying `feedback`; the tool's deferred
    /// contexts are dropped.
    Block {
        feedback: String,
        additional_contexts: Vec<Message>,
    },
}

impl PostExecuteDecision {
    /// Accept unchanged.
    pub fn accept() -> Self {
        Self::Accept {
            content: None,
            value: None,
            additional_contexts: Vec::new(),
        }
    }
}

impl Default for PostExecuteDecision {
    fn default() -> Self {
        Self::accept()
    }
}

/// `tools/result`: a settled result (contained; observers never affect the call).
#[derive(Debug)]
pub struct ToolResultEvent;

impl Event for ToolResultEvent {
    const NAME: &'static str = "tools/result";
}

impl Notification for ToolResultEvent {
    type Payload = ToolResultNotice;
}

#[derive(Debug)]
pub struct ToolResultNotice {
    pub exec: Arc<ToolExecution>,
    pub result: InvocationResult,
}

/// `tools/change`: a registration, restriction or guard was added or removed (unscoped).
#[derive(Debug)]
pub struct ToolsChange;

impl Event for ToolsChange {
    const NAME: &'static str = "tools/change";
}

impl Notification for ToolsChange {
    type Payload = ToolsChanged;
}

#[derive(Debug, Clone)]
pub struct ToolsChanged {
    /// The layer that changed (`None` = global).
    pub scope: Option<ScopeKey>,
}
