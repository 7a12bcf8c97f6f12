//! `agents-1000`: a thousand agents in one process, each running a 3-step turn at once.
//!
//! The core is mounted once on a multi-threaded runtime (one worker per core) and warmed
//! up with one agent. Then 1,000 agents are created and each is sent a prompt; every one
//! runs two no-op tool-call steps and a final answer, all interleaved on the runtime. The
//! model is an in-process adapter that answers from three prebuilt replies by the number of
//! assistant messages in the request; unlike the testkit's scripted adapter it records
//! nothing, so the memory figure is the agents' alone. No persistence: the logs live in
//! memory, as they do for a live session between write-behind batches.
//!
//! Memory: `VmRSS` from `/proc/self/status` before the agents are created and once all of
//! them are idle (still registered, logs in memory); the budget is ≤ 100 KiB per idle agent
//! for `(after − before) / 1000`. The peak is `VmHWM` after resetting it (via
//! `/proc/self/clear_refs`) just before the agents are created.

use crate::core_stack::{agent_options, check_last_turn, err, reply, Core, Persistence};
use crate::counting;
use dsh_agent::{AgentHandle, CreateAgentOptions};
use dsh_llm::{ChunkStream, LlmAdapter, LlmError, LlmRequest, ModelInfo};
use dsh_protocol::{LlmCallConfig, Message, Role, SessionId, StreamChunk};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use std::sync::Arc;
use std::time::{Duration, Instant};

const AGENTS: usize = 1000;
const STEPS: usize = 3;
const BUDGET_PER_AGENT_KIB: u64 = 100;
/// A hang guard for the whole run, not a measurement.
const GUARD: Duration = Duration::from_secs(120);

/// Answers call *n* of a turn with reply *n*, *n* being one more than the number of
/// assistant messages in the request (each agent runs a single turn).
struct StepReplies {
    replies: Vec<Vec<StreamChunk>>,
}

impl LlmAdapter for StepReplies {
    fn stream(&self, request: Arc<LlmRequest>) -> BoxFuture<'_, Result<ChunkStream, LlmError>> {
        let answered = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let chunks = self.replies.get(answered).cloned();
        Box::pin(async move {
            let chunks = chunks.ok_or_else(|| {
                LlmError::new("BENCH_SCRIPT_EXHAUSTED", "no reply for this many steps")
            })?;
            Ok(stream::iter(chunks.into_iter().map(Ok)).boxed())
        })
    }

    fn resolve_model<'a>(
        &'a self,
        _config: &'a LlmCallConfig,
    ) -> BoxFuture<'a, Result<ModelInfo, LlmError>> {
        Box::pin(async { Ok(ModelInfo::default()) })
    }
}

/// A `/proc/self/status` field in KiB.
fn status_kib(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .ok_or_else(|| anyhow::anyhow!("no {field} in /proc/self/status"))?;
    let kib = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?;
    Ok(kib)
}

async fn create(core: &Core, id: String) -> anyhow::Result<AgentHandle> {
    core.registry
        .create(
            &core.ctx,
            CreateAgentOptions {
                session_id: Some(SessionId::from(id)),
                agent_options: agent_options(),
                ..Default::default()
            },
        )
        .await
        .map_err(err)
}

/// One agent's turn: prompt, wait for idle, check it took every step.
async fn turn(handle: &AgentHandle) -> anyhow::Result<()> {
    let agent = handle.agent();
    agent
        .followup(Message::user_text("Call the tool twice, then answer."))
        .map_err(err)?;
    agent.when_idle().await;
    check_last_turn(agent.as_ref(), STEPS)
}

struct Figures {
    before_kib: u64,
    /// Heap bytes allocated and not freed, from the counting allocator.
    heap_before: i64,
    heap_idle: i64,
    heap_disposed: i64,
    idle_kib: u64,
    peak_kib: Option<u64>,
    disposed_kib: u64,
    create: Duration,
    turns: Duration,
}

