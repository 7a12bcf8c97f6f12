//! `subagent` (a fresh child, continuable in the background by default) and
//! `subagent_fork` (a child seeded with this conversation's completed turns, one-shot in
//! the foreground by default).

use crate::child::{self, Provider};
use crate::continuable;
use crate::descriptor::SubagentMode;
use crate::error::SubagentError;
use crate::outcome::{blocks_text, foreground_failure_text, StopReason};
use crate::run;
use crate::service::Inner;
use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Weak;

/// The system-prompt section that comes with `subagent`.
pub const SUBAGENT_SECTION: &str = "tool:subagent";
pub const SUBAGENT_SECTION_ORDER: f64 = 116.5;
pub const SUBAGENT_SECTION_TEXT: &str = "Use subagent in the background by default. Start \
independent delegations together in one assistant message and continue useful work while they \
run; you are told when each one settles. Use `run_in_background: false` only when your next \
action depends on the result.";

const SUBAGENT_DESCRIPTION: &str = "Delegate a self-contained task to a subagent (a separate agent that works in its own context) to offload focused, independent work — research, a scoped implementation, an analysis — so it does not consume this conversation's context. The subagent returns its result, not its intermediate steps. Give it a complete, standalone prompt: it does not see this conversation. This tool runs in the background by default, immediately returns a durable subagent id, and keeps the child conversation available for later turns. When that run settles, the runtime sends the parent a notice containing its outcome and any final assistant message; `send_message` starts a later turn in the same child conversation. Set `run_in_background: false` only when your next action depends on receiving the result.";

const FORK_DESCRIPTION: &str = "Delegate a task to a subagent that inherits this conversation: a child agent seeded with all completed turns so far (it does not see the current in-flight turn). Use this when the subtask builds on this conversation's context — a follow-up analysis, a review, a continuation — without consuming this conversation's context for the work itself. You receive its result, not its intermediate steps. This call waits for the result by default. Set `run_in_background: true` to return a job id; collect with `job_output` and stop with `job_kill`.";

#[derive(Debug, Deserialize)]
pub struct DelegateArgs {
    pub description: String,
    pub prompt: String,
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// `subagent` or `subagent_fork`.
pub struct Delegate {
    inner: Weak<Inner>,
    provider: Provider,
}

impl Delegate {
    pub(crate) fn spawn(inner: Weak<Inner>) -> Self {
        Self {
            inner,
            provider: Provider::Spawn,
        }
    }

    pub(crate) fn fork(inner: Weak<Inner>) -> Self {
        Self {
            inner,
            provider: Provider::Fork,
        }
    }

    fn tool_name(&self) -> &'static str {
        match self.provider {
            Provider::Spawn => "subagent",
            Provider::Fork => "subagent_fork",
        }
    }

    /// The mode background calls run in: `subagent` continues, `subagent_fork` is a job.
    fn background_mode(&self) -> SubagentMode {
        match self.provider {
            Provider::Spawn => SubagentMode::Continuable,
            Provider::Fork => SubagentMode::OneShot,
        }
    }
}

impl TypedTool for Delegate {
    type Args = DelegateArgs;
    type Output = Value;

    fn name(&self) -> &str {
        self.tool_name()
    }

    fn description(&self) -> String {
        match self.provider {
            Provider::Spawn => SUBAGENT_DESCRIPTION.into(),
            Provider::Fork => FORK_DESCRIPTION.into(),
        }
    }

    fn parameters(&self) -> Value {
        let (prompt, background) = match self.provider {
            Provider::Spawn => (
                "The complete, self-contained task for the subagent. It does not share this conversation's context, so include everything it needs.",
                "Whether to run in the background and return a durable subagent id immediately. Defaults to true. Set false to wait for the result when your next action depends on it.",
            ),
            Provider::Fork => (
                "The task for the subagent. It already sees this conversation's completed turns, so build on them freely and state only what is new.",
                "Whether to run as a background job and return its id. Defaults to false; collect with job_output or stop with job_kill.",
            ),
        };
        json!({"type": "object", "properties": {
            "description": {"type": "string", "description": "A short (3-5 word) description of the delegated task, for display."},
            "prompt": {"type": "string", "description": prompt},
            "run_in_background": {"type": "boolean", "description": background}},
            "required": ["description", "prompt"]})
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: DelegateArgs,
        exec: &ToolExecution,
    ) -> Result<Value, ToolFailure> {
        let name = self.tool_name();
        let fail = |e: SubagentError| e.into_failure(name);
        let (inner, caller) = super::context(&self.inner, exec, name).map_err(fail)?;
        let background = args
            .run_in_background
            .unwrap_or(self.background_mode() == SubagentMode::Continuable);
        let mode = if background {
            self.background_mode()
        } else {
            SubagentMode::OneShot
        };
        let plan = child::plan(
            &inner,
            caller.agent(),
            self.provider,
            mode,
            &args.description,
        )
        .map_err(fail)?;
        if !background {
            let (run_id, outcome) =
                run::run_one_shot(&inner, caller, plan, &args.prompt, exec.signal())
                    .await
                    .map_err(fail)?;
            if outcome.stop != StopReason::Completed {
                return Err(ToolFailure::coded(
                    name,
                    "SUBAGENT_RUN_ENDED",
                    foreground_failure_text(&outcome),
                ));
            }
            return Ok(json!({"kind": "foreground", "runId": run_id, "output": outcome.output}));
        }
        match mode {
            SubagentMode::Continuable => {
                let id = continuable::start(&inner, caller, plan, &args.prompt)
                    .await
                    .map_err(fail)?;
                Ok(json!({"kind": "continuable", "subagentId": id.as_str()}))
            }
            SubagentMode::OneShot => {
                let job =
                    crate::background::start(&inner, exec, plan, args.prompt, args.description)
                        .map_err(fail)?;
                Ok(json!({"kind": "background", "jobId": job}))
            }
        }
    }

    fn presentation_meta(&self, args: &Value, value: &Value) -> Option<Value> {
        // The durable link from the parent's log to a continuable child (read back when the
        // parent resumes).
        let id = value["subagentId"].as_str()?;
        Some(json!({"subagent": {"id": id, "label": args["description"], "event": "started"}}))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        let text = match value["kind"].as_str() {
            Some("continuable") => format!(
                "started subagent {}",
                value["subagentId"].as_str().unwrap_or_default()
            ),
            Some("background") => format!(
                "started background subagent job {}",
                value["jobId"].as_str().unwrap_or_default()
            ),
            _ => {
                let blocks: Vec<ContentBlock> =
                    serde_json::from_value(value["output"].clone()).unwrap_or_default();
                blocks_text(&blocks)
            }
        };
        vec![ContentBlock::text(text)]
    }
}
