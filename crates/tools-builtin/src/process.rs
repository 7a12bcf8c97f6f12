//! Running one command to completion, with a deadline, cancellation and a clean kill.
//!
//! The command leads its own session and process group, so everything it starts can be
//! signalled at once:
//! on timeout or cancel the group gets SIGTERM, then SIGKILL after a grace period. stdout and
//! stderr share one pipe so the output interleaves exactly as the command wrote it. Nothing
//! outlives the call: when the command is done, whatever is left in its group is killed, and a
//! guard does the same if the future is dropped midway.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;
use crate::output::OutputCollector;
use crate::sandbox::ChildSetup;

/// What to run and how.
pub(crate) struct CommandSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The complete environment (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// `None`: no deadline (a background job).
    pub timeout: Option<Duration>,
    pub kill_grace: Duration,
    pub exit_drain: Duration,
    pub setup: Option<ChildSetup>,
}

/// How the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Termination {
    Exited(i32),
    Signaled(i32),
    TimedOut,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Timeout,
    Cancel,
    /// The shell exited but something it started kept the output pipe open.
    Drain,
}

/// Kills the whole group when dropped, whatever happened before.
struct GroupGuard(libc::pid_t);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.0, libc::SIGKILL);
    }
}

fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    if pgid > 0 {
        // SAFETY: killpg has no memory effects; ESRCH (group gone) is fine.
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

/// Sends SIGTERM to the group and returns when SIGKILL is due.
fn terminate(pgid: libc::pid_t, grace: Duration) -> Instant {
    signal_group(pgid, libc::SIGTERM);
    Instant::now() + grace
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn output_pipe() -> Result<(OwnedFd, OwnedFd, OwnedFd), ToolError> {
    let spawn_err = |e: std::io::Error| ToolError::Spawn {
        reason: format!("creating a pipe: {e}"),
    };
    let (read, write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| spawn_err(e.into()))?;
    let write_err = write.try_clone().map_err(spawn_err)?;
    Ok((read, write, write_err))
}

/// Where a running command's output goes.
pub(crate) trait OutputSink {
    fn push(&mut self, bytes: &[u8]);
}

impl OutputSink for OutputCollector {
    fn push(&mut self, bytes: &[u8]) {
        OutputCollector::push(self, bytes);
    }
}

/// A spawned command: its process group (killed when this is dropped) and its output.
pub(crate) struct Running {
    child: tokio::process::Child,
    pgid: libc::pid_t,
    _guard: GroupGuard,
    reader: pipe::Receiver,
    timeout: Option<Duration>,
    kill_grace: Duration,
    exit_drain: Duration,
}

/// How a command's run ended, before it is read as a [`Termination`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ended {
    /// `cancel` fired (the group was terminated).
    pub cancelled: bool,
    pub timed_out: bool,
    /// The shell's own ending, when it was reaped.
    pub status: Option<Termination>,
}

/// Runs `spec`, feeding its output into `collector`. Returns `Err(Cancelled)` when `cancel`
/// fired (after the process group is gone).
pub(crate) async fn run(
    spec: CommandSpec,
    collector: &mut OutputCollector,
    cancel: CancellationToken,
) -> Result<Termination, ToolError> {
    let ended = spawn(spec).await?.finish(collector, cancel).await?;
    match ended {
        Ended {
            cancelled: true, ..
        } => Err(ToolError::Cancelled),
        Ended {
            timed_out: true, ..
        } => Ok(Termination::TimedOut),
        Ended {
            status: Some(status),
            ..
        } => Ok(status),
        Ended { status: None, .. } => Ok(Termination::TimedOut),
    }
}

/// Starts `spec` in a new session and process group, armed against outliving dsh (see
/// `lifeline`), its stdout and stderr on one pipe.
pub(crate) async fn spawn(spec: CommandSpec) -> Result<Running, ToolError> {
    let (read_end, write_out, write_err) = output_pipe()?;
    let confined = spec.setup.is_some();
    let arg_bytes = ArgBytes::of(&spec);
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_out))
        .stderr(Stdio::from(write_err))
        .kill_on_drop(true);
    // SAFETY: setsid is async-signal-safe. A new session (not just a process group) also
    // detaches the command from any controlling terminal, so an editor or password prompt
    // fails fast instead of stopping on SIGTTIN or drawing over the user's terminal UI.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    crate::lifeline::arm(&mut command);
    if let Some(mut setup) = spec.setup {
        // SAFETY: `apply` makes only async-signal-safe system calls on memory prepared
        // before the fork.
        unsafe {
            command.pre_exec(move || setup.apply());
        }
    }
    // The command holds our copies of the pipe's write end; `spawn` consumes it so they
    // close right after the fork, or the read side would never see end-of-file.
    let child = crate::lifeline::spawn(command)
        .await
        .map_err(|e| spawn_error(e, confined, &arg_bytes))?;
    let pgid = child
        .id()
        .and_then(|id| libc::pid_t::try_from(id).ok())
        .unwrap_or(0);
    let guard = GroupGuard(pgid);
    let reader = pipe::Receiver::from_owned_fd(read_end).map_err(|e| ToolError::Spawn {
        reason: format!("reading output: {e}"),
    })?;
    Ok(Running {
        child,
        pgid,
        _guard: guard,
        reader,
        timeout: spec.timeout,
        kill_grace: spec.kill_grace,
        exit_drain: spec.exit_drain,
    })
}

