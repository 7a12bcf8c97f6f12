//! `dsh sessions compact ID`: a manual compaction of a stored session.
//!
//! The session is opened the way `dsh run --resume` opens it (a crashed tail is cut, a stale
//! compaction lock from a dead process no longer blocks), then the compaction engine's
//! `compact_now` summarises everything but the newest unit through the session's last model
//! route (or `[compaction] provider`/`model`). The result is the text `/compact` shows; the
//! exit status is 0 when the history was compacted or there was nothing worth compacting,
//! 1 when the attempt failed (the log records it), 130 after Ctrl-C.

use super::run_output::RunOutput;
use super::{exit, GlobalArgs};
use crate::app::{find_session, AgentStart, AppError, BootOptions, Runtime};
use crate::config::{load, Env, COMPACTION_ROW, PERSISTENCE_ROW};
use dsh_agent::{AbortSignal, AgentCancelCause};
use dsh_compaction::{result_message, CompactionEngine, ManualCompactionError};
use dsh_protocol::SessionId;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

/// Runs `dsh sessions compact`; returns the exit status.
pub(super) fn compact(
    global: &GlobalArgs,
    query: &str,
    env: &dyn Env,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let settings = load(env, &global.overrides())?;
    let options = BootOptions::from_process(global.cwd.clone())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let runtime = Runtime::boot(settings, options)?;
        let result = compact_stored(&runtime, query, out).await;
        runtime.shutdown();
        result
    })
}

async fn compact_stored(runtime: &Runtime, query: &str, out: &mut dyn Write) -> anyhow::Result<u8> {
    let persistence = runtime.persistence().ok_or(AppError::MissingPart {
        service: "session store",
        row: PERSISTENCE_ROW,
    })?;
    let id = SessionId::new(find_session(&*persistence, query)?.id);
    let engine = runtime
        .ctx()
        .get::<CompactionEngine>()
        .ok_or(AppError::MissingPart {
            service: "compaction engine",
            row: COMPACTION_ROW,
        })?;
    // The compaction's events reach stderr the way a run reports them.
    let progress = Arc::new(
        RunOutput::new(
            false,
            Box::new(std::io::sink()),
            Box::new(std::io::stderr()),
        )
        .with_terminals(false, std::io::stderr().is_terminal()),
    );
    let printer = Arc::clone(&progress);
    let subscription = runtime.subscribe(id.clone(), move |event| printer.event(event))?;
    let handle = match runtime.resume_agent(id, AgentStart::default()).await {
        Ok(handle) => handle,
        Err(error) => {
            subscription.dispose();
            return Err(error.into());
        }
    };
    let signal = AbortSignal::new();
    let attempt = engine.compact_now(handle.agent(), signal.clone(), None);
    tokio::pin!(attempt);
    let mut interrupted = false;
    let outcome = loop {
        tokio::select! {
            outcome = &mut attempt => break outcome,
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                signal.abort(AgentCancelCause::User);
            }
        }
    };
    // Disposal flushes the session before it completes.
    handle.dispose().await;
    subscription.dispose();
    Ok(report(outcome, out)?)
}

/// Prints the result text and picks the exit status.
fn report(
    outcome: Result<Option<dsh_compaction::CompactionResult>, ManualCompactionError>,
    out: &mut dyn Write,
) -> std::io::Result<u8> {
    match outcome {
        Ok(result) => {
            writeln!(out, "{}", result_message(result.as_ref()))?;
            Ok(exit::SUCCESS)
        }
        Err(error) => {
            writeln!(out, "{}", error.user_message())?;
            if !matches!(error, ManualCompactionError::Cancelled) {
                super::stderr_line(format_args!(
                    "dsh: compaction failed ({}): {error}",
                    error.code()
                ));
            }
            Ok(match error {
                ManualCompactionError::Cancelled => exit::INTERRUPTED,
                _ => exit::FAILURE,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_print_the_manual_compaction_texts_and_failures_exit_1() {
        let mut out = Vec::new();
        assert_eq!(report(Ok(None), &mut out).unwrap(), exit::SUCCESS);
        let mut failed = Vec::new();
        let status = report(
            Err(ManualCompactionError::Summary("no text".into())),
            &mut failed,
        )
        .unwrap();
        assert_eq!(status, exit::FAILURE);
        let mut cancelled = Vec::new();
        let status = report(Err(ManualCompactionError::Cancelled), &mut cancelled).unwrap();
        assert_eq!(status, exit::INTERRUPTED);
        assert_eq!(
            [out, failed, cancelled].map(|b| String::from_utf8(b).unwrap()),
            [
                "No compactable history yet.\n".to_owned(),
                "Compaction could not produce a useful summary. The conversation is unchanged; \
                 the attempt is recorded in the session log.\n"
                    .to_owned(),
                "Compaction cancelled.\n".to_owned(),
            ]
        );
    }
}
