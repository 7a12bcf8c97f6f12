//! `sandbox-spawn`: what confining one bash command costs at start-up.
//!
//! Each sample is one whole `bash` tool call running `true` (fork, confinement, exec of
//! bash, wait, output collection) through the real `Bash` tool body. The unconfined
//! `danger-full-access` case is the baseline; the difference to each confined case is the
//! sandbox's own start cost (the namespace, its mounts and the Landlock ruleset). The
//! kernel probe runs once before the clock starts.

use crate::stats::{report, summarize, Summary};
use dsh_tools_builtin::{Bash, BashArgs, SandboxMode, SandboxProbe, ToolEnv};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const WARMUP: usize = 10;
const RUNS: usize = 400;
const BENCH: &str = "sandbox-spawn";

fn env(root: &Path, mode: SandboxMode, git: bool) -> anyhow::Result<ToolEnv> {
    let ws = root.join(format!("ws-{mode}-{git}"));
    std::fs::create_dir_all(&ws)?;
    if git {
        std::fs::create_dir_all(ws.join(".git"))?;
    }
    Ok(ToolEnv::builder(&ws)
        .temp_dir(root.join(format!("tmp-{mode}-{git}")))
        .spill_dir(root.join("spill"))
        .base_env(vec![(
            "PATH".into(),
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
        )])
        .sandbox_mode(mode)
        .build()?)
}

/// One call; returns its wall time and the sandbox label the result reports.
async fn one_call(env: &ToolEnv) -> anyhow::Result<(Duration, String)> {
    let args = BashArgs {
        command: "true".into(),
        description: String::new(),
        timeout_ms: None,
        workdir: None,
        run_in_background: false,
    };
    let start = Instant::now();
    let out = Bash.run(args, env, CancellationToken::new()).await?;
    let elapsed = start.elapsed();
    anyhow::ensure!(
        out.metadata["exitCode"] == 0,
        "the command failed: {}",
        out.content
    );
    let label = out.metadata["sandbox"].as_str().unwrap_or("?").to_owned();
    Ok((elapsed, label))
}

/// Samples every case in turn, round after round, so load from elsewhere on the machine
/// spreads evenly over the cases instead of skewing whichever ran during a burst.
async fn measure(envs: &[ToolEnv]) -> anyhow::Result<Vec<(Summary, String)>> {
    let mut labels = vec![String::new(); envs.len()];
    for _ in 0..WARMUP {
        for (env, label) in envs.iter().zip(labels.iter_mut()) {
            *label = one_call(env).await?.1;
        }
    }
    let mut samples = vec![Vec::with_capacity(RUNS); envs.len()];
    for _ in 0..RUNS {
        for (env, samples) in envs.iter().zip(samples.iter_mut()) {
            samples.push(one_call(env).await?.0);
        }
    }
    Ok(samples.into_iter().map(summarize).zip(labels).collect())
}

pub fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let probe = SandboxProbe::current();
    println!("probe: {}", serde_json::to_string(probe)?);
    let root = tempfile::tempdir()?;
    let root = root.path().canonicalize()?;
    let cases = [
        (
            "danger-full-access (baseline)",
            SandboxMode::DangerFullAccess,
            false,
        ),
        ("read-only", SandboxMode::ReadOnly, false),
        (
            "workspace-write, no .git",
            SandboxMode::WorkspaceWrite,
            false,
        ),
        (
            "workspace-write, with .git",
            SandboxMode::WorkspaceWrite,
            true,
        ),
    ];
    let envs = cases
        .iter()
        .map(|(_, mode, git)| env(&root, *mode, *git))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let results = runtime.block_on(measure(&envs))?;
    let baseline = results.first().map(|(s, _)| s.median).unwrap_or_default();
    for (i, ((name, _, _), (summary, label))) in cases.iter().zip(&results).enumerate() {
        report(BENCH, &format!("{name} [{label}]"), summary);
        if i > 0 {
            println!(
                "    sandbox start cost at the median: {:.3?}",
                summary.median.saturating_sub(baseline)
            );
        }
    }
    Ok(())
}
