//! Sessions: list, create, one session, its history and its event stream.

use super::extract::{Held, JsonBody, SessionPath};
use super::{json, number, query, AppState};
use crate::error::ApiError;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use dsh_acp::AgentChoice;
use dsh_session::SessionEvent;
use serde::Deserialize;
use serde_json::json as value;
use std::path::PathBuf;
use std::sync::Arc;

/// `limit` when none is given, and its ceiling.
pub const DEFAULT_LIMIT: usize = 200;
pub const MAX_LIMIT: usize = 2000;

/// `GET /api/sessions[?cwd=DIR]`
pub async fn list(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = query(raw.as_deref());
    let sessions = state.hub.list(params.get("cwd").map(String::as_str))?;
    Ok(json(StatusCode::OK, &value!({ "sessions": sessions })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

/// `POST /api/sessions`
pub async fn create(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<CreateBody>,
) -> Result<Response, ApiError> {
    if let Some(cwd) = &request.cwd {
        if !cwd.is_absolute() {
            return Err(ApiError::BadRequest(format!(
                "cwd must be an absolute directory, not {}",
                cwd.display()
            )));
        }
    }
    let choice = AgentChoice {
        provider: request.provider,
        model: request.model,
        max_tokens: None,
    };
    let live = state.hub.create(request.cwd.as_deref(), choice).await?;
    let summary = state.hub.summary(&live)?;
    Ok(json(StatusCode::CREATED, &value!({ "session": summary })))
}

/// `GET /api/sessions/{id}`
pub async fn get(State(state): State<AppState>, Held(live): Held) -> Result<Response, ApiError> {
    let summary = state.hub.summary(&live)?;
    let agent = live.handle.agent().clone();
    let models = state.hub.host().models();
    let model = match live.selection.current() {
        Some(chosen) => value!({ "provider": chosen.provider, "model": chosen.model }),
        None => {
            let options = agent.options();
            value!({
                "provider": options.provider.clone().unwrap_or(models.provider),
                "model": options.model.clone().unwrap_or(models.model),
            })
        }
    };
    let permission = state.hub.host().permission(live.workspace.as_ref(), &agent);
    let (approvals, questions) = live.pending();
    let inbox = agent.inbox();
    let queue = value!({
        "followUps": inbox.next_turn().iter().map(|m| serde_json::to_value(&**m).unwrap_or_default()).collect::<Vec<_>>(),
        "steering": inbox.next_step().iter().map(|m| serde_json::to_value(&**m).unwrap_or_default()).collect::<Vec<_>>(),
    });
    let last_seq = agent.session().len().checked_sub(1);
    Ok(json(
        StatusCode::OK,
        &value!({
            "session": summary,
            "model": model,
            "permission": permission,
            "lastSeq": last_seq,
            "pending": { "approvals": approvals, "questions": questions },
            "queue": queue,
            "goal": super::goal::current(&live),
        }),
    ))
}

/// Which page of the log `history` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    /// The last `limit` events.
    Tail,
    /// The `limit` events before this seq.
    Before(u64),
    /// The `limit` events after this seq (`None`: from the start).
    After(Option<u64>),
}

/// The slice of `events` a page covers, and whether more lie in its direction.
pub fn page(
    events: &[Arc<SessionEvent>],
    page: Page,
    limit: usize,
) -> (&[Arc<SessionEvent>], bool) {
    let len = events.len();
    // Seqs are contiguous from 0, so a seq is its index.
    let clamp = |seq: u64| usize::try_from(seq).unwrap_or(usize::MAX).min(len);
    match page {
        Page::Tail => {
            let start = len.saturating_sub(limit);
            (&events[start..], start > 0)
        }
        Page::Before(seq) => {
            let end = clamp(seq);
            let start = end.saturating_sub(limit);
            (&events[start..end], start > 0)
        }
        Page::After(seq) => {
            let start = seq.map_or(0, |s| clamp(s.saturating_add(1)));
            let end = start.saturating_add(limit).min(len);
            (&events[start..end], end < len)
        }
    }
}

/// `GET /api/sessions/{id}/history?before=SEQ|after=SEQ&limit=N`
pub async fn history(
    State(state): State<AppState>,
    SessionPath(id): SessionPath,
    RawQuery(query_text): RawQuery,
) -> Result<Response, ApiError> {
    let params = query(query_text.as_deref());
    let limit = number::<usize>(&params, "limit")?
        .unwrap_or(DEFAULT_LIMIT)
        .clamp(1, MAX_LIMIT);
    let before = number::<u64>(&params, "before")?;
    let after = number::<i64>(&params, "after")?;
    let which = match (before, after) {
        (Some(_), Some(_)) => {
            return Err(ApiError::BadRequest(
                "give `before` or `after`, not both".into(),
            ))
        }
        (Some(seq), None) => Page::Before(seq),
        (None, Some(seq)) => Page::After(u64::try_from(seq).ok()),
        (None, None) => Page::Tail,
    };
    // A held session's log is in memory; a stored one is read (or kept from the last
    // read), never resumed.
    let events: Arc<[Arc<SessionEvent>]> = match state.hub.held(&id) {
        Some(live) => live.handle.agent().session().events(),
        None => state
            .hub
            .stored_events(&id)?
            .ok_or_else(|| ApiError::SessionNotFound(id.as_str().to_owned()))?,
    };
    let render = render_html(&params)?;
    let (slice, has_more) = page(&events, which, limit);
    let mut body = Vec::with_capacity(slice.len() * 256 + 64);
    body.extend_from_slice(b"{\"events\":[");
    for (i, event) in slice.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        crate::markdown::write_event(&mut body, event, render)
            .map_err(|e| ApiError::Internal(format!("encoding an event failed: {e}")))?;
    }
    let last = events.len().checked_sub(1);
    body.extend_from_slice(
        format!(
            "],\"hasMore\":{has_more},\"lastSeq\":{}}}",
            last.map_or("null".to_owned(), |l| l.to_string())
        )
        .as_bytes(),
    );
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
}

/// `GET /api/sessions/{id}/events[?after=SEQ]` (or `Last-Event-ID`)
pub async fn events(
    State(state): State<AppState>,
    SessionPath(id): SessionPath,
    RawQuery(query_text): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let params = query(query_text.as_deref());
    let mut after = number::<i64>(&params, "after")?;
    if after.is_none() {
        if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
            after = Some(last.trim().parse().map_err(|_| {
                ApiError::BadRequest(format!("Last-Event-ID must be a seq, not {last:?}"))
            })?);
        }
    }
    let render = render_html(&params)?;
    let live = state.hub.session(&id).await?;
    let after = after.and_then(|seq| u64::try_from(seq).ok());
    Ok(crate::stream::events(live, after, render, state.closing.clone()).into_response())
}

