//! Spawning a stdio server: scrubbed environment, its own process group, killed with dsh,
//! stderr drained into a bounded tail.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Bytes of a server's stderr kept for error messages; the rest is read and dropped.
pub const STDERR_TAIL_BYTES: usize = 4096;
/// Each close step (stdin closed, then SIGTERM) waits this long before the next.
const CLOSE_STEP: Duration = Duration::from_secs(2);

/// Whether a parent variable is withheld from a server: the name contains `KEY`, `PASSWORD`,
/// `SECRET` or `TOKEN` (any case), starts with `DSH_`, or is a credential by the built-in
/// tools' rules (`dsh_tools_builtin::scrub`).
pub fn is_withheld_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "PASSWORD", "SECRET", "TOKEN"]
        .iter()
        .any(|fragment| upper.contains(fragment))
        || upper.starts_with("DSH_")
        || dsh_tools_builtin::scrub::is_secret_env_name(name)
}

/// The child's environment: the parent's minus withheld names, then `explicit` on top.
pub fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    explicit: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = parent
        .into_iter()
        .filter(|(name, _)| {
            !name.to_str().is_some_and(is_withheld_env_name) && name.to_str().is_some()
        })
        .collect();
    for (name, value) in explicit {
        env.insert(name.into(), value.into());
    }
    env.into_iter().collect()
}

/// The last [`STDERR_TAIL_BYTES`] a server wrote on stderr.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<Vec<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(|p| p.into_inner());
        tail.extend_from_slice(bytes);
        if tail.len() > STDERR_TAIL_BYTES {
            let cut = tail.len() - STDERR_TAIL_BYTES;
            tail.drain(..cut);
        }
    }

    /// The tail's last non-empty line, trimmed (what an error message quotes).
    pub fn last_line(&self) -> Option<String> {
        let tail = self.0.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&tail)
            .lines()
            .rev()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .map(|line| line.chars().take(300).collect())
    }

    /// Bytes currently held (bounded by [`STDERR_TAIL_BYTES`]).
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A running server process.
pub struct StdioChild {
    child: Child,
    pgid: Option<libc::pid_t>,
    /// Its stderr tail.
    pub stderr: StderrTail,
}

/// What [`spawn`] hands back: the process and the two pipes rmcp talks over.
pub struct Spawned {
    pub child: StdioChild,
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
}

/// Starts `command args` with the scrubbed environment in a new process group that dies
/// with dsh.
pub fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&PathBuf>,
) -> std::io::Result<Spawned> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(child_env(std::env::vars_os(), env))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    // SAFETY: setpgid and prctl are async-signal-safe and touch no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setpgid(0, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The server dies with dsh even when dsh is killed with SIGKILL.
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pgid = child.id().and_then(|id| libc::pid_t::try_from(id).ok());
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(std::io::Error::other("the server's pipes were not created"));
    };
    let stderr = StderrTail::default();
    if let Some(mut pipe) = child.stderr.take() {
        let tail = stderr.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => tail.push(&buf[..n]),
                }
            }
        });
    }
    Ok(Spawned {
        child: StdioChild {
            child,
            pgid,
            stderr,
        },
        stdout,
        stdin,
    })
}

impl StdioChild {
    /// The process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Reaps the process if it already exited.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The exit status, waiting at most `grace` for it: a server's pipes close a moment
    /// before the kernel lets its exit be reaped, and "the server exited (signal: 9)" tells
    /// the person more than "the connection closed".
    pub async fn exit_status_within(
        &mut self,
        grace: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => None,
        }
    }

    /// The close escalation: (stdin already closed by the caller) wait, SIGTERM the group,
    /// wait, SIGKILL the group.
    pub async fn shutdown(mut self) {
        if tokio::time::timeout(CLOSE_STEP, self.child.wait())
            .await
            .is_ok()
        {
            self.kill_group(libc::SIGKILL);
            return;
        }
        self.kill_group(libc::SIGTERM);
        if tokio::time::timeout(CLOSE_STEP, self.child.wait())
            .await
            .is_ok()
        {
            self.kill_group(libc::SIGKILL);
            return;
        }
        self.kill_group(libc::SIGKILL);
        let _ = self.child.wait().await;
    }

    fn kill_group(&self, signal: libc::c_int) {
        if let Some(pgid) = self.pgid {
            // SAFETY: plain system call; the group is the one the child leads.
            unsafe {
                libc::kill(-pgid, signal);
            }
        }
    }
}

impl Drop for StdioChild {
    fn drop(&mut self) {
        // Leftover grandchildren of a server dropped without `shutdown`.
        if self.child.try_wait().ok().flatten().is_none() {
            self.kill_group(libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_withheld_and_explicit_env_wins() {
        let parent = vec![
            ("PATH".into(), "/bin".into()),
            ("FOO_TOKEN".into(), "t".into()),
            ("my_api_key".into(), "k".into()),
            ("DSH_HOME".into(), "/h".into()),
            ("DB_PASSWORD".into(), "p".into()),
            ("PLAIN".into(), "v".into()),
        ];
        let explicit = BTreeMap::from([("FOO_TOKEN".to_owned(), "mine".to_owned())]);
        let env = child_env(parent, &explicit);
        let names: Vec<String> = env
            .iter()
            .map(|(n, v)| format!("{}={}", n.to_string_lossy(), v.to_string_lossy()))
            .collect();
        assert_eq!(names, ["FOO_TOKEN=mine", "PATH=/bin", "PLAIN=v"]);
    }

    #[test]
    fn the_stderr_tail_is_bounded() {
        let tail = StderrTail::default();
        for _ in 0..1000 {
            tail.push(&[b'x'; 100]);
        }
        tail.push(b"\nlast line\n");
        assert_eq!(tail.len(), STDERR_TAIL_BYTES);
        assert_eq!(tail.last_line().as_deref(), Some("last line"));
    }
}
