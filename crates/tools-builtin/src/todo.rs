//! `todo_write`: the model's task list, replaced whole on every call.
//!
//! The body only validates and summarizes; a call made for an agent then logs the
//! `todo/write` event with the returned list (it is in the output metadata as `todos`) in
//! the agent's session.

use std::time::Duration;

use dsh_protocol::ContentBlock;
use dsh_session::{AppendOptions, EventData};
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::env::ToolEnv;
use crate::error::ToolError;
use crate::tool::{tool_env, ToolOutput};

/// The `todo_write` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct TodoWrite;

/// A task's state (wire names as the original logs them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
}

/// Arguments of `todo_write`: the complete list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoWriteArgs {
    pub todos: Vec<Todo>,
}

const DESCRIPTION: &str = "Record the task list for the current work. Always send the COMPLETE \
list: each call replaces the previous one (there are no partial updates). Use it to plan \
multi-step work and show progress: add one todo per concrete step before starting. Keep the todo \
you are working on `in_progress` (several only when work truly runs in parallel), mark each one \
`completed` as soon as it is done rather than in batches, and leave nothing `in_progress` only \
once all work is complete. Skip the list for trivial single-step tasks. Statuses: `pending`, \
`in_progress`, `completed`.";

/// Longest accepted task text; a todo is a line, not a document.
const MAX_CONTENT_CHARS: usize = 1_000;

impl TodoWrite {
    /// The name the model calls the tool by.
    pub const NAME: &'static str = "todo_write";

    /// The body: runs one call in `env`; `cancel` is the call's signal.
    pub async fn run(
        &self,
        args: TodoWriteArgs,
        _env: &ToolEnv,
        _cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let todos = validate(args.todos)?;
        let count = |status| todos.iter().filter(|t| t.status == status).count();
        let content = format!(
            "Updated todo list: {} pending, {} in progress, {} completed.",
            count(TodoStatus::Pending),
            count(TodoStatus::InProgress),
            count(TodoStatus::Completed)
        );
        Ok(ToolOutput::text(content).with_metadata(json!({ "todos": todos })))
    }
}

impl TypedTool for TodoWrite {
    type Args = TodoWriteArgs;
    type Output = ToolOutput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The COMPLETE task list, replacing any previous list.",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {
                            "content": {"type": "string", "description": "The task, as a short imperative line."},
                            "status": {
                                "type": "string",
                                "description": "pending (not started) | in_progress (now) | completed (done).",
                                "enum": ["pending", "in_progress", "completed"]
                            }
                        },
                        "required": ["content", "status"]
                    }
                }
            },
            "required": ["todos"]
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        false
    }

    async fn execute(
        &self,
        args: TodoWriteArgs,
        exec: &ToolExecution,
    ) -> Result<ToolOutput, ToolFailure> {
        let env = tool_env(exec)?;
        let output = self.run(args, &env, exec.signal().clone()).await?;
        record(exec, &output)?;
        Ok(output)
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        ToolOutput::render_value(value)
    }

    fn presentation_meta(&self, _args: &Value, value: &Value) -> Option<Value> {
        ToolOutput::value_meta(value)
    }
}

/// The todo list is a projection of the log: record it as `todo/write` in the calling agent's
/// session before the result settles. Calls without an agent (programmatic use) have no
/// session to record in.
fn record(exec: &ToolExecution, output: &ToolOutput) -> Result<(), ToolFailure> {
    let Some(caller) = exec.caller() else {
        tracing::debug!("todo_write ran without an agent; the list is not recorded");
        return Ok(());
    };
    let todos = output.metadata.get("todos").cloned().unwrap_or(Value::Null);
    let todos = serde_json::from_value(todos).map_err(|e| record_failure(&e))?;
    caller
        .session()
        .append(
            EventData::TodoWrite(dsh_session::TodoWrite { todos }),
            AppendOptions::log_only(),
        )
        .map_err(|e| record_failure(&e))?;
    Ok(())
}

fn record_failure(error: &dyn std::fmt::Display) -> ToolFailure {
    ToolFailure::coded(
        "SessionError",
        "TODO_NOT_RECORDED",
        format!("the todo list could not be recorded in the session: {error}"),
    )
}

/// Trims each task and rejects empty or oversized ones.
fn validate(todos: Vec<Todo>) -> Result<Vec<Todo>, ToolError> {
    todos
        .into_iter()
        .enumerate()
        .map(|(index, todo)| {
            let content = todo.content.trim().to_string();
            if content.is_empty() {
                return Err(ToolError::invalid(
                    TodoWrite::NAME,
                    format!("todos[{index}].content is empty; describe the task in a short line"),
                ));
            }
            if content.chars().count() > MAX_CONTENT_CHARS {
                return Err(ToolError::invalid(
                    TodoWrite::NAME,
                    format!("todos[{index}].content is longer than {MAX_CONTENT_CHARS} characters; keep each task to one line"),
                ));
            }
            Ok(Todo { content, status: todo.status })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn statuses_use_the_original_wire_names() {
        let parsed: TodoWriteArgs = serde_json::from_value(json!({"todos": [
            {"content": "a", "status": "in_progress"}, {"content": "b", "status": "completed"}
        ]}))
        .unwrap();
        assert_eq!(parsed.todos[0].status, TodoStatus::InProgress);
        assert!(serde_json::from_value::<TodoWriteArgs>(
            json!({"todos": [{"content": "a", "status": "done"}]})
        )
        .is_err());
        assert!(serde_json::from_value::<TodoWriteArgs>(
            json!({"todos": [{"content": "a", "status": "pending", "x": 1}]})
        )
        .is_err());
    }

    #[test]
    fn validation_trims_and_rejects_empty_content() {
        let ok = validate(vec![Todo {
            content: "  do it ".into(),
            status: TodoStatus::Pending,
        }])
        .unwrap();
        assert_eq!(ok[0].content, "do it");
        let err = validate(vec![Todo {
            content: " ".into(),
            status: TodoStatus::Pending,
        }])
        .unwrap_err();
        assert_eq!(err.to_string(), "invalid arguments for todo_write: todos[0].content is empty; describe the task in a short line");
    }
}
