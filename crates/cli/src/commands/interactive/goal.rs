//! `/goal` and the goal line in the interactive UI, over the `goal` row's services.
//!
//! A resumed session with an active goal opens with that goal disarmed (as in the
//! original); the goal line says so and offers `/goal resume`, which continues it (the
//! original left such a goal idle forever with no hint).

use super::AppDriver;
use crate::tui::interactive::DriverError;
use dsh_modes::goal::{command, fold_goal, status, Activation, Goals};

impl AppDriver {
    fn goals(&self) -> Option<std::sync::Arc<Goals>> {
        self.runtime.ctx().get::<Goals>()
    }

    /// Runs `/goal` on the session on screen (starting its agent, as a prompt would).
    pub(super) async fn run_goal(&self, raw: &str) -> Result<Vec<String>, DriverError> {
        let goals = self.goals().ok_or_else(|| {
            DriverError::Unsupported(format!(
                "goals are not mounted: the `{}` row is disabled",
                crate::config::GOAL_ROW
            ))
        })?;
        let agent = self.agent().await?;
        let parsed = command::parse(raw);
        Ok(match command::execute(&goals, &agent, &parsed) {
            Ok(lines) | Err(lines) => lines,
        })
    }

    /// The goal line: the live agent's goal, or, before the agent started (a resumed
    /// session waiting for its first input), the stored one.
    pub(super) async fn goal_line(&self) -> Option<String> {
        let goals = self.goals()?;
        if let Some(agent) = self.live_agent() {
            let view = goals.get(&agent).ok()??;
            return Some(status::describe(
                &view.goal,
                view.rounds_started,
                Some(view.activation),
            ));
        }
        let id = self.current().id.clone();
        let stored = self.runtime.persistence()?.load(&id).ok()?;
        let fold = fold_goal(&stored.events).ok()?;
        let goal = fold.goal()?;
        // A stored goal is never armed: only a live process arms one.
        Some(status::describe(
            goal,
            fold.rounds_started(),
            Some(Activation::Disarmed),
        ))
    }
}
