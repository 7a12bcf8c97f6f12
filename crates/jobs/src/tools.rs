//! The model's three job tools: `job_output`, `job_list`, `job_kill` (the original's names,
//! schemas and rendered texts).

use crate::registry::JobRegistry;
use crate::types::{JobError, JobId, JobSnapshot};
use dsh_protocol::{ContentBlock, SessionId};
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Wait bounds of `job_output` (`timeout_ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitLimits {
    /// Used when `wait` is set without `timeout_ms`.
    pub default: Duration,
    /// Longer requests wait this long.
    pub max: Duration,
}

impl Default for WaitLimits {
    fn default() -> Self {
        Self {
            default: Duration::from_millis(30_000),
            max: Duration::from_millis(600_000),
        }
    }
}

const JOB_ID_DESCRIPTION: &str = "Job id returned by the tool that started the background work.";

fn failure(error: &JobError) -> ToolFailure {
    ToolFailure::coded("JobError", error.code(), error.to_string())
}

fn owner(exec: &ToolExecution) -> Result<SessionId, ToolFailure> {
    exec.caller().map(|c| c.id().clone()).ok_or_else(|| {
        ToolFailure::coded(
            "JobError",
            "JOB_NO_AGENT",
            "background jobs belong to an agent; this call runs for none",
        )
    })
}

fn job_id(raw: &str) -> Result<JobId, ToolFailure> {
    if raw.is_empty() {
        return Err(ToolFailure::coded(
            "JobError",
            "JOB_INVALID",
            "invalid job_id: expected a non-empty string, got \"\"",
        ));
    }
    Ok(JobId::new(raw))
}

/// `job_output`.
pub struct JobOutputTool {
    registry: Arc<JobRegistry>,
    limits: WaitLimits,
}

impl JobOutputTool {
    pub const NAME: &'static str = "job_output";

    pub fn new(registry: Arc<JobRegistry>, limits: WaitLimits) -> Self {
        Self { registry, limits }
    }

    /// The wait `timeout_ms` asks for: the default when absent, the maximum when larger,
    /// whole milliseconds rounded up; zero, negative and non-finite values are refused.
    pub fn wait_timeout(&self, timeout_ms: Option<f64>) -> Result<Duration, ToolFailure> {
        let Some(ms) = timeout_ms else {
            return Ok(self.limits.default.min(self.limits.max));
        };
        if !ms.is_finite() || ms <= 0.0 {
            return Err(ToolFailure::coded(
                "JobError",
                "JOB_INVALID",
                format!(
                    "invalid timeout_ms: expected a positive number of milliseconds (at most {}), got {ms}",
                    self.limits.max.as_millis()
                ),
            ));
        }
        let max_ms = self.limits.max.as_millis() as f64;
        let ms = ms.ceil().min(max_ms);
        Ok(Duration::from_millis(ms as u64))
    }
}

#[derive(Debug, Deserialize)]
pub struct JobOutputArgs {
    pub job_id: String,
    #[serde(default)]
    pub wait: Option<bool>,
    #[serde(default)]
    pub timeout_ms: Option<f64>,
}

/// The canonical value of `job_output`: `{text, job}` (`job` is `null` for an alias answer).
#[derive(Debug, Serialize)]
pub struct JobOutputValue {
    pub text: String,
    pub job: Value,
}

impl TypedTool for JobOutputTool {
    type Args = JobOutputArgs;
    type Output = JobOutputValue;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Read a background job. Stream jobs return only output since the previous read; \
         final-output jobs return their result after settlement. Every response ends with \
         `[status: ...]`. Reads are non-blocking unless `wait: true`, which waits up to the \
         configured cap."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "job_id": {"type": "string", "description": JOB_ID_DESCRIPTION},
                "wait": {
                    "type": "boolean",
                    "description": "Block until the job reaches a terminal status or the timeout expires. A timed-out wait returns [status: running] and leaves the job alive."
                },
                "timeout_ms": {
                    "type": "number",
                    "description": "Max wait in milliseconds (only meaningful with wait: true). Defaults to the configured wait timeout; capped by the configured maximum."
                }
            },
            "required": ["job_id"]
        })
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: JobOutputArgs,
        exec: &ToolExecution,
    ) -> Result<JobOutputValue, ToolFailure> {
        let owner = owner(exec)?;
        let id = job_id(&args.job_id)?;
        let wait = args.wait.unwrap_or(false);
        let timeout = if wait {
            Some(self.wait_timeout(args.timeout_ms)?)
        } else {
            None
        };
        if let Err(error) = self.registry.get(&owner, &id) {
            if let Some(text) = self.registry.describe_alias(&owner, id.as_str()) {
                return Ok(JobOutputValue {
                    text,
                    job: Value::Null,
                });
            }
            return Err(failure(&error));
        }
        if let Some(timeout) = timeout {
            tokio::select! {
                waited = self.registry.wait(&owner, &id, timeout) => { waited.map_err(|e| failure(&e))?; }
                () = exec.signal().cancelled() => {
                    return Err(ToolFailure::coded("JobError", "JOB_WAIT_ABORTED", "wait aborted"));
                }
            }
        }
        let read = self.registry.read(&owner, &id).map_err(|e| failure(&e))?;
        let mut text = read.text;
        if read.remaining > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[{} more bytes of output; call job_output again to read on]",
                read.remaining
            ));
        }
        Ok(JobOutputValue {
            text,
            job: read.job.public_json(),
        })
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        let text = value["text"].as_str().unwrap_or_default();
        if value["job"].is_null() {
            return vec![ContentBlock::text(text)];
        }
        let mut out = if text.is_empty() {
            "(no new output)".to_owned()
        } else {
            text.to_owned()
        };
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&public_status_suffix(&value["job"]));
        vec![ContentBlock::text(out)]
    }
}

/// `[status: <s>]` / `[status: <s>, <detail>]` from a `PublicJob` value.
fn public_status_suffix(job: &Value) -> String {
    let status = job["status"].as_str().unwrap_or("unknown");
    match job["detail"].as_str() {
        Some(detail) if !detail.is_empty() => format!("[status: {status}, {detail}]"),
        _ => format!("[status: {status}]"),
    }
}

/// `job_list`.
pub struct JobListTool {
    registry: Arc<JobRegistry>,
}

impl JobListTool {
    pub const NAME: &'static str = "job_list";

    pub fn new(registry: Arc<JobRegistry>) -> Self {
        Self { registry }
    }
}

#[derive(Debug, Deserialize)]
pub struct JobListArgs {}

impl TypedTool for JobListTool {
    type Args = JobListArgs;
    type Output = Vec<Value>;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "List your background jobs (running and finished) with their ids, kinds, and statuses."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        _args: JobListArgs,
        exec: &ToolExecution,
    ) -> Result<Vec<Value>, ToolFailure> {
        let owner = owner(exec)?;
        Ok(self
            .registry
            .list(&owner)
            .iter()
            .map(JobSnapshot::public_json)
            .collect())
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        let jobs = value.as_array().map(Vec::as_slice).unwrap_or_default();
        if jobs.is_empty() {
            return vec![ContentBlock::text("(no background jobs)")];
        }
        let lines: Vec<String> = jobs
            .iter()
            .map(|job| {
                format!(
                    "{} [{}] {} — {}",
                    job["id"].as_str().unwrap_or_default(),
                    job["kind"].as_str().unwrap_or_default(),
                    job["status"].as_str().unwrap_or_default(),
                    job["label"].as_str().unwrap_or_default()
                )
            })
            .collect();
        vec![ContentBlock::text(lines.join("\n"))]
    }
}

/// `job_kill`.
pub struct JobKillTool {
    registry: Arc<JobRegistry>,
}

impl JobKillTool {
    pub const NAME: &'static str = "job_kill";

    pub fn new(registry: Arc<JobRegistry>) -> Self {
        Self { registry }
    }
}

#[derive(Debug, Deserialize)]
pub struct JobKillArgs {
    pub job_id: String,
    #[serde(default)]
    pub reason: Option<String>,
}

impl TypedTool for JobKillTool {
    type Args = JobKillArgs;
    type Output = Value;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        "Request cancellation of a running background job by job id. Returns immediately; the \
         job settles as killed once its work actually stops."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "job_id": {"type": "string", "description": JOB_ID_DESCRIPTION},
                "reason": {
                    "type": "string",
                    "description": "Optional short reason, recorded in the log and forwarded to the job."
                }
            },
            "required": ["job_id"]
        })
    }

    async fn execute(&self, args: JobKillArgs, exec: &ToolExecution) -> Result<Value, ToolFailure> {
        let owner = owner(exec)?;
        let id = job_id(&args.job_id)?;
        let reason = args.reason.filter(|r| !r.trim().is_empty());
        let killed = self
            .registry
            .kill_job_because(&owner, &id, reason)
            .await
            .map_err(|e| failure(&e))?;
        Ok(json!({
            "outcome": if killed.requested { "cancellation-requested" } else { "already-finished" },
            "job": killed.job.public_json(),
        }))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        let id = value["job"]["id"].as_str().unwrap_or_default();
        let text = if value["outcome"] == "cancellation-requested" {
            format!("requested cancellation of job {id}")
        } else {
            format!(
                "job {id} had already finished {}",
                public_status_suffix(&value["job"])
            )
        };
        vec![ContentBlock::text(text)]
    }
}
