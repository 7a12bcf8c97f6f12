//! `session-resume`: reopening a long session from disk.
//!
//! The log: 1,000 realistic turns (prompt, one step streaming ~90 chunks, the answer, a tool
//! call and its result, boundaries) = 100,000 events, stored as zstd frames with packed rows
//! in the batches the agent loop's flushes produce (before the model request, before the
//! tool runs, at the next turn). A resume is what `dsh resume` does: a fresh backend (no
//! warm state) prepares the session — read, torn-tail and repair check, typed parse, seeded
//! construction — and derives the model history. Each phase is also timed on its own to
//! show where the time goes.

use crate::stats::{report, summarize};
use crate::workload::{append_turn, Texts, EVENTS_PER_TURN};
use dsh_protocol::SessionId;
use dsh_session::{interrupted_turn_closers, SeedSource, Session, SessionBuilder, SessionHeader};
use dsh_store::{read_typed_log, Compression, JsonlBackend, JsonlConfig, SessionPersistence};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TURNS: u64 = 1_000;
const RUNS: usize = 11;
const ID: &str = "bench-resume";

/// Writes the benchmark log under `root`; returns the log's path.
fn build_log(root: &Path, compression: Compression) -> anyhow::Result<std::path::PathBuf> {
    let mut header = SessionHeader::new(ID.into(), 1_700_000_000_000);
    header.cwd = Some("/home/user/project".into());
    let time = Arc::new(AtomicU64::new(1_700_000_000_000));
    let session = Session::builder(header.clone())
        .clock(Arc::new(move || time.fetch_add(7, Ordering::Relaxed)))
        .build()?;
    let mut texts = Texts::new(7);
    let mut cuts = Vec::new();
    for turn in 1..=TURNS {
        cuts.extend(append_turn(&session, turn, &mut texts)?);
        cuts.push(session.len() - 1);
    }
    anyhow::ensure!(
        session.len() == TURNS * EVENTS_PER_TURN,
        "unexpected log size"
    );

    let mut config = JsonlConfig::new(root);
    config.compression = compression;
    let backend = JsonlBackend::new(config);
    backend.create(&header)?;
    let events = session.events();
    let mut from = 0usize;
    for cut in cuts {
        let to = cut as usize + 1;
        backend.append(&header.id, &events[from..to])?;
        from = to;
    }
    Ok(backend.layout().session_file(header.cwd.as_deref(), ID)?)
}

fn resume_once(root: &Path, compression: Compression) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let mut config = JsonlConfig::new(root);
    config.compression = compression;
    let backend = JsonlBackend::new(config);
    let prepared = backend.prepare(&SessionId::from(ID))?;
    let history = prepared.session.derive_messages();
    let elapsed = start.elapsed();
    anyhow::ensure!(
        history.len() as u64 == 3 * TURNS && prepared.closers.is_empty(),
        "unexpected resume result"
    );
    Ok(elapsed)
}

/// Times the resume's phases separately (the same work, split at the public seams).
fn phases(path: &Path, compression: Compression) -> anyhow::Result<()> {
    let mut read = Vec::new();
    let mut repair = Vec::new();
    let mut build = Vec::new();
    let mut derive = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let log = read_typed_log(path, compression, Some(ID))?;
        read.push(t.elapsed());
        let events = log.events;

        let t = Instant::now();
        let closers = interrupted_turn_closers(&events);
        repair.push(t.elapsed());
        anyhow::ensure!(closers.is_empty(), "the bench log is balanced");

        let header: SessionHeader = serde_json::from_value(log.header.to_value())?;
        let t = Instant::now();
        let session = SessionBuilder::new(header)
            .seed(events, SeedSource::Persistence)
            .build()?;
        build.push(t.elapsed());

        let t = Instant::now();
        std::hint::black_box(session.derive_messages());
        derive.push(t.elapsed());
    }
    for (name, samples) in [
        ("  phase: read, decode and parse (typed)", read),
        ("  phase: repair check", repair),
        ("  phase: seeded construction", build),
        ("  phase: derive_messages", derive),
    ] {
        report("session-resume", name, &summarize(samples));
    }
    Ok(())
}

fn case(label: &str, compression: Compression) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = build_log(dir.path(), compression)?;
    let size = std::fs::metadata(&path)?.len();
    println!(
        "log: {} events, {} turns, {:.1} MiB on disk ({label})",
        TURNS * EVENTS_PER_TURN,
        TURNS,
        size as f64 / (1024.0 * 1024.0)
    );
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        samples.push(resume_once(dir.path(), compression)?);
    }
    report(
        "session-resume",
        &format!("resume 100k events, {label}"),
        &summarize(samples),
    );
    phases(&path, compression)
}

pub fn run() -> anyhow::Result<()> {
    case("zstd, packed", Compression::Zstd)?;
    case("JSONL, packed", Compression::None)
}
