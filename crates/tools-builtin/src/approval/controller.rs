//! [`Approvals`]: per-session approval state, the `tools/pre-execute` verdict, and the
//! `dsh_tools` approval service that puts questions to an [`ApprovalAnswerer`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_protocol::SessionId;
use dsh_session::{Session, SessionError};
use dsh_tools::{ApprovalOutcome, ApprovalService, PreExecuteDecision, ToolExecution};
use futures_util::future::BoxFuture;
use serde::Deserialize;

use super::events::{
    fold_session_grants, fold_session_safety, log_asked, log_decided, log_policy,
    log_session_safety, ApprovalAsked, ApprovalDecided, DecisionKind, SessionGrant,
};
use super::facts::{CallView, Gate};
use super::policy::{ApprovalPolicy, SessionSafety};
use super::rules::{decide, ApprovalRule, RuleAction};
use super::{ApprovalAnswerer, ApprovalDecision, ApprovalQuestion};

/// How long a cancelled ask waits before answering "cancelled" itself (see `ask`).
const CANCEL_HANDOFF: Duration = Duration::from_millis(200);

/// Approval settings: the policy new sessions start with, and the rules.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalSettings {
    pub policy: ApprovalPolicy,
    pub rules: Vec<ApprovalRule>,
}

struct SessionState {
    policy: ApprovalPolicy,
    /// Whether the log holds an `approval/policy` for the current policy.
    policy_logged: bool,
    grants: Vec<SessionGrant>,
    answerer: Option<Arc<dyn ApprovalAnswerer>>,
}

/// The approval service: rules, per-session policy and grants, and the answerer seam.
///
/// Per-session state is rebuilt from the session's log the first time a session is seen, so
/// a resumed session keeps its policy and its "allow for this session" grants.
pub struct Approvals {
    settings: Mutex<ApprovalSettings>,
    answerer: Mutex<Option<Arc<dyn ApprovalAnswerer>>>,
    sessions: Mutex<HashMap<SessionId, SessionState>>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("settings", &*lock(&self.settings))
            .finish_non_exhaustive()
    }
}

use dsh_kernel::sync::lock;

