//! Kernel confinement of bash commands (Landlock + a private mount namespace), and the same
//! policy in the in-process file tools. The test workspace lives under /tmp on purpose.

use dsh_tools_builtin::sandbox::{Enforcement, SandboxProbe};
use dsh_tools_builtin::{Bash, BashArgs, SandboxMode, ToolOutput};
use tokio_util::sync::CancellationToken;

use super::support::Fixture;

/// Skips (with a printed reason) when the kernel cannot enforce `mode` fully.
fn supported(mode: SandboxMode) -> bool {
    let probe = SandboxProbe::current();
    let ok = probe.enforcement(mode) == Enforcement::Full;
    if !ok {
        eprintln!("skipping: kernel cannot fully enforce {mode}: {probe:?}");
    }
    ok
}

async fn sh(fx: &Fixture, command: &str) -> ToolOutput {
    let args = BashArgs {
        command: command.into(),
        description: String::new(),
        timeout_ms: None,
        workdir: None,
        run_in_background: false,
    };
    Bash.run(args, &fx.env, CancellationToken::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn workspace_write_allows_workspace_and_private_tmp() {
    if !supported(SandboxMode::WorkspaceWrite) {
        return;
    }
    let fx = Fixture::new();
    let out = sh(&fx, "echo hi > a.txt && mkdir -p d/e && echo x > d/e/f && echo t > \"$TMPDIR/t\" && mktemp >/dev/null && cat a.txt").await;
    assert_eq!(out.content, "hi\n");
    assert_eq!(
        std::fs::read_to_string(fx.env.temp_dir().join("t")).unwrap(),
        "t\n"
    );
}

#[tokio::test]
async fn workspace_write_denies_writes_outside_even_next_to_the_workspace_in_tmp() {
    if !supported(SandboxMode::WorkspaceWrite) {
        return;
    }
    let fx = Fixture::new();
    let outside = fx.outside().join("escaped.txt");
    let out = sh(&fx, &format!("echo x > {}", outside.display())).await;
    assert!(!outside.exists());
    // the read-only mount refuses it before Landlock is asked
    assert!(
        out.content.contains("Read-only file system"),
        "{}",
        out.content
    );
    assert!(
        out.content
            .ends_with("[exit code: 1]\n[sandbox: file access denied under workspace-write mode]"),
        "{}",
        out.content
    );
    assert_eq!(out.metadata["sandboxDenied"], true);
    // /tmp itself is not granted
    let out = sh(&fx, "f=/tmp/dsh-escape-$$; echo x > $f; ls $f").await;
    assert_eq!(out.metadata["exitCode"], 2, "{}", out.content);
}

#[tokio::test]
async fn workspace_write_keeps_git_read_only() {
    if !supported(SandboxMode::WorkspaceWrite) {
        return;
    }
    let fx = Fixture::new();
    fx.write(".git/config", "[core]\n");
    let out = sh(
        &fx,
        "echo evil >> .git/config; touch .git/new; mkdir .git/hooks2; rm .git/config; echo done",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(fx.ws().join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!fx.ws().join(".git/new").exists());
    assert!(!fx.ws().join(".git/hooks2").exists());
    assert!(
        out.content.contains("Read-only file system"),
        "{}",
        out.content
    );
    assert_eq!(out.metadata["sandbox"], "landlock+namespace");
    // from inside .git as the working directory too
    let args = BashArgs {
        command: "touch x".into(),
        description: String::new(),
        timeout_ms: None,
        workdir: Some(".git".into()),
        run_in_background: false,
    };
    let out = Bash
        .run(args, &fx.env, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.metadata["exitCode"], 1, "{}", out.content);
    assert!(!fx.ws().join(".git/x").exists());
    // the rest of the workspace stays writable
    assert_eq!(
        sh(&fx, "echo ok > ok.txt && cat ok.txt").await.content,
        "ok\n"
    );
}

#[tokio::test]
async fn read_only_denies_every_write_but_allows_reads() {
    if !supported(SandboxMode::ReadOnly) {
        return;
    }
    let fx = Fixture::mode(SandboxMode::ReadOnly);
    fx.write("a.txt", "content\n");
    let out = sh(
        &fx,
        "cat a.txt; echo x > b.txt; echo y > \"$TMPDIR/t\"; echo z > /dev/null && echo null-ok",
    )
    .await;
    assert!(!fx.ws().join("b.txt").exists());
    assert!(!fx.env.temp_dir().join("t").exists());
    assert!(out.content.starts_with("content\n"), "{}", out.content);
    assert!(out.content.contains("null-ok"), "{}", out.content);
}

#[tokio::test]
async fn danger_full_access_is_unconfined() {
    let fx = Fixture::mode(SandboxMode::DangerFullAccess);
    let outside = fx.outside().join("free.txt");
    let out = sh(&fx, &format!("echo x > {}", outside.display())).await;
    assert_eq!(out.metadata["sandbox"], "none");
    assert!(outside.exists());
}

#[tokio::test]
async fn symlinks_cannot_smuggle_writes_out_of_the_workspace() {
    if !supported(SandboxMode::WorkspaceWrite) {
        return;
    }
    let fx = Fixture::new();
    std::os::unix::fs::symlink(fx.outside(), fx.ws().join("escape")).unwrap();
    let out = sh(&fx, "echo x > escape/smuggled.txt").await;
    assert!(!fx.outside().join("smuggled.txt").exists());
    assert_eq!(out.metadata["sandboxDenied"], true, "{}", out.content);
}

#[tokio::test]
async fn the_probe_is_a_typed_value() {
    let probe = SandboxProbe::current();
    let value = serde_json::to_value(probe).unwrap();
    assert!(value["landlock"]["status"].is_string(), "{value}");
    assert!(value["namespaces"]["status"].is_string(), "{value}");
    // probing again gives the same answer
    assert_eq!(&SandboxProbe::detect(), probe);
}
