//! The approval seam: where a `tools/pre-execute` "ask" goes. The interaction layer (UI,
//! ACP, a policy plugin) implements [`ApprovalService`] and provides it as an [`Approval`]
//! service; without one every ask is denied (fail closed).

use crate::execution::ToolExecution;
use futures_util::future::BoxFuture;
use std::fmt;
use std::sync::Arc;

/// Answers approval requests.
pub trait ApprovalService: Send + Sync + 'static {
    fn request(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalOutcome>;
}

/// One question: may this call run?
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    pub exec: Arc<ToolExecution>,
    /// Why the hook asked, if it said.
    pub reason: Option<String>,
}

/// How the question was answered. Only [`ApprovalOutcome::AllowedOnce`] lets the call run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalOutcome {
    AllowedOnce,
    Rejected { reason: Option<String> },
    Cancelled,
    Unavailable,
}

/// No answerer is mounted, or the answerer could not reach anyone.
pub(crate) const NO_ANSWERER: &str = "no approval answerer is available";

impl ApprovalOutcome {
    /// `None` when the call may run, else the denial reason the model sees.
    pub(crate) fn denial(self) -> Option<String> {
        match self {
            Self::AllowedOnce => None,
            Self::Rejected {
                reason: Some(reason),
            } => Some(format!("the user rejected this tool call: {reason}")),
            Self::Rejected { reason: None } => Some("the user rejected this tool call".into()),
            Self::Cancelled => Some("the approval request was cancelled".into()),
            Self::Unavailable => Some(NO_ANSWERER.into()),
        }
    }
}

/// The service the pipeline looks up with `ctx.get::<Approval>()`.
#[derive(Clone)]
pub struct Approval {
    service: Arc<dyn ApprovalService>,
}

impl Approval {
    pub fn new(service: impl ApprovalService) -> Self {
        Self {
            service: Arc::new(service),
        }
    }

    pub fn from_arc(service: Arc<dyn ApprovalService>) -> Self {
        Self { service }
    }

    pub async fn request(&self, request: ApprovalRequest) -> ApprovalOutcome {
        self.service.request(request).await
    }
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Approval")
    }
}
