//! `bash`: one fresh `bash -c` per call, confined by the session's sandbox.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::approval::escalation::{
    Availability, EscalationRefusal, EscalationRequest, ESCALATION_TARGETS,
};
use crate::approval::Approvals;
use crate::env::ToolEnv;
use crate::error::ToolError;
use crate::output::OutputCollector;
use crate::process::{self, CommandSpec, Termination};
use crate::sandbox::{self, Enforcement, SandboxProbe};
use crate::scrub::scrub_child_env;
use crate::tool::{lenient_u64, tool_env, ToolOutput};

/// The `bash` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bash;

/// Arguments of `bash` (the original's parameter names).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct BashArgs {
    pub command: String,
    /// A short label for the UI; not used by the body.
    #[serde(default)]
    pub description: String,
    #[serde(
        default,
        rename = "timeoutMs",
        deserialize_with = "lenient_u64::deserialize"
    )]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub workdir: Option<String>,
    /// Run as a background job of the calling agent and return its id at once.
    #[serde(default)]
    pub run_in_background: bool,
}

const DESCRIPTION: &str = "Run a command with `bash -c` and return its combined stdout and stderr. \
Every call starts a fresh shell: nothing (cwd, variables, functions) carries over between calls, so \
pass `workdir` rather than relying on `cd`. A non-zero exit is reported as `[exit code: N]`, a \
command killed by a signal as `[signal: NAME]`, and one that runs past its timeout as `[timeout: ...]`. \
Facts about the harness are available in `$DSH_*` variables, and `$TMPDIR` is a private scratch \
directory. Commands may run under a file sandbox: a write it blocks is reported as \
`[sandbox: file access denied under <mode> mode]`, which is a policy decision, not a bug in the \
command — do not work around it. Processes a foreground call leaves running do not outlive it. \
Long output is shortened to its beginning and end, and the full output is saved to a file whose \
path is reported. Set `run_in_background: true` for long-running commands: the call returns a \
job id immediately; read its output with `job_output` and stop it with `job_kill`.";

/// The escalation half of the description: how to ask to leave the sandbox, and when not to.
const ESCALATION: &str = "Attempting a command the sandbox may deny is safe: run it and read the \
marker rather than assuming the denial. When the sandbox denies a command that a wider mode would \
let succeed, the one sanctioned way out is to retry that exact command once, in the same turn, \
with `sandbox_permissions` (the narrowest wider mode that suffices) and a one-sentence \
`justification`: the user is asked to approve that one run. Never escalate speculatively: \
`sandbox_permissions` is valid only as a retry of the same command the sandbox just denied in this \
session. A rejected escalation is final for that command in this turn: stop and explain, never \
work around it. When the denial says the sandbox mode is fixed (approval policy never), do not set \
`sandbox_permissions` at all.";

/// A sandbox denial looks like one of these in the command's own error output.
pub(crate) const DENIAL_SIGNATURES: &[&str] = &["Read-only file system", "Permission denied"];

impl Bash {
    /// The name the model calls the tool by.
    pub const NAME: &'static str = "bash";

