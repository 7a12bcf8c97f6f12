//! The interactive UI's side of plan mode and questions: `/plan` and Shift-Tab, and the TUI
//! registered as the session's question provider.

use crate::app::Runtime;
use crate::tui::interactive::{DriverError, Input, QuestionSlots, TuiQuestions};
use dsh_agent::Agent;
use dsh_modes::plan::SetOutcome;
use dsh_modes::question::ProviderRegistration;
use dsh_modes::{PlanMode, UserQuestions};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Registers the TUI as the question provider; dropping the registration unregisters it.
/// `None` when the composition has no `user-questions` row (or another provider is in).
pub(super) fn register_questions(
    runtime: &Runtime,
    slots: &QuestionSlots,
    inputs: &mpsc::UnboundedSender<Input>,
) -> Option<ProviderRegistration> {
    let service = runtime.ctx().get::<UserQuestions>()?;
    let provider = TuiQuestions::new(inputs.clone(), slots.clone());
    match service.register_provider(Arc::new(provider)) {
        Ok(registration) => Some(registration),
        Err(error) => {
            tracing::warn!(%error, "the terminal UI cannot take questions");
            None
        }
    }
}

/// `/plan [on|off]` and Shift-Tab: switches plan mode (`None` toggles) and says what
/// happened, in the original's words.
pub(super) fn set_plan(
    runtime: &Runtime,
    agent: &dyn Agent,
    on: Option<bool>,
) -> Result<String, DriverError> {
    let plan = runtime.ctx().get::<PlanMode>().ok_or_else(|| {
        DriverError::Unsupported("plan mode is not mounted (the `plan-mode` row)".into())
    })?;
    let target = on.unwrap_or_else(|| !plan.state(agent.session()).in_force());
    let outcome = plan.set(agent, target).map_err(DriverError::failed)?;
    Ok(match (target, outcome) {
        (true, SetOutcome::Committed) => "Plan mode on. Use /plan off (or Shift-Tab) to leave.",
        (true, SetOutcome::Noop) => "Plan mode is already on.",
        (true, _) => "Entering plan mode (applies from the next step). Use /plan off to leave.",
        (false, SetOutcome::Committed) => "Plan mode off.",
        (false, SetOutcome::Queued) => "Leaving plan mode (applies from the next step).",
        (false, SetOutcome::Cancelled) => "Plan mode entry cancelled.",
        (false, SetOutcome::Noop) => "Plan mode is already inactive.",
    }
    .to_owned())
}
