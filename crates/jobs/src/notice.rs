//! The completion notice a finished job sends its owner, and the delivery setting.

use crate::types::JobSnapshot;
use dsh_protocol::{ContentBlock, Message, MessageSource, Role};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map};

/// The plugin name notices carry in their source.
pub const NOTICE_PLUGIN: &str = "tool-jobs";

/// The longest notice summary, in characters.
const SUMMARY_MAX: usize = 120;

/// Whether a completion may open a turn on an idle owner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// Idle owners are woken (within the consecutive-wake budget).
    #[default]
    Wakeup,
    /// Notices are only injected; an idle owner reads them with its next turn.
    Quiet,
}

/// `background job <id> (<kind>: <label>) finished [status: …]. Read its output with job_output.`
pub fn completion_text(job: &JobSnapshot) -> String {
    format!(
        "background job {} ({}: {}) finished {}. Read its output with job_output.",
        job.id,
        job.kind,
        job.description,
        job.status_suffix()
    )
}

/// The user-role message of a completion notice, with its `tool-jobs` notice source.
pub fn completion_message(job: &JobSnapshot) -> Message {
    let summary = format!("{} {} {}", job.kind, job.description, job.status_suffix());
    let summary: String = summary.chars().take(SUMMARY_MAX).collect();
    let mut extra = Map::new();
    extra.insert("form".into(), json!("notice"));
    extra.insert("summary".into(), json!(summary));
    Message::new(
        Role::User,
        vec![ContentBlock::text(completion_text(job))],
        MessageSource::Plugin {
            plugin: NOTICE_PLUGIN.into(),
            extra,
        },
    )
}