    /// The body: runs one call in `env`; cancelling `cancel` kills the command and everything
    /// it started.
    pub async fn run(
        &self,
        args: BashArgs,
        env: &ToolEnv,
        cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        if args.command.trim().is_empty() {
            return Err(ToolError::invalid(Self::NAME, "command is empty"));
        }
        let timeout = effective_timeout(env, args.timeout_ms)?;
        let cwd = resolve_workdir(env, args.workdir.as_deref())?;
        // The first call probes the kernel by running a short-lived child; keep it off the
        // async worker.
        let probe = tokio::task::spawn_blocking(SandboxProbe::current)
            .await
            .map_err(|e| ToolError::SandboxFailed {
                reason: format!("probing the kernel: {e}"),
            })?;
        let confinement = sandbox::prepare(env.sandbox(), probe, &cwd)?;
        let sandbox_label = confinement.label();
        let enforcement = confinement.enforcement;
        let notice = confinement.notice.filter(|_| env.take_notice_slot());
        let spec = CommandSpec {
            program: bash_program(),
            args: vec![OsString::from("-c"), OsString::from(&args.command)],
            cwd: cwd.clone(),
            env: child_env(env),
            timeout: Some(timeout),
            kill_grace: env.limits().kill_grace,
            exit_drain: env.limits().exit_drain,
            setup: confinement.child,
        };
        let mut collector = OutputCollector::new(env.limits().collector(), env.spill_dir(), "bash");
        let termination = process::run(spec, &mut collector, cancel).await?;
        let scrubber = env.scrubber();
        let output = collector.finish(|text| scrubber.scrub(text).into_owned());

        let mut content = if output.text.is_empty() {
            "(no output)".to_string()
        } else {
            output.text
        };
        let (exit_code, signal) = match termination {
            Termination::Exited(0) => (Some(0), None),
            Termination::Exited(code) => {
                push_marker(&mut content, format!("[exit code: {code}]"));
                (Some(code), None)
            }
            Termination::Signaled(sig) => {
                let name = process::signal_name(sig);
                push_marker(&mut content, format!("[signal: {name}]"));
                (None, Some(name))
            }
            Termination::TimedOut => {
                push_marker(
                    &mut content,
                    format!(
                        "[timeout: the command ran longer than {} ms and was killed]",
                        timeout.as_millis()
                    ),
                );
                (None, None)
            }
        };
        let confined = enforcement == Enforcement::Full;
        let failed = !matches!(termination, Termination::Exited(0));
        let denied = confined && failed && DENIAL_SIGNATURES.iter().any(|s| content.contains(s));
        if denied {
            push_marker(
                &mut content,
                format!(
                    "[sandbox: file access denied under {} mode]",
                    env.sandbox().mode()
                ),
            );
        }
        if let Some(notice) = &notice {
            push_marker(
                &mut content,
                format!("[sandbox notice: {}]", notice.message),
            );
        }
        let metadata = json!({
            "exitCode": exit_code,
            "signal": signal,
            "timedOut": termination == Termination::TimedOut,
            "timeoutMs": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            "truncated": output.truncated,
            "outputBytes": output.total_bytes,
            "spillPath": output.spill_path.as_ref().map(|p| p.display().to_string()),
            "workdir": cwd.display().to_string(),
            "sandbox": sandbox_label,
            "sandboxDenied": denied,
            "sandboxNotice": notice.as_ref().map(|n| n.message.clone()),
        });
        Ok(ToolOutput { content, metadata })
    }
}

