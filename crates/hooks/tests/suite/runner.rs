//! One real `sh -c` process per hook.

use dsh_hooks::runner::{run, RunSpec};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn spec(command: &str) -> RunSpec {
    RunSpec {
        command: command.into(),
        stdin: b"{\"a\":1}\n".to_vec(),
        cwd: std::env::temp_dir(),
        env: vec![("PATH".into(), std::env::var_os("PATH").unwrap())],
        timeout: Duration::from_secs(30),
        max_output_bytes: 1024,
    }
}

#[tokio::test]
async fn stdin_reaches_the_hook_and_exit_codes_and_streams_come_back() {
    let out = run(spec("cat; echo err >&2; exit 3"), &CancellationToken::new()).await;
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.stdout, "{\"a\":1}\n");
    assert_eq!(out.stderr, "err\n");
    assert!(!out.timed_out);
}

#[tokio::test]
async fn output_is_bounded_and_the_rest_drained() {
    let out = run(
        spec("head -c 300000 /dev/zero | tr '\\0' x; head -c 300000 /dev/zero | tr '\\0' y >&2"),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(out.exit_code, Some(0));
    assert_eq!(out.stdout.len(), 1024);
    assert_eq!(out.stderr.len(), 1024);
}

#[tokio::test]
async fn a_hanging_hook_is_killed_with_its_process_group_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("survived");
    let mut spec = spec(&format!("(sleep 2; touch {}) & sleep 30", marker.display()));
    spec.timeout = Duration::from_millis(200);
    let out = run(spec, &CancellationToken::new()).await;
    assert_eq!(out.exit_code, None);
    assert!(out.timed_out);
    assert!(
        out.stderr.contains("hook timed out after 200 ms"),
        "{}",
        out.stderr
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!marker.exists(), "the background child outlived the kill");
}

#[tokio::test]
async fn cancelling_kills_the_hook_and_a_bad_cwd_is_an_error_not_a_crash() {
    let token = CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let out = run(spec("sleep 30"), &token).await;
    assert_eq!(out.exit_code, None);
    assert!(out.stderr.contains("hook cancelled"));

    let mut bad = spec("true");
    bad.cwd = "/nonexistent/dir".into();
    let out = run(bad, &CancellationToken::new()).await;
    assert_eq!(out.exit_code, None);
    assert!(out.stderr.contains("cannot start"), "{}", out.stderr);
}
