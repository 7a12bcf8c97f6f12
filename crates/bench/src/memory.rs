//! `memory`: the session memory index (crates/memory, docs/memory.md).
//!
//! A store of 10,000 sessions (20 workspaces, one realistic turn each, every session's
//! text different) is indexed from scratch with `MemoryIndex::sync`, which is what
//! `dsh sessions reindex` does: the figure is stored events read per second (and the rows
//! that carry text, which are what is written). Then searches over the 10k-session index:
//! a word nearly every session holds (the worst case: every session matches), two words,
//! a word none holds, each limited to one workspace (the default) and over all of them.
//! Then the index's size against the logs'. Last, the agent-step bench's turn with the JSONL
//! store, with and without the `memory` plugin (its live indexer on `session/event` and
//! its tools in every request): the difference is a turn's overhead with indexing on.
//!
//! Budgets: search ≤ 20 ms at the median; ≤ 2 % on agent-step.
//!
//! With `DSH_BENCH_MEMORY_DIR=DIR` the store and the index are kept in `DIR` and reused by
//! the next run (which then measures a sync with nothing new instead of a build): for
//! profiling the searches without building 10k sessions each time.

use crate::agent_step::measure;
use crate::core_stack::Persistence;
use crate::stats::{report_range as report, report_rate, summarize};
use crate::workload::{append_turn, Texts, EVENTS_PER_TURN};
use dsh_memory::{EventFilter, MemoryIndex, SessionFilter};
use dsh_protocol::SessionId;
use dsh_session::{Session, SessionHeader};
use dsh_store::{JsonlBackend, JsonlConfig, SessionPersistence};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SESSIONS: u64 = 10_000;
const WORKSPACES: u64 = 20;
const BUILDERS: u64 = 8;
const SEARCH_RUNS: usize = 30;
const AGENTS: usize = 6;

fn header(n: u64) -> SessionHeader {
    let mut header = SessionHeader::new(
        SessionId::new(format!("session-{n:05}")),
        1_700_000_000_000 + n * 1000,
    );
    header.cwd = Some(workspace(n % WORKSPACES));
    header
}

fn workspace(w: u64) -> String {
    format!("/home/user/project-{w}")
}

