//! Finding stored sessions from the listing index: by id or unique id prefix, or the latest
//! of a workspace. Never decodes a whole log.

use super::error::AppError;
use dsh_store::{SessionPersistence, SessionSummary};
use std::path::Path;

/// The stored session whose id is `query`, or the only one whose id starts with it (with or
/// without the `session-` prefix).
pub fn find_session(
    persistence: &dyn SessionPersistence,
    query: &str,
) -> Result<SessionSummary, AppError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(AppError::UnknownSession(query.to_owned()));
    }
    let all = persistence.list()?;
    if let Some(exact) = all.iter().find(|s| s.id == query) {
        return Ok(exact.clone());
    }
    let long = format!("session-{query}");
    let mut matches: Vec<&SessionSummary> = all
        .iter()
        .filter(|s| s.id.starts_with(query) || s.id.starts_with(&long))
        .collect();
    match matches.len() {
        0 => Err(AppError::UnknownSession(query.to_owned())),
        1 => Ok(matches.remove(0).clone()),
        _ => Err(AppError::AmbiguousSession {
            prefix: query.to_owned(),
            candidates: matches.iter().map(|s| s.id.clone()).collect(),
        }),
    }
}

/// The stored sessions of `workspace`, most recently updated first. The workspace is
/// compared in its recorded form ([`dsh_store::recorded_cwd`]), which tells apart paths that
/// differ only in bytes that are not UTF-8.
pub fn sessions_of(
    persistence: &dyn SessionPersistence,
    workspace: &Path,
) -> Result<Vec<SessionSummary>, AppError> {
    let cwd = dsh_store::recorded_cwd(workspace);
    Ok(persistence
        .list()?
        .into_iter()
        .filter(|s| s.cwd.as_deref() == Some(cwd.as_str()))
        .collect())
}

/// The most recently updated stored session of `workspace` (`dsh run --continue`).
pub fn latest_session(
    persistence: &dyn SessionPersistence,
    workspace: &Path,
) -> Result<SessionSummary, AppError> {
    sessions_of(persistence, workspace)?
        .into_iter()
        .next()
        .ok_or_else(|| AppError::NothingToContinue(workspace.to_path_buf()))
}