/// `render=html`: assistant messages carry their markdown as sanitised HTML (`html`).
fn render_html(params: &std::collections::HashMap<String, String>) -> Result<bool, ApiError> {
    match params.get("render").map(String::as_str) {
        None => Ok(false),
        Some("html") => Ok(true),
        Some(other) => Err(ApiError::BadRequest(format!(
            "render must be `html`, not {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::EventData;

    fn log(n: u64) -> Vec<Arc<SessionEvent>> {
        (0..n)
            .map(|seq| {
                Arc::new(SessionEvent {
                    seq,
                    time: 0,
                    data: EventData::other("x", serde_json::json!({})),
                    ignorable: false,
                    surface_op: None,
                    source_event_seqs: None,
                })
            })
            .collect()
    }

    fn seqs(slice: &[Arc<SessionEvent>]) -> Vec<u64> {
        slice.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn pages_walk_the_log() {
        let events = log(10);
        let (s, more) = page(&events, Page::Tail, 3);
        assert_eq!((seqs(s), more), (vec![7, 8, 9], true));
        let (s, more) = page(&events, Page::Before(7), 3);
        assert_eq!((seqs(s), more), (vec![4, 5, 6], true));
        let (s, more) = page(&events, Page::Before(2), 3);
        assert_eq!((seqs(s), more), (vec![0, 1], false));
        let (s, more) = page(&events, Page::After(None), 4);
        assert_eq!((seqs(s), more), (vec![0, 1, 2, 3], true));
        let (s, more) = page(&events, Page::After(Some(7)), 4);
        assert_eq!((seqs(s), more), (vec![8, 9], false));
        let (s, more) = page(&events, Page::After(Some(99)), 4);
        assert_eq!((seqs(s), more), (vec![], false));
        let (s, more) = page(&events, Page::Tail, 50);
        assert_eq!((s.len(), more), (10, false));
    }
}
