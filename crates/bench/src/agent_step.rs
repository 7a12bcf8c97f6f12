//! `agent-step`: the agent core's own cost per step, with a model and a tool that cost
//! nothing.
//!
//! One agent runs a turn of 200 steps: 199 replies that each call a no-op tool, then a
//! final text answer. The replies are prebuilt [`ScriptedAdapter`] entries (pushed before
//! the clock starts), so the in-process adapter only hands over a ready `Vec` of chunks. The
//! clock runs from `followup` to `when_idle`; the figure is that time divided by the number
//! of steps, i.e. everything the loop does per step: opening the step, the request hook
//! chain, `prepare_call`, header checks, history derivation, appending every chunk and
//! folding it, assembling and appending the assistant message, the tool pipeline and the
//! tool result. Each agent runs several turns in a row (the history keeps growing, as in a
//! real session); a fresh agent per group. Everything runs on one thread.
//!
//! Budget: ≤ 50 µs per step at the median, without persistence. The same turn with the
//! JSONL store attached (zstd, temp dir, default write-behind), and with the store plus the
//! checkpoint policy that the `dsh` composition mounts, is reported for information.

use crate::core_stack::{agent_options, check_last_turn, err, reply, Core, Persistence};
use crate::stats::{summarize, Summary};
use dsh_agent::CreateAgentOptions;
use dsh_protocol::{Message, SessionId};
use dsh_testkit::scripted::{ScriptEntry, ScriptedAdapter};
use std::sync::Arc;
use std::time::{Duration, Instant};

const STEPS: usize = 200;
const AGENTS: usize = 6;
const TURNS_PER_AGENT: usize = 3;
const BUDGET_PER_STEP: Duration = Duration::from_micros(50);

/// Runs `AGENTS` × `TURNS_PER_AGENT` measured turns (after one warm-up turn); returns the
/// per-step time of each.
async fn measure(persistence: Persistence, agents: usize) -> anyhow::Result<Vec<Duration>> {
    let adapter = Arc::new(ScriptedAdapter::new([]));
    let core = Core::mount(adapter.clone(), persistence)?;
    let mut per_step = Vec::with_capacity(agents * TURNS_PER_AGENT);
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
        for _ in 0..turns {
            for step in 1..=STEPS {
                adapter.push(ScriptEntry::Chunks(reply(step, STEPS)));
            }
            let started = Instant::now();
            agent
                .followup(Message::user_text("Call the tool until done."))
                .map_err(err)?;
            agent.when_idle().await;
            let elapsed = started.elapsed();
            check_last_turn(agent.as_ref(), STEPS)?;
            if index > 0 {
                per_step.push(elapsed / STEPS as u32);
            }
        }
        handle.dispose().await;
    }
    anyhow::ensure!(adapter.remaining() == 0, "script entries left over");
    Ok(per_step)
}

fn line(label: &str, summary: &Summary, note: &str) {
    println!(
        "{label:<44} median {:>10.3?}  p90 {:>10.3?}  ({} turns){note}",
        summary.median, summary.p90, summary.samples
    );
}

pub fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "method: one thread; per step = (followup → idle) / {STEPS}; {TURNS_PER_AGENT} turns per agent"
    );
    let bare = summarize(runtime.block_on(measure(Persistence::None, AGENTS))?);
    let verdict = if bare.median <= BUDGET_PER_STEP {
        "within"
    } else {
        "OVER"
    };
    line(
        "per step, no persistence",
        &bare,
        &format!("  {verdict} the 50 µs budget at median"),
    );
    let stored = summarize(runtime.block_on(measure(Persistence::Jsonl, AGENTS))?);
    line("per step, JSONL store (zstd, write-behind)", &stored, "");
    // Each step flushes durably (fsync) twice here, so fewer turns are enough.
    let checkpointed = summarize(runtime.block_on(measure(Persistence::JsonlCheckpoints, 2))?);
    line(
        "per step, JSONL store + checkpoint policy",
        &checkpointed,
        "",
    );
    println!("    command: cargo run --release -p dsh-bench -- agent-step");
    Ok(())
}
