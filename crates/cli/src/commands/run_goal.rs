//! Goals in `dsh run`: `--goal OBJECTIVE` starts a goal on a new session, `--resume` and
//! `--continue` continue the session's active goal (unless `--no-goal`), and the run ends
//! once the goal driver has nothing more to start, with a status that says how the goal
//! ended: 0 complete, 1 blocked, paused, out of rounds or stopped.

use super::exit;
use super::run_output::RunOutput;
use super::{RunArgs, UsageError};
use crate::app::Runtime;
use dsh_agent::Agent;
use dsh_modes::goal::{GoalDriver, GoalPhase, GoalView, Goals};
use std::sync::Arc;

/// What the run does with goals, decided from the flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum GoalMode {
    /// No goal is started or continued.
    Off,
    /// `--goal OBJECTIVE` on a new session.
    Start(String),
    /// `--resume`/`--continue`: continue the session's active goal, if it has one.
    Continue,
}

impl GoalMode {
    pub(super) fn of(args: &RunArgs) -> Result<Self, UsageError> {
        let resuming = args.resume.is_some() || args.continue_;
        if args.no_goal && !resuming {
            return Err(UsageError(
                "--no-goal only applies with --resume or --continue".into(),
            ));
        }
        Ok(match &args.goal {
            Some(objective) if objective.trim().is_empty() => {
                return Err(UsageError("the goal objective is empty".into()))
            }
            Some(objective) => Self::Start(objective.clone()),
            None if resuming && !args.no_goal => Self::Continue,
            None => Self::Off,
        })
    }
}

fn services(runtime: &Runtime) -> anyhow::Result<(Arc<Goals>, Arc<GoalDriver>)> {
    let missing = || {
        anyhow::anyhow!(
            "goals are not mounted: the `{}` row is disabled in settings.toml",
            crate::config::GOAL_ROW
        )
    };
    let goals = runtime.ctx().get::<Goals>().ok_or_else(missing)?;
    let driver = runtime.ctx().get::<GoalDriver>().ok_or_else(missing)?;
    Ok((goals, driver))
}

/// Starts or continues the goal on the freshly created or resumed agent. `Ok(true)` when a
/// goal now runs (the run then waits for it and reports its end).
pub(super) fn start(
    runtime: &Runtime,
    agent: &Arc<dyn Agent>,
    mode: &GoalMode,
    no_goal: bool,
    output: &RunOutput,
) -> anyhow::Result<bool> {
    match mode {
        GoalMode::Off => {
            if no_goal {
                if let Some(goals) = runtime.ctx().get::<Goals>() {
                    if let Ok(Some(view)) = goals.get(agent) {
                        if view.goal.phase == GoalPhase::Active {
                            output.note(&format!(
                                "dsh: note: the session's goal is active but not continued (--no-goal): {}",
                                view.goal.objective
                            ));
                        }
                    }
                }
            }
            Ok(false)
        }
        GoalMode::Start(objective) => {
            let (goals, _) = services(runtime)?;
            let view = goals
                .create(agent, objective, None)
                .map_err(|e| anyhow::Error::new(e).context("cannot start the goal"))?;
            output.note(&format!(
                "dsh: goal: {} (up to {} rounds)",
                view.goal.objective, view.goal.max_goal_rounds
            ));
            Ok(true)
        }
        GoalMode::Continue => {
            let Some(goals) = runtime.ctx().get::<Goals>() else {
                return Ok(false);
            };
            match goals.continue_after_resume(agent) {
                Ok(Some(view)) => {
                    output.note(&format!(
                        "dsh: continuing goal: {} (round {}/{} done; --no-goal does not continue it)",
                        view.goal.objective, view.rounds_started, view.goal.max_goal_rounds
                    ));
                    Ok(true)
                }
                Ok(None) => Ok(false),
                Err(error) => {
                    output.note(&format!(
                        "dsh: note: the session's goal cannot continue: {error}"
                    ));
                    Ok(false)
                }
            }
        }
    }
}

/// Whether the goal driver has decided for `agent` (nothing scheduled or running).
pub(super) fn driver_quiet(runtime: &Runtime, agent: &dsh_protocol::SessionId) -> bool {
    runtime
        .ctx()
        .get::<GoalDriver>()
        .is_none_or(|driver| driver.is_quiet(agent))
}

/// Waits until the goal driver has decided for `agent`.
pub(super) async fn until_driver_quiet(runtime: &Runtime, agent: &dsh_protocol::SessionId) {
    if let Some(driver) = runtime.ctx().get::<GoalDriver>() {
        driver.until_quiet(agent).await;
    }
}

/// How the goal ended: the exit status and the line that says so.
pub(super) fn ending(view: Option<&GoalView>) -> (u8, String) {
    let Some(view) = view else {
        return (exit::FAILURE, "dsh: goal: the goal was cleared".into());
    };
    let rounds = format!("{}/{}", view.rounds_started, view.goal.max_goal_rounds);
    match view.goal.phase {
        GoalPhase::Complete => (
            exit::SUCCESS,
            format!("dsh: goal complete after {rounds} rounds"),
        ),
        GoalPhase::Blocked => match &view.goal.blocked_reason {
            Some(reason) if reason.code == "round-limit" => (
                exit::FAILURE,
                format!("dsh: goal out of rounds ({rounds}): {}", reason.message),
            ),
            Some(reason) => (
                exit::FAILURE,
                format!(
                    "dsh: goal blocked after {rounds} rounds: {}",
                    reason.message
                ),
            ),
            None => (
                exit::FAILURE,
                format!("dsh: goal blocked after {rounds} rounds"),
            ),
        },
        GoalPhase::Paused => (
            exit::FAILURE,
            format!("dsh: goal paused after {rounds} rounds (`dsh run --resume ID` continues it)"),
        ),
        GoalPhase::Active => (
            exit::FAILURE,
            format!(
                "dsh: goal stopped after {rounds} rounds: the last round failed or was cut off \
                 (`dsh run --resume ID` continues it)"
            ),
        ),
    }
}

/// The goal's end for the agent's session.
pub(super) fn finish(runtime: &Runtime, agent: &Arc<dyn Agent>) -> (u8, String) {
    match runtime.ctx().get::<Goals>().map(|goals| goals.get(agent)) {
        Some(Ok(view)) => ending(view.as_ref()),
        Some(Err(error)) => (exit::FAILURE, format!("dsh: goal: {error}")),
        None => (exit::FAILURE, "dsh: goal: goals are not mounted".into()),
    }
}