impl TypedTool for Bash {
    type Args = BashArgs;
    type Output = ToolOutput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        format!("{DESCRIPTION} {ESCALATION}")
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to run."},
                "description": {
                    "type": "string",
                    "description": "What the command does, in 5-10 words of active voice, for the UI (e.g. \"git status\" -> \"Show working tree status\")."
                },
                "timeoutMs": {
                    "type": "number",
                    "description": "Timeout in milliseconds (default 120000, at most 600000). The command and everything it started are killed when it expires."
                },
                "workdir": {
                    "type": "string",
                    "description": "Directory to run in. Defaults to the workspace; a relative path resolves against it."
                },
                "sandbox_permissions": {
                    "type": "string",
                    "enum": ESCALATION_TARGETS.iter().map(|mode| mode.as_str()).collect::<Vec<_>>(),
                    "description": "The wider sandbox mode this command needs. Valid only as a one-shot retry of the same command the sandbox just denied; requires justification and the user's approval."
                },
                "justification": {
                    "type": "string",
                    "description": "Required with sandbox_permissions: one sentence for the user explaining why this exact command needs the wider access."
                },
                "run_in_background": {
                    "type": "boolean",
                    "description": "Run in the background and return a job id immediately (collect with job_output, stop with job_kill). No timeout applies."
                }
            },
            "required": ["command"]
        })
    }

    /// No pipeline clock: the body enforces the call's `timeoutMs` itself (killing the
    /// process group), so a second clock here would only race it.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        false
    }

    /// Runs the call in the session's sandbox mode, or, for an approved escalation, in the
    /// mode the person allowed for this one call. A sandbox denial gets a second marker
    /// saying whether (and how) the command may ask to leave the sandbox.
    async fn execute(
        &self,
        args: BashArgs,
        exec: &ToolExecution,
    ) -> Result<ToolOutput, ToolFailure> {
        let env = tool_env(exec)?;
        let approvals = exec.caller().and_then(|c| c.ctx().get::<Approvals>());
        let request = EscalationRequest::from_arguments(exec.arguments())
            .map_err(|reason| ToolError::invalid(Self::NAME, reason))?;
        let (env, escalated) = match &request {
            None => (env, None),
            Some(request) => {
                let Some(approvals) = &approvals else {
                    return Err(ToolError::EscalationRefused {
                        refusal: EscalationRefusal::Unavailable,
                        message: "the command was not run: sandbox escalation needs approval, \
                                  and no approval service is configured. Do not set \
                                  sandbox_permissions; tell the user what you needed."
                            .into(),
                    }
                    .into());
                };
                let current = env.sandbox().mode();
                let mode = approvals
                    .escalate(exec, &args.command, current, request)
                    .await?;
                (env.with_sandbox_mode(mode), Some(mode))
            }
        };
        let mut output = if args.run_in_background {
            crate::bash_background::start(args, env.clone(), exec).await?
        } else {
            self.run(args, &env, exec.signal().clone()).await?
        };
        if let Some(mode) = escalated {
            if let Value::Object(meta) = &mut output.metadata {
                meta.insert("escalatedTo".into(), json!(mode));
            }
        }
        if output.metadata["sandboxDenied"] == json!(true) {
            let availability = approvals.map_or(Availability::Unsupported, |approvals| {
                approvals.escalation_availability(exec)
            });
            insert_after_denial(&mut output.content, availability.hint());
        }
        Ok(output)
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        ToolOutput::render_value(value)
    }

    fn presentation_meta(&self, _args: &Value, value: &Value) -> Option<Value> {
        ToolOutput::value_meta(value)
    }
}

/// Appends a `[...]` marker on its own line.
pub(crate) fn push_marker(content: &mut String, marker: String) {
    if !content.ends_with('\n') {
        content.push('\n');
    }
    content.push_str(&marker);
}

/// Puts `hint` on the line after the denial marker (at the end when there is none).
fn insert_after_denial(content: &mut String, hint: &str) {
    let at = content
        .find("[sandbox: file access denied under ")
        .map(|start| {
            content[start..]
                .find('\n')
                .map_or(content.len(), |end| start + end)
        });
    match at {
        Some(at) => content.insert_str(at, &format!("\n{hint}")),
        None => push_marker(content, hint.to_owned()),
    }
}

fn effective_timeout(env: &ToolEnv, requested: Option<u64>) -> Result<Duration, ToolError> {
    let limits = env.limits();
    match requested {
        None => Ok(limits.bash_default_timeout),
        Some(0) => Err(ToolError::invalid(
            Bash::NAME,
            "timeoutMs must be a positive number of milliseconds",
        )),
        Some(ms) => Ok(Duration::from_millis(ms).min(limits.bash_max_timeout)),
    }
}

/// The working directory: the workspace, or `workdir` resolved against it, which must exist
/// and (unless unconfined) lie inside the sandbox's writable roots.
pub(crate) fn resolve_workdir(env: &ToolEnv, workdir: Option<&str>) -> Result<PathBuf, ToolError> {
    let Some(raw) = workdir.filter(|w| !w.trim().is_empty()) else {
        return Ok(env.workspace().to_path_buf());
    };
    let absolute = crate::paths::absolutize(env.workspace(), raw);
    let dir = absolute
        .canonicalize()
        .map_err(|e| ToolError::io("resolving workdir", &absolute, e))?;
    if !dir.is_dir() {
        return Err(ToolError::invalid(
            Bash::NAME,
            format!("workdir {} is not a directory", dir.display()),
        ));
    }
    if !env.sandbox().allows_workdir(&dir) {
        let roots: Vec<String> = env
            .sandbox()
            .writable_roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        return Err(ToolError::WorkdirOutsideRoots {
            path: dir,
            roots: roots.join(", "),
        });
    }
    Ok(dir)
}

