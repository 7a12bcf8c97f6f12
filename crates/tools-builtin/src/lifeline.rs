//! Commands never outlive dsh, however dsh ends.
//!
//! The normal paths (a finished call, a timeout, a cancel, a killed background job, a
//! disposed owner) kill the command's whole process group themselves. Two mechanisms cover
//! the paths where dsh gets no chance to (SIGKILL, an abort):
//!
//! - **Parent-death signal.** The command's first process asks the kernel for SIGKILL when
//!   its parent dies (`PR_SET_PDEATHSIG`). Linux ties that signal to the *thread* that forked
//!   the child, not the process: a child forked from a short-lived thread (tokio's blocking
//!   pool retires idle threads) would be killed when that thread retires. So every command is
//!   forked on one dedicated spawner thread that lives as long as the process. After arming
//!   the signal the child checks that its parent is still dsh, closing the race where dsh
//!   died between the fork and the `prctl`.
//! - **Watchdog for the group.** The parent-death signal reaches only that first process,
//!   not what it started (`sleep` under `bash -c`). So before it execs, the child forks a
//!   tiny watchdog into the same process group. The watchdog closes every descriptor but the
//!   read end of a process-wide *lifeline* pipe whose write end only dsh holds (close-on-exec
//!   everywhere else), and blocks reading it. When dsh dies, for any reason, the kernel closes
//!   the write end, the read returns end-of-file, and the watchdog kills its whole group,
//!   itself included. While dsh lives, the normal paths' group kill removes the watchdog with
//!   the rest.
//!
//! A process that deliberately leaves the group (`setsid`, a daemonizing double fork) is out
//! of reach of both, as it is of the foreground path's group kill.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::mpsc;
use std::sync::OnceLock;

/// The read end every watchdog waits on; the write end is kept open for the process's life.
struct Lifeline {
    read: OwnedFd,
    _write: OwnedFd,
}

fn lifeline() -> Option<RawFd> {
    static LIFELINE: OnceLock<Option<Lifeline>> = OnceLock::new();
    LIFELINE
        .get_or_init(|| match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
            Ok((read, write)) => Some(Lifeline {
                read,
                _write: write,
            }),
            Err(error) => {
                tracing::warn!(%error, "no lifeline pipe: commands may outlive a killed dsh");
                None
            }
        })
        .as_ref()
        .map(|l| l.read.as_raw_fd())
}

/// Arms `command` (after its `setsid` hook): parent-death signal, parent check, watchdog.
pub(crate) fn arm(command: &mut tokio::process::Command) {
    // SAFETY: getpid has no memory effects.
    let parent = unsafe { libc::getpid() };
    let lifeline = lifeline();
    // SAFETY: the hook makes only async-signal-safe calls (prctl, getppid, fork, close,
    // read, kill, _exit) and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(fd) = lifeline {
                start_watchdog(fd)?;
            }
            Ok(())
        });
    }
}

/// Forks the watchdog. Runs in the forked child before exec.
///
/// # Safety
/// Only between fork and exec: it forks again and the new process never returns.
unsafe fn start_watchdog(lifeline: RawFd) -> io::Result<()> {
    // SAFETY: fork in a single-threaded child; the watchdog branch only makes
    // async-signal-safe calls and ends in _exit.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => unsafe { watchdog(lifeline) },
        _ => Ok(()),
    }
}

/// The watchdog's whole life.
///
/// # Safety
/// Only in the watchdog process forked by [`start_watchdog`].
unsafe fn watchdog(lifeline: RawFd) -> ! {
    unsafe {
        close_all_but(lifeline);
        let mut byte = 0u8;
        loop {
            let read = libc::read(lifeline, (&raw mut byte).cast(), 1);
            if read == 0 {
                break;
            }
            if read < 0 && *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        // dsh is gone: take the whole group down, this process last.
        libc::kill(0, libc::SIGKILL);
        libc::_exit(0)
    }
}

/// Closes every descriptor except `keep` (the output pipe, the spawn's error-report pipe and
/// the lifeline's write end must not be held open by the watchdog).
///
/// # Safety
/// Only in the watchdog process.
unsafe fn close_all_but(keep: RawFd) {
    let keep = u32::try_from(keep).unwrap_or(0);
    unsafe {
        let low = if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32)
        } else {
            0
        };
        let high = libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
        if low == 0 && high == 0 {
            return;
        }
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 16) as i32
        } else {
            1024
        };
        for fd in 0..max {
            if fd as u32 != keep {
                libc::close(fd);
            }
        }
    }
}

type Spawned = io::Result<tokio::process::Child>;

struct SpawnRequest {
    command: tokio::process::Command,
    runtime: tokio::runtime::Handle,
    reply: tokio::sync::oneshot::Sender<Spawned>,
}

fn spawner() -> Option<&'static mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (send, receive) = mpsc::channel::<SpawnRequest>();
            let started = std::thread::Builder::new()
                .name("dsh-spawner".into())
                .spawn(move || {
                    for mut request in receive {
                        let spawned = {
                            let _entered = request.runtime.enter();
                            request.command.spawn()
                        };
                        // Our copies of the child's pipe ends must close now.
                        drop(request.command);
                        let _ = request.reply.send(spawned);
                    }
                });
            match started {
                Ok(_) => Some(send),
                Err(error) => {
                    tracing::warn!(%error, "no spawner thread: commands are forked in place");
                    None
                }
            }
        })
        .as_ref()
}

/// Spawns `command` on the long-lived spawner thread (in place when that thread could not
/// be started); `command` is consumed, so its copies of the child's pipe ends are closed.
pub(crate) async fn spawn(mut command: tokio::process::Command) -> Spawned {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return command.spawn();
    };
    let Some(spawner) = spawner() else {
        return command.spawn();
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    if let Err(mpsc::SendError(request)) = spawner.send(SpawnRequest {
        command,
        runtime,
        reply,
    }) {
        let mut command = request.command;
        return command.spawn();
    }
    answer
        .await
        .unwrap_or_else(|_| Err(io::Error::other("the spawner thread stopped")))
}
