//! Whole-process figures of a child process (wall time and peak RSS), measured from a small
//! helper process so that the bench's own memory does not leak into them.
//!
//! Linux keeps a process's peak RSS across `exec`: a child forked or vforked from this bench
//! starts with the bench's resident set as its high-water mark, so `wait4`'s `ru_maxrss`
//! reports the larger of the bench's RSS at the spawn and the child's own peak. After the
//! bench has held a 100k-event session in memory, that hides the child's figure entirely
//! (`/bin/true` spawned from a process holding 200 MiB reports 213 MiB).
//!
//! The [`Spawner`] re-executes this binary with [`HELPER_ARG`]; `exec` gives the helper a
//! fresh address space of a few MiB, and the children it forks start from that. The helper
//! reads one JSON request per line on stdin and answers one JSON line per child on stdout.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The argument that turns `dsh-bench` into the helper (not a bench name).
pub const HELPER_ARG: &str = "__child-process-helper";

/// The last bytes of a failed child's stderr kept for the error message.
const STDERR_TAIL: usize = 4096;

/// One child to run: the program, its arguments, working directory and extra environment.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChildCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
}

/// What one child cost, as the helper measured it.
#[derive(Debug, Serialize, Deserialize)]
pub struct ChildRun {
    /// `None` when it exited with status 0; else how it ended, with the tail of its stderr.
    pub failure: Option<String>,
    /// From spawn to reaped.
    pub wall: Duration,
    /// Its peak resident set (`ru_maxrss`), KiB.
    pub peak_rss_kib: i64,
}

/// Runs children through the helper process.
pub struct Spawner {
    helper: Child,
    /// `None` only while dropping: closing it tells the helper to exit.
    requests: Option<ChildStdin>,
    replies: BufReader<ChildStdout>,
}

impl Spawner {
    /// Starts the helper: this binary, re-executed with [`HELPER_ARG`].
    pub fn start() -> anyhow::Result<Spawner> {
        let exe = std::env::current_exe().context("locate dsh-bench for the spawn helper")?;
        let mut helper = Command::new(exe)
            .arg(HELPER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("start the spawn helper")?;
        let requests = helper.stdin.take().context("spawn helper stdin")?;
        let replies = BufReader::new(helper.stdout.take().context("spawn helper stdout")?);
        Ok(Spawner {
            helper,
            requests: Some(requests),
            replies,
        })
    }

    /// Runs `command` to completion in the helper and returns its figures.
    pub fn run(&mut self, command: &ChildCommand) -> anyhow::Result<ChildRun> {
        let mut line = serde_json::to_string(command)?;
        line.push('\n');
        let requests = self
            .requests
            .as_mut()
            .context("the spawn helper is closed")?;
        requests
            .write_all(line.as_bytes())
            .and_then(|()| requests.flush())
            .context("send a command to the spawn helper")?;
        let mut reply = String::new();
        let read = self
            .replies
            .read_line(&mut reply)
            .context("read the spawn helper's reply")?;
        anyhow::ensure!(read > 0, "the spawn helper exited without a reply");
        let reply: Result<ChildRun, String> =
            serde_json::from_str(&reply).context("parse the spawn helper's reply")?;
        reply.map_err(|error| anyhow::anyhow!("spawn helper: {error}"))
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // Closing stdin ends the helper's loop; reap it so no zombie outlives the bench.
        drop(self.requests.take());
        let _ = self.helper.wait();
    }
}

/// The helper's main loop: one request line in, one reply line out, until stdin closes.
pub fn helper_main() -> anyhow::Result<()> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let line = line.context("read a request")?;
        let reply: Result<ChildRun, String> = serde_json::from_str::<ChildCommand>(&line)
            .map_err(|error| format!("bad request: {error}"))
            .and_then(|command| run_child(&command).map_err(|error| format!("{error:#}")));
        let mut out = serde_json::to_string(&reply)?;
        out.push('\n');
        stdout.write_all(out.as_bytes())?;
        stdout.flush()?;
    }
    Ok(())
}

fn run_child(command: &ChildCommand) -> anyhow::Result<ChildRun> {
    let start = Instant::now();
    let mut child = Command::new(&command.program)
        .args(&command.args)
        .current_dir(&command.cwd)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("spawn {}", command.program.display()))?;
    // Drain stderr on a thread so a chatty child cannot block on a full pipe; keep its tail.
    let stderr = child.stderr.take().context("child stderr")?;
    let drain = std::thread::spawn(move || {
        let mut tail = Vec::new();
        let mut chunk = [0u8; 8192];
        let mut stderr = stderr;
        while let Ok(n) = stderr.read(&mut chunk) {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&chunk[..n]);
            if tail.len() > STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
        tail
    });
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not yet reaped; status and usage are valid out pointers.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    anyhow::ensure!(
        waited == pid,
        "wait4 for {}: {}",
        command.program.display(),
        std::io::Error::last_os_error()
    );
    let tail = drain.join().unwrap_or_default();
    let success = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    let failure = (!success).then(|| {
        let how = if libc::WIFEXITED(status) {
            format!("exit status {}", libc::WEXITSTATUS(status))
        } else {
            format!("wait status {status}")
        };
        format!("{how}: {}", String::from_utf8_lossy(&tail).trim_end())
    });
    Ok(ChildRun {
        failure,
        wall,
        peak_rss_kib: usage.ru_maxrss,
    })
}
