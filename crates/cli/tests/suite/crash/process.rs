//! Driving one `dsh` child: spawn it with its output drained, pick and reach a kill point,
//! send SIGKILL, and collect what it printed.

use super::super::run_support::{text, Sandbox};
use dsh_session::SessionEvent;
use dsh_testkit::mock_llm::MockServer;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Upper bound for any single wait on the child or the server (a hang is a failure).
const PATIENCE: Duration = Duration::from_secs(30);

/// What an uninterrupted run looks like, to spread kill points over it.
#[derive(Clone, Debug)]
pub struct Profile {
    /// From spawn to exit.
    pub duration: Duration,
    /// Complete stdout lines.
    pub lines: usize,
    /// Model requests.
    pub requests: usize,
}

/// When to send SIGKILL.
#[derive(Clone, Copy, Debug)]
pub enum KillPoint {
    /// This long after spawning: anywhere from right after start to the end.
    After(Duration),
    /// Once this many stdout lines were printed, plus a little: lands between any two
    /// events, mid-stream and mid-tool included.
    AtLine(usize, Duration),
    /// Once the server received this many requests, plus a little: mid-stream.
    AtRequest(usize, Duration),
}

impl KillPoint {
    pub fn pick(rng: &mut fastrand::Rng, profile: &Profile) -> Self {
        let run_ms = u64::try_from(profile.duration.as_millis()).unwrap_or(u64::MAX);
        match rng.u8(0..3) {
            0 => Self::After(Duration::from_millis(rng.u64(0..=run_ms))),
            1 => Self::AtLine(
                rng.usize(1..=profile.lines.max(1)),
                Duration::from_micros(rng.u64(0..3_000)),
            ),
            _ => Self::AtRequest(
                rng.usize(1..=profile.requests.max(1)),
                Duration::from_micros(rng.u64(0..40_000)),
            ),
        }
    }
}

/// A `dsh` child with its stdout and stderr drained by threads; stdout lines are counted
/// as they arrive so a kill can wait for the n-th one.
pub struct Running {
    child: Child,
    started: Instant,
    lines_seen: mpsc::UnboundedReceiver<usize>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Running {
    pub fn spawn(sandbox: &Sandbox, args: &[String]) -> Self {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = sandbox.command(&args);
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = command.spawn().unwrap();
        let (tx, lines_seen) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut all = Vec::new();
            let mut count = 0;
            loop {
                match reader.read_until(b'\n', &mut all) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if all.ends_with(b"\n") => {
                        count += 1;
                        let _ = tx.send(count);
                    }
                    Ok(_) => {}
                }
            }
            all
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = stderr.read_to_end(&mut all);
            all
        });
        Self {
            child,
            started,
            lines_seen,
            stdout: Some(stdout),
            stderr: Some(stderr),
        }
    }

    /// Waits for `point` (or for the child to finish first), then sends SIGKILL.
    pub async fn kill_at(&mut self, point: KillPoint, server: &MockServer) {
        let reached = async {
            match point {
                KillPoint::After(delay) => tokio::time::sleep(delay).await,
                KillPoint::AtLine(line, extra) => {
                    while let Some(seen) = self.lines_seen.recv().await {
                        if seen >= line {
                            break;
                        }
                    }
                    tokio::time::sleep(extra).await;
                }
                KillPoint::AtRequest(count, extra) => {
                    tokio::select! {
                        _ = server.wait_for_requests(count) => {}
                        // The child exits (closing stdout) if it never gets that far.
                        _ = async { while self.lines_seen.recv().await.is_some() {} } => {}
                    }
                    tokio::time::sleep(extra).await;
                }
            }
        };
        tokio::time::timeout(PATIENCE, reached)
            .await
            .expect("the kill point never came and the child did not exit");
        // SIGKILL; a child that already exited is just reaped.
        self.child.kill().unwrap();
        self.wait().await;
    }

    /// Waits for the child to exit; its exit code (`None` when killed by a signal).
    pub async fn wait(&mut self) -> Option<i32> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "dsh did not exit in time");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Time since spawning.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Collects what the child printed.
    pub fn finish(mut self) -> Printed {
        let stdout = self.stdout.take().unwrap().join().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        // A line cut by the kill has no newline: ignore it.
        let complete = match stdout.iter().rposition(|&b| b == b'\n') {
            Some(end) => &stdout[..=end],
            None => &[][..],
        };
        let lines = text(complete)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect();
        Printed {
            lines,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Never leave a child behind when an assertion fails mid-iteration.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The complete JSON lines a run printed, and its stderr.
pub struct Printed {
    pub lines: Vec<Value>,
    pub stderr: String,
}

impl Printed {
    pub fn session_id(&self) -> Option<String> {
        let first = self.lines.first()?;
        (first["type"] == "session").then(|| first["id"].as_str().unwrap().to_owned())
    }

    /// The printed session events, in order.
    pub fn events(&self) -> Vec<Arc<SessionEvent>> {
        self.lines
            .iter()
            .filter(|line| line["type"] != "session" && line["type"] != "result")
            .map(|line| {
                let event = SessionEvent::from_value(line)
                    .unwrap_or_else(|e| panic!("a printed line is not an event: {e}: {line}"));
                Arc::new(event)
            })
            .collect()
    }

    /// Every printed event that is also stored must be stored exactly as printed. (The
    /// process prints events as they are appended, so it may have printed more than it
    /// made durable, or — output being separate from the log — less.)
    #[track_caller]
    pub fn assert_agrees_with(&self, stored: &[Arc<SessionEvent>]) {
        for event in self.events() {
            let seq = usize::try_from(event.seq).unwrap();
            if let Some(on_disk) = stored.get(seq) {
                assert_eq!(*on_disk, event, "printed and stored seq {seq} differ");
            }
        }
    }
}
