//! [`UserQuestions`]: the one channel through which an agent's tool call asks the person.

use super::types::{Answer, AnswerItem, Question, QuestionOutcome, QuestionRequest};
use dsh_agent::{Agent, AgentRegistry};
use dsh_kernel::sync::lock;
use futures_util::future::BoxFuture;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use tokio_util::sync::CancellationToken;

/// Why a question got no answer. Codes are the original's (`UserQuestionError.code`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    #[error("ask_user_question was aborted before the user answered")]
    Aborted,
    #[error("ask_user_question requires at least one question")]
    EmptyQuestions,
    #[error("human interaction requires the exact live calling agent when an agent is supplied")]
    CallerNotLive,
    #[error(
        "human interaction is unavailable while the calling agent is owned by another live \
         agent; include the unresolved question or decision in the child agent's final result"
    )]
    DelegatedCaller,
    #[error("{0}")]
    BadIntent(String),
    #[error(
        "no user-questions provider is registered: nobody can answer in this run (it is \
         headless); decide yourself, and say in your answer what you assumed"
    )]
    NoProvider,
    #[error("a user-questions provider is already registered")]
    DuplicateProvider,
    #[error(
        "the user dismissed the question to speak instead; stop here and wait for their message"
    )]
    Cancelled,
    #[error("the answer did not fit the questions: {0}")]
    BadResponse(String),
}

impl QuestionError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Aborted => "ASK_ABORTED",
            Self::EmptyQuestions => "EMPTY_QUESTIONS",
            Self::CallerNotLive => "CALLER_NOT_LIVE",
            Self::DelegatedCaller => "DELEGATED_CALLER",
            Self::BadIntent(_) => "BAD_INTENT",
            Self::NoProvider => "NO_PROVIDER",
            Self::DuplicateProvider => "DUPLICATE_PROVIDER",
            Self::Cancelled => "ASK_CANCELLED",
            Self::BadResponse(_) => "BAD_RESPONSE",
        }
    }
}

/// Whoever shows questions to a person (the terminal UI, a web or editor client).
///
/// The future is dropped when the asking call is cancelled; a surface takes the question down
/// when it sees its reply slot closed.
pub trait QuestionProvider: Send + Sync + 'static {
    fn ask(&self, request: QuestionRequest) -> BoxFuture<'_, QuestionOutcome>;
}

type ProviderSlot = Mutex<Option<(u64, Arc<dyn QuestionProvider>)>>;

/// The user-questions service: at most one provider, and `ask()`.
#[derive(Default)]
pub struct UserQuestions {
    provider: Arc<ProviderSlot>,
    next: Mutex<u64>,
}

impl std::fmt::Debug for UserQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserQuestions")
            .field("has_provider", &self.has_provider())
            .finish()
    }
}

/// Keeps a provider registered; dropping it (or [`ProviderRegistration::unregister`])
/// removes exactly that provider.
#[derive(Debug)]
pub struct ProviderRegistration {
    slot: Weak<ProviderSlot>,
    id: u64,
}

impl ProviderRegistration {
    pub fn unregister(self) {}
}

impl Drop for ProviderRegistration {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.upgrade() {
            let mut slot = lock(&slot);
            if slot.as_ref().is_some_and(|(id, _)| *id == self.id) {
                *slot = None;
            }
        }
    }
}

impl UserQuestions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the provider; only one may be registered at a time.
    pub fn register_provider(
        &self,
        provider: Arc<dyn QuestionProvider>,
    ) -> Result<ProviderRegistration, QuestionError> {
        let mut slot = lock(&self.provider);
        if slot.is_some() {
            return Err(QuestionError::DuplicateProvider);
        }
        let id = {
            let mut next = lock(&self.next);
            *next += 1;
            *next
        };
        *slot = Some((id, provider));
        Ok(ProviderRegistration {
            slot: Arc::downgrade(&self.provider),
            id,
        })
    }

    pub fn has_provider(&self) -> bool {
        lock(&self.provider).is_some()
    }

    /// Asks the person and waits for the answer, checking first (in the original's order)
    /// that the call was not aborted, that there is a question, that the caller is the live
    /// root agent it claims to be, that every intent names one of its options and carries its
    /// detail, and that a provider exists. The answer is validated against the questions.
    pub async fn ask(
        &self,
        mut request: QuestionRequest,
        caller: Option<&Arc<dyn Agent>>,
        registry: Option<&AgentRegistry>,
        signal: &CancellationToken,
    ) -> Result<Answer, QuestionError> {
        if signal.is_cancelled() {
            return Err(QuestionError::Aborted);
        }
        if request.questions.is_empty() {
            return Err(QuestionError::EmptyQuestions);
        }
        if let Some(agent) = caller {
            let live = registry
                .and_then(|r| r.get(agent.id()))
                .is_some_and(|found| std::ptr::addr_eq(Arc::as_ptr(&found), Arc::as_ptr(agent)));
            if !live {
                return Err(QuestionError::CallerNotLive);
            }
            if dsh_subagents::is_delegated(agent.as_ref(), registry) {
                return Err(QuestionError::DelegatedCaller);
            }
            if request.session_id.is_none() {
                request.session_id = Some(agent.id().clone());
            }
        }
        check_intents(&request.questions)?;
        let Some(provider) = lock(&self.provider).as_ref().map(|(_, p)| p.clone()) else {
            return Err(QuestionError::NoProvider);
        };
        let questions = request.questions.clone();
        let outcome = tokio::select! {
            biased;
            () = signal.cancelled() => return Err(QuestionError::Aborted),
            outcome = provider.ask(request) => outcome,
        };
        match outcome {
            QuestionOutcome::Dismissed => Err(QuestionError::Cancelled),
            QuestionOutcome::Answered(answer) => {
                check_answer(&questions, &answer).map_err(QuestionError::BadResponse)?;
                Ok(answer)
            }
        }
    }
}