async fn measure() -> anyhow::Result<Figures> {
    let adapter = Arc::new(StepReplies {
        replies: (1..=STEPS).map(|step| reply(step, STEPS)).collect(),
    });
    let core = Arc::new(Core::mount(adapter, Persistence::None)?);
    // Warm-up: lazily built tables and the runtime's worker state exist before "before".
    let warm = create(&core, "warm-up".into()).await?;
    turn(&warm).await?;
    warm.dispose().await;

    let heap_before = counting::live_bytes();
    let before_kib = status_kib("VmRSS:")?;
    // Resets VmHWM to the current RSS so the peak is this run's (Linux ≥ 4.0).
    let peak_reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();

    let started = Instant::now();
    let mut creations = tokio::task::JoinSet::new();
    for index in 0..AGENTS {
        let core = core.clone();
        creations.spawn(async move { create(&core, format!("agent-{index}")).await });
    }
    let mut handles = Vec::with_capacity(AGENTS);
    while let Some(created) = creations.join_next().await {
        handles.push(created??);
    }
    let create = started.elapsed();

    let started = Instant::now();
    let mut turns = tokio::task::JoinSet::new();
    for handle in &handles {
        let handle = handle.clone();
        turns.spawn(async move { turn(&handle).await });
    }
    while let Some(done) = turns.join_next().await {
        done??;
    }
    let turns = started.elapsed();
    anyhow::ensure!(handles.len() == AGENTS, "not every agent was created");

    let idle_kib = status_kib("VmRSS:")?;
    let heap_idle = counting::live_bytes();
    let peak_kib = if peak_reset {
        Some(status_kib("VmHWM:")?)
    } else {
        None
    };
    for handle in &handles {
        handle.dispose().await;
    }
    drop(handles);
    let disposed_kib = status_kib("VmRSS:")?;
    let heap_disposed = counting::live_bytes();
    Ok(Figures {
        before_kib,
        heap_before,
        heap_idle,
        heap_disposed,
        idle_kib,
        peak_kib,
        disposed_kib,
        create,
        turns,
    })
}

pub fn run() -> anyhow::Result<()> {
    counting::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let figures = runtime.block_on(async { tokio::time::timeout(GUARD, measure()).await })??;
    let growth = figures.idle_kib.saturating_sub(figures.before_kib);
    let per_agent = growth as f64 / AGENTS as f64;
    let verdict = if per_agent <= BUDGET_PER_AGENT_KIB as f64 {
        "within"
    } else {
        "OVER"
    };
    println!(
        "method: multi-threaded runtime ({} workers); {AGENTS} agents × {STEPS}-step turn, all at once",
        runtime.metrics().num_workers()
    );
    if let Some(load) = crate::agent_step::load_average() {
        println!("machine load average (1/5/15 min): {load}");
    }
    println!(
        "{:<44} {:>10.1?} create + {:.1?} turns = {:.1?}",
        "wall time",
        figures.create,
        figures.turns,
        figures.create + figures.turns
    );
    println!(
        "{:<44} {:>8.1} KiB  ({verdict} the {BUDGET_PER_AGENT_KIB} KiB budget; RSS {} → {} KiB)",
        "RSS growth per idle agent", per_agent, figures.before_kib, figures.idle_kib
    );
    match figures.peak_kib {
        Some(peak) => println!(
            "{:<44} {:>8} KiB  ({:.1} KiB per agent above the start)",
            "peak RSS (VmHWM)",
            peak,
            peak.saturating_sub(figures.before_kib) as f64 / AGENTS as f64
        ),
        None => println!("peak RSS: unavailable (could not reset VmHWM)"),
    }
    let kib_per_agent = |bytes: i64| bytes as f64 / 1024.0 / AGENTS as f64;
    println!(
        "{:<44} {:>8.1} KiB  (bytes allocated and not freed, counting allocator)",
        "live heap growth per idle agent",
        kib_per_agent(figures.heap_idle - figures.heap_before)
    );
    println!(
        "{:<44} {:>8} KiB  (live heap {:.1} KiB per agent above the start)",
        "after disposing every agent: RSS",
        figures.disposed_kib,
        kib_per_agent(figures.heap_disposed - figures.heap_before)
    );
    println!("    command: cargo run --release -p dsh-bench -- agents-1000");
    Ok(())
}
