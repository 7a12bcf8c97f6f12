//! Plan mode: the agent explores read-only and proposes a plan, which the person approves
//! before anything changes.
//!
//! - [`state`]: the `plan/mode` record, the fold over a log, and the [`PlanMode`] service
//!   (the person's selection, pending inside a turn until the next accepted pre-step);
//! - [`refusal`]: what plan mode refuses, whatever the approval policy: file writes and edits,
//!   and commands that are not read-only;
//! - [`tool`]: `exit_plan_mode`, which puts the plan to the person for approval;
//! - [`plugin`]: the `plan-mode` row (the `plan:policy` section, the pre-step boundary, the
//!   refusal guard, the tool).
//!
//! The tool catalogue is the same in both modes (the provider's prompt cache survives a
//! switch); only the policy section and the guard change.

pub mod plugin;
pub mod refusal;
pub mod state;
pub mod tool;

pub use plugin::{PlanModeConfig, PlanModePlugin, PLAN_POLICY, PLAN_SECTION, PLAN_SECTION_ORDER};
pub use refusal::refusal;
pub use state::{
    fold_plan_mode, session_plan_mode, PlanMode, PlanModeSet, PlanState, SetOutcome, EVENT_TYPES,
};
pub use tool::{ExitPlanMode, EXIT_PLAN_MODE};
