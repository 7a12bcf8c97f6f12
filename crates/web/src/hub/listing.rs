//! Session summaries: the store's index merged with what this server holds.

use super::{Hub, LiveSession};
use crate::error::ApiError;
use serde::Serialize;
use std::collections::HashSet;

/// One session as lists show it (docs/web-api.md "Session summary").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub parent_id: Option<String>,
    pub origin: Option<String>,
    /// `running`, `waiting` (an approval or question is open), `idle` or `stored`.
    pub status: &'static str,
    pub live: bool,
    pub created_at: u64,
    pub updated_at: u64,
    pub turns: u64,
    pub events: u64,
    pub last_outcome: Option<String>,
}

fn status(live: Option<&LiveSession>) -> &'static str {
    match live {
        Some(live) if live.waiting() => "waiting",
        Some(live) if live.running() => "running",
        Some(_) => "idle",
        None => "stored",
    }
}

/// A held session's latest `session/title`: its log may be ahead of the store's index.
fn live_title(live: &LiveSession) -> Option<String> {
    dsh_modes::title::session_title(live.handle.agent().session()).map(|t| t.title)
}

fn from_stored(stored: dsh_store::SessionSummary, live: Option<&LiveSession>) -> SessionSummary {
    let events = live.map_or(stored.events, |l| l.handle.agent().session().len());
    let title = live.and_then(live_title).or(stored.title);
    SessionSummary {
        status: status(live),
        live: live.is_some(),
        origin: stored
            .delegation_depth
            .filter(|d| *d > 0)
            .map(|_| "subagent".to_owned()),
        id: stored.id,
        title,
        cwd: stored.cwd,
        parent_id: stored.parent_session,
        created_at: stored.created_at,
        updated_at: stored.updated_at,
        turns: stored.turns,
        events,
        last_outcome: stored.last_outcome,
    }
}

/// A held session that the store does not list yet (no prompt, so no log file).
fn from_live(live: &LiveSession) -> SessionSummary {
    let session = live.handle.agent().session();
    let header = session.header();
    let time = session.events().last().map_or(0, |e| e.time);
    SessionSummary {
        id: live.id.as_str().to_owned(),
        title: live_title(live),
        cwd: header.cwd.clone(),
        parent_id: header
            .parent_session
            .as_ref()
            .map(|p| p.as_str().to_owned()),
        origin: None,
        status: status(Some(live)),
        live: true,
        created_at: time,
        updated_at: time,
        turns: 0,
        events: session.len(),
        last_outcome: None,
    }
}

impl Hub {
    /// Every session, newest first; `cwd` keeps one workspace's.
    pub fn list(&self, cwd: Option<&str>) -> Result<Vec<SessionSummary>, ApiError> {
        let stored = match self.persistence() {
            Some(persistence) => persistence.list().map_err(|e| {
                ApiError::Internal(format!("listing the session store failed: {e}"))
            })?,
            None => Vec::new(),
        };
        let held = self.held_all();
        let mut seen = HashSet::new();
        let mut out = Vec::with_capacity(stored.len() + held.len());
        for summary in stored {
            let live = held.iter().find(|l| l.id.as_str() == summary.id);
            seen.insert(summary.id.clone());
            out.push(from_stored(summary, live.map(|l| &**l)));
        }
        for live in &held {
            if !seen.contains(live.id.as_str()) {
                out.push(from_live(live));
            }
        }
        out.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
        if let Some(cwd) = cwd {
            out.retain(|s| s.cwd.as_deref() == Some(cwd));
        }
        Ok(out)
    }

    /// One session's summary (held or stored).
    pub fn summary(&self, live: &LiveSession) -> Result<SessionSummary, ApiError> {
        Ok(match self.stored_summary(&live.id)? {
            Some(stored) => from_stored(stored, Some(live)),
            None => from_live(live),
        })
    }
}
