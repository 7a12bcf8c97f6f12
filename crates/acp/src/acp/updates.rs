//! Session events as ACP `session/update` payloads: live (as the turn runs) and replayed
//! (`session/load`). The mapping is pure; [`Translator`] only remembers each call's tool
//! and arguments so its result can be shown in kind.

use super::tools;
use dsh_protocol::{ContentBlock, Message, MessageSource, StreamChunk};
use dsh_session::{EventData, SessionEvent, TodoStatus, TodoWrite, ToolCall, ToolResult};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;

/// The longest tool output sent as content, in bytes (the model saw all of it; an editor
/// shows a preview).
const RESULT_PREVIEW_BYTES: usize = 64 * 1024;

/// Turns one session's events into `update` objects.
#[derive(Debug)]
pub struct Translator {
    root: PathBuf,
    /// call id → (tool, parsed arguments).
    calls: HashMap<String, (String, Value)>,
}

fn chunk(kind: &str, text: &str) -> Value {
    json!({ "sessionUpdate": kind, "content": { "type": "text", "text": text } })
}

fn parse_args(arguments: &str) -> Value {
    serde_json::from_str(arguments).unwrap_or_else(|_| json!({ "raw": arguments }))
}

fn preview(text: &str) -> String {
    if text.len() <= RESULT_PREVIEW_BYTES {
        return text.to_owned();
    }
    let mut end = RESULT_PREVIEW_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} more bytes)", &text[..end], text.len() - end)
}

/// The ACP plan of a todo list.
pub fn plan(todos: &TodoWrite) -> Value {
    let entries: Vec<Value> = todos
        .todos
        .iter()
        .map(|todo| {
            let status = match todo.status {
                TodoStatus::Pending => "pending",
                TodoStatus::InProgress => "in_progress",
                TodoStatus::Completed => "completed",
            };
            json!({ "content": todo.content, "priority": "medium", "status": status })
        })
        .collect();
    json!({ "sessionUpdate": "plan", "entries": entries })
}

impl Translator {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            calls: HashMap::new(),
        }
    }

    /// The workspace paths are resolved against.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// The tool and arguments of a call seen earlier.
    pub fn call(&self, id: &str) -> Option<&(String, Value)> {
        self.calls.get(id)
    }

    /// The `tool_call` announcing `call` (also what a permission request describes).
    pub fn tool_call(&mut self, call: &ToolCall) -> Value {
        let args = parse_args(&call.arguments);
        let update = self.describe(call.call_id.as_str(), &call.name, &args);
        self.calls
            .insert(call.call_id.as_str().to_owned(), (call.name.clone(), args));
        update
    }

    fn describe(&self, id: &str, tool: &str, args: &Value) -> Value {
        let mut update = json!({
            "sessionUpdate": "tool_call",
            "toolCallId": id,
            "title": tools::title(tool, args),
            "kind": tools::kind(tool),
            "status": "pending",
            "rawInput": args,
        });
        let locations = tools::locations(tool, args, &self.root);
        if !locations.is_empty() {
            update["locations"] = Value::Array(locations);
        }
        if let Some(diff) = tools::diff(tool, args, &self.root) {
            update["content"] = json!([diff]);
        }
        update
    }

    fn tool_result(&self, result: &ToolResult) -> Option<Value> {
        let (id, content, is_error) =
            result
                .message
                .content
                .iter()
                .find_map(|block| match block {
                    ContentBlock::ToolResult {
                        tool_call_id,
                        content,
                        is_error,
                    } => Some((tool_call_id, content, is_error.unwrap_or(false))),
                    _ => None,
                })?;
        let failed = is_error || result.error.is_some();
        let text: String = content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join("\n");
        let call = self.calls.get(id.as_str());
        let diff = call
            .filter(|_| !failed)
            .and_then(|(tool, args)| tools::diff(tool, args, &self.root));
        let mut body = Vec::new();
        if let Some(diff) = diff {
            body.push(diff);
        }
        if !text.is_empty() {
            body.push(tools::text_content(preview(&text)));
        }
        Some(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id.as_str(),
            "status": if failed { "failed" } else { "completed" },
            "content": body,
            "rawOutput": { "text": preview(&text), "isError": failed },
        }))
    }

    /// What an editor is shown as `event` is committed during a turn: streamed text and
    /// reasoning, tool calls and their results, plans.
    pub fn live(&mut self, event: &SessionEvent) -> Vec<Value> {
        match &event.data {
            EventData::AssistantChunk(c) => match &c.chunk {
                StreamChunk::TextDelta { text, .. } if !text.is_empty() => {
                    vec![chunk("agent_message_chunk", text)]
                }
                StreamChunk::ReasoningDelta { text, .. } if !text.is_empty() => {
                    vec![chunk("agent_thought_chunk", text)]
                }
                _ => Vec::new(),
            },
            EventData::ToolCall(call) => vec![self.tool_call(call)],
            EventData::ToolResult(result) => self.tool_result(result).into_iter().collect(),
            EventData::TodoWrite(todos) => vec![plan(todos)],
            _ => Vec::new(),
        }
    }

    /// What `session/load` replays for a stored event: the person's messages, the answers
    /// (reasoning first, as it was thought), tool calls with their results, and plans.
    /// Messages from plugins (instructions, notices) are not the conversation and are left out.
    pub fn replay(&mut self, event: &SessionEvent) -> Vec<Value> {
        match &event.data {
            EventData::UserMessage(message) if is_from_person(message) => message
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } if !text.is_empty() => {
                        Some(chunk("user_message_chunk", text))
                    }
                    _ => None,
                })
                .collect(),
            EventData::AssistantMessage(answer) => answer
                .message
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Reasoning { text } if !text.is_empty() => {
                        Some(chunk("agent_thought_chunk", text))
                    }
                    ContentBlock::Text { text } if !text.is_empty() => {
                        Some(chunk("agent_message_chunk", text))
                    }
                    _ => None,
                })
                .collect(),
            EventData::ToolCall(call) => vec![self.tool_call(call)],
            EventData::ToolResult(result) => self.tool_result(result).into_iter().collect(),
            EventData::TodoWrite(todos) => vec![plan(todos)],
            _ => Vec::new(),
        }
    }
}

fn is_from_person(message: &Message) -> bool {
    matches!(message.source, MessageSource::User { .. })
}

#[cfg(test)]
mod tests;
