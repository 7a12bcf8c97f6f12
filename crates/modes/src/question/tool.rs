//! `ask_user_question`: the model asks the person one or more structured questions.

use super::service::{QuestionError, UserQuestions};
use super::types::{Answer, Question, QuestionOption, QuestionRequest};
use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;

/// The tool's name.
pub const ASK_USER_QUESTION: &str = "ask_user_question";
/// More questions than this in one call is a malformed call, not a conversation.
pub const MAX_QUESTIONS: usize = 16;
/// Options per question.
pub const MAX_OPTIONS: usize = 32;

/// The tool, over the [`UserQuestions`] service.
pub struct AskUserQuestion {
    questions: Arc<UserQuestions>,
}

impl AskUserQuestion {
    pub fn new(questions: Arc<UserQuestions>) -> Self {
        Self { questions }
    }
}

#[derive(Debug, Deserialize)]
pub struct AskArgs {
    pub questions: Vec<AskQuestion>,
}

/// One question as the model writes it (`multi_select` in snake case; extra keys ignored).
#[derive(Debug, Deserialize)]
pub struct AskQuestion {
    pub id: String,
    pub question: String,
    #[serde(default)]
    pub header: Option<String>,
    #[serde(default)]
    pub options: Option<Vec<AskOption>>,
    #[serde(default)]
    pub multi_select: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub struct AskOption {
    pub label: String,
    #[serde(default)]
    pub description: Option<String>,
}

pub(crate) fn failure(error: &QuestionError) -> ToolFailure {
    ToolFailure::coded("UserQuestionError", error.code(), error.to_string())
}

fn invalid(message: String) -> ToolFailure {
    ToolFailure::coded("UserQuestionError", "INVALID_QUESTIONS", message)
}

/// The questions the service is asked, after the checks the schema cannot express: at most
/// [`MAX_QUESTIONS`], unique non-blank ids, at most [`MAX_OPTIONS`] options with unique
/// labels.
pub fn to_questions(args: AskArgs) -> Result<Vec<Question>, ToolFailure> {
    if args.questions.is_empty() {
        return Err(failure(&QuestionError::EmptyQuestions));
    }
    if args.questions.len() > MAX_QUESTIONS {
        return Err(invalid(format!(
            "{} questions in one call; ask at most {MAX_QUESTIONS}",
            args.questions.len()
        )));
    }
    let mut ids = HashSet::new();
    let mut out = Vec::with_capacity(args.questions.len());
    for q in args.questions {
        if q.id.trim().is_empty() || q.question.trim().is_empty() {
            return Err(invalid(
                "every question needs a non-blank id and question text".into(),
            ));
        }
        if !ids.insert(q.id.clone()) {
            return Err(invalid(format!("question id {} is used twice", q.id)));
        }
        let options = q.options.unwrap_or_default();
        if options.len() > MAX_OPTIONS {
            return Err(invalid(format!(
                "question {} has {} options; offer at most {MAX_OPTIONS}",
                q.id,
                options.len()
            )));
        }
        let mut labels = HashSet::new();
        for option in &options {
            if option.label.trim().is_empty() || !labels.insert(option.label.as_str()) {
                return Err(invalid(format!(
                    "question {} has a blank or repeated option label",
                    q.id
                )));
            }
        }
        out.push(Question {
            id: q.id,
            question: q.question,
            detail: None,
            header: q.header,
            options: options
                .into_iter()
                .map(|o| QuestionOption {
                    label: o.label,
                    description: o.description,
                })
                .collect(),
            multi_select: q.multi_select.unwrap_or(false),
            intent: None,
        });
    }
    Ok(out)
}

impl TypedTool for AskUserQuestion {
    type Args = AskArgs;
    type Output = Answer;

    fn name(&self) -> &str {
        ASK_USER_QUESTION
    }

    fn description(&self) -> String {
        "Ask the user a concise question when you need confirmation, a choice, or missing \
         information before proceeding. Send one or more questions, each with a stable id that \
         will be echoed in the answer."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "description": "Questions to ask the user before continuing.",
                    "items": {
                        "type": "object",
                        "additionalProperties": true,
                        "properties": {
                            "id": {"type": "string", "description": "Stable id for this question; echoed in the answer."},
                            "question": {"type": "string", "description": "The specific question to ask the user."},
                            "header": {"type": "string", "description": "Optional short heading for the question, such as \"Confirm\" or \"Choose Mode\"."},
                            "options": {
                                "type": "array",
                                "description": "Optional choices to show the user. If you recommend one, put it first and append \"(Recommended)\" to that label.",
                                "items": {
                                    "type": "object",
                                    "additionalProperties": true,
                                    "properties": {
                                        "label": {"type": "string", "description": "Short user-facing option label."},
                                        "description": {"type": "string", "description": "One sentence explaining the tradeoff or impact."}
                                    },
                                    "required": ["label"]
                                }
                            },
                            "multi_select": {"type": "boolean", "description": "Whether the user may select more than one option. Defaults to false."}
                        },
                        "required": ["id", "question"]
                    }
                }
            },
            "required": ["questions"]
        })
    }

    async fn execute(&self, args: AskArgs, exec: &ToolExecution) -> Result<Answer, ToolFailure> {
        let questions = to_questions(args)?;
        let caller = exec.caller();
        let registry = caller.and_then(|c| c.registry());
        let request = QuestionRequest {
            session_id: caller.map(|c| c.id().clone()),
            call_id: Some(exec.call_id().clone()),
            questions,
        };
        self.questions
            .ask(
                request,
                caller.map(|c| c.agent()),
                registry.as_deref(),
                exec.signal(),
            )
            .await
            .map_err(|e| failure(&e))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        vec![ContentBlock::text(value.to_string())]
    }
}
