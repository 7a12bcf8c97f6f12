//! The bash tool: output, markers, timeouts, cancellation, spill and the child environment.

use std::time::Duration;

use dsh_tools::{Tool, Typed};
use dsh_tools_builtin::scrub::env_pair;
use dsh_tools_builtin::{Bash, BashArgs, Limits, SandboxMode, ToolOutput};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{base_env, eventually, fast_limits, process_gone, Fixture};

fn args(command: &str) -> BashArgs {
    BashArgs {
        command: command.into(),
        description: "test".into(),
        timeout_ms: None,
        workdir: None,
        run_in_background: false,
    }
}

async fn run(fx: &Fixture, command: &str) -> ToolOutput {
    Bash.run(args(command), &fx.env, CancellationToken::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn success_returns_interleaved_output_and_metadata() {
    let fx = Fixture::new();
    let out = run(&fx, "echo one; echo two >&2; echo three").await;
    assert_eq!(out.content, "one\ntwo\nthree\n");
    assert_eq!(
        out.metadata,
        json!({
            "exitCode": 0, "signal": null, "timedOut": false, "timeoutMs": 120000,
            "truncated": false, "outputBytes": 14, "spillPath": null,
            "workdir": fx.ws().display().to_string(), "sandbox": "landlock+namespace",
            "sandboxDenied": false, "sandboxNotice": null
        })
    );
}

#[tokio::test]
async fn nonzero_exit_and_signal_markers() {
    let fx = Fixture::new();
    let out = run(&fx, "echo bad; exit 3").await;
    assert_eq!(out.content, "bad\n[exit code: 3]");
    assert_eq!(out.metadata["exitCode"], 3);
    let out = run(&fx, "kill -SEGV $$").await;
    assert_eq!(out.content, "(no output)\n[signal: SIGSEGV]");
    assert_eq!(out.metadata["signal"], "SIGSEGV");
}

#[tokio::test]
async fn runs_in_a_fresh_shell_in_the_workspace_or_workdir() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.ws().join("sub")).unwrap();
    assert_eq!(
        run(&fx, "pwd").await.content,
        format!("{}\n", fx.ws().display())
    );
    let out = Bash
        .run(
            BashArgs {
                workdir: Some("sub".into()),
                run_in_background: false,
                ..args("pwd; X=1")
            },
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out.content, format!("{}\n", fx.ws().join("sub").display()));
    assert_eq!(run(&fx, "echo \"[$X]\"").await.content, "[]\n");
}

#[tokio::test]
async fn workdir_outside_the_roots_is_refused() {
    let fx = Fixture::new();
    let err = Bash
        .run(
            BashArgs {
                workdir: Some("/".into()),
                run_in_background: false,
                ..args("pwd")
            },
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "WORKDIR_OUTSIDE_ROOTS");
}

#[tokio::test]
async fn secrets_are_scrubbed_from_env_and_output_and_facts_exported() {
    let fx = Fixture::with(|b| {
        let mut env = base_env();
        env.push(env_pair("FOO_API_KEY", "sk-fake-key-0123456789"));
        env.push(env_pair("DSH_SESSION_ID", "inherited-stale"));
        b.base_env(env).secret("configured-secret-value")
    });
    let out = run(&fx, "echo \"key=[${FOO_API_KEY:-unset}]\"; env | grep -c FOO_API_KEY; echo $DSH_SESSION_ID; echo $TMPDIR").await;
    assert_eq!(
        out.content,
        format!("key=[unset]\n0\nsess-1\n{}\n", fx.env.temp_dir().display())
    );
    // a secret that reaches the output some other way is redacted
    let out = run(&fx, "echo sk-fake-key-0123456789 configured-secret-value").await;
    assert_eq!(out.content, "[REDACTED] [REDACTED]\n");
}

#[tokio::test]
async fn large_output_is_spilled_with_head_and_tail_preview() {
    let fx = Fixture::with(|b| {
        b.limits(Limits {
            inline_output_bytes: 1000,
            preview_head_bytes: 100,
            preview_tail_bytes: 200,
            ..fast_limits()
        })
    });
    let out = run(&fx, "seq 1 2000").await;
    let expected: String = (1..=2000).map(|i| format!("{i}\n")).collect();
    let spill = out.metadata["spillPath"].as_str().unwrap().to_string();
    assert!(spill.starts_with(&fx.env.spill_dir().display().to_string()));
    assert_eq!(std::fs::read_to_string(&spill).unwrap(), expected);
    let head = &expected[..100];
    let tail = &expected[expected.len() - 200..];
    let omitted = expected.len() - 300;
    assert_eq!(
        out.content,
        format!(
            "{head}\n[output truncated: {} bytes total, {omitted} bytes omitted here; full output saved to {spill}]\n{tail}",
            expected.len()
        )
    );
    assert_eq!(out.metadata["truncated"], true);
    assert_eq!(out.metadata["outputBytes"], expected.len());
}

