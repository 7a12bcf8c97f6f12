//! Running one hook: `sh -c <command>` in its own process group, the payload on stdin, a
//! deadline, and stdout/stderr kept up to a bound (the rest is drained and dropped).
//!
//! Nothing here fails: a hook that cannot start, is killed, or times out has no exit code,
//! and the reason is in its stderr. On timeout or cancellation the whole group is killed.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// How long output may keep flowing after the shell exited (something it started in the
/// background may hold the pipes open).
const EXIT_DRAIN: Duration = Duration::from_millis(500);

/// What to run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub command: String,
    pub stdin: Vec<u8>,
    pub cwd: PathBuf,
    /// The complete environment.
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Duration,
    pub max_output_bytes: usize,
}

/// How it went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOutput {
    /// `None` after a kill, a timeout or a failure to start.
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub duration: Duration,
}

/// Kills the group unless the shell was reaped.
struct GroupGuard(Option<Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

pub async fn run(spec: RunSpec, cancel: &CancellationToken) -> RunOutput {
    let started = Instant::now();
    let mut output = run_inner(spec, cancel).await;
    output.duration = started.elapsed();
    output
}

async fn run_inner(spec: RunSpec, cancel: &CancellationToken) -> RunOutput {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            return RunOutput {
                stderr: format!("cannot start `sh -c` in {}: {error}", spec.cwd.display()),
                ..RunOutput::default()
            }
        }
    };
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let mut guard = GroupGuard(pgid);
    if let Some(mut stdin) = child.stdin.take() {
        let input = spec.stdin;
        // A hook that never reads its stdin must not block us; EPIPE is fine.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
    }
    let max = spec.max_output_bytes;
    let stdout = child
        .stdout
        .take()
        .map(|s| tokio::spawn(read_bounded(s, max)));
    let stderr = child
        .stderr
        .take()
        .map(|s| tokio::spawn(read_bounded(s, max)));

    let mut timed_out = false;
    let mut note = None;
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        () = tokio::time::sleep(spec.timeout) => {
            timed_out = true;
            note = Some(format!("hook timed out after {} ms", spec.timeout.as_millis()));
            None
        }
        () = cancel.cancelled() => {
            note = Some("hook cancelled".to_owned());
            None
        }
    };
    if status.is_none() {
        if let Some(pgid) = pgid {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        let _ = child.wait().await;
    }
    guard.0 = None;
    let collect = |task: Option<tokio::task::JoinHandle<String>>| async move {
        match task {
            Some(task) => tokio::time::timeout(EXIT_DRAIN, task)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default(),
            None => String::new(),
        }
    };
    let stdout = collect(stdout).await;
    let mut stderr = collect(stderr).await;
    if let Some(note) = note {
        if !stderr.is_empty() {
            stderr.push('\n');
        }
        stderr.push_str(&note);
    }
    RunOutput {
        exit_code: status.and_then(|s| s.code()),
        stdout,
        stderr,
        timed_out,
        duration: Duration::ZERO,
    }
}

/// Reads to end of file, keeping the first `max` bytes.
async fn read_bounded(mut reader: impl AsyncRead + Unpin, max: usize) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = max.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
