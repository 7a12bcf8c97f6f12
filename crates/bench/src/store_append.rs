//! `store-append`: sustained rate of streamed chunks into a persisted session.
//!
//! The full live path: a [`SessionStore`] and the JSONL persistence plugin on a real kernel
//! context, the default 200 ms write-behind window, and `Session::append` of 100,000
//! `assistant/chunk` text deltas (~20-byte texts) from the driving thread, as an agent loop
//! appends while a model streams. The clock stops after the final flush has made every
//! event durable, so background batch writes are inside the figure.

use crate::stats::{report_rate, summarize};
use crate::workload::{text_delta, Texts};
use dsh_kernel::Context;
use dsh_session::{AppendOptions, SessionOptions, SessionStore, SessionsPlugin};
use dsh_store::{Compression, JsonlPersistenceConfig, JsonlPersistencePlugin, WriteCoordinator};
use std::time::{Duration, Instant};

const EVENTS: u64 = 100_000;
const RUNS: usize = 7;
/// Deltas per step, so runs of chunks end and turn/step change as in a real log.
const PER_STEP: u64 = 100;

struct Run {
    appends: Duration,
    total: Duration,
}

async fn one_run(compression: Compression, pack_chunks: bool) -> anyhow::Result<Run> {
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
    let deltas: Vec<String> = (0..EVENTS).map(|_| texts.delta(20)).collect();

    let start = Instant::now();
    for (i, text) in (0..EVENTS).zip(deltas) {
        let data = text_delta(i / PER_STEP / 10 + 1, i / PER_STEP % 10 + 1, 1, text);
        session.append(data, AppendOptions::log_only())?;
    }
    let appends = start.elapsed();
    store.flush(&session).await?;
    let total = start.elapsed();

    anyhow::ensure!(
        coordinator.stored_next(session.id()) == Some(EVENTS),
        "not every event was stored"
    );
    ctx.fiber().dispose();
    Ok(Run { appends, total })
}

fn case(
    runtime: &tokio::runtime::Runtime,
    label: &str,
    compression: Compression,
    pack_chunks: bool,
) -> anyhow::Result<()> {
    let mut totals = Vec::with_capacity(RUNS);
    let mut appends = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let run = runtime.block_on(one_run(compression, pack_chunks))?;
        totals.push(run.total);
        appends.push(run.appends);
    }
    report_rate(
        "store-append",
        &format!("100k chunks, {label}, incl. final flush"),
        EVENTS,
        &summarize(totals),
    );
    report_rate(
        "store-append",
        &format!("100k chunks, {label}, appends only"),
        EVENTS,
        &summarize(appends),
    );
    Ok(())
}

pub fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    case(&runtime, "zstd + packed rows", Compression::Zstd, true)?;
    case(
        &runtime,
        "plain JSONL + packed rows",
        Compression::None,
        true,
    )?;
    case(&runtime, "plain JSONL, unpacked", Compression::None, false)?;
    Ok(())
}
