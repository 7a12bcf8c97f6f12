//! One-line descriptions of a goal, for surfaces (`dsh sessions show`, the TUI's goal line).

use super::domain::{Activation, GoalPhase, GoalSnapshot};
use super::fold::GoalFold;

/// `goal: <phase> · round r/N · "<objective>"`, with the blocker when blocked.
pub fn describe(
    goal: &GoalSnapshot,
    rounds_started: u64,
    activation: Option<Activation>,
) -> String {
    let phase = match (goal.phase, activation) {
        (GoalPhase::Active, Some(Activation::Disarmed)) => {
            "active, waiting for /goal resume".into()
        }
        (phase, _) => phase.to_string(),
    };
    let blocker = goal
        .blocked_reason
        .as_ref()
        .map(|r| format!(" · blocked: {}: {}", r.code, r.message))
        .unwrap_or_default();
    format!(
        "goal: {phase} · round {rounds_started}/{} · {}{blocker}",
        goal.max_goal_rounds,
        serde_json::Value::from(goal.objective.as_str())
    )
}

/// The stored goal state of a log, or why it cannot be read; `None` when it never had one.
pub fn stored_line<E: std::borrow::Borrow<dsh_session::SessionEvent>>(
    events: &[E],
) -> Option<String> {
    match super::fold::fold_goal(events) {
        Ok(fold) => line_of(&fold),
        Err(error) => Some(format!("goal: unreadable ({error})")),
    }
}

fn line_of(fold: &GoalFold) -> Option<String> {
    match fold.goal() {
        Some(goal) => Some(describe(goal, fold.rounds_started(), None)),
        None if fold.last_ref().is_some() => Some("goal: cleared".into()),
        None => None,
    }
}
