//! `agent-step`: the agent core's own cost per step, with a model and a tool that cost
//! nothing.
//!
//! One agent runs a turn of 200 steps: 199 replies that each call a no-op tool, then a
//! final text answer. The replies are prebuilt chunk vectors queued on an in-process adapter
//! before the clock starts ([`PrebuiltReplies`]: the testkit's scripted adapter without its
//! request recording), so the model only hands over a ready `Vec`. The clock runs from
//! `followup` to `when_idle`; the figure is that time divided by the number of steps, i.e.
//! everything the core does per step: the prompt assembly and pre-step gate, opening the
//! step, the request hook chain, `prepare_call`, header checks, history derivation, the
//! runtime's request projection, appending and folding every chunk, assembling and
//! appending the assistant message, the tool pipeline and the tool result. Each agent runs
//! several turns in a row (the history keeps growing, as in a real session); a fresh agent
//! per group. Everything runs on one thread, whose CPU time and allocations are reported
//! beside the wall time (on a shared machine the wall time also holds time the thread
//! spent waiting for a core).
//!
//! Budget: ≤ 50 µs per step at the median, without persistence. The same turn with the
//! JSONL store attached (zstd, temp dir, default write-behind), and with the store plus the
//! checkpoint policy that the `dsh` composition mounts, is reported for information.

use crate::core_stack::{
    agent_options, check_last_turn, err, reply, Core, Persistence, PrebuiltReplies,
};
use crate::counting;
use crate::stats::{summarize, Summary};
use dsh_agent::CreateAgentOptions;
use dsh_protocol::{Message, SessionId};
use std::sync::Arc;
use std::time::{Duration, Instant};

const STEPS: usize = 200;
const AGENTS: usize = 6;
const TURNS_PER_AGENT: usize = 3;
const BUDGET_PER_STEP: Duration = Duration::from_micros(50);

/// One measured turn, divided by its steps.
#[derive(Clone, Copy)]
pub(crate) struct TurnSample {
    /// 0 for an agent's first turn (history grows from empty to ~400 messages), 1, 2, ...
    turn_index: usize,
    pub(crate) wall: Duration,
    pub(crate) cpu: Duration,
    allocations: u64,
}

/// Runs `agents` × `TURNS_PER_AGENT` measured turns (after one warm-up turn).
pub(crate) async fn measure(
    persistence: Persistence,
    agents: usize,
) -> anyhow::Result<Vec<TurnSample>> {
    let adapter = Arc::new(PrebuiltReplies::default());
    let core = Core::mount(adapter.clone(), persistence)?;
    let mut samples = Vec::with_capacity(agents * TURNS_PER_AGENT);
    for index in 0..=agents {
        let handle = core
            .registry
            .create(
                &core.ctx,
                CreateAgentOptions {
                    session_id: Some(SessionId::from(format!("step-bench-{index}"))),
                    agent_options: agent_options(),
                    ..Default::default()
                },
            )
            .await
            .map_err(err)?;
        let agent = handle.agent().clone();
        // Agent 0 is the warm-up (allocator, lazily built tables): one turn, not counted.
        let turns = if index == 0 { 1 } else { TURNS_PER_AGENT };
        for turn_index in 0..turns {
            for step in 1..=STEPS {
                adapter.push(reply(step, STEPS));
            }
            let allocations = counting::allocations();
            let cpu = counting::thread_cpu_time();
            let started = Instant::now();
            agent
                .followup(Message::user_text("Call the tool until done."))
                .map_err(err)?;
            agent.when_idle().await;
            let wall = started.elapsed();
            let cpu = counting::thread_cpu_time().saturating_sub(cpu);
            let allocations = counting::allocations() - allocations;
            check_last_turn(agent.as_ref(), STEPS)?;
            if index > 0 {
                samples.push(TurnSample {
                    turn_index,
                    wall: wall / STEPS as u32,
                    cpu: cpu / STEPS as u32,
                    allocations: allocations / STEPS as u64,
                });
            }
        }
        handle.dispose().await;
    }
    anyhow::ensure!(adapter.remaining() == 0, "script entries left over");
    Ok(samples)
}

fn line(label: &str, summary: &Summary, note: &str) {
    println!(
        "{label:<48} median {:>10.3?}  p90 {:>10.3?}  ({} turns){note}",
        summary.median, summary.p90, summary.samples
    );
}

fn median_allocations(samples: &[TurnSample]) -> u64 {
    let mut counts: Vec<u64> = samples.iter().map(|s| s.allocations).collect();
    counts.sort_unstable();
    counts.get(counts.len() / 2).copied().unwrap_or_default()
}

/// The wall-time line of `samples`, plus CPU time and allocations of the driving thread.
fn report(label: &str, samples: &[TurnSample], note: &str) {
    let wall = summarize(samples.iter().map(|s| s.wall).collect());
    line(label, &wall, note);
    let cpu = summarize(samples.iter().map(|s| s.cpu).collect());
    println!(
        "{:<48} median {:>10.3?}  p90 {:>10.3?}  ({} allocations/step at median)",
        "    thread CPU time per step",
        cpu.median,
        cpu.p90,
        median_allocations(samples)
    );
}

pub fn run() -> anyhow::Result<()> {
    counting::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "method: one thread; per step = (followup → idle) / {STEPS}; {AGENTS} agents × {TURNS_PER_AGENT} turns"
    );
    if let Some(load) = load_average() {
        println!("machine load average at start (1/5/15 min): {load}");
    }
    let bare = runtime.block_on(measure(Persistence::None, AGENTS))?;
    let verdict = |d: Duration| {
        if d <= BUDGET_PER_STEP {
            "within"
        } else {
            "OVER"
        }
    };
    let wall = summarize(bare.iter().map(|s| s.wall).collect()).median;
    let cpu = summarize(bare.iter().map(|s| s.cpu).collect()).median;
    report(
        "per step, no persistence, all turns",
        &bare,
        &format!(
            "  {} the 50 µs budget at median (CPU time: {})",
            verdict(wall),
            verdict(cpu)
        ),
    );
    for turn_index in [0, TURNS_PER_AGENT - 1] {
        let of_turn: Vec<TurnSample> = bare
            .iter()
            .filter(|s| s.turn_index == turn_index)
            .copied()
            .collect();
        let history = turn_index * 2 * STEPS;
        report(
            &format!(
                "  turn {} only (history {}→{} messages)",
                turn_index + 1,
                history,
                history + 2 * STEPS
            ),
            &of_turn,
            "",
        );
    }
    let stored = runtime.block_on(measure(Persistence::Jsonl, AGENTS))?;
    report("per step, JSONL store (zstd, write-behind)", &stored, "");
    // Each step flushes durably (fsync) twice here, so fewer turns are enough.
    let checkpointed = runtime.block_on(measure(Persistence::JsonlCheckpoints, 2))?;
    report(
        "per step, JSONL store + checkpoint policy",
        &checkpointed,
        "",
    );
    println!("    command: cargo run --release -p dsh-bench -- agent-step");
    Ok(())
}

/// The first three fields of `/proc/loadavg`: on a shared machine the wall figures depend
/// on them.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}