/// The child's environment: the base environment minus secrets, plus TMPDIR and DSH_* facts.
pub(crate) fn child_env(env: &ToolEnv) -> Vec<(OsString, OsString)> {
    let mut vars = scrub_child_env(env.base_env());
    vars.retain(|(name, _)| name != "TMPDIR");
    let mut set = |name: &str, value: OsString| vars.push((OsString::from(name), value));
    set("TMPDIR", env.temp_dir().as_os_str().to_owned());
    set("DSH_WORKSPACE", env.workspace().as_os_str().to_owned());
    set(
        "DSH_SANDBOX_MODE",
        OsString::from(env.sandbox().mode().as_str()),
    );
    if let Some(id) = &env.facts().session_id {
        set("DSH_SESSION_ID", OsString::from(id));
    }
    if let Some(home) = &env.facts().dsh_home {
        set("DSH_HOME", home.as_os_str().to_owned());
    }
    vars
}

pub(crate) fn bash_program() -> OsString {
    ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"]
        .iter()
        .find(|p| Path::new(p).exists())
        .map_or_else(|| OsString::from("bash"), OsString::from)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::env::SessionFacts;
    use crate::scrub::env_pair;

    fn env(root: &Path) -> ToolEnv {
        ToolEnv::builder(root)
            .temp_dir(root.join("tmp"))
            .base_env(vec![
                env_pair("PATH", "/bin"),
                env_pair("X_TOKEN", "t"),
                env_pair("TMPDIR", "/tmp"),
            ])
            .facts(SessionFacts {
                session_id: Some("s1".into()),
                dsh_home: Some("/h".into()),
            })
            .build()
            .unwrap()
    }

    #[test]
    fn child_env_exports_facts_and_private_tmpdir() {
        let dir = tempfile::tempdir().unwrap();
        let env = env(dir.path());
        let vars = child_env(&env);
        let ws = env.workspace().as_os_str().to_owned();
        assert_eq!(
            vars,
            vec![
                env_pair("PATH", "/bin"),
                env_pair("TMPDIR", env.temp_dir()),
                env_pair("DSH_WORKSPACE", ws),
                env_pair("DSH_SANDBOX_MODE", "workspace-write"),
                env_pair("DSH_SESSION_ID", "s1"),
                env_pair("DSH_HOME", "/h"),
            ]
        );
    }

    #[test]
    fn the_escalation_hint_follows_the_denial_marker() {
        let mut content =
            "x: Permission denied\n[exit code: 1]\n[sandbox: file access denied under read-only mode]\n[sandbox notice: n]".to_string();
        insert_after_denial(&mut content, "[hint]");
        assert_eq!(
            content,
            "x: Permission denied\n[exit code: 1]\n[sandbox: file access denied under read-only mode]\n[hint]\n[sandbox notice: n]"
        );
        let mut bare = "out".to_string();
        insert_after_denial(&mut bare, "[hint]");
        assert_eq!(bare, "out\n[hint]");
    }

    #[test]
    fn timeout_defaults_clamps_and_rejects_zero() {
        let dir = tempfile::tempdir().unwrap();
        let env = env(dir.path());
        assert_eq!(
            effective_timeout(&env, None).unwrap(),
            Duration::from_secs(120)
        );
        assert_eq!(
            effective_timeout(&env, Some(5_000_000)).unwrap(),
            Duration::from_secs(600)
        );
        assert_eq!(
            effective_timeout(&env, Some(0)).unwrap_err().code(),
            "INVALID_TOOL_ARGUMENTS"
        );
    }

    #[test]
    fn workdir_must_stay_inside_roots() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        std::fs::create_dir(dir.path().join("ws/sub")).unwrap();
        let env = env(&dir.path().join("ws"));
        assert_eq!(
            resolve_workdir(&env, Some("sub")).unwrap(),
            env.workspace().join("sub")
        );
        assert_eq!(
            resolve_workdir(&env, Some("..")).unwrap_err().code(),
            "WORKDIR_OUTSIDE_ROOTS"
        );
        assert_eq!(
            resolve_workdir(&env, Some("nope")).unwrap_err().code(),
            "FILE_NOT_FOUND"
        );
    }
}