impl Running {
    /// Streams the output into `sink` until the command and its output are done, enforcing
    /// the deadline and `cancel` (SIGTERM to the group, SIGKILL after the grace period).
    /// Whatever is left of the group is killed when this returns.
    pub(crate) async fn finish(
        self,
        sink: &mut impl OutputSink,
        cancel: CancellationToken,
    ) -> Result<Ended, ToolError> {
        let Running {
            mut child,
            pgid,
            _guard,
            mut reader,
            timeout,
            kill_grace,
            exit_drain,
        } = self;
        let spec_exit_drain = exit_drain;
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut buf = vec![0u8; 64 * 1024];
        let mut status: Option<ExitStatus> = None;
        let mut eof = false;
        let mut stop: Option<Stop> = None;
        let mut drain_at: Option<Instant> = None;
        let mut sigkill_at: Option<Instant> = None;
        let mut give_up_at: Option<Instant> = None;
        let grace = kill_grace;

        while !(eof && status.is_some()) {
            tokio::select! {
                biased;
                _ = cancel.cancelled(), if stop.is_none() => {
                    stop = Some(Stop::Cancel);
                    sigkill_at = Some(terminate(pgid, grace));
                }
                _ = sleep_until_opt(deadline), if stop.is_none() && status.is_none() && deadline.is_some() => {
                    stop = Some(Stop::Timeout);
                    sigkill_at = Some(terminate(pgid, grace));
                }
                _ = sleep_until_opt(drain_at), if stop.is_none() && drain_at.is_some() => {
                    stop = Some(Stop::Drain);
                    sigkill_at = Some(terminate(pgid, grace));
                }
                _ = sleep_until_opt(sigkill_at), if sigkill_at.is_some() => {
                    signal_group(pgid, libc::SIGKILL);
                    sigkill_at = None;
                    give_up_at = Some(Instant::now() + grace);
                }
                // Something outside the group (it called setsid) still holds the pipe.
                _ = sleep_until_opt(give_up_at), if give_up_at.is_some() && status.is_some() => break,
                read = reader.read(&mut buf), if !eof => match read {
                    Ok(0) => eof = true,
                    Ok(n) => sink.push(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        sink.push(format!("\n[reading output failed: {e}]\n").as_bytes());
                        eof = true;
                    }
                },
                waited = child.wait(), if status.is_none() => {
                    let exited = waited.map_err(|e| ToolError::Spawn { reason: format!("waiting for the command: {e}") })?;
                    status = Some(exited);
                    if !eof {
                        drain_at = Some(Instant::now() + spec_exit_drain);
                    }
                }
            }
        }

        Ok(Ended {
            cancelled: stop == Some(Stop::Cancel),
            timed_out: stop == Some(Stop::Timeout),
            status: status.map(termination_of),
        })
    }
}

fn termination_of(status: ExitStatus) -> Termination {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Exited(code),
        (None, Some(signal)) => Termination::Signaled(signal),
        (None, None) => Termination::Exited(-1),
    }
}

/// How much a command asks `execve` to copy: what an E2BIG refusal is about.
struct ArgBytes {
    /// Every argument and `NAME=value` string with its terminating NUL.
    total: u64,
    /// The longest single one.
    longest: u64,
}

impl ArgBytes {
    fn of(spec: &CommandSpec) -> Self {
        let args = std::iter::once(spec.program.len())
            .chain(spec.args.iter().map(|arg| arg.len()))
            .chain(spec.env.iter().map(|(k, v)| k.len() + v.len() + 1))
            .map(|len| len as u64 + 1);
        let (total, longest) = args.fold((0, 0), |(total, longest), len| {
            (total + len, longest.max(len))
        });
        ArgBytes { total, longest }
    }

    /// The limits the system applies, in words, naming the one this command broke.
    fn limits(&self) -> String {
        // SAFETY: sysconf has no memory effects.
        let arg_max = unsafe { libc::sysconf(libc::_SC_ARG_MAX) };
        let total = match u64::try_from(arg_max) {
            Ok(max) if max > 0 => format!("the system accepts at most {max} bytes in all"),
            _ => "the system's limit is lower".to_owned(),
        };
        if cfg!(target_os = "linux") && self.longest > LINUX_MAX_ARG_STRLEN {
            format!(
                "its longest argument alone is {} bytes, and Linux accepts at most \
                 {LINUX_MAX_ARG_STRLEN} bytes in one argument ({total})",
                self.longest
            )
        } else {
            total
        }
    }
}

/// Linux's `MAX_ARG_STRLEN` (32 pages of 4 KiB): the longest single argument or variable.
const LINUX_MAX_ARG_STRLEN: u64 = 32 * 4096;

fn spawn_error(err: std::io::Error, confined: bool, args: &ArgBytes) -> ToolError {
    // Too long a command line is the command's problem, never the sandbox's.
    if err.raw_os_error() == Some(libc::E2BIG) {
        return ToolError::ArgumentListTooLong {
            size: args.total,
            limits: args.limits(),
        };
    }
    if confined && err.kind() != std::io::ErrorKind::NotFound {
        ToolError::SandboxFailed {
            reason: err.to_string(),
        }
    } else {
        ToolError::Spawn {
            reason: err.to_string(),
        }
    }
}

/// `SIGKILL`-style name of a signal number.
pub(crate) fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"))
}
