//! Questions to the person: the [`UserQuestions`] service and the `ask_user_question` tool.
//!
//! - [`types`]: questions, options, a presentation intent, and answers (wire shapes);
//! - [`service`]: [`UserQuestions`], one surface-provided [`QuestionProvider`] plus `ask()`
//!   with the original's checks, in its order, and answer validation;
//! - [`tool`]: the model-facing `ask_user_question` tool.
//!
//! Questions and answers are not session events: the durable record is the tool call and its
//! result. A child agent, and a run with no one to answer (headless), are refused at once with
//! a message the model reads, so nothing ever waits for a person who is not there.

pub mod plugin;
pub mod service;
pub mod tool;
pub mod types;

pub use plugin::UserQuestionsPlugin;
pub use service::{ProviderRegistration, QuestionError, QuestionProvider, UserQuestions};
pub use tool::{AskUserQuestion, ASK_USER_QUESTION};
pub use types::{
    Answer, AnswerItem, Question, QuestionIntent, QuestionOption, QuestionOutcome, QuestionRequest,
};
