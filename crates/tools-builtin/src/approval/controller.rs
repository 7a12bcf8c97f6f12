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
use super::facts::CallView;
use super::policy::{ApprovalPolicy, SessionSafety};
use super::rules::{decide, ApprovalRule, RuleAction};
use super::verdict::{ask_reason, headless_denial, never_denial, policy_need, Need};
use super::{ApprovalAnswerer, ApprovalDecision, ApprovalQuestion};
use crate::sandbox::{SandboxMode, UnconfinedFallback};

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

    /// Whether a call of this session can be put to a person now: its policy asks and an
    /// answerer is attached (false in a headless run). Plugins with their own gates (the
    /// memory plugin's `remember`) use it to refuse with their own message.
    pub fn can_ask(&self, session: &Session) -> bool {
        self.policy(session).asks() && self.answerer_for(session).is_some()
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

    pub(super) fn answerer_for(&self, session: &Session) -> Option<Arc<dyn ApprovalAnswerer>> {
        self.with_state(session, |state| state.answerer.clone())
            .or_else(|| lock(&self.answerer).clone())
    }

    /// The verdict on one call, before any question is asked. Rules first: a deny refuses
    /// (under every policy), an ask asks, an allow runs. Otherwise the policy decides, given
    /// whether the session's sandbox confines the call (see [`ApprovalPolicy`]); a session
    /// grant covers what it asks about. A call that must be asked is refused instead when
    /// no one can answer, or under `never`. A bash escalation passes here: its body asks.
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
        if view.escalation {
            return PreExecuteDecision::Allow;
        }
        let caller = exec.caller();
        let policy = match caller {
            Some(caller) => self.policy(caller.session()),
            None => lock(&self.settings).policy,
        };
        let need = match rule {
            Some(RuleAction::Ask) => Some(Need::AskRule),
            Some(RuleAction::Allow) => None,
            _ => policy_need(policy, view.gate, sandboxed(exec)),
        };
        let Some(need) = need else {
            return PreExecuteDecision::Allow;
        };
        if !policy.asks() {
            return PreExecuteDecision::Deny {
                reason: never_denial(&view),
            };
        }
        let Some(caller) = caller else {
            return PreExecuteDecision::Deny {
                reason: format!(
                    "this {} call needs approval, but it has no session to ask in",
                    view.tool
                ),
            };
        };
        let session = caller.session();
        let covered = self.with_state(session, |state| {
            state.grants.iter().any(|g| view.covered_by(g))
        });
        if covered {
            return PreExecuteDecision::Allow;
        }
        if self.answerer_for(session).is_none() {
            return PreExecuteDecision::Deny {
                reason: headless_denial(need, &view),
            };
        }
        PreExecuteDecision::Ask {
            reason: Some(ask_reason(need, &view)),
        }
    }

    /// What becomes of an ask from a hook inside this listener: under `never` no one is
    /// asked, so it is refused; otherwise it goes to the answerer like any other.
    pub(crate) fn inner_ask(
        &self,
        exec: &ToolExecution,
        ask: PreExecuteDecision,
    ) -> PreExecuteDecision {
        let policy = match exec.caller() {
            Some(caller) => self.policy(caller.session()),
            None => lock(&self.settings).policy,
        };
        if policy.asks() {
            ask
        } else {
            PreExecuteDecision::Deny {
                reason: never_denial(&CallView::of(exec)),
            }
        }
    }

    /// Puts one question from the `tools/pre-execute` verdict to the answerer.
    async fn ask(&self, request: dsh_tools::ApprovalRequest) -> ApprovalOutcome {
        let exec = request.exec;
        let Some(caller) = exec.caller() else {
            return ApprovalOutcome::Unavailable;
        };
        let session = caller.session().clone();
        // Reached only through a hook outside this plugin's listener: still, no one is
        // asked under `never`.
        if !self.policy(&session).asks() {
            return ApprovalOutcome::Unavailable;
        }
        let Some(answerer) = self.answerer_for(&session) else {
            return ApprovalOutcome::Unavailable;
        };
        let view = CallView::of(&exec);
        let asked = ApprovalAsked {
            call_id: exec.call_id().to_string(),
            tool: view.tool.clone(),
            summary: view.summary.clone(),
            reason: request.reason.clone(),
            escalation: None,
        };
        let question = ApprovalQuestion {
            session_id: session.id().clone(),
            call_id: exec.call_id().clone(),
            tool: view.tool.clone(),
            summary: view.summary.clone(),
            reason: request.reason,
            grant: Some(view.grant()),
            escalation: None,
        };
        match self.put(&exec, &session, answerer, asked, question).await {
            Answer::Decided(ApprovalDecision::Deny { feedback }) => {
                ApprovalOutcome::Rejected { reason: feedback }
            }
            Answer::Decided(_) => ApprovalOutcome::AllowedOnce,
            Answer::Cancelled => {
                // The pipeline races the same signal and reports the call as aborted; give it
                // the chance so the model reads "aborted", not "denied". A caller that does
                // not race still gets its answer shortly.
                tokio::time::sleep(CANCEL_HANDOFF).await;
                ApprovalOutcome::Cancelled
            }
            Answer::NotRecorded => ApprovalOutcome::Unavailable,
        }
    }

    /// Logs `asked`, puts `question` to `answerer` and logs the answer. "Allow for this
    /// session" remembers the question's grant; a question without one counts it as "allow
    /// once" (and logs it so).
    pub(super) async fn put(
        &self,
        exec: &ToolExecution,
        session: &Session,
        answerer: Arc<dyn ApprovalAnswerer>,
        asked: ApprovalAsked,
        question: ApprovalQuestion,
    ) -> Answer {
        if let Err(error) = log_asked(session, &asked) {
            tracing::warn!(%error, "could not record an approval request; refusing the call");
            return Answer::NotRecorded;
        }
        let mut pending = PendingAsk {
            session: session.clone(),
            call_id: asked.call_id,
            settled: false,
        };
        let grant = question.grant.clone();
        let decision = tokio::select! {
            biased;
            () = exec.signal().cancelled() => {
                pending.settle(DecisionKind::Cancelled, None, None);
                return Answer::Cancelled;
            }
            decision = answerer.answer(question) => decision,
        };
        let decision = match (decision, grant) {
            (ApprovalDecision::AllowForSession, Some(grant)) => {
                pending.settle(DecisionKind::AllowSession, Some(grant.clone()), None);
                self.with_state(session, |state| {
                    if !state.grants.contains(&grant) {
                        state.grants.push(grant);
                    }
                });
                ApprovalDecision::AllowForSession
            }
            (ApprovalDecision::AllowOnce | ApprovalDecision::AllowForSession, _) => {
                pending.settle(DecisionKind::AllowOnce, None, None);
                ApprovalDecision::AllowOnce
            }
            (ApprovalDecision::Deny { feedback }, _) => {
                let feedback = feedback.filter(|f| !f.trim().is_empty());
                pending.settle(DecisionKind::Deny, None, feedback.clone());
                ApprovalDecision::Deny { feedback }
            }
        };
        Answer::Decided(decision)
    }
}

/// How one question ended.
pub(super) enum Answer {
    /// The person's answer, as logged.
    Decided(ApprovalDecision),
    /// The call's signal was cancelled first.
    Cancelled,
    /// The ask could not be logged, so it was not put.
    NotRecorded,
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

/// Whether the session's sandbox confines `exec`: a confining mode that fails closed when the
/// kernel cannot enforce it. A call without an environment counts as unconfined.
fn sandboxed(exec: &ToolExecution) -> bool {
    crate::tool::tool_env(exec).is_ok_and(|env| {
        let policy = env.sandbox();
        policy.mode() != SandboxMode::DangerFullAccess
            && policy.fallback() == UnconfinedFallback::Refuse
    })
}
