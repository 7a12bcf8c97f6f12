//! `dsh sessions migrate --to postgres|files [--workspace PATH]`: copies stored sessions
//! between the file store (`$DSH_HOME/sessions`) and the PostgreSQL database (`[store] url`
//! or `DSH_DATABASE_URL`), whichever one `[store] backend` selects for runs.
//!
//! Each session is read as stored (never repaired: a turn a crash left open is copied open,
//! and is closed where it is next resumed) and written through the persistence seam, so the
//! copy is in the target's own format. Then the copy is read back and compared, header and
//! every event. Rerunning after an interruption skips the sessions already copied and
//! verified, and finishes a partial copy from where it stopped (after checking the part
//! already there); a target session that differs from its source is reported and left
//! alone. The source is only read.

use super::{exit, stderr_line, GlobalArgs};
use crate::app::{open_files, open_postgres};
use crate::config::{load, Env, StoreBackend};
use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use dsh_store::{SessionPersistence, SessionSummary, StoreError};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Events per append while copying: bounded transactions (and memory per write).
const COPY_BATCH: usize = 1024;

/// What copying one session did.
#[derive(Debug, PartialEq, Eq)]
enum Copied {
    /// Copied whole (`from` = 0) or finished from event `from` on; `events` in all.
    Written { from: u64, events: u64 },
    /// The target already held an identical copy.
    AlreadyThere { events: u64 },
    /// Nothing stored to copy (a session never appended to).
    Empty,
}

pub(super) fn migrate(
    global: &GlobalArgs,
    to: StoreBackend,
    workspace: Option<&Path>,
    env: &dyn Env,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let settings = load(env, &global.overrides())?;
    let files: Arc<dyn SessionPersistence> = Arc::new(open_files(&settings));
    let database: Arc<dyn SessionPersistence> = Arc::new(open_postgres(&settings)?);
    let files_name = crate::app::sessions_root(&settings).display().to_string();
    let database_name = format!("the PostgreSQL database of {}", settings.store.url_origin());
    let (source, target, from_name, to_name) = match to {
        StoreBackend::Postgres => (files, database, files_name, database_name),
        StoreBackend::Files => (database, files, database_name, files_name),
    };
    let mut sessions = source.list()?;
    if let Some(dir) = workspace {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let cwd = dsh_store::recorded_cwd(&dir);
        sessions.retain(|s| s.cwd.as_deref() == Some(cwd.as_str()));
    }
    // Oldest first, so a parent is copied before the children it delegated to.
    sessions.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    stderr_line(format_args!(
        "copying {} session(s) from {from_name} to {to_name}",
        sessions.len()
    ));
    let (mut copied, mut finished, mut skipped, mut empty, mut failed) = (0, 0, 0, 0, 0);
    let mut events_copied = 0u64;
    for summary in &sessions {
        let id = SessionId::new(summary.id.clone());
        let result = copy_session(source.as_ref(), target.as_ref(), &id);
        target.release(&id);
        match result {
            Ok(Copied::Written { from, events }) => {
                events_copied += events - from;
                if from == 0 {
                    copied += 1;
                    writeln!(out, "copied    {}  {events} events", id.as_str())?;
                } else {
                    finished += 1;
                    writeln!(
                        out,
                        "finished  {}  events {from}..{events} (the rest was copied before)",
                        id.as_str()
                    )?;
                }
            }
            Ok(Copied::AlreadyThere { events }) => {
                skipped += 1;
                writeln!(out, "present   {}  {events} events, verified", id.as_str())?;
            }
            Ok(Copied::Empty) => {
                empty += 1;
                writeln!(out, "empty     {}  nothing stored", id.as_str())?;
            }
            Err(error) => {
                failed += 1;
                writeln!(
                    out,
                    "FAILED    {}  {}",
                    id.as_str(),
                    describe(summary, &error)
                )?;
            }
        }
    }
    writeln!(
        out,
        "{copied} copied, {finished} finished, {skipped} already present, {empty} empty, \
         {failed} failed ({events_copied} events written); the source was not changed"
    )?;
    if failed > 0 {
        stderr_line(format_args!(
            "dsh: {failed} session(s) were not copied (see above); rerun after fixing them, \
             copied sessions are skipped"
        ));
        return Ok(exit::FAILURE);
    }
    Ok(exit::SUCCESS)
}

fn describe(summary: &SessionSummary, error: &anyhow::Error) -> String {
    match &summary.problem {
        Some(problem) => format!("{error:#} (listed as unreadable: {problem})"),
        None => format!("{error:#}"),
    }
}

/// The JSON text of each event: how copies are compared (the exact stored form).
fn texts(events: &[Arc<SessionEvent>]) -> Result<Vec<String>, serde_json::Error> {
    events.iter().map(|e| serde_json::to_string(&**e)).collect()
}

/// Copies one session and verifies the copy.
fn copy_session(
    source: &dyn SessionPersistence,
    target: &dyn SessionPersistence,
    id: &SessionId,
) -> anyhow::Result<Copied> {
    let stored = source.load(id)?;
    if stored.events.is_empty() {
        return Ok(Copied::Empty);
    }
    if let Some(tail) = &stored.torn_tail {
        stderr_line(format_args!(
            "dsh: note: {} ends in a torn tail at {}; its durable prefix is copied",
            id.as_str(),
            tail.at
        ));
    }
    let wanted = texts(&stored.events)?;
    let total = stored.events.len() as u64;
    let present = match target.next_seq(id) {
        Ok(next) => next,
        Err(StoreError::NotFound { .. }) => {
            target.create(&stored.header)?;
            0
        }
        Err(error) => return Err(error.into()),
    };
    if present > 0 {
        let there = target.load(id)?;
        if there.header != stored.header {
            anyhow::bail!("the target holds a different session under this id; left alone");
        }
        let there = texts(&there.events)?;
        if there.len() as u64 > total || wanted[..there.len()] != there[..] {
            anyhow::bail!(
                "the target's copy ({} events) is not a prefix of the source ({total} events); \
                 left alone",
                there.len()
            );
        }
        if present == total {
            return Ok(Copied::AlreadyThere { events: total });
        }
    }
    let start = usize::try_from(present)?;
    for batch in stored.events[start..].chunks(COPY_BATCH) {
        target.append(id, batch)?;
    }
    target.release(id);
    let copy = target.load(id)?;
    if copy.header != stored.header || texts(&copy.events)? != wanted {
        anyhow::bail!(
            "the copy read back differs from the source ({} of {total} events); the source is \
             unchanged",
            copy.events.len()
        );
    }
    Ok(Copied::Written {
        from: present,
        events: total,
    })
}
