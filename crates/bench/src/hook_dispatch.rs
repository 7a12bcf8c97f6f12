//! `hook-dispatch`: what the hooks bridge costs around a tool call, apart from the hook
//! process itself.
//!
//! Cases, all through `Hooks::fire` for a `PreToolUse` of `bash` with a realistic payload:
//! - `no-match`: 20 groups whose matchers (literal lists and regexes) all miss — the cost
//!   every tool call pays when hooks are configured but none applies;
//! - `decide (no process)`: payload building, output decoding and merging for one matching
//!   hook, without a process (what a matched call adds beyond the process);
//! - `match, hook = true` and `sh -c true alone`: one matching hook running `true`, and the
//!   same process through the runner directly; their difference is the bridge's own share.

use crate::stats::{report, summarize};
use dsh_hooks::codec::decode;
use dsh_hooks::config::{Dialect, HooksConfig};
use dsh_hooks::event::HookEvent;
use dsh_hooks::hooks::{payload, Hooks, PointContext, Subject};
use dsh_hooks::merge::merge;
use dsh_hooks::parse::{parse_file, Substitutions};
use dsh_hooks::runner::{run as run_hook, RunSpec};
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const BENCH: &str = "hook-dispatch";
const FAST_RUNS: usize = 20_000;
const PROCESS_RUNS: usize = 300;

fn table(text: &str, env: &[(OsString, OsString)]) -> anyhow::Result<Hooks> {
    let mut notices = Vec::new();
    let groups = parse_file(
        Path::new("bench.json"),
        text,
        Dialect::ClaudeCode,
        &Substitutions::default(),
        &mut notices,
    );
    anyhow::ensure!(notices.is_empty(), "bench file: {notices:?}");
    Ok(Hooks::from_groups(
        groups,
        notices,
        HooksConfig::default(),
        env,
    ))
}

fn point(cwd: &Path) -> PointContext {
    PointContext {
        session_id: "session-bench".into(),
        transcript_path: String::new(),
        cwd: cwd.to_path_buf(),
        turn: None,
        log: None,
        model: String::new(),
        cancel: CancellationToken::new(),
    }
}

fn extra(_: Dialect) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("tool_name".into(), "Bash".into());
    map.insert(
        "tool_input".into(),
        json!({"command": "cargo test -p dsh-hooks --locked", "description": "run the tests"}),
    );
    map.insert("tool_use_id".into(), "call_0".into());
    map
}

pub fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let env: Vec<(OsString, OsString)> = vec![(
        "PATH".into(),
        std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
    )];
    let dir = tempfile::tempdir()?;
    let point = point(dir.path());
    let subject = Subject {
        name: Some("bash"),
        claude_alias: Some("Bash"),
    };

    let groups: Vec<Value> = (0..20)
        .map(|i| {
            let matcher = if i % 2 == 0 {
                format!("Write|Edit|Tool{i}")
            } else {
                format!("^mcp__server{i}__.*")
            };
            json!({"matcher": matcher, "hooks": [{"command": "true"}]})
        })
        .collect();
    let misses = table(&json!({"hooks": {"PreToolUse": groups}}).to_string(), &env)?;
    let samples = runtime.block_on(async {
        let mut samples = Vec::with_capacity(FAST_RUNS);
        for _ in 0..FAST_RUNS {
            let start = Instant::now();
            let fired = misses
                .fire(HookEvent::PreToolUse, subject, &point, &extra)
                .await;
            samples.push(start.elapsed());
            std::hint::black_box(fired);
        }
        samples
    });
    report(BENCH, "no-match (20 groups)", &summarize(samples));

    let stdout = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
    let mut samples = Vec::with_capacity(FAST_RUNS);
    for _ in 0..FAST_RUNS {
        let start = Instant::now();
        let bytes = Value::Object(payload(
            HookEvent::PreToolUse,
            Dialect::ClaudeCode,
            &point,
            &extra,
        ))
        .to_string();
        let outcome = decode(HookEvent::PreToolUse, Some(0), stdout, "");
        let merged = merge([&outcome]);
        samples.push(start.elapsed());
        std::hint::black_box((bytes, merged));
    }
    report(
        BENCH,
        "decide (payload + decode + merge, no process)",
        &summarize(samples),
    );

    let one = table(
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": "true"}]}]}})
            .to_string(),
        &env,
    )?;
    let spec = RunSpec {
        command: "true".into(),
        stdin: b"{}\n".to_vec(),
        cwd: dir.path().to_path_buf(),
        env: env.clone(),
        timeout: Duration::from_secs(30),
        max_output_bytes: 1024 * 1024,
    };
    let (with_bridge, alone) = runtime.block_on(async {
        let mut with_bridge = Vec::with_capacity(PROCESS_RUNS);
        let mut alone = Vec::with_capacity(PROCESS_RUNS);
        for i in 0..PROCESS_RUNS + 20 {
            let start = Instant::now();
            let fired = one
                .fire(HookEvent::PreToolUse, subject, &point, &extra)
                .await;
            let a = start.elapsed();
            let start = Instant::now();
            let out = run_hook(spec.clone(), &CancellationToken::new()).await;
            let b = start.elapsed();
            std::hint::black_box((fired, out));
            if i >= 20 {
                with_bridge.push(a);
                alone.push(b);
            }
        }
        (with_bridge, alone)
    });
    let with_bridge = summarize(with_bridge);
    let alone = summarize(alone);
    report(
        BENCH,
        "match, hook = true (through Hooks::fire)",
        &with_bridge,
    );
    report(BENCH, "sh -c true alone (runner only)", &alone);
    println!(
        "{:<44} {:>10.3?} at the median",
        "bridge share of a matched call",
        with_bridge.median.saturating_sub(alone.median)
    );
    Ok(())
}