/// Starts `sh -c 'sleep 300 & echo $! > grandchild.pid; wait'` under bash and returns the pids.
fn tree_command(fx: &Fixture) -> String {
    let dir = fx.ws().display();
    format!("echo $$ > {dir}/child.pid; sh -c 'sleep 300 & echo $! > {dir}/grandchild.pid; wait'")
}

fn read_pid(fx: &Fixture, name: &str) -> Option<i32> {
    std::fs::read_to_string(fx.ws().join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let fx = Fixture::new();
    let out = Bash
        .run(
            BashArgs {
                timeout_ms: Some(700),
                ..args(&tree_command(&fx))
            },
            &fx.env,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.content,
        "(no output)\n[timeout: the command ran longer than 700 ms and was killed]"
    );
    assert_eq!(out.metadata["timedOut"], true);
    let child = read_pid(&fx, "child.pid").unwrap();
    let grandchild = read_pid(&fx, "grandchild.pid").unwrap();
    assert!(
        eventually(|| process_gone(child)).await,
        "child {child} survived"
    );
    assert!(
        eventually(|| process_gone(grandchild)).await,
        "grandchild {grandchild} survived"
    );
}

#[tokio::test]
async fn cancel_kills_the_tree_and_reports_aborted() {
    let fx = Fixture::new();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let pid_path = fx.ws().join("grandchild.pid");
    tokio::spawn(async move {
        for _ in 0..200 {
            if pid_path.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        trigger.cancel();
    });
    let err = Bash
        .run(args(&tree_command(&fx)), &fx.env, cancel)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ABORTED");
    let child = read_pid(&fx, "child.pid").unwrap();
    let grandchild = read_pid(&fx, "grandchild.pid").unwrap();
    assert!(eventually(|| process_gone(child)).await);
    assert!(eventually(|| process_gone(grandchild)).await);
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_call() {
    let fx = Fixture::new();
    let dir = fx.ws().display().to_string();
    let out = run(
        &fx,
        &format!("sleep 300 & echo $! > {dir}/bg.pid; echo started"),
    )
    .await;
    assert_eq!(out.content, "started\n");
    let bg = read_pid(&fx, "bg.pid").unwrap();
    assert!(eventually(|| process_gone(bg)).await);
}

#[tokio::test]
async fn empty_command_is_invalid() {
    let fx = Fixture::new();
    let err = Bash
        .run(args("  "), &fx.env, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_TOOL_ARGUMENTS");
    let problem = Typed(Bash)
        .check_arguments(&json!({"description": "x"}))
        .unwrap_err();
    assert_eq!(problem, "missing field `command`");
}

#[tokio::test]
async fn an_argument_list_too_long_says_so_and_what_to_do() {
    // 20 MB: past both the per-argument and the total limit of execve (E2BIG), which used to
    // be reported as "the sandbox itself failed".
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::DangerFullAccess] {
        let fx = Fixture::mode(mode);
        let command = format!("echo {}", "x".repeat(20 << 20));
        let err = Bash
            .run(args(&command), &fx.env, CancellationToken::new())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "ARGUMENT_LIST_TOO_LONG", "{mode}: {err}");
        assert_eq!(err.name(), "SpawnError");
        let message = err.to_string();
        for part in [
            "the command is too long to start",
            "(E2BIG)",
            "its longest argument alone is 20971526 bytes, and Linux accepts at most 131072 bytes in one argument",
            "write it to a file with the write tool and run a script",
        ] {
            assert!(message.contains(part), "{mode}: {part:?} missing from {message}");
        }
    }
}

#[tokio::test]
async fn dropping_the_call_kills_the_tree() {
    let fx = Fixture::new();
    let command = tree_command(&fx);
    let call = Bash.run(args(&command), &fx.env, CancellationToken::new());
    // the caller gives up (its own timeout) and drops the future mid-run
    let pid_path = fx.ws().join("grandchild.pid");
    let result = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            _ = call => {}
            _ = async { while !pid_path.exists() { tokio::time::sleep(Duration::from_millis(20)).await } } => {}
        }
    })
    .await;
    assert!(result.is_ok());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let child = read_pid(&fx, "child.pid").unwrap();
    let grandchild = read_pid(&fx, "grandchild.pid").unwrap();
    assert!(eventually(|| process_gone(child)).await);
    assert!(eventually(|| process_gone(grandchild)).await);
}

#[tokio::test]
async fn commands_lead_their_own_session_without_a_terminal() {
    let fx = Fixture::new();
    let out = run(
        &fx,
        "read -r pid comm state ppid pgrp sid rest < /proc/$$/stat; [ \"$pid\" = \"$sid\" ] && [ \"$pid\" = \"$pgrp\" ] && echo leader; (: < /dev/tty) 2>/dev/null || echo no-tty",
    )
    .await;
    assert_eq!(out.content, "leader\nno-tty\n");
}
