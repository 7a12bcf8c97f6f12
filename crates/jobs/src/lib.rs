//! Background jobs: work an agent starts and keeps working past (a `bash` command with
//! `run_in_background`, a background subagent), collected or stopped later.
//!
//! - [`JobRegistry`] (a kernel service, one per process) keeps every job by owner agent:
//!   ids `bash-N` / `subagent-N` counted per owner, at most 10 running or stopping jobs per
//!   owner, first-wins settlement through the runner's [`JobTicket`], bounded output with a
//!   spill file, and the owner's disposal killing and awaiting its jobs.
//! - [`notice`]: the completion notice and the wake rule (an idle owner is woken at most
//!   three times in a row; otherwise the notice is injected).
//! - [`tools`]: `job_output`, `job_list`, `job_kill`.
//! - [`JobsPlugin`] (`jobs`) mounts all of it.
//!
//! Producers implement [`JobHandle`] (how to stop their work); crates whose ids the model
//! may mistake for job ids register a [`JobAliasResolver`].

pub mod notice;
mod output;
mod plugin;
mod registry;
pub mod tools;
mod types;

pub use notice::{completion_message, completion_text, Delivery, NOTICE_PLUGIN};
pub use output::OutputLimits;
pub use plugin::{JobsConfig, JobsConfigError, JobsPlugin};
pub use registry::{JobRead, JobRegistry, JobStart, JobTicket, KillOutcome, RegistrySettings};
pub use tools::{JobKillTool, JobListTool, JobOutputTool, WaitLimits};
pub use types::{
    JobAliasResolver, JobError, JobHandle, JobId, JobKind, JobOutcome, JobSnapshot, JobState,
};
