//! What the model reads about goals: the round prompt, the wrap-up after an autonomous
//! `complete`/`blocked`, and the `tool:goal` policy section. The wording is the original's,
//! so a session continued here reads the same as one continued there.

use super::domain::GoalSnapshot;
use serde_json::Value;

/// The name of the goal policy section.
pub const GOAL_SECTION: &str = "tool:goal";
/// Its order among the sections (the original's).
pub const GOAL_SECTION_ORDER: f64 = 114.0;

fn quoted(text: &str) -> String {
    Value::from(text).to_string()
}

/// The `<goal_round>` prompt of round `round`.
pub fn round_prompt(goal: &GoalSnapshot, round: u64) -> String {
    format!(
        "<goal_round>\nObjective: {}\nRound: {round}/{}\n\n\
Continue working toward the objective in this same session. Treat the current workspace, tool \
results, and durable session state as authoritative; inspect them instead of assuming earlier \
narration is still current. Make concrete progress and verify the result. Before claiming \
completion, gather evidence that the whole objective is achieved, read the current goal, and \
mark it complete. If work remains, leave the goal active for the next round. Follow the \
configured goal-tool policy before reporting a blocker.\n</goal_round>",
        quoted(&goal.objective),
        goal.max_goal_rounds
    )
}

const GROUNDING: &str = "Report only what earlier rounds and tool results in this session \
actually establish; when a detail is not in the session, say so instead of inventing it. ";

/// The closing instruction queued for the next step after a goal round marked its goal
/// complete (`blocked_reason` `None`) or blocked.
pub fn wrapup_text(objective: &str, blocked_reason: Option<&str>) -> String {
    let heading = format!("Objective: {}\n", quoted(objective));
    match blocked_reason {
        None => format!(
            "<goal_complete>\n{heading}The goal is marked complete and this autonomous run is \
ending. Write the closing message to the user now: state the outcome, summarize what was done \
and how it was verified, and point to the concrete results (files, commits, or other \
artifacts). {GROUNDING}Note anything the user should review or do next. Address the user \
directly. Do not call any more tools in this run; further work waits for the user's next \
instruction.\n</goal_complete>"
        ),
        Some(reason) => format!(
            "<goal_blocked>\n{heading}Blocked: {}\nThe goal is marked blocked and this \
autonomous run is ending. Write the closing message to the user now: state what has been \
completed so far, describe the concrete blocking condition and what you tried, and say exactly \
what you need from the user to continue. {GROUNDING}Address the user directly. Do not call any \
more tools in this run; further work waits for the user's next instruction.\n</goal_blocked>",
            quoted(reason)
        ),
    }
}

/// The `tool:goal` section, with the blocked threshold interpolated.
pub fn policy_section(blocked_after: u64) -> String {
    format!(
        "Use goal tools for one long-running completion objective in the current session. \
create_goal may infer goal intent from a direct human request in any language; do not create a \
goal for routine single-turn work. Call get_goal before update_goal and copy its exact goal_id \
and revision. After session resume or fork, an active goal is disarmed: when a human asks to \
continue or resume in any wording or language, use update_goal action resume to rearm it. Mark \
complete only when the objective is actually achieved. Mark blocked only after the same blocking \
condition persists for at least {blocked_after} consecutive goal rounds, and report that \
concrete condition in blocked_reason; difficulty, uncertainty, or useful remaining work is not \
blocked."
    )
}

/// The message of the `round-limit` block.
pub fn round_limit_message(max: u64) -> String {
    format!("Goal reached its configured limit of {max} rounds.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::domain::GoalPhase;

    #[test]
    fn the_round_prompt_is_the_originals() {
        let goal = GoalSnapshot {
            id: "goal-1".into(),
            revision: 1,
            objective: "Finish the ACP goal-round-driver snapshot proof".into(),
            phase: GoalPhase::Active,
            max_goal_rounds: 2,
            blocked_reason: None,
        };
        // As logged by the original (examples/acp-agent goal-round-driver snapshot).
        let original = "<goal_round>\nObjective: \"Finish the ACP goal-round-driver snapshot proof\"\nRound: 1/2\n\nContinue working toward the objective in this same session. Treat the current workspace, tool results, and durable session state as authoritative; inspect them instead of assuming earlier narration is still current. Make concrete progress and verify the result. Before claiming completion, gather evidence that the whole objective is achieved, read the current goal, and mark it complete. If work remains, leave the goal active for the next round. Follow the configured goal-tool policy before reporting a blocker.\n</goal_round>";
        assert_eq!(round_prompt(&goal, 1), original);
    }

    #[test]
    fn the_complete_wrapup_is_the_originals() {
        let original = "<goal_complete>\nObjective: \"Finish the ACP goal wrap-up snapshot proof\"\nThe goal is marked complete and this autonomous run is ending. Write the closing message to the user now: state the outcome, summarize what was done and how it was verified, and point to the concrete results (files, commits, or other artifacts). Report only what earlier rounds and tool results in this session actually establish; when a detail is not in the session, say so instead of inventing it. Note anything the user should review or do next. Address the user directly. Do not call any more tools in this run; further work waits for the user's next instruction.\n</goal_complete>";
        assert_eq!(
            wrapup_text("Finish the ACP goal wrap-up snapshot proof", None),
            original
        );
        let blocked = wrapup_text("x", Some("no \"key\""));
        assert!(
            blocked.starts_with("<goal_blocked>\nObjective: \"x\"\nBlocked: \"no \\\"key\\\"\"\n")
        );
        assert!(blocked.ends_with("</goal_blocked>"));
    }
}
