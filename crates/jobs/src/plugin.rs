//! `JobsPlugin` (row `jobs`): provides the [`JobRegistry`] service, registers the three job
//! tools, and resets an owner's wake budget whenever it claims a person's message.

use crate::notice::Delivery;
use crate::output::OutputLimits;
use crate::registry::{JobRegistry, RegistrySettings};
use crate::tools::{JobKillTool, JobListTool, JobOutputTool, WaitLimits};
use dsh_agent::InboxClaimed;
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_protocol::MessageSource;
use dsh_tools::{ToolRuntime, Typed};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The plugin's configuration (`null`/`{}` = the defaults below).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct JobsConfig {
    /// `job_output` `wait` without `timeout_ms` waits this long (30000).
    pub wait_timeout_ms: u64,
    /// No wait is longer (600000).
    pub max_wait_timeout_ms: u64,
    /// `wakeup` (idle owners are woken) or `quiet` (notices are only injected).
    pub completion_delivery: Delivery,
    /// Wakes in a row without a user message in between (3).
    pub max_consecutive_wakes: u32,
    /// Running plus stopping jobs per owner (10).
    pub max_jobs_per_owner: usize,
    /// Output bytes kept in memory per job (1 MiB).
    pub memory_limit_bytes: usize,
    /// The spill file of one job stops growing here (256 MiB).
    pub spill_limit_bytes: u64,
    /// Bytes one `job_output` returns at most (32 KiB).
    pub read_limit_bytes: usize,
    /// Where jobs without a directory of their own spill (`$TMPDIR/dsh-jobs`).
    pub spill_dir: Option<PathBuf>,
}

impl Default for JobsConfig {
    fn default() -> Self {
        let output = OutputLimits::default();
        let wait = WaitLimits::default();
        Self {
            wait_timeout_ms: wait.default.as_millis() as u64,
            max_wait_timeout_ms: wait.max.as_millis() as u64,
            completion_delivery: Delivery::Wakeup,
            max_consecutive_wakes: 3,
            max_jobs_per_owner: 10,
            memory_limit_bytes: output.memory_limit,
            spill_limit_bytes: output.spill_limit,
            read_limit_bytes: output.read_limit,
            spill_dir: None,
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum JobsConfigError {
    #[error("jobs: {field} must be positive")]
    NotPositive { field: &'static str },
    #[error("jobs: waitTimeoutMs ({default}) exceeds maxWaitTimeoutMs ({max})")]
    DefaultAboveMax { default: u64, max: u64 },
}

impl JobsConfig {
    /// The registry settings and wait limits, after checking every bound.
    pub fn resolve(&self) -> Result<(RegistrySettings, WaitLimits), JobsConfigError> {
        let positive = |value: u64, field: &'static str| {
            if value == 0 {
                Err(JobsConfigError::NotPositive { field })
            } else {
                Ok(())
            }
        };
        positive(self.wait_timeout_ms, "waitTimeoutMs")?;
        positive(self.max_wait_timeout_ms, "maxWaitTimeoutMs")?;
        positive(self.max_jobs_per_owner as u64, "maxJobsPerOwner")?;
        positive(self.memory_limit_bytes as u64, "memoryLimitBytes")?;
        positive(self.spill_limit_bytes, "spillLimitBytes")?;
        positive(self.read_limit_bytes as u64, "readLimitBytes")?;
        if self.wait_timeout_ms > self.max_wait_timeout_ms {
            return Err(JobsConfigError::DefaultAboveMax {
                default: self.wait_timeout_ms,
                max: self.max_wait_timeout_ms,
            });
        }
        let defaults = RegistrySettings::default();
        let settings = RegistrySettings {
            max_jobs_per_owner: self.max_jobs_per_owner,
            spill_dir: self.spill_dir.clone().unwrap_or(defaults.spill_dir),
            output: OutputLimits {
                memory_limit: self.memory_limit_bytes,
                spill_limit: self.spill_limit_bytes,
                read_limit: self.read_limit_bytes,
            },
            delivery: self.completion_delivery,
            max_consecutive_wakes: self.max_consecutive_wakes,
        };
        let wait = WaitLimits {
            default: Duration::from_millis(self.wait_timeout_ms),
            max: Duration::from_millis(self.max_wait_timeout_ms),
        };
        Ok((settings, wait))
    }
}

/// Mounts the job registry and its tools.
#[derive(Debug)]
pub struct JobsPlugin;

impl Plugin for JobsPlugin {
    const NAME: &'static str = "jobs";
    type Config = JobsConfig;

    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<ToolRuntime>()]
    }

    fn apply(ctx: &Context, config: JobsConfig) -> Result<(), BoxError> {
        let (settings, wait) = config.resolve()?;
        let tools = ctx.require::<ToolRuntime>()?;
        let registry = Arc::new(JobRegistry::new(settings));
        ctx.provide(registry.clone())?.forget();
        tools
            .register(ctx, Typed::arc(JobOutputTool::new(registry.clone(), wait)))?
            .forget();
        tools
            .register(ctx, Typed::arc(JobListTool::new(registry.clone())))?
            .forget();
        tools
            .register(ctx, Typed::arc(JobKillTool::new(registry.clone())))?
            .forget();
        let weak = Arc::downgrade(&registry);
        ctx.on::<InboxClaimed>(move |claimed| {
            if matches!(claimed.message.source, MessageSource::User { .. }) {
                if let Some(registry) = weak.upgrade() {
                    registry.note_user_message(claimed.agent.id());
                }
            }
            Ok(())
        })?
        .forget();
        Ok(())
    }
}