fn build_store(root: &Path) -> anyhow::Result<()> {
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..BUILDERS)
            .map(|worker| {
                scope.spawn(move || -> anyhow::Result<()> {
                    let backend = JsonlBackend::new(JsonlConfig::new(root));
                    for n in (worker..SESSIONS).step_by(BUILDERS as usize) {
                        let header = header(n);
                        let session = Session::builder(header.clone())
                            .clock(Arc::new(move || 1_700_000_000_500 + n))
                            .build()?;
                        append_turn(&session, 1, &mut Texts::new(n + 7))?;
                        backend.create(&header)?;
                        backend.append(&header.id, &session.events())?;
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

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

fn search(
    index: &MemoryIndex,
    query: &str,
    cwd: Option<String>,
) -> anyhow::Result<(Duration, usize)> {
    let filter = SessionFilter {
        cwd,
        ..SessionFilter::default()
    };
    let started = Instant::now();
    let hits = index.search(query, &filter, &EventFilter::default(), 20)?;
    Ok((started.elapsed(), hits.len()))
}

pub fn run() -> anyhow::Result<()> {
    if let Some(load) = crate::agent_step::load_average() {
        println!("machine load average at start (1/5/15 min): {load}");
    }
    let kept = std::env::var_os("DSH_BENCH_MEMORY_DIR").map(std::path::PathBuf::from);
    let temp = tempfile::tempdir()?;
    let base = kept.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let root = base.join("sessions");
    let build = Instant::now();
    if !(kept.is_some() && root.exists()) {
        build_store(&root)?;
    }
    let logs = dir_size(&root);
    println!(
        "store: {SESSIONS} sessions in {WORKSPACES} workspaces, {EVENTS_PER_TURN} events each, {:.1} MiB of logs (zstd; built in {:.1?})",
        logs as f64 / 1_048_576.0,
        build.elapsed()
    );

    let backend = JsonlBackend::new(JsonlConfig::new(&root));
    let path = base.join("memory").join(dsh_memory::INDEX_FILE);
    let (index, _) = MemoryIndex::open(&path)?;
    let started = Instant::now();
    let report_sync = index.sync(&backend)?;
    let took = started.elapsed();
    anyhow::ensure!(report_sync.unreadable.is_empty(), "unreadable sessions");
    let events = SESSIONS * EVENTS_PER_TURN;
    println!(
        "{:<44} {:>10.3?}  {:.0} events/s read and indexed ({} text rows written, {:.0}/s)",
        "index 10k sessions from scratch (sync)",
        took,
        events as f64 / took.as_secs_f64(),
        report_sync.events_indexed,
        report_sync.events_indexed as f64 / took.as_secs_f64()
    );
    println!("    command: cargo run --release -p dsh-bench -- memory");

    // A sync with nothing new: what every search from the CLI pays first.
    let mut resync = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        index.sync(&backend)?;
        resync.push(started.elapsed());
    }
    report(
        "memory",
        "sync with nothing new (10k sessions)",
        &summarize(resync),
    );

    // Live indexing: typed events straight from memory, as the background thread gets them.
    let live = Session::builder(header(SESSIONS + 1)).build()?;
    for turn in 1..=200 {
        append_turn(&live, turn, &mut Texts::new(turn))?;
    }
    let live_events = live.events();
    let meta = dsh_memory::index::SessionMeta {
        id: live.id().as_str().to_owned(),
        cwd: Some(workspace(0)),
        created_at: 0,
        parent_session: None,
    };
    let mut live_samples = Vec::new();
    for chunk in live_events.chunks(EVENTS_PER_TURN as usize) {
        let started = Instant::now();
        index.index_events(&meta, chunk)?;
        live_samples.push(started.elapsed());
    }
    report_rate(
        "memory",
        "live indexer, one turn's events per batch",
        EVENTS_PER_TURN,
        &summarize(live_samples),
    );

    index.checkpoint()?;
    let stats = index.stats()?;
    println!(
        "index size: {:.1} MiB for {:.1} MiB of logs ({:.0} %), {} rows",
        stats.bytes as f64 / 1_048_576.0,
        logs as f64 / 1_048_576.0,
        100.0 * stats.bytes as f64 / logs as f64,
        stats.rows
    );

    for (query, label) in [
        ("function", "a word in every session"),
        ("session index", "two common words"),
        ("kubernetes", "a word in no session"),
    ] {
        for (cwd, scope) in [(Some(workspace(3)), "one workspace"), (None, "all")] {
            let mut samples = Vec::with_capacity(SEARCH_RUNS);
            let mut found = 0;
            for _ in 0..SEARCH_RUNS {
                let (took, hits) = search(&index, query, cwd.clone())?;
                samples.push(took);
                found = hits;
            }
            let summary = summarize(samples);
            let verdict = if summary.median <= Duration::from_millis(20) {
                "within"
            } else {
                "OVER"
            };
            report(
                "memory",
                &format!("search \"{query}\" ({label}; {scope}; {found} hits)"),
                &summary,
            );
            println!("    {verdict} the 20 ms budget at the median");
        }
    }
    drop(index);
    drop(temp);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let plain = runtime.block_on(measure(Persistence::Jsonl, AGENTS))?;
    let with_memory = runtime.block_on(measure(Persistence::JsonlMemory, AGENTS))?;
    let wall =
        |s: &[crate::agent_step::TurnSample]| summarize(s.iter().map(|x| x.wall).collect()).median;
    let cpu =
        |s: &[crate::agent_step::TurnSample]| summarize(s.iter().map(|x| x.cpu).collect()).median;
    let pct = |a: Duration, b: Duration| 100.0 * (b.as_secs_f64() / a.as_secs_f64() - 1.0);
    println!(
        "agent-step per step, JSONL store:           wall {:>9.3?}  thread CPU {:>9.3?}",
        wall(&plain),
        cpu(&plain)
    );
    println!(
        "agent-step per step, JSONL store + memory:  wall {:>9.3?}  thread CPU {:>9.3?}  ({:+.1} % wall, {:+.1} % CPU; budget +2 %)",
        wall(&with_memory),
        cpu(&with_memory),
        pct(wall(&plain), wall(&with_memory)),
        pct(cpu(&plain), cpu(&with_memory))
    );
    println!("    command: cargo run --release -p dsh-bench -- memory");
    Ok(())
}
