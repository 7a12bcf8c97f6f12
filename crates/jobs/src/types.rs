//! The registry's vocabulary: ids, kinds, states, snapshots, outcomes, errors and the two
//! seams producers and other crates implement ([`JobHandle`], [`JobAliasResolver`]).

use dsh_protocol::SessionId;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt;

/// What produced a job; the prefix of its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    /// A `bash` command started with `run_in_background`.
    Bash,
    /// A one-shot subagent started in the background.
    Subagent,
}

impl JobKind {
    /// The wire word (`bash`, `subagent`), also the id prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::Subagent => "subagent",
        }
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a job is in its life. `Running` and `Stopping` are live; the rest are terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Running,
    /// A kill was requested; the work has not stopped yet.
    Stopping,
    Completed,
    Failed,
    Killed,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Stopping => "stopping",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Killed => "killed",
        }
    }

    /// Running or stopping: counts against the per-owner limit.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Running | Self::Stopping)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A job's id: `<kind>-<n>`, `n` counted per owner and kind from 1.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(String);

impl JobId {
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    pub(crate) fn numbered(kind: JobKind, n: u64) -> Self {
        Self(format!("{}-{n}", kind.as_str()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a job ended, as its runner reports it to [`JobTicket::settle`](crate::JobTicket::settle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    /// The work ran to its end (a bash command with any exit code).
    Completed {
        /// One line for the status suffix (`exit code: 0`).
        detail: Option<String>,
        /// A final-output job's result text, returned by every read after settlement.
        output: Option<String>,
    },
    /// The work could not run or finish (a spawn failure, a child's model error).
    Failed { detail: String },
    /// The work was stopped by a kill or the owner's disposal.
    Killed { detail: Option<String> },
}

impl JobOutcome {
    /// The terminal state this outcome settles a job in.
    pub fn state(&self) -> JobState {
        match self {
            Self::Completed { .. } => JobState::Completed,
            Self::Failed { .. } => JobState::Failed,
            Self::Killed { .. } => JobState::Killed,
        }
    }

    pub(crate) fn into_parts(self) -> (JobState, Option<String>, Option<String>) {
        match self {
            Self::Completed { detail, output } => (JobState::Completed, detail, output),
            Self::Failed { detail } => (JobState::Failed, Some(detail), None),
            Self::Killed { detail } => (JobState::Killed, detail, None),
        }
    }
}

/// A copy of one job's public facts at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSnapshot {
    pub id: JobId,
    pub kind: JobKind,
    pub state: JobState,
    /// The label: the command string of a bash job, the description of a subagent.
    pub description: String,
    pub owner: SessionId,
    /// Milliseconds since the Unix epoch.
    pub started_at: u64,
    pub ended_at: Option<u64>,
    /// The status detail (`exit code: 0`, `signal: SIGTERM`, a failure's reason).
    pub detail: Option<String>,
    /// Whether the owner already learned the outcome (a kill, a wait, a terminal read), so
    /// that no completion notice is sent.
    pub reported: bool,
}

impl JobSnapshot {
    /// `[status: <state>]` or `[status: <state>, <detail>]`.
    pub fn status_suffix(&self) -> String {
        match &self.detail {
            Some(detail) if !detail.is_empty() => format!("[status: {}, {detail}]", self.state),
            _ => format!("[status: {}]", self.state),
        }
    }

    /// The model-facing JSON (`PublicJob`): no owner, no reported flag.
    pub fn public_json(&self) -> Value {
        let mut job = json!({
            "id": self.id.as_str(),
            "kind": self.kind.as_str(),
            "label": self.description,
            "status": self.state.as_str(),
        });
        if let Value::Object(map) = &mut job {
            if let Some(detail) = &self.detail {
                map.insert("detail".into(), json!(detail));
            }
            map.insert("startedAt".into(), json!(self.started_at));
            if let Some(ended) = self.ended_at {
                map.insert("finishedAt".into(), json!(ended));
            }
        }
        job
    }
}

/// How the registry stops a job: `kill` requests the stop (idempotent) and resolves once
/// the request is made; the runner then settles the job as killed when the work is gone.
pub trait JobHandle: Send + Sync + 'static {
    fn kill(&self) -> BoxFuture<'static, ()>;
}

/// A lookup another crate registers so `job_output` can answer for an id that names
/// something else (a continuable subagent) instead of "unknown job".
pub trait JobAliasResolver: Send + Sync + 'static {
    /// The text the model reads for `id` when it is one of `owner`'s, else `None`.
    fn describe(&self, owner: &SessionId, id: &str) -> Option<String>;
}

/// Why a registry operation was refused. `code()` is stable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// The owner already has the maximum of running or stopping jobs.
    #[error(
        "background job limit reached for this owner (limit: {limit}); use job_kill to stop an \
         unneeded job, wait for it to finish, then retry"
    )]
    Limit { limit: usize },
    /// No job with this id belongs to the caller (an id of another session is refused the same
    /// way, so ids cannot be probed across sessions).
    #[error("unknown job {id}")]
    Unknown { id: String },
    /// An empty description (label).
    #[error("a background job needs a non-empty description")]
    EmptyDescription,
    /// The owner agent is being disposed; no new job may start for it.
    #[error("the agent is shutting down; no background job can start for it")]
    OwnerGone,
    /// A wait or read argument out of range.
    #[error("{message}")]
    Invalid { message: String },
    /// The spill file for a job's output could not be read.
    #[error("reading the output of job {id}: {reason}")]
    Io { id: String, reason: String },
}

impl JobError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Limit { .. } => "JOB_LIMIT",
            Self::Unknown { .. } => "JOB_UNKNOWN",
            Self::EmptyDescription => "JOB_INVALID",
            Self::OwnerGone => "JOB_OWNER_GONE",
            Self::Invalid { .. } => "JOB_INVALID",
            Self::Io { .. } => "JOB_IO",
        }
    }
}
