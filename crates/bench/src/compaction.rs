//! `compaction`: a compaction's own harness overhead apart from the model call, on a
//! 100k-event session, and resume of a compacted 100k-event session.
//!
//! The session: one `request/header`, then 1,000 realistic turns ([`append_turn`]: 100 events
//! each, 3 surface nodes). **Overhead:** `CompactionEngine::compact_now` on a live session of
//! the store, whose meter and lock state are already current (as they are in a running
//! session, where both advance with each append): selection over the 3,000-node surface,
//! tool-pairing cuts, the shadowed messages, the summary request, framing and the shrink check,
//! the stability check and the three commit appends, plus the maintenance lease. The model is
//! an in-process scripted adapter answering at once, so the figure is the harness's work; the
//! network and the model's own time come on top. **Resume:** the same log with that compaction
//! at its end (2,998 nodes shadowed by one checkpoint; the newest step, a tool call and its result, stays), stored as zstd frames; a resume is a
//! fresh backend's `prepare` (read, parse, repair check, seeded construction with the
//! compaction invariant) plus `derive_messages`.

use crate::stats::{report, summarize};
use crate::workload::{append_turn, Texts};
use dsh_compaction::{
    invariant, CompactionConfig, CompactionEngine, CompactionPlugin, MeterService,
};
use dsh_kernel::Context;
use dsh_llm::{LlmPlugin, LlmPluginConfig, LlmRuntime};
use dsh_protocol::{EpochHeader, LlmCallConfig, SessionId};
use dsh_session::{
    AppendOptions, EventData, HeaderReason, RequestHeader, Seed, SeedSource, Session, SessionEvent,
    SessionHeader, SessionOptions, SessionStore, SessionsPlugin,
};
use dsh_store::{Compression, JsonlBackend, JsonlConfig, SessionPersistence};
use dsh_testkit::fake_agent::FakeAgent;
use dsh_testkit::scripted::{text_response, ScriptedAdapter};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TURNS: u64 = 1_000;
const RUNS: usize = 11;
const PROVIDER: &str = "bench";
const SUMMARY: &str = "## Primary Request and Intent\n- refactor the parser\n## Key Technical Concepts\n- (none)\n## Files and Code\n- src/parse.rs\n## Errors and Fixes\n- (none)\n## Pending Jobs\n- (none)\n## Current Work\n- tests\n## Next Step\n- run them\n## Critical Context\n- (none)";

/// The template log: a header and 1,000 turns.
fn template() -> anyhow::Result<Vec<Arc<SessionEvent>>> {
    let session = Session::new(SessionHeader::new("template".into(), 1_700_000_000_000))?;
    session.append(
        EventData::RequestHeader(Box::new(RequestHeader {
            header: EpochHeader {
                config: LlmCallConfig {
                    provider: PROVIDER.into(),
                    model: "m".into(),
                    ..LlmCallConfig::default()
                },
                adapter_defaults: None,
                system: Some(
                    "You are a coding agent working in a repository. "
                        .repeat(60)
                        .into(),
                ),
                tools: None,
            },
            reason: HeaderReason::Initial,
        })),
        AppendOptions::log_only(),
    )?;
    let mut texts = Texts::new(11);
    for turn in 1..=TURNS {
        append_turn(&session, turn, &mut texts)?;
    }
    Ok(session.events().to_vec())
}

struct Rig {
    ctx: Context,
    store: Arc<SessionStore>,
    meters: Arc<MeterService>,
    engine: Arc<CompactionEngine>,
    adapter: Arc<ScriptedAdapter>,
}

fn rig() -> anyhow::Result<Rig> {
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(())?;
    ctx.plugin::<LlmPlugin>(LlmPluginConfig::default())?;
    let llm = ctx.require::<LlmRuntime>()?;
    let adapter = Arc::new(ScriptedAdapter::new([]).context_window(1_000_000));
    drop(adapter.register(&ctx, &llm, PROVIDER)?);
    let config = CompactionConfig {
        auto: false,
        ..CompactionConfig::default()
    };
    ctx.plugin::<CompactionPlugin>(config)?;
    Ok(Rig {
        store: ctx.require::<SessionStore>()?,
        meters: ctx.require::<MeterService>()?,
        engine: ctx.require::<CompactionEngine>()?,
        adapter,
        ctx,
    })
}

/// A live copy of the template, its meter and lock state current.
fn live_copy(rig: &Rig, events: &[Arc<SessionEvent>], id: &str) -> anyhow::Result<Session> {
    let options = SessionOptions {
        seed: Some(Seed {
            events: events.to_vec(),
            source: SeedSource::Import,
        }),
        ..SessionOptions::default()
    };
    let session = rig
        .store
        .create(&rig.ctx, Some(SessionId::from(id)), options)?;
    rig.meters.measure(&session)?;
    anyhow::ensure!(!rig.engine.is_busy(&session), "the copy is not locked");
    Ok(session)
}

async fn overhead(rig: &Rig, events: &[Arc<SessionEvent>]) -> anyhow::Result<Session> {
    let mut samples: Vec<Duration> = Vec::with_capacity(RUNS);
    let mut last = None;
    for run in 0..RUNS {
        let session = live_copy(rig, events, &format!("bench-compaction-{run}"))?;
        let agent = FakeAgent::create(&rig.ctx, session.clone())?;
        rig.adapter.push(text_response(SUMMARY));
        let start = Instant::now();
        let result = rig
            .engine
            .compact_now(&agent, dsh_agent::AbortSignal::new(), None)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        samples.push(start.elapsed());
        let result = result.ok_or_else(|| anyhow::anyhow!("nothing was compacted"))?;
        anyhow::ensure!(
            result.shadowed_seqs.len() as u64 == 3 * TURNS - 2,
            "unexpected range"
        );
        last = Some(session);
    }
    println!(
        "session: {} events, {} surface nodes; compacts {} of them",
        events.len(),
        3 * TURNS,
        3 * TURNS - 2
    );
    report(
        "compaction",
        "compact_now overhead, 100k-event session (in-process model)",
        &summarize(samples),
    );
    last.ok_or_else(|| anyhow::anyhow!("no run"))
}

fn resume(compacted: &Session) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut header = SessionHeader::new("bench-compacted".into(), 1_700_000_000_000);
    header.cwd = Some("/home/user/project".into());
    let events = compacted.events();
    {
        let mut config = JsonlConfig::new(dir.path());
        config.compression = Compression::Zstd;
        let writer = JsonlBackend::new(config);
        writer.create(&header)?;
        for batch in events.chunks(100) {
            writer.append(&header.id, batch)?;
        }
    }
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        let mut config = JsonlConfig::new(dir.path());
        config.compression = Compression::Zstd;
        let backend = JsonlBackend::new(config);
        let prepared = backend.prepare(&header.id)?;
        let history = prepared.session.derive_messages();
        samples.push(start.elapsed());
        anyhow::ensure!(history.len() == 3, "checkpoint plus the newest step");
    }
    report(
        "compaction",
        &format!(
            "resume of the compacted {}-event session, zstd",
            events.len()
        ),
        &summarize(samples),
    );
    Ok(())
}

pub fn run() -> anyhow::Result<()> {
    dsh_session::register_event_types(dsh_compaction::EVENT_TYPES)?;
    invariant::register()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let events = template()?;
    let rig = rig()?;
    let compacted = runtime.block_on(overhead(&rig, &events))?;
    resume(&compacted)
}
