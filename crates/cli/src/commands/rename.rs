//! `dsh sessions rename ID TITLE`: a person's title for a stored session. It is logged as a
//! `session/title` with source `user`, which pins it: no automatic title replaces it later.
//!
//! The session is opened the way `dsh run --resume` opens it (so a running dsh holding it is
//! refused by the log's lock), renamed through the `session-title` row, and closed.

use super::GlobalArgs;
use crate::app::{find_session, AgentStart, AppError, BootOptions, Runtime};
use crate::config::{load, Env, PERSISTENCE_ROW, SESSION_TITLE_ROW};
use dsh_modes::SessionTitles;
use dsh_protocol::SessionId;
use std::io::Write;

/// Runs `dsh sessions rename`; returns the exit status.
pub(super) fn rename(
    global: &GlobalArgs,
    query: &str,
    title: &str,
    env: &dyn Env,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    if dsh_modes::title::normalize_title(title, usize::MAX).is_empty() {
        return Err(super::UsageError(
            "the title is empty once control characters and spaces are removed".into(),
        )
        .into());
    }
    let mut settings = load(env, &global.overrides())?;
    // A rename never asks a model: a route whose key is missing must not stop it, so the
    // runtime boots on the generic route, which needs none.
    if crate::app::check_credentials(&settings).is_err() {
        settings.model.provider.value = crate::config::OPENAI_ROUTE.to_owned();
    }
    let options = BootOptions::from_process(global.cwd.clone())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let runtime = Runtime::boot(settings, options)?;
        let result = rename_stored(&runtime, query, title, out).await;
        runtime.shutdown();
        result
    })
}

async fn rename_stored(
    runtime: &Runtime,
    query: &str,
    title: &str,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let persistence = runtime.persistence().ok_or(AppError::MissingPart {
        service: "session store",
        row: PERSISTENCE_ROW,
    })?;
    let titles = runtime
        .ctx()
        .get::<SessionTitles>()
        .ok_or(AppError::MissingPart {
            service: "session titles",
            row: SESSION_TITLE_ROW,
        })?;
    let id = SessionId::new(find_session(&*persistence, query)?.id);
    let handle = runtime
        .resume_agent(id.clone(), AgentStart::default())
        .await?;
    let renamed = titles.rename(handle.agent().session(), title);
    // Disposal flushes the session (and the index entry) before it completes.
    handle.dispose().await;
    let renamed = renamed.map_err(|e| anyhow::anyhow!("cannot rename {id}: {e} ({})", e.code()))?;
    writeln!(
        out,
        "{}  {}",
        id.as_str(),
        crate::sanitize::sanitize(&renamed.title)
    )?;
    Ok(super::exit::SUCCESS)
}
