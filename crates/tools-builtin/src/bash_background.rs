//! `bash` with `run_in_background`: the command becomes a job of the calling agent.
//!
//! It is confined exactly like a foreground call (the same sandbox preparation, environment
//! and working directory rules), but has no deadline: it runs until it ends, `job_kill`
//! stops it, or its owner is disposed. Its output streams into the job line by line, with
//! known secrets scrubbed (a secret split across lines longer than the pending cap can slip
//! through, as with a foreground preview's cut), and spills to a file past the job's memory
//! cap. Stopping a job terminates the whole process group (SIGTERM, SIGKILL after the grace
//! period).

use std::sync::Arc;

use dsh_jobs::{JobError, JobHandle, JobKind, JobOutcome, JobRegistry, JobStart, JobTicket};
use dsh_tools::{ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::bash::{bash_program, child_env, resolve_workdir, Bash, BashArgs, DENIAL_SIGNATURES};
use crate::env::ToolEnv;
use crate::error::ToolError;
use crate::process::{self, CommandSpec, OutputSink, Termination};
use crate::sandbox::{self, Enforcement, SandboxProbe};
use crate::scrub::SecretScrubber;
use crate::tool::ToolOutput;

/// Output held back waiting for a line end before it is scrubbed and streamed anyway.
const PENDING_MAX: usize = 64 * 1024;

/// How the registry stops a background command: cancels its runner, which terminates the
/// process group and settles the job as killed.
struct BashJob {
    stop: CancellationToken,
}

impl JobHandle for BashJob {
    fn kill(&self) -> BoxFuture<'static, ()> {
        self.stop.cancel();
        Box::pin(async {})
    }
}

fn unavailable() -> ToolFailure {
    ToolFailure::coded(
        "JobError",
        "JOBS_UNAVAILABLE",
        "background jobs unavailable: mount the `jobs` plugin (row `jobs` of the composition) \
         to use run_in_background",
    )
}

fn job_failure(error: &JobError) -> ToolFailure {
    ToolFailure::coded("JobError", error.code(), error.to_string())
}

/// Starts `args.command` as a background job of the calling agent and returns its id.
pub(crate) async fn start(
    args: BashArgs,
    env: ToolEnv,
    exec: &ToolExecution,
) -> Result<ToolOutput, ToolFailure> {
    if exec.signal().is_cancelled() {
        return Err(ToolError::Cancelled.into());
    }
    if args.command.trim().is_empty() {
        return Err(ToolError::invalid(Bash::NAME, "command is empty").into());
    }
    let caller = exec.caller().ok_or_else(unavailable)?;
    let registry = caller.ctx().get::<JobRegistry>().ok_or_else(unavailable)?;
    let cwd = resolve_workdir(&env, args.workdir.as_deref())?;
    let probe = tokio::task::spawn_blocking(SandboxProbe::current)
        .await
        .map_err(|e| ToolError::SandboxFailed {
            reason: format!("probing the kernel: {e}"),
        })?;
    let confinement = sandbox::prepare(env.sandbox(), probe, &cwd)?;
    let sandbox_label = confinement.label();
    let confined = confinement.enforcement == Enforcement::Full;
    let notice = confinement.notice.filter(|_| env.take_notice_slot());
    let spec = CommandSpec {
        program: bash_program(),
        args: vec!["-c".into(), (&args.command).into()],
        cwd: cwd.clone(),
        env: child_env(&env),
        timeout: None,
        kill_grace: env.limits().kill_grace,
        exit_drain: env.limits().exit_drain,
        setup: confinement.child,
    };
    let stop = CancellationToken::new();
    let ticket = registry
        .start_with(
            caller.agent(),
            JobStart {
                kind: JobKind::Bash,
                description: args.command.clone(),
                handle: Arc::new(BashJob { stop: stop.clone() }),
                spill_dir: Some(env.spill_dir().to_path_buf()),
            },
        )
        .map_err(|e| job_failure(&e))?;
    let running = match process::spawn(spec).await {
        Ok(running) => running,
        Err(error) => {
            ticket.abandon();
            return Err(error.into());
        }
    };
    let id = ticket.id().to_string();
    let mut sink = JobSink {
        ticket,
        scrubber: env.scrubber().clone(),
        pending: Vec::new(),
        denial_seen: false,
    };
    if let Some(notice) = &notice {
        sink.ticket
            .append_output(format!("[sandbox notice: {}]\n", notice.message).as_bytes());
    }
    let mode = env.sandbox().mode();
    tokio::spawn(async move {
        let ended = running.finish(&mut sink, stop).await;
        sink.flush();
        let JobSink {
            ticket,
            denial_seen,
            ..
        } = sink;
        let outcome = match ended {
            Err(error) => JobOutcome::Failed {
                detail: error.to_string(),
            },
            Ok(ended) if ended.cancelled => JobOutcome::Killed {
                detail: Some(match ended.status {
                    Some(Termination::Signaled(sig)) => {
                        format!("signal: {}", process::signal_name(sig))
                    }
                    _ => "killed before exit".to_owned(),
                }),
            },
            Ok(ended) => {
                let detail = match ended.status {
                    Some(Termination::Exited(code)) => format!("exit code: {code}"),
                    Some(Termination::Signaled(sig)) => {
                        format!("signal: {}", process::signal_name(sig))
                    }
                    _ => "ended without an exit status".to_owned(),
                };
                let failed = ended.status != Some(Termination::Exited(0));
                if confined && failed && denial_seen {
                    ticket.append_output(
                        format!("\n[sandbox: file access denied under {mode} mode]\n").as_bytes(),
                    );
                }
                JobOutcome::Completed {
                    detail: Some(detail),
                    output: None,
                }
            }
        };
        ticket.settle(outcome);
    });
    Ok(ToolOutput {
        content: format!("started background job {id}"),
        metadata: json!({
            "kind": "background",
            "jobId": id,
            "workdir": cwd.display().to_string(),
            "sandbox": sandbox_label,
            "sandboxNotice": notice.as_ref().map(|n| n.message.clone()),
        }),
    })
}

/// Streams whole lines, scrubbed, into the job.
struct JobSink {
    ticket: JobTicket,
    scrubber: SecretScrubber,
    pending: Vec<u8>,
    denial_seen: bool,
}

impl JobSink {
    fn emit(&mut self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        if DENIAL_SIGNATURES.iter().any(|s| text.contains(s)) {
            self.denial_seen = true;
        }
        self.ticket
            .append_output(self.scrubber.scrub(&text).as_bytes());
    }

    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        if !pending.is_empty() {
            self.emit(&pending);
        }
    }
}

impl OutputSink for JobSink {
    fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        if let Some(end) = self.pending.iter().rposition(|&b| b == b'\n') {
            let rest = self.pending.split_off(end + 1);
            let lines = std::mem::replace(&mut self.pending, rest);
            self.emit(&lines);
        }
        if self.pending.len() > PENDING_MAX {
            self.flush();
        }
    }
}
