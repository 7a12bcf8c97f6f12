//! `store-append`: sustained rate of streamed chunks into a persisted session.
//!
//! The full live path: a [`SessionStore`] and the JSONL persistence plugin on a real kernel
//! context, the default 200 ms write-behind window, and `Session::append` of 100,000
//! `assistant/chunk` text deltas (~20-byte texts) from the driving thread, as an agent loop
//! appends while a model streams. The clock stops after the final flush has made every
//! event durable, so background batch writes are inside the figure. 100k appends take less
//! than one 200 ms window, so the final flush writes them as one batch; the 1M case runs
//! long enough for windows to expire and batches to be written while appends go on.

use crate::stats::{report_rate, summarize};
use crate::workload::{text_delta, Texts};
use dsh_kernel::Context;
use dsh_session::{AppendOptions, SessionOptions, SessionStore, SessionsPlugin};
use dsh_store::{Compression, JsonlPersistenceConfig, JsonlPersistencePlugin, WriteCoordinator};
use std::time::{Duration, Instant};

const EVENTS: u64 = 100_000;
const RUNS: usize = 7;
const LONG_EVENTS: u64 = 1_000_000;
const LONG_RUNS: usize = 3;
/// Deltas per step, so runs of chunks end and turn/step change as in a real log.
const PER_STEP: u64 = 100;

struct Run {
    appends: Duration,
    total: Duration,
}

async fn one_run(events: u64, compression: Compression, pack_chunks: bool) -> anyhow::Result<Run> {
    let dir = tempfile::tempdir()?;
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(())?;
    let mut config = JsonlPersistenceConfig::new(dir.path());
    config.compression = compression;
    config.pack_chunks = pack_chunks;
    ctx.plugin::<JsonlPersistencePlugin>(config)?;
    let store = ctx.require::<SessionStore>()?;
    let coordinator = ctx.require::<WriteCoordinator>()?;
    let opts = SessionOptions {
        cwd: Some("/home/user/project".into()),
        ..SessionOptions::default()
    };
    let session = store.create(&ctx, Some("bench-append".into()), opts)?;
    let mut texts = Texts::new(1);
    let deltas: Vec<String> = (0..events).map(|_| texts.delta(20)).collect();

    let start = Instant::now();
    for (i, text) in (0..events).zip(deltas) {
        let data = text_delta(i / PER_STEP / 10 + 1, i / PER_STEP % 10 + 1, 1, text);
        session.append(data, AppendOptions::log_only())?;
    }
    let appends = start.elapsed();
    store.flush(&session).await?;
    let total = start.elapsed();

    anyhow::ensure!(
        coordinator.stored_next(session.id()) == Some(events),
        "not every event was stored"
    );
    ctx.fiber().dispose();
    Ok(Run { appends, total })
}

fn case(
    runtime: &tokio::runtime::Runtime,
    events: u64,
    runs: usize,
    label: &str,
    compression: Compression,
    pack_chunks: bool,
) -> anyhow::Result<()> {
    let mut totals = Vec::with_capacity(runs);
    let mut appends = Vec::with_capacity(runs);
    for _ in 0..runs {
        let run = runtime.block_on(one_run(events, compression, pack_chunks))?;
        totals.push(run.total);
        appends.push(run.appends);
    }
    let count = if events >= 1_000_000 {
        format!("{}M", events / 1_000_000)
    } else {
        format!("{}k", events / 1_000)
    };
    report_rate(
        "store-append",
        &format!("{count} chunks, {label}: appends + flush"),
        events,
        &summarize(totals),
    );
    report_rate(
        "store-append",
        &format!("{count} chunks, {label}: appends alone"),
        events,
        &summarize(appends),
    );
    Ok(())
}

pub fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let short = |label, compression, pack| case(&runtime, EVENTS, RUNS, label, compression, pack);
    short("zstd, packed", Compression::Zstd, true)?;
    short("JSONL, packed", Compression::None, true)?;
    short("JSONL, unpacked", Compression::None, false)?;
    case(
        &runtime,
        LONG_EVENTS,
        LONG_RUNS,
        "zstd, packed",
        Compression::Zstd,
        true,
    )
}
