//! `report`, registered in each continuable child's own scope: relays content to the agent
//! that started it (the parent's next step), without ending the child's turn.

use crate::continuable;
use crate::service::Inner;
use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Weak;

/// The child-scoped section that asks for a report.
pub const REPORT_SECTION: &str = "tool:report";
pub const REPORT_SECTION_TEXT: &str = "Another agent started you and does not see your \
transcript, tool output or reasoning. Before you finish, call `report` once with a \
self-contained result (conclusions, and the shared paths that matter); call it earlier only \
for findings that change what that agent does next. Reporting does not end your turn.";

const NAME: &str = "report";

#[derive(Debug, Deserialize)]
pub struct ReportArgs {
    pub output: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reported {
    pub message_id: String,
}

pub struct Report {
    inner: Weak<Inner>,
}

impl Report {
    pub(crate) fn new(inner: Weak<Inner>) -> Self {
        Self { inner }
    }
}

impl TypedTool for Report {
    type Args = ReportArgs;
    type Output = Reported;

    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> String {
        "Report selected content to the agent that started you. Call this once before you \
finish, with a self-contained final result, and earlier for progress or findings that change \
what that agent does next. That agent shares your workspace but does not automatically receive \
your transcript, tool output, or reasoning, so finishing your work is not itself a result. \
Reporting does not end your turn or finish your work, and only your direct parent receives it. \
A failed call may still have arrived, so do not blindly repeat it."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"output": {"type": "string",
            "description": "Actionable content for your parent; summarize conclusions and reference relevant shared paths."}},
            "required": ["output"]})
    }

    async fn execute(
        &self,
        args: ReportArgs,
        exec: &ToolExecution,
    ) -> Result<Reported, ToolFailure> {
        let (inner, caller) =
            super::context(&self.inner, exec, NAME).map_err(|e| e.into_failure(NAME))?;
        let id = continuable::report(&inner, caller.agent(), &args.output)
            .map_err(|e| e.into_failure(NAME))?;
        Ok(Reported {
            message_id: id.to_string(),
        })
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        let id = value["messageId"].as_str().unwrap_or_default();
        vec![ContentBlock::text(format!(
            "report accepted by the agent that started you as message {id}"
        ))]
    }
}
