//! `subagents`: 100 concurrent continuable children in one process, each doing 3 tool steps
//! and a final answer against an in-process model.
//!
//! The core is mounted as for `agent-step` (no persistence) plus the `jobs` and `subagents`
//! rows, on a current-thread runtime, so every task runs on the measuring thread and its
//! CPU time is the harness's. A parent agent's first reply calls `subagent` 100 times in
//! one message; its later replies are a short text (it is woken by the first settlements
//! and reads the rest injected). Each child's first model call waits on a gate, so the run
//! falls into phases:
//!
//! 1. **start**: from the parent's prompt until all 100 children are waiting on their first
//!    model call. Divided by 100, it is the harness time to start one child apart from its
//!    first model call (it also holds the parent's own step and tool dispatch: an upper
//!    bound). Budget ≤ 1 ms.
//! 2. **work**: from opening the gate until every child settled and the parent is idle.
//!    Divided by the children's steps (100 × 4), it is the harness overhead per child step,
//!    settlement notices and the parent's woken turns included (again an upper bound).
//!    Budget ≤ 2 × the `agent-step` median (29.1 µs in docs/performance.md), i.e. 58 µs.
//! 3. **idle**: RSS and live heap growth from before the children existed to when all are
//!    idle (still loaded, logs in memory), per child. Budget ≤ 150 KiB per idle child.
//!
//! Three runs after a warm-up, each on a fresh core and runtime; every figure is printed per
//! run.

use crate::core_stack::{agent_options, err, reply, Core, Persistence};
use crate::counting;
use dsh_agent::{AgentHandle, CreateAgentOptions};
use dsh_jobs::{JobsConfig, JobsPlugin};
use dsh_llm::{ChunkStream, LlmAdapter, LlmError, LlmRequest, ModelInfo};
use dsh_protocol::{LlmCallConfig, Message, Role, SessionId, StreamChunk};
use dsh_subagents::{Subagents, SubagentsConfig, SubagentsPlugin};
use dsh_testkit::scripted::{text_response, Response};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

const CHILDREN: usize = 100;
/// Tool steps per child, then one answer step.
const TOOL_STEPS: usize = 3;
const RUNS: usize = 3;
const PARENT: &str = "bench-parent";
const START_BUDGET: Duration = Duration::from_millis(1);
const STEP_BUDGET: Duration = Duration::from_micros(58);
const IDLE_BUDGET_KIB: f64 = 150.0;
/// A hang guard for one run, not a measurement.
const GUARD: Duration = Duration::from_secs(120);

/// The model: the parent's first call starts the children, its later ones answer briefly;
/// a child's first call waits for the gate, then each call plays its step.
struct Model {
    parent_first: Vec<StreamChunk>,
    gate: watch::Receiver<bool>,
    waiting: Arc<AtomicUsize>,
}

