//! `POST /api/sessions/{id}/goal`: set, clear, pause or resume the session's goal, through
//! the same goal command as the TUI's `/goal` (`dsh_modes::goal::command`), so the log,
//! the wording and the refusals are the TUI's.

use super::extract::{Held, JsonBody};
use super::json;
use crate::error::ApiError;
use crate::hub::LiveSession;
use axum::http::StatusCode;
use axum::response::Response;
use dsh_modes::goal::command::{self, GoalCommand};
use dsh_modes::goal::{GoalPhase, Goals};
use serde::Deserialize;
use serde_json::{json as value, Value};
use std::sync::Arc;

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum GoalAction {
    Set,
    Clear,
    Pause,
    Resume,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalBody {
    action: GoalAction,
    #[serde(default)]
    objective: Option<String>,
}

fn goals(live: &LiveSession) -> Result<Arc<Goals>, ApiError> {
    live.workspace.ctx().get::<Goals>().ok_or_else(|| {
        ApiError::Unsupported("goals are not mounted: the `goal` row is disabled".into())
    })
}

/// The session's goal as the goal tools show it (`{goal:{…}, activation}`), or null.
pub fn current(live: &LiveSession) -> Value {
    let Ok(goals) = goals(live) else {
        return Value::Null;
    };
    match goals.get(live.handle.agent()) {
        Ok(Some(view)) => view.tool_value(),
        _ => Value::Null,
    }
}

/// `POST /api/sessions/{id}/goal`: `{action:"set", objective}` creates a goal (or edits the
/// unfinished one: `/goal <objective>` / `/goal edit <objective>`), `clear`, `pause` and
/// `resume` as `/goal clear|pause|resume`. A set goal is armed: its rounds start when the
/// session is idle, as in the TUI.
pub async fn goal(
    Held(live): Held,
    JsonBody(request): JsonBody<GoalBody>,
) -> Result<Response, ApiError> {
    let goals = goals(&live)?;
    let agent = live.handle.agent();
    let parsed = match request.action {
        GoalAction::Set => {
            let objective = request
                .objective
                .filter(|o| !o.trim().is_empty())
                .ok_or_else(|| ApiError::BadRequest("`set` needs an objective".into()))?;
            let unfinished = goals
                .get(agent)
                .map_err(|e| ApiError::Internal(format!("reading the goal failed: {e}")))?
                .is_some_and(|view| view.goal.phase != GoalPhase::Complete);
            if unfinished {
                GoalCommand::Edit(objective)
            } else {
                GoalCommand::Create(objective)
            }
        }
        other if request.objective.is_some() => {
            let word = match other {
                GoalAction::Clear => "clear",
                GoalAction::Pause => "pause",
                _ => "resume",
            };
            return Err(ApiError::BadRequest(format!("`{word}` takes no objective")));
        }
        GoalAction::Clear => GoalCommand::Clear,
        GoalAction::Pause => GoalCommand::Pause,
        GoalAction::Resume => GoalCommand::Resume,
    };
    match command::execute(&goals, agent, &parsed) {
        Ok(lines) => Ok(json(
            StatusCode::OK,
            &value!({ "goal": current(&live), "message": lines.join("\n") }),
        )),
        Err(lines) => Err(ApiError::GoalRefused(lines.join("\n"))),
    }
}