fn check_intents(questions: &[Question]) -> Result<(), QuestionError> {
    for question in questions {
        let Some(super::types::QuestionIntent::PlanReview { approve }) = &question.intent else {
            continue;
        };
        if !question.offers(approve) {
            return Err(QuestionError::BadIntent(format!(
                "question {} declares intent plan-review whose approve label {} names none of \
                 its options",
                question.id,
                serde_json::Value::String(approve.clone())
            )));
        }
        if question.detail.is_none() {
            return Err(QuestionError::BadIntent(format!(
                "question {} declares intent plan-review without the detail it reviews",
                question.id
            )));
        }
    }
    Ok(())
}

/// Whether `answer` answers exactly `questions`: same count, order and ids; selected labels
/// unique and offered; a custom text non-blank; a single-select question with at most one
/// label and never both a label and custom text.
pub fn check_answer(questions: &[Question], answer: &Answer) -> Result<(), String> {
    if answer.answers.len() != questions.len() {
        return Err(format!(
            "{} answers for {} questions",
            answer.answers.len(),
            questions.len()
        ));
    }
    for (question, item) in questions.iter().zip(&answer.answers) {
        check_item(question, item)?;
    }
    Ok(())
}

fn check_item(question: &Question, item: &AnswerItem) -> Result<(), String> {
    if item.id != question.id {
        return Err(format!(
            "answer {} where question {} was expected",
            item.id, question.id
        ));
    }
    let mut seen = HashSet::new();
    for label in &item.selected {
        if !seen.insert(label.as_str()) {
            return Err(format!("{}: {label} selected twice", question.id));
        }
        if !question.offers(label) {
            return Err(format!(
                "{}: {label} is not one of its options",
                question.id
            ));
        }
    }
    if item.custom.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(format!("{}: the custom answer is blank", question.id));
    }
    if !question.multi_select
        && (item.selected.len() > 1 || (!item.selected.is_empty() && item.custom.is_some()))
    {
        return Err(format!(
            "{}: a single-select question takes one label or custom text",
            question.id
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::question::types::QuestionOption;

    fn question(id: &str, multi: bool) -> Question {
        Question {
            id: id.into(),
            question: "Which?".into(),
            detail: None,
            header: None,
            options: ["a", "b"]
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: multi,
            intent: None,
        }
    }

    fn item(id: &str, selected: &[&str], custom: Option<&str>) -> AnswerItem {
        AnswerItem {
            id: id.into(),
            selected: selected.iter().map(|s| (*s).to_string()).collect(),
            custom: custom.map(str::to_owned),
        }
    }

    #[test]
    fn answers_must_fit_their_questions() {
        let single = [question("q", false)];
        let ok = |items: Vec<AnswerItem>| check_answer(&single, &Answer { answers: items });
        assert!(ok(vec![item("q", &["a"], None)]).is_ok());
        assert!(ok(vec![item("q", &[], Some("mine"))]).is_ok());
        assert!(ok(vec![]).is_err());
        assert!(ok(vec![item("x", &["a"], None)]).is_err());
        assert!(ok(vec![item("q", &["c"], None)]).is_err());
        assert!(ok(vec![item("q", &["a", "b"], None)]).is_err());
        // Spec §7.4.6: a single-select answer with both a label and custom text.
        assert!(ok(vec![item("q", &["a"], Some("and"))]).is_err());
        assert!(ok(vec![item("q", &[], Some("  "))]).is_err());
        let multi = [question("m", true)];
        let answer = Answer {
            answers: vec![item("m", &["a", "b"], Some("also"))],
        };
        assert!(check_answer(&multi, &answer).is_ok());
        let twice = Answer {
            answers: vec![item("m", &["a", "a"], None)],
        };
        assert!(check_answer(&multi, &twice).is_err());
    }

    #[test]
    fn error_codes_are_the_originals() {
        assert_eq!(QuestionError::DelegatedCaller.code(), "DELEGATED_CALLER");
        assert_eq!(QuestionError::Cancelled.code(), "ASK_CANCELLED");
        assert_eq!(QuestionError::NoProvider.code(), "NO_PROVIDER");
    }
}
