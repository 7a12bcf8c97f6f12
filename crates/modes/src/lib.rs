//! Working modes: how a person steers longer work beyond single prompts.
//!
//! - [`plan`]: plan mode (read-only exploration, the `plan:policy` section, the refusal of
//!   writes and non-read-only commands) and `exit_plan_mode`, the plan approval;
//! - [`question`]: the user-questions service and the `ask_user_question` tool;
//! - [`title`]: session titles (fallback, model title beside the turn, pinned renames).
//!
//! Each feature is one plugin row (`plan-mode`, `user-questions`, `session-title`) on the
//! existing seams: tools pre-execute, `agent/pre-step`, `agent/request`, prompt sections and
//! typed session events. Surfaces reach the person through a [`question::QuestionProvider`].

pub mod plan;
pub mod question;
pub mod title;

pub use plan::{PlanMode, PlanModePlugin};
pub use question::{QuestionProvider, UserQuestions, UserQuestionsPlugin};
pub use title::{SessionTitlePlugin, SessionTitles};

/// Every session event type this crate writes, for the binary's vocabulary.
pub static EVENT_TYPES: &[dsh_session::EventDeclaration] = &[
    dsh_session::EventDeclaration::of::<plan::PlanModeSet>(),
    dsh_session::EventDeclaration::of::<title::SessionTitle>(),
    dsh_session::EventDeclaration::of::<title::TitleLlmRequest>(),
];