impl LlmAdapter for Model {
    fn stream(&self, request: Arc<LlmRequest>) -> BoxFuture<'_, Result<ChunkStream, LlmError>> {
        let answered = request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let parent = request
            .session_id
            .as_ref()
            .is_some_and(|s| s.as_str() == PARENT);
        let mut gate = self.gate.clone();
        let waiting = self.waiting.clone();
        Box::pin(async move {
            let chunks = if parent {
                if answered == 0 {
                    self.parent_first.clone()
                } else {
                    text_response("Noted.")
                }
            } else {
                if answered == 0 {
                    waiting.fetch_add(1, Ordering::SeqCst);
                    gate.wait_for(|open| *open)
                        .await
                        .map_err(|_| LlmError::new("BENCH_GATE", "the gate closed"))?;
                }
                reply(answered + 1, TOOL_STEPS + 1)
            };
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

fn parent_first_reply() -> Vec<StreamChunk> {
    let mut response = Response::new().text("Delegating.");
    for k in 0..CHILDREN {
        let args = format!(
            r#"{{"description":"child {k}","prompt":"Task {k}: call the tool three times, then answer."}}"#
        );
        response = response.tool_call(format!("start_{k}"), "subagent", args);
    }
    response
        .finish(dsh_protocol::FinishReason::ToolCalls)
        .chunks()
}

/// A `/proc/self/status` field in KiB.
fn status_kib(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .ok_or_else(|| anyhow::anyhow!("no {field} in /proc/self/status"))?;
    Ok(line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?)
}

struct Figures {
    start_wall: Duration,
    start_cpu: Duration,
    work_wall: Duration,
    work_cpu: Duration,
    rss_kib: f64,
    heap_kib: f64,
}

async fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::task::yield_now().await;
    }
}

async fn measure() -> anyhow::Result<Figures> {
    let (open, gate) = watch::channel(false);
    let waiting = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(Model {
        parent_first: parent_first_reply(),
        gate,
        waiting: waiting.clone(),
    });
    let core = Core::mount(model, Persistence::None)?;
    dsh_session::register_event_types(dsh_subagents::EVENT_TYPES).map_err(err)?;
    core.ctx.plugin::<JobsPlugin>(JobsConfig::default())?;
    core.ctx
        .plugin::<SubagentsPlugin>(SubagentsConfig::default())?;
    let subagents = core.ctx.require::<Subagents>()?;
    let parent: AgentHandle = core
        .registry
        .create(
            &core.ctx,
            CreateAgentOptions {
                session_id: Some(SessionId::from(PARENT)),
                agent_options: agent_options(),
                ..Default::default()
            },
        )
        .await
        .map_err(err)?;
    let agent = parent.agent().clone();

    let heap_before = counting::live_bytes();
    let rss_before = status_kib("VmRSS:")?;
    let (wall, cpu) = (Instant::now(), counting::thread_cpu_time());
    agent
        .followup(Message::user_text("Delegate the hundred tasks."))
        .map_err(err)?;
    until(|| waiting.load(Ordering::SeqCst) == CHILDREN).await;
    let start_wall = wall.elapsed();
    let start_cpu = counting::thread_cpu_time() - cpu;

    let (wall, cpu) = (Instant::now(), counting::thread_cpu_time());
    open.send_replace(true);
    let root = SessionId::from(PARENT);
    loop {
        subagents.until_settled(&root).await;
        agent.when_idle().await;
        if !subagents.tree_working(&root) {
            break;
        }
    }
    let work_wall = wall.elapsed();
    let work_cpu = counting::thread_cpu_time() - cpu;

    let children = subagents.children(&root);
    anyhow::ensure!(
        children.len() == CHILDREN,
        "{} children were started",
        children.len()
    );
    for child in &children {
        anyhow::ensure!(
            child.last_stop == Some(dsh_subagents::StopReason::Completed) && child.status == "idle",
            "child {} ended {:?} ({})",
            child.id,
            child.last_stop,
            child.status
        );
    }
    let rss_kib = status_kib("VmRSS:")?.saturating_sub(rss_before) as f64 / CHILDREN as f64;
    let heap_kib = (counting::live_bytes() - heap_before) as f64 / 1024.0 / CHILDREN as f64;
    parent.dispose().await;
    Ok(Figures {
        start_wall,
        start_cpu,
        work_wall,
        work_cpu,
        rss_kib,
        heap_kib,
    })
}

fn verdict(within: bool) -> &'static str {
    if within {
        "within"
    } else {
        "OVER"
    }
}

/// One run on a runtime of its own, so nothing of an earlier run is freed while this one
/// measures.
fn one_run() -> anyhow::Result<Figures> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async { tokio::time::timeout(GUARD, measure()).await })?
}

pub fn run() -> anyhow::Result<()> {
    counting::start();
    // Warm-up: lazily built tables and allocator pools exist before the first measurement.
    one_run()?;
    println!(
        "method: current-thread runtime; {CHILDREN} continuable children × ({TOOL_STEPS} tool steps + answer), all at once; {RUNS} runs"
    );
    if let Some(load) = crate::agent_step::load_average() {
        println!("machine load average (1/5/15 min): {load}");
    }
    let steps = (CHILDREN * (TOOL_STEPS + 1)) as u32;
    for run in 1..=RUNS {
        let figures = one_run()?;
        let start = figures.start_cpu / CHILDREN as u32;
        let step = figures.work_cpu / steps;
        println!("run {run}:");
        println!(
            "  start one child (CPU)      {:>10.1?}  wall {:>10.1?}  ({} the {:?} budget)",
            start,
            figures.start_wall / CHILDREN as u32,
            verdict(start <= START_BUDGET),
            START_BUDGET
        );
        println!(
            "  per child step (CPU)       {:>10.1?}  wall {:>10.1?}  ({} the {:?} budget)",
            step,
            figures.work_wall / steps,
            verdict(step <= STEP_BUDGET),
            STEP_BUDGET
        );
        println!(
            "  per idle child: RSS {:>7.1} KiB, live heap {:>7.1} KiB  ({} the {IDLE_BUDGET_KIB} KiB budget)",
            figures.rss_kib,
            figures.heap_kib,
            verdict(figures.rss_kib.max(figures.heap_kib) <= IDLE_BUDGET_KIB)
        );
    }
    println!("    command: cargo run --release -p dsh-bench -- subagents");
    Ok(())
}
