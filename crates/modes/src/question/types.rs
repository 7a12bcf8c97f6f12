//! Wire shapes of questions and answers (camelCase, as the original's providers see them).

use dsh_protocol::{CallId, SessionId};
use serde::{Deserialize, Serialize};

/// One selectable answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What kind of decision a question is, for a surface that presents it specially. The answer
/// encoding is the same either way: an intent changes presentation, never the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum QuestionIntent {
    /// A plan under review: `detail` is the plan, and the option labelled `approve` approves it.
    PlanReview { approve: String },
}

/// One question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// Echoed in the answer.
    pub id: String,
    pub question: String,
    /// Supporting text shown with the question (a plan under review), never an option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A short heading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<QuestionOption>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_select: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<QuestionIntent>,
}

impl Question {
    /// Whether `label` is one of this question's options.
    pub fn offers(&self, label: &str) -> bool {
        self.options.iter().any(|option| option.label == label)
    }
}

/// The answer to one question.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerItem {
    pub id: String,
    /// Chosen option labels.
    pub selected: Vec<String>,
    /// Free text typed instead of (or, for multi-select, beside) the options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
}

/// The person's answers, one per question, in the questions' order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub answers: Vec<AnswerItem>,
}

/// What a provider is asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuestionRequest {
    /// The asking agent's session (a surface may serve several).
    pub session_id: Option<SessionId>,
    /// The tool call that asks, when one does.
    pub call_id: Option<CallId>,
    pub questions: Vec<Question>,
}

/// How a provider's question ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuestionOutcome {
    Answered(Answer),
    /// The person dismissed the question to say something else instead.
    Dismissed,
}
