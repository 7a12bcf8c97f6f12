//! Approvals and questions put to whoever watches a held session: each open one is a
//! payload on the feed plus a reply slot; the first answer through the API wins. When the
//! asking turn is cancelled, its future (and the slot) is dropped, and the feed says the
//! request was withdrawn.

use super::{held, lock, Frame, HubInner, LiveSession};
use dsh_modes::question::{Answer, AnswerItem, QuestionOutcome, QuestionRequest};
use dsh_modes::QuestionProvider;
use dsh_tools_builtin::approval::{ApprovalAnswerer, ApprovalDecision, ApprovalQuestion};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Weak;
use tokio::sync::oneshot;

struct Slot<T> {
    id: String,
    payload: Value,
    reply: oneshot::Sender<T>,
}

/// A held session's open approvals and questions, oldest first.
#[derive(Default)]
pub(crate) struct Open {
    approvals: Vec<Slot<ApprovalDecision>>,
    questions: Vec<Slot<QuestionOutcome>>,
}

impl Open {
    pub(crate) fn payloads(&self) -> (Vec<Value>, Vec<Value>) {
        (
            self.approvals.iter().map(|s| s.payload.clone()).collect(),
            self.questions.iter().map(|s| s.payload.clone()).collect(),
        )
    }

    pub(crate) fn is_waiting(&self) -> bool {
        !self.approvals.is_empty() || !self.questions.is_empty()
    }

    pub(crate) fn take_approval(&mut self, id: &str) -> Option<oneshot::Sender<ApprovalDecision>> {
        let at = self.approvals.iter().position(|s| s.id == id)?;
        Some(self.approvals.remove(at).reply)
    }

    pub(crate) fn take_question(&mut self, id: &str) -> Option<oneshot::Sender<QuestionOutcome>> {
        let at = self.questions.iter().position(|s| s.id == id)?;
        Some(self.questions.remove(at).reply)
    }
}

/// `POST …/approvals/{id}`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswer {
    pub decision: ApprovalWord,
    #[serde(default)]
    pub feedback: Option<String>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalWord {
    AllowOnce,
    AllowSession,
    Deny,
}

impl ApprovalAnswer {
    pub(crate) fn word(&self) -> &'static str {
        match self.decision {
            ApprovalWord::AllowOnce => "allow-once",
            ApprovalWord::AllowSession => "allow-session",
            ApprovalWord::Deny => "deny",
        }
    }

    pub(crate) fn into_decision(self) -> ApprovalDecision {
        match self.decision {
            ApprovalWord::AllowOnce => ApprovalDecision::AllowOnce,
            ApprovalWord::AllowSession => ApprovalDecision::AllowForSession,
            ApprovalWord::Deny => ApprovalDecision::Deny {
                feedback: self.feedback.filter(|f| !f.trim().is_empty()),
            },
        }
    }
}

/// `POST …/questions/{id}`: the answers, or a dismissal.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuestionAnswer {
    #[serde(default)]
    pub answers: Vec<AnswerItem>,
    #[serde(default)]
    pub dismiss: bool,
}

impl QuestionAnswer {
    pub(crate) fn word(&self) -> &'static str {
        if self.dismiss {
            "dismissed"
        } else {
            "answered"
        }
    }

    pub(crate) fn into_outcome(self) -> QuestionOutcome {
        if self.dismiss {
            QuestionOutcome::Dismissed
        } else {
            QuestionOutcome::Answered(Answer {
                answers: self.answers,
            })
        }
    }
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// Takes a request down when its asker stops waiting before an answer came.
struct Withdraw {
    live: Weak<LiveSession>,
    id: String,
    approval: bool,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(live) = self.live.upgrade() else {
            return;
        };
        let gone = {
            let mut open = lock(&live.open);
            if self.approval {
                open.take_approval(&self.id).is_some()
            } else {
                open.take_question(&self.id).is_some()
            }
        };
        if gone {
            live.publish(if self.approval {
                Frame::ApprovalResolved(json!({ "id": self.id, "decision": "withdrawn" }))
            } else {
                Frame::QuestionResolved(json!({ "id": self.id, "outcome": "withdrawn" }))
            });
        }
    }
}

/// One held session's approval answerer.
pub(crate) struct WebApprovals {
    live: Weak<LiveSession>,
}

impl WebApprovals {
    pub(crate) fn new(live: Weak<LiveSession>) -> Self {
        Self { live }
    }
}

impl ApprovalAnswerer for WebApprovals {
    fn answer(&self, question: ApprovalQuestion) -> BoxFuture<'_, ApprovalDecision> {
        Box::pin(async move {
            let Some(live) = self.live.upgrade() else {
                return ApprovalDecision::Deny {
                    feedback: Some("the web server closed the session".into()),
                };
            };
            let id = new_id("apr");
            let payload = json!({
                "id": id,
                "callId": question.call_id.as_str(),
                "tool": question.tool,
                "summary": question.summary,
                "reason": question.reason,
                "grant": serde_json::to_value(&question.grant).unwrap_or(Value::Null),
                "escalation": serde_json::to_value(&question.escalation).unwrap_or(Value::Null),
            });
            let (reply, answer) = oneshot::channel();
            lock(&live.open).approvals.push(Slot {
                id: id.clone(),
                payload: payload.clone(),
                reply,
            });
            live.publish(Frame::Approval(payload));
            let _withdraw = Withdraw {
                live: self.live.clone(),
                id,
                approval: true,
            };
            drop(live);
            // Waits as long as the person takes; a cancelled turn drops this future.
            answer.await.unwrap_or(ApprovalDecision::Deny {
                feedback: Some("the web server closed the session".into()),
            })
        })
    }
}

/// A workspace's question provider: asks through the asking session's held entry.
pub(crate) struct WebQuestions {
    hub: Weak<HubInner>,
}

impl WebQuestions {
    pub(crate) fn new(hub: Weak<HubInner>) -> Self {
        Self { hub }
    }
}

impl QuestionProvider for WebQuestions {
    fn ask(&self, request: QuestionRequest) -> BoxFuture<'_, QuestionOutcome> {
        Box::pin(async move {
            let live = request
                .session_id
                .as_ref()
                .and_then(|id| held(&self.hub, id));
            let Some(live) = live else {
                // Not a session this server shows (a child agent): nobody to ask.
                return QuestionOutcome::Dismissed;
            };
            let id = new_id("q");
            let payload = json!({
                "id": id,
                "callId": request.call_id.as_ref().map(|c| c.as_str()),
                "questions": serde_json::to_value(&request.questions).unwrap_or(Value::Null),
            });
            let (reply, answer) = oneshot::channel();
            lock(&live.open).questions.push(Slot {
                id: id.clone(),
                payload: payload.clone(),
                reply,
            });
            live.publish(Frame::Question(payload));
            let _withdraw = Withdraw {
                live: std::sync::Arc::downgrade(&live),
                id,
                approval: false,
            };
            drop(live);
            answer.await.unwrap_or(QuestionOutcome::Dismissed)
        })
    }
}
