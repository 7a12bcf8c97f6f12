//! The result of one tool call, as the scheduler commits it to the log.

use crate::error::{ErrorInfo, ToolFailure};
use dsh_protocol::{CallId, ContentBlock, Message};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The settled result of one call: what the model sees (`content`), what the log keeps
/// (`outcome`, `meta`) and what the loop must do next (`additional_contexts`, `concludes_turn`).
#[derive(Clone, Debug, PartialEq)]
pub struct InvocationResult {
    pub call_id: CallId,
    pub name: String,
    pub outcome: ToolOutcome,
    pub content: Vec<ContentBlock>,
    /// UI-only metadata, recorded as the `tool/result` event's `meta`.
    pub meta: Option<Value>,
    /// User messages to append to the next step's input, in order.
    pub additional_contexts: Vec<Message>,
    /// Set by a successful tool that ends the turn; always false for failures.
    pub concludes_turn: bool,
}

/// Success with the canonical value, or failure with its detail.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutcome {
    Success { value: Value },
    Failure { error: ToolErrorDetail },
}

/// The failure half of a result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolErrorDetail {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<ErrorInfo>,
}

impl From<ToolFailure> for ToolErrorDetail {
    fn from(failure: ToolFailure) -> Self {
        Self {
            message: failure.message,
            info: failure.info,
        }
    }
}

/// The content the model sees for a failure.
pub(crate) fn error_content(message: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::text(format!("Error: {message}"))]
}

impl InvocationResult {
    /// A success with already rendered content.
    pub fn success(
        call_id: CallId,
        name: impl Into<String>,
        value: Value,
        content: Vec<ContentBlock>,
    ) -> Self {
        Self {
            call_id,
            name: name.into(),
            outcome: ToolOutcome::Success { value },
            content,
            meta: None,
            additional_contexts: Vec::new(),
            concludes_turn: false,
        }
    }

    /// A failure whose content is `Error: <message>`.
    pub fn failure(call_id: CallId, name: impl Into<String>, failure: ToolFailure) -> Self {
        Self {
            call_id,
            name: name.into(),
            content: error_content(&failure.message),
            outcome: ToolOutcome::Failure {
                error: failure.into(),
            },
            meta: None,
            additional_contexts: Vec::new(),
            concludes_turn: false,
        }
    }

    /// The synthetic result the scheduler records for calls it never started because the
    /// turn was aborted.
    pub fn aborted_before_dispatch(call_id: CallId, name: impl Into<String>) -> Self {
        Self::failure(call_id, name, ToolFailure::aborted_before_dispatch())
    }

    pub fn is_error(&self) -> bool {
        matches!(self.outcome, ToolOutcome::Failure { .. })
    }

    /// The canonical value of a success.
    pub fn value(&self) -> Option<&Value> {
        match &self.outcome {
            ToolOutcome::Success { value } => Some(value),
            ToolOutcome::Failure { .. } => None,
        }
    }

    /// The detail of a failure.
    pub fn error(&self) -> Option<&ToolErrorDetail> {
        match &self.outcome {
            ToolOutcome::Success { .. } => None,
            ToolOutcome::Failure { error } => Some(error),
        }
    }

    /// What the `tool/result` event records as `error`.
    pub fn error_info(&self) -> Option<&ErrorInfo> {
        self.error().and_then(|error| error.info.as_ref())
    }

    /// The tool-result message the model sees.
    pub fn to_message(&self) -> Message {
        Message::tool_result(self.call_id.clone(), self.content.clone(), self.is_error())
    }

    /// The spec's JSON shape: `{isError, value | error, content, meta?, additionalContexts?,
    /// concludesTurn?}`.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("isError".into(), Value::Bool(self.is_error()));
        match &self.outcome {
            ToolOutcome::Success { value } => {
                out.insert("value".into(), value.clone());
            }
            ToolOutcome::Failure { error } => {
                out.insert("error".into(), json!(error));
            }
        }
        out.insert("content".into(), json!(self.content));
        if let Some(meta) = &self.meta {
            out.insert("meta".into(), meta.clone());
        }
        if !self.additional_contexts.is_empty() {
            out.insert("additionalContexts".into(), json!(self.additional_contexts));
        }
        if self.concludes_turn {
            out.insert("concludesTurn".into(), Value::Bool(true));
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::codes;

    #[test]
    fn failure_json_shape() {
        let result = InvocationResult::aborted_before_dispatch(CallId::from("c1"), "bash");
        assert_eq!(
            result.to_json(),
            json!({
                "isError": true,
                "error": {"message": "tool call aborted before dispatch",
                          "info": {"name": "AbortError", "code": codes::ABORTED_BEFORE_DISPATCH}},
                "content": [{"type": "text", "text": "Error: tool call aborted before dispatch"}],
            })
        );
        assert_eq!(
            result.error_info().map(|i| i.code.as_str()),
            Some("ABORTED_BEFORE_DISPATCH")
        );
    }

    #[test]
    fn success_json_shape_and_message() {
        let mut result = InvocationResult::success(
            CallId::from("c2"),
            "read",
            json!({"n": 1}),
            vec![ContentBlock::text("one")],
        );
        result.meta = Some(json!({"path": "a"}));
        result.concludes_turn = true;
        assert_eq!(
            result.to_json(),
            json!({"isError": false, "value": {"n": 1},
                   "content": [{"type": "text", "text": "one"}],
                   "meta": {"path": "a"}, "concludesTurn": true})
        );
        let message = result.to_message();
        assert_eq!(
            message.content,
            vec![ContentBlock::ToolResult {
                tool_call_id: CallId::from("c2"),
                content: vec![ContentBlock::text("one")],
                is_error: Some(false),
            }]
        );
    }
}