impl Approvals {
    pub fn new(settings: ApprovalSettings) -> Self {
        Self {
            settings: Mutex::new(settings),
            answerer: Mutex::new(None),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn settings(&self) -> ApprovalSettings {
        lock(&self.settings).clone()
    }

    /// Replaces the rules (a settings reload); grants and policies are kept.
    pub fn set_rules(&self, rules: Vec<ApprovalRule>) {
        lock(&self.settings).rules = rules;
    }

    /// The answerer for every session without one of its own (the TUI, an ACP client).
    /// `None` makes runs headless: calls that need approval are refused with a message.
    pub fn set_answerer(&self, answerer: Option<Arc<dyn ApprovalAnswerer>>) {
        *lock(&self.answerer) = answerer;
    }

    /// An answerer for one session only (a web client attached to it).
    pub fn set_session_answerer(
        &self,
        session: &Session,
        answerer: Option<Arc<dyn ApprovalAnswerer>>,
    ) {
        self.with_state(session, |state| state.answerer = answerer);
    }

    /// The session's current policy.
    pub fn policy(&self, session: &Session) -> ApprovalPolicy {
        self.with_state(session, |state| state.policy)
    }

    /// Sets the session's policy, logging `approval/policy` when it changes (or was never
    /// logged). The log is written first; memory follows only when it succeeded.
    pub fn set_policy(
        &self,
        session: &Session,
        policy: ApprovalPolicy,
    ) -> Result<(), SessionError> {
        let unchanged = self.with_state(session, |s| s.policy_logged && s.policy == policy);
        if unchanged {
            return Ok(());
        }
        log_policy(session, policy)?;
        self.with_state(session, |state| {
            state.policy = policy;
            state.policy_logged = true;
        });
        Ok(())
    }

    /// Logs a session's starting safety state (`permission/preset`, `sandbox/mode`,
    /// `approval/policy`) and adopts its policy.
    pub fn start_session(
        &self,
        session: &Session,
        safety: &SessionSafety,
    ) -> Result<(), SessionError> {
        log_session_safety(session, safety)?;
        self.with_state(session, |state| {
            state.policy = safety.policy;
            state.policy_logged = true;
        });
        Ok(())
    }

    /// The session's "allow for this session" grants, oldest first.
    pub fn grants(&self, session: &Session) -> Vec<SessionGrant> {
        self.with_state(session, |state| state.grants.clone())
    }

    /// Drops the in-memory state of a session that went away.
    pub fn forget(&self, session: &SessionId) {
        lock(&self.sessions).remove(session);
    }

    fn with_state<R>(&self, session: &Session, f: impl FnOnce(&mut SessionState) -> R) -> R {
        let default_policy = lock(&self.settings).policy;
        let mut sessions = lock(&self.sessions);
        let state = sessions.entry(session.id().clone()).or_insert_with(|| {
            let events = session.events();
            let fold = fold_session_safety(&events);
            SessionState {
                policy: fold.policy.unwrap_or(default_policy),
                policy_logged: fold.policy.is_some(),
                grants: fold_session_grants(&events),
                answerer: None,
            }
        });
        f(state)
    }

    fn answerer_for(&self, session: &Session) -> Option<Arc<dyn ApprovalAnswerer>> {
        self.with_state(session, |state| state.answerer.clone())
            .or_else(|| lock(&self.answerer).clone())
    }

    /// The policy verdict on one call, before any question is asked: deny rules refuse, calls
    /// that need approval and are not covered are asked (or refused when no one can answer),
    /// everything else is allowed.
    pub fn check(&self, exec: &ToolExecution) -> PreExecuteDecision {
        let view = CallView::of(exec);
        let rule = {
            let settings = lock(&self.settings);
            decide(&settings.rules, &view.facts())
        };
        if rule == Some(RuleAction::Deny) {
            return PreExecuteDecision::Deny {
                reason: format!(
                    "this {} call is refused by the user's approval rules ({}). Do not retry it; \
                     find another way or ask the user.",
                    view.tool,
                    first_line(&view.summary)
                ),
            };
        }
        if view.gate != Gate::NeedsApproval || rule == Some(RuleAction::Allow) {
            return PreExecuteDecision::Allow;
        }
        let Some(caller) = exec.caller() else {
            let policy = lock(&self.settings).policy;
            if !policy.asks() {
                return PreExecuteDecision::Allow;
            }
            return PreExecuteDecision::Deny {
                reason: format!(
                    "this {} call needs approval, but it has no session to ask in",
                    view.tool
                ),
            };
        };
        let session = caller.session();
        let (policy, covered) = self.with_state(session, |state| {
            (
                state.policy,
                state.grants.iter().any(|g| view.covered_by(g)),
            )
        });
        if !policy.asks() || covered {
            return PreExecuteDecision::Allow;
        }
        if self.answerer_for(session).is_none() {
            return PreExecuteDecision::Deny {
                reason: headless_denial(&view),
            };
        }
        PreExecuteDecision::Ask {
            reason: Some(format!(
                "{} need approval under the {policy} policy",
                what(&view)
            )),
        }
    }

    /// Puts one question to the answerer, logging the ask and its answer.
    async fn ask(&self, request: dsh_tools::ApprovalRequest) -> ApprovalOutcome {
        let exec = request.exec;
        let Some(caller) = exec.caller() else {
            return ApprovalOutcome::Unavailable;
        };
        let session = caller.session().clone();
        let Some(answerer) = self.answerer_for(&session) else {
            return ApprovalOutcome::Unavailable;
        };
        let view = CallView::of(&exec);
        let grant = view.grant();
        let asked = ApprovalAsked {
            call_id: exec.call_id().to_string(),
            tool: view.tool.clone(),
            summary: view.summary.clone(),
            reason: request.reason.clone(),
        };
        if let Err(error) = log_asked(&session, &asked) {
            tracing::warn!(%error, "could not record an approval request; refusing the call");
            return ApprovalOutcome::Unavailable;
        }
        let mut pending = PendingAsk {
            session: session.clone(),
            call_id: asked.call_id.clone(),
            settled: false,
        };
        let question = ApprovalQuestion {
            session_id: session.id().clone(),
            call_id: exec.call_id().clone(),
            tool: view.tool,
            summary: view.summary,
            reason: request.reason,
            grant: grant.clone(),
        };
        let decision = tokio::select! {
            biased;
            () = exec.signal().cancelled() => {
                pending.settle(DecisionKind::Cancelled, None, None);
                // The pipeline races the same signal and reports the call as aborted; give it
                // the chance so the model reads "aborted", not "denied". A caller that does
                // not race still gets its answer shortly.
                tokio::time::sleep(CANCEL_HANDOFF).await;
                return ApprovalOutcome::Cancelled;
            }
            decision = answerer.answer(question) => decision,
        };
        match decision {
            ApprovalDecision::AllowOnce => {
                pending.settle(DecisionKind::AllowOnce, None, None);
                ApprovalOutcome::AllowedOnce
            }
            ApprovalDecision::AllowForSession => {
                pending.settle(DecisionKind::AllowSession, Some(grant.clone()), None);
                self.with_state(&session, |state| {
                    if !state.grants.contains(&grant) {
                        state.grants.push(grant);
                    }
                });
                ApprovalOutcome::AllowedOnce
            }
            ApprovalDecision::Deny { feedback } => {
                let feedback = feedback.filter(|f| !f.trim().is_empty());
                pending.settle(DecisionKind::Deny, None, feedback.clone());
                ApprovalOutcome::Rejected { reason: feedback }
            }
        }
    }
}

impl ApprovalService for Approvals {
    fn request(&self, request: dsh_tools::ApprovalRequest) -> BoxFuture<'_, ApprovalOutcome> {
        Box::pin(self.ask(request))
    }
}

/// An ask waiting for its answer. Dropped unanswered (the pipeline gave up on it because the
/// turn was cancelled), it records the ask as cancelled so the log never shows a stale
/// question for a call that will not run.
struct PendingAsk {
    session: Session,
    call_id: String,
    settled: bool,
}

impl PendingAsk {
    fn settle(
        &mut self,
        decision: DecisionKind,
        remembered: Option<SessionGrant>,
        feedback: Option<String>,
    ) {
        if self.settled {
            return;
        }
        self.settled = true;
        let decided = ApprovalDecided {
            call_id: self.call_id.clone(),
            decision,
            remembered,
            feedback,
        };
        if let Err(error) = log_decided(&self.session, &decided) {
            tracing::warn!(%error, call_id = %self.call_id, "could not record an approval decision");
        }
    }
}

impl Drop for PendingAsk {
    fn drop(&mut self) {
        self.settle(DecisionKind::Cancelled, None, None);
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// "commands", "file changes", ... for messages.
fn what(view: &CallView) -> &'static str {
    match view.tool.as_str() {
        "bash" => "shell commands",
        "write" | "edit" => "file changes",
        "web_fetch" => "web fetches",
        _ => "calls like this",
    }
}

fn headless_denial(view: &CallView) -> String {
    format!(
        "this {} call was not run: {} need approval, and no one can answer approval prompts in \
         this session (a headless run). Tell the user what you wanted to do. To allow calls like \
         this they can rerun with `--approval never`, or add an allow rule to settings.toml: {}",
        view.tool,
        what(view),
        ApprovalRule::suggestion(&view.facts())
    )
}
