//! Working modes: how a person steers longer, autonomous work beyond single prompts. Each
//! feature is one plugin row on the loop's existing seams (tools pre-execute, `agent/pre-step`,
//! `agent/request`, turn-stopping, prompt sections and typed session events).
//!
//! - [`goal`]: goals that run round after round until done (row `goal`);
//! - [`guard`]: the repeat-tool-call reminder (row `repeat-tool-reminder`);
//! - [`plan`]: plan mode (read-only exploration, the `plan:policy` section, the refusal of
//!   writes and non-read-only commands) and `exit_plan_mode`, the plan approval (row
//!   `plan-mode`);
//! - [`question`]: the user-questions service and the `ask_user_question` tool (row
//!   `user-questions`); surfaces reach the person through a [`question::QuestionProvider`];
//! - [`title`]: session titles (fallback, model title beside the turn, pinned renames; row
//!   `session-title`).

pub mod goal;
pub mod guard;
pub mod plan;
pub mod question;
pub mod title;

pub use goal::{GoalPlugin, Goals};
pub use guard::RepeatToolReminderPlugin;
pub use plan::{PlanMode, PlanModePlugin};
pub use question::{QuestionProvider, UserQuestions, UserQuestionsPlugin};
pub use title::{SessionTitlePlugin, SessionTitles};

/// The session event types of plan mode and titles, for the binary's vocabulary (goals
/// declare theirs in [`goal::EVENT_TYPES`]).
pub static EVENT_TYPES: &[dsh_session::EventDeclaration] = &[
    dsh_session::EventDeclaration::of::<plan::PlanModeSet>(),
    dsh_session::EventDeclaration::of::<title::SessionTitle>(),
    dsh_session::EventDeclaration::of::<title::TitleLlmRequest>(),
];
