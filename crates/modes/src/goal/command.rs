//! The person's `/goal` command, surface-neutral: parsing and execution with the original's
//! grammar and wording (the TUI prints the lines; another surface may too).

use super::domain::{Activation, GoalError, GoalPhase, GoalView};
use super::service::Goals;
use dsh_agent::Agent;
use std::sync::Arc;

/// The usage line.
pub const USAGE: &str = "Usage: /goal [<objective>|clear|edit <objective>|pause|resume]";

/// A parsed `/goal`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoalCommand {
    Show,
    Create(String),
    Edit(String),
    /// `edit` without an objective.
    InvalidEdit,
    Pause,
    Resume,
    Clear,
}

/// Control words count (case-insensitively) only as the whole input; anything else is an
/// objective.
pub fn parse(raw: &str) -> GoalCommand {
    let input = raw.trim();
    if input.is_empty() {
        return GoalCommand::Show;
    }
    match input.to_lowercase().as_str() {
        "clear" => return GoalCommand::Clear,
        "pause" => return GoalCommand::Pause,
        "resume" => return GoalCommand::Resume,
        "edit" => return GoalCommand::InvalidEdit,
        _ => {}
    }
    let mut chars = input.char_indices();
    let head: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
    let after = chars.next();
    if head.eq_ignore_ascii_case("edit") && after.is_some_and(|(_, c)| c.is_whitespace()) {
        let at = after.map_or(input.len(), |(i, _)| i);
        return GoalCommand::Edit(input[at..].trim().to_owned());
    }
    GoalCommand::Create(input.to_owned())
}

/// What `/goal` prints: `Ok` lines on success, `Err` lines when refused.
pub type CommandOutput = Result<Vec<String>, Vec<String>>;

fn hint(goal: &GoalView) -> &'static str {
    match goal.goal.phase {
        GoalPhase::Active if goal.activation == Activation::Armed => {
            "/goal edit <objective>, /goal pause, /goal clear"
        }
        GoalPhase::Active | GoalPhase::Paused | GoalPhase::Blocked => {
            "/goal edit <objective>, /goal resume, /goal clear"
        }
        GoalPhase::Complete => "/goal <objective>, /goal clear",
    }
}

/// The multi-line view: title, status, blocker, objective, rounds, activation, commands.
pub fn render(title: &str, goal: &GoalView) -> Vec<String> {
    let mut lines = vec![title.to_owned(), format!("Status: {}", goal.goal.phase)];
    if let Some(reason) = &goal.goal.blocked_reason {
        lines.push(format!("Blocker: {}: {}", reason.code, reason.message));
    }
    lines.push(format!("Objective: {}", goal.goal.objective));
    lines.push(format!(
        "Rounds: {}/{}",
        goal.rounds_started, goal.goal.max_goal_rounds
    ));
    lines.push(format!("Activation: {}", goal.activation.as_str()));
    lines.push(String::new());
    lines.push(format!("Commands: {}", hint(goal)));
    lines
}

fn missing(action: &str) -> CommandOutput {
    Err(vec![format!(
        "No goal is currently set; /goal {action} requires one. {USAGE}"
    )])
}

/// Runs `/goal` for `agent`, as the person (no tool authority applies).
pub fn execute(goals: &Goals, agent: &Arc<dyn Agent>, command: &GoalCommand) -> CommandOutput {
    let invalid = |_: GoalError| {
        vec!["The goal command is not valid for the current state. Run /goal to view available commands.".to_owned()]
    };
    let current = goals.get(agent).map_err(|e| vec![format!("goal: {e}")])?;
    let ok = |title: &str, view: GoalView| Ok(render(title, &view));
    match command {
        GoalCommand::Show => match current {
            None => Ok(vec!["No goal is currently set.".into(), USAGE.into()]),
            Some(view) => ok("Goal", view),
        },
        GoalCommand::InvalidEdit => Err(vec![
            "Goal editing requires a replacement objective.".into(),
            USAGE.into(),
        ]),
        GoalCommand::Create(objective) => {
            if let Some(view) = current.filter(|v| v.goal.phase != GoalPhase::Complete) {
                return Err(vec![format!(
                    "A goal is already {}. Use /goal edit <objective> to change it or /goal clear before replacing it.",
                    view.goal.phase
                )]);
            }
            ok(
                "Goal created",
                goals.create(agent, objective, None).map_err(invalid)?,
            )
        }
        GoalCommand::Edit(objective) => match current {
            None => missing("edit"),
            Some(view) if view.goal.phase == GoalPhase::Complete => ok(
                "Goal created",
                goals.create(agent, objective, None).map_err(invalid)?,
            ),
            Some(view) => ok(
                "Goal updated",
                goals
                    .edit(agent, &view.reference(), Some(objective), None)
                    .map_err(invalid)?,
            ),
        },
        GoalCommand::Pause => match current {
            None => missing("pause"),
            Some(view) => ok(
                "Goal paused",
                goals.pause(agent, &view.reference()).map_err(invalid)?,
            ),
        },
        GoalCommand::Resume => match current {
            None => missing("resume"),
            Some(view) => ok(
                "Goal resumed",
                goals.resume(agent, &view.reference()).map_err(invalid)?,
            ),
        },
        GoalCommand::Clear => match current {
            None => Ok(vec!["No goal to clear.".into()]),
            Some(view) => {
                goals.clear(agent, &view.reference()).map_err(invalid)?;
                Ok(vec!["Goal cleared.".into()])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_words_are_whole_inputs_and_the_rest_is_an_objective() {
        assert_eq!(parse("  "), GoalCommand::Show);
        assert_eq!(parse("PAUSE"), GoalCommand::Pause);
        assert_eq!(parse("resume"), GoalCommand::Resume);
        assert_eq!(parse("Clear"), GoalCommand::Clear);
        assert_eq!(parse("edit"), GoalCommand::InvalidEdit);
        assert_eq!(
            parse("Edit  the README"),
            GoalCommand::Edit("the README".into())
        );
        assert_eq!(
            parse("editorial pass"),
            GoalCommand::Create("editorial pass".into())
        );
        assert_eq!(
            parse("pause the build"),
            GoalCommand::Create("pause the build".into())
        );
        assert_eq!(
            parse("ünïcode goal"),
            GoalCommand::Create("ünïcode goal".into())
        );
    }
}
