//! `session-list`: listing a store of 10,000 sessions.
//!
//! Sessions are spread over 20 workspaces, each log one realistic turn (100 events, zstd
//! with packed rows), written through the backend so the listing index is maintained as in
//! real use. A listing is what `dsh sessions list` or a session picker does in a fresh
//! process: a new backend loads the index, walks the root, checks each entry against its
//! log's size and mtime, and sorts. The second case deletes the index first, so every log
//! is read to rebuild it.

use crate::stats::{report, summarize};
use crate::workload::{append_turn, Texts, EVENTS_PER_TURN};
use dsh_protocol::SessionId;
use dsh_session::{Session, SessionHeader};
use dsh_store::{JsonlBackend, JsonlConfig, SessionPersistence, INDEX_FILE};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const SESSIONS: u64 = 10_000;
const WORKSPACES: u64 = 20;
const RUNS_FRESH: usize = 15;
const RUNS_REBUILD: usize = 3;
const BUILDERS: u64 = 8;

fn header(n: u64) -> SessionHeader {
    let mut header = SessionHeader::new(
        SessionId::new(format!("session-{n:05}")),
        1_700_000_000_000 + n * 1000,
    );
    header.cwd = Some(format!("/home/user/project-{}", n % WORKSPACES));
    header
}

fn build_store(root: &Path) -> anyhow::Result<()> {
    // One turn's events, reused by every session (events do not name their session).
    let template = Session::builder(header(0))
        .clock(Arc::new(|| 1_700_000_000_500))
        .build()?;
    append_turn(&template, 1, &mut Texts::new(3))?;
    let events = template.events();
    anyhow::ensure!(
        events.len() as u64 == EVENTS_PER_TURN,
        "unexpected turn size"
    );

    // Creation is dominated by each log's syncs, so several writers share the work (each
    // with its own backend, as separate dsh processes would be).
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..BUILDERS)
            .map(|worker| {
                let events = &events;
                scope.spawn(move || -> anyhow::Result<()> {
                    let backend = JsonlBackend::new(JsonlConfig::new(root));
                    for n in (worker..SESSIONS).step_by(BUILDERS as usize) {
                        let header = header(n);
                        backend.create(&header)?;
                        backend.append(&header.id, events)?;
                        // Drop the writer (and its file handle) as a finished session would.
                        backend.release(&header.id);
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().map_err(|_| anyhow::anyhow!("builder panicked"))?)
    })
}

fn list_once(root: &Path) -> anyhow::Result<std::time::Duration> {
    let start = Instant::now();
    let backend = JsonlBackend::new(JsonlConfig::new(root));
    let listed = backend.list()?;
    let elapsed = start.elapsed();
    // Freeing the backend's cached index is not part of listing (a CLI process just exits).
    drop(backend);
    anyhow::ensure!(
        listed.len() as u64 == SESSIONS
            && listed
                .iter()
                .all(|s| s.problem.is_none() && s.events == EVENTS_PER_TURN),
        "unexpected listing"
    );
    Ok(elapsed)
}

pub fn run() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let build = Instant::now();
    build_store(dir.path())?;
    println!(
        "store: {SESSIONS} sessions in {WORKSPACES} workspaces, {EVENTS_PER_TURN} events each (built in {:.1?})",
        build.elapsed()
    );
    // Settle the index as the first listing after the writes leaves it.
    list_once(dir.path())?;

    let mut fresh = Vec::with_capacity(RUNS_FRESH);
    for _ in 0..RUNS_FRESH {
        fresh.push(list_once(dir.path())?);
    }
    report(
        "session-list",
        "list 10k sessions, index present and fresh",
        &summarize(fresh),
    );

    let mut rebuild = Vec::with_capacity(RUNS_REBUILD);
    for _ in 0..RUNS_REBUILD {
        std::fs::remove_file(dir.path().join(INDEX_FILE))?;
        rebuild.push(list_once(dir.path())?);
    }
    report(
        "session-list",
        "list 10k sessions, index missing (rebuild)",
        &summarize(rebuild),
    );
    Ok(())
}
