//! Driving a session: prompt, cancel, answers, fork, compact, model, permission and rename.
//! Each goes through the agent core exactly as the TUI's effects do.

use super::extract::{Held, JsonBody, SessionPath};
use super::{json, AppState};
use crate::error::ApiError;
use crate::hub::{ApprovalAnswer, LiveSession, QuestionAnswer};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use dsh_agent::{AbortSignal, AgentCancelCause, AgentStatus, CancelOptions, ModelSelection};
use dsh_protocol::Message;
use serde::Deserialize;
use serde_json::json as value;

fn ensure_idle(live: &LiveSession) -> Result<(), ApiError> {
    if live.handle.agent().status() == AgentStatus::Running {
        return Err(ApiError::SessionBusy);
    }
    Ok(())
}

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum PromptMode {
    #[default]
    Queue,
    Steer,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptBody {
    text: String,
    #[serde(default)]
    mode: PromptMode,
}

/// `POST /api/sessions/{id}/prompt`
pub async fn prompt(
    Held(live): Held,
    JsonBody(request): JsonBody<PromptBody>,
) -> Result<Response, ApiError> {
    if request.text.trim().is_empty() {
        return Err(ApiError::BadRequest("the prompt text is empty".into()));
    }
    let message = Message::user_text(request.text);
    let message_id = message.id.clone();
    let agent = live.handle.agent();
    let sent = match request.mode {
        PromptMode::Queue => agent.followup(message),
        PromptMode::Steer => agent.steer(message),
    };
    sent.map_err(|e| ApiError::Internal(format!("the agent refused the prompt: {e}")))?;
    Ok(json(
        StatusCode::ACCEPTED,
        &value!({ "accepted": true, "messageId": message_id.as_str() }),
    ))
}

/// `POST /api/sessions/{id}/cancel`: aborts the running turn; queued prompts stay.
pub async fn cancel(
    Held(live): Held,
    JsonBody(_): JsonBody<serde_json::Value>,
) -> Result<Response, ApiError> {
    live.handle
        .agent()
        .cancel(AgentCancelCause::User, CancelOptions::keep_inbox())
        .map_err(|e| ApiError::Internal(format!("cancelling failed: {e}")))?;
    Ok(json(StatusCode::OK, &value!({ "accepted": true })))
}

/// `POST /api/sessions/{id}/approvals/{approval}`
pub async fn approval(
    State(state): State<AppState>,
    SessionPath(id): SessionPath,
    Path((_, approval)): Path<(String, String)>,
    JsonBody(answer): JsonBody<ApprovalAnswer>,
) -> Result<Response, ApiError> {
    // An open approval belongs to a held session; a stored one has none.
    let live = state
        .hub
        .held(&id)
        .ok_or_else(|| ApiError::ApprovalNotFound(approval.clone()))?;
    live.answer_approval(&approval, answer)?;
    Ok(json(StatusCode::OK, &value!({ "resolved": true })))
}

/// `POST /api/sessions/{id}/questions/{question}`
pub async fn question(
    State(state): State<AppState>,
    SessionPath(id): SessionPath,
    Path((_, question)): Path<(String, String)>,
    JsonBody(answer): JsonBody<QuestionAnswer>,
) -> Result<Response, ApiError> {
    // An open question belongs to a held session; a stored one has none.
    let live = state
        .hub
        .held(&id)
        .ok_or_else(|| ApiError::QuestionNotFound(question.clone()))?;
    live.answer_question(&question, answer)?;
    Ok(json(StatusCode::OK, &value!({ "resolved": true })))
}

/// `POST /api/sessions/{id}/fork`: the log so far, copied into a new held session.
pub async fn fork(
    State(state): State<AppState>,
    Held(live): Held,
    JsonBody(_): JsonBody<serde_json::Value>,
) -> Result<Response, ApiError> {
    ensure_idle(&live)?;
    let persistence = state
        .hub
        .persistence()
        .ok_or_else(|| {
            ApiError::Unsupported("sessions are not stored in this configuration".into())
        })?
        .clone();
    let agent = live.handle.agent().clone();
    if let Some(sessions) = live.workspace.ctx().get::<dsh_session::SessionStore>() {
        sessions
            .flush(agent.session())
            .await
            .map_err(|e| ApiError::Internal(format!("flushing the session failed: {e}")))?;
    }
    if state.hub.stored_summary(&live.id)?.is_none() {
        return Err(ApiError::Unsupported(
            "nothing to fork yet: this session has no prompt".into(),
        ));
    }
    let child = live.workspace.new_session_id();
    dsh_store::fork_stored(&*persistence, &live.id, None, child.clone())
        .map_err(|e| ApiError::Internal(format!("forking failed: {e}")))?;
    let forked = state.hub.session(&child).await?;
    let summary = state.hub.summary(&forked)?;
    Ok(json(StatusCode::CREATED, &value!({ "session": summary })))
}

/// `POST /api/sessions/{id}/compact`: compaction now; answers when it is done.
pub async fn compact(
    Held(live): Held,
    JsonBody(_): JsonBody<serde_json::Value>,
) -> Result<Response, ApiError> {
    ensure_idle(&live)?;
    let agent = live.handle.agent().clone();
    let engine = agent
        .ctx()
        .get::<dsh_compaction::CompactionEngine>()
        .ok_or_else(|| {
            ApiError::Unsupported("compaction is not configured in this composition".into())
        })?;
    let outcome = engine.compact_now(&agent, AbortSignal::new(), None).await;
    let (compacted, message) = match outcome {
        Ok(result) => (
            result.is_some(),
            dsh_compaction::result_message(result.as_ref()),
        ),
        Err(error) => (false, error.user_message().to_owned()),
    };
    Ok(json(
        StatusCode::OK,
        &value!({ "compacted": compacted, "message": message }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelBody {
    model: String,
    #[serde(default)]
    provider: Option<String>,
}

/// `POST /api/sessions/{id}/model`: from the next step on.
pub async fn model(
    State(state): State<AppState>,
    Held(live): Held,
    JsonBody(request): JsonBody<ModelBody>,
) -> Result<Response, ApiError> {
    if request.model.trim().is_empty() {
        return Err(ApiError::BadRequest("the model name is empty".into()));
    }
    let models = state.hub.host().models();
    let provider = request
        .provider
        .or_else(|| live.selection.current().map(|s| s.provider))
        .or_else(|| live.handle.agent().options().provider.clone())
        .unwrap_or(models.provider.clone());
    let catalog = models.providers.iter().find(|p| p.id == provider);
    let Some(catalog) = catalog else {
        return Err(ApiError::BadRequest(format!(
            "no provider route {provider:?} in the settings"
        )));
    };
    let known = catalog.models.iter().any(|m| m == &request.model);
    live.selection.set(Some(ModelSelection {
        provider: provider.clone(),
        model: request.model.clone(),
        reasoning_effort: None,
    }));
    let mut note = format!("model: {} ({provider}) from the next step", request.model);
    if !known {
        note.push_str(&format!(
            "; it is not in the {provider} catalog, so the provider decides whether it exists"
        ));
    }
    Ok(json(
        StatusCode::OK,
        &value!({ "model": { "provider": provider, "model": request.model }, "note": note }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionBody {
    preset: String,
}

/// `POST /api/sessions/{id}/permission`
pub async fn permission(
    State(state): State<AppState>,
    Held(live): Held,
    JsonBody(request): JsonBody<PermissionBody>,
) -> Result<Response, ApiError> {
    ensure_idle(&live)?;
    let agent = live.handle.agent().clone();
    let note = state
        .hub
        .host()
        .set_permission(live.workspace.as_ref(), &agent, &request.preset)
        .map_err(|e| match e {
            dsh_acp::HostError::Agent(why) => ApiError::BadRequest(why),
            other => other.into(),
        })?;
    let now = state.hub.host().permission(live.workspace.as_ref(), &agent);
    Ok(json(
        StatusCode::OK,
        &value!({ "permission": now, "note": note }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TitleBody {
    title: String,
}

/// `POST /api/sessions/{id}/title`: a person's rename, logged as `session/title` with source
/// `user` (as `dsh sessions rename`), which pins it: no automatic title replaces it.
pub async fn title(
    Held(live): Held,
    JsonBody(request): JsonBody<TitleBody>,
) -> Result<Response, ApiError> {
    let titles = live
        .workspace
        .ctx()
        .get::<dsh_modes::title::SessionTitles>()
        .ok_or_else(|| {
            ApiError::Unsupported(
                "session titles are not mounted: the `session-title` row is disabled".into(),
            )
        })?;
    let renamed = titles
        .rename(live.handle.agent().session(), &request.title)
        .map_err(|e| match e {
            dsh_modes::title::TitleError::Invalid => ApiError::BadRequest(e.to_string()),
            other => ApiError::Internal(format!("renaming failed: {other} ({})", other.code())),
        })?;
    Ok(json(StatusCode::OK, &value!({ "title": renamed.title })))
}
