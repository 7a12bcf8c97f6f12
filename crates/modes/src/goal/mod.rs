//! Goals: an objective the agent keeps working on, round after round, until it is complete,
//! truly blocked, paused by the person, or out of rounds (docs/goals.md).
//!
//! - [`domain`]: snapshots, the durable `goal/change` record ([`GoalChange`]), views, errors.
//! - [`fold`]: the strict replay fold ([`GoalFold`], [`fold_goal`]) and round sources.
//! - [`service`]: [`Goals`], the verbs (create, edit, pause, resume, complete, block, clear)
//!   and the live [`GoalChanged`] event.
//! - [`driver`]: [`GoalDriver`], which starts a round when the agent goes idle with an active,
//!   armed goal, and checks at pre-step that the round entering is the one it reserved.
//! - [`tools`]: `get_goal`, `create_goal`, `update_goal`, with their authority rules.
//! - [`prompt`]: the round prompt, the wrap-up notice and the policy section.
//! - [`status`]: one-line descriptions for surfaces.
//! - [`command`]: the person's `/goal` command (parse and execute, the original's wording).
//! - [`GoalPlugin`] (row `goal`) mounts all of it.

pub mod command;
pub mod domain;
pub mod driver;
pub mod fold;
mod plugin;
pub mod prompt;
pub mod service;
pub mod status;
pub mod tools;

pub use domain::{
    Activation, BlockReason, GoalChange, GoalError, GoalOperation, GoalPhase, GoalRef,
    GoalSnapshot, GoalView,
};
pub use driver::GoalDriver;
pub use fold::{fold_goal, GoalFold, GoalRoundSource};
pub use plugin::{GoalConfig, GoalConfigError, GoalPlugin};
pub use service::{GoalChanged, GoalChangedEvent, Goals};

/// The goal event type, for `dsh_session::register_event_types`.
pub static EVENT_TYPES: &[dsh_session::EventDeclaration] =
    &[dsh_session::EventDeclaration::of::<GoalChange>()];
