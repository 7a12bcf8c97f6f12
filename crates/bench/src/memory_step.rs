//! `memory-step`: what the `memory` row adds to an agent step (issue 17's budget), alone.
//!
//! The last figure of the `memory` bench without its 10k-session index build: the
//! `agent-step` turn (200 steps, no-op tool, in-process model) with the JSONL store, then
//! the same with the `memory` plugin's live indexer alone, then with the whole row as `dsh`
//! mounts it (live indexer, five history tools, `remember`, `@session` references). The
//! cases alternate for `ROUNDS` rounds (each round a fresh core, 3 agents × 3 turns after a
//! warm-up), so load from elsewhere falls on all of them; each round's per-step median is
//! one sample. The figure is the driving thread's CPU time per step (the indexer runs on
//! its own thread), min / median / max over the rounds, and the difference of the medians.
//!
//! Budget (issue 17): a turn's overhead with indexing on ≤ 2 %. The whole row's figure is
//! printed beside it: its six tools make every request (and so every step) a little larger.

use crate::agent_step::{load_average, measure, TurnSample};
use crate::core_stack::Persistence;
use crate::counting;
use crate::stats::summarize;
use std::time::Duration;

const ROUNDS: usize = 5;
const AGENTS: usize = 3;

fn medians(samples: &[TurnSample]) -> (Duration, Duration) {
    (
        summarize(samples.iter().map(|s| s.wall).collect()).median,
        summarize(samples.iter().map(|s| s.cpu).collect()).median,
    )
}

fn spread(values: &[Duration]) -> String {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    format!(
        "min {:>9.3?}  median {:>9.3?}  max {:>9.3?}",
        sorted.first().copied().unwrap_or_default(),
        median,
        sorted.last().copied().unwrap_or_default()
    )
}

pub fn run() -> anyhow::Result<()> {
    counting::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "method: agent-step turns (200 steps), JSONL store without memory / with its live indexer only / with the whole memory row, alternating; {ROUNDS} rounds × {AGENTS} agents × 3 turns"
    );
    if let Some(load) = load_average() {
        println!("machine load average at start (1/5/15 min): {load}");
    }
    let cases = [
        ("memory off,     ", Persistence::Jsonl),
        ("indexing on,    ", Persistence::JsonlIndexing),
        ("whole memory on,", Persistence::JsonlMemory),
    ];
    let mut cpu = vec![Vec::new(); cases.len()];
    let mut wall = vec![Vec::new(); cases.len()];
    for _ in 0..ROUNDS {
        for (i, (_, persistence)) in cases.iter().enumerate() {
            let (w, c) = medians(&runtime.block_on(measure(*persistence, AGENTS))?);
            wall[i].push(w);
            cpu[i].push(c);
        }
    }
    for (i, (label, _)) in cases.iter().enumerate() {
        println!("{label} thread CPU per step   {}", spread(&cpu[i]));
    }
    for (i, (label, _)) in cases.iter().enumerate() {
        println!("{label} wall per step         {}", spread(&wall[i]));
    }
    let median = |v: &[Duration]| {
        let mut sorted = v.to_vec();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied().unwrap_or_default()
    };
    let pct = |a: Duration, b: Duration| 100.0 * (b.as_secs_f64() / a.as_secs_f64() - 1.0);
    println!(
        "indexing on vs off at the median: {:+.1} % CPU, {:+.1} % wall (budget +2 %)",
        pct(median(&cpu[0]), median(&cpu[1])),
        pct(median(&wall[0]), median(&wall[1]))
    );
    println!(
        "whole memory row vs off at the median: {:+.1} % CPU, {:+.1} % wall (history tools, remember and references included)",
        pct(median(&cpu[0]), median(&cpu[2])),
        pct(median(&wall[0]), median(&wall[2]))
    );
    if let Some(load) = load_average() {
        println!("machine load average at end (1/5/15 min): {load}");
    }
    println!("    command: cargo run --release -p dsh-bench -- memory-step");
    Ok(())
}
