//! Mapping harness requests to the chat-completions request body.

use crate::config::{Compat, MaxTokensField, ReasoningReplay, RouteConfig, Thinking};
use dsh_llm::{LlmError, LlmRequest};
use dsh_protocol::{codes, ContentBlock, Message, Role};
use serde_json::{json, Map, Value};

/// What an empty tool result is sent as: the wire refuses empty tool messages.
pub const EMPTY_TOOL_OUTPUT: &str = "(no output)";

/// Builds the JSON body for `request` on `route`.
///
/// Fails with `UNSUPPORTED_CONTENT` when an image reaches a model that does not take images
/// (the runtime normally replaced it already) or when an image would have to be sent at all,
/// since this wire mapping carries text only.
pub fn request_body(request: &LlmRequest, route: &RouteConfig) -> Result<Value, LlmError> {
    let config = &request.config;
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        push_message(message, &route.compat, &mut messages)?;
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    let effort = config.reasoning_effort.clone().or_else(|| {
        route
            .resolve_model(&config.model)
            .and_then(|info| info.reasoning)
            .and_then(|reasoning| reasoning.default_effort)
    });
    let (thinking, wire_effort) = resolve_thinking(effort.as_deref(), route)?;
    if let Some(thinking) = thinking {
        body.insert("thinking".into(), json!({"type": thinking.wire()}));
    }
    if let Some(effort) = wire_effort {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if let Some(tools) = request.tools.as_ref().filter(|tools| !tools.is_empty()) {
        let tools: Vec<Value> = tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name, "description": tool.description, "parameters": tool.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(temperature) = config.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = config.max_tokens {
        let field = match route.compat.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        body.insert(field.into(), json!(max_tokens));
    }
    if let Some(stop) = &config.stop {
        body.insert("stop".into(), json!(stop));
    }
    Ok(Value::Object(body))
}

/// The `thinking` object and `reasoning_effort` for an effort.
///
/// `off` turns thinking off; any other effort turns it on at that effort; no effort leaves
/// the deployment's configured thinking mode (if any). Routes that do not speak `thinking`
/// only get `reasoning_effort`.
fn resolve_thinking(
    effort: Option<&str>,
    route: &RouteConfig,
) -> Result<(Option<Thinking>, Option<String>), LlmError> {
    if route.thinking == Some(Thinking::Disabled) && effort.is_some_and(|e| e != "off") {
        return Err(LlmError::new(
            codes::UNSUPPORTED_REASONING_EFFORT,
            format!(
                "route '{}' has thinking disabled and supports only reasoning effort 'off'",
                route.route
            ),
        ));
    }
    let send_thinking = route.compat.send_thinking;
    Ok(match effort {
        Some("off") => (send_thinking.then_some(Thinking::Disabled), None),
        Some(effort) => (
            send_thinking.then_some(Thinking::Enabled),
            Some(effort.to_string()),
        ),
        None => (route.thinking.filter(|_| send_thinking), None),
    })
}

fn joined_text(blocks: &[ContentBlock], want_reasoning: bool) -> String {
    let mut out = String::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text } if !want_reasoning => out.push_str(text),
            ContentBlock::Reasoning { text } if want_reasoning => out.push_str(text),
            _ => {}
        }
    }
    out
}

fn refuse_images(blocks: &[ContentBlock]) -> Result<(), LlmError> {
    for block in blocks {
        match block {
            ContentBlock::Image { .. } => {
                return Err(LlmError::new(
                    codes::UNSUPPORTED_CONTENT,
                    "image content cannot be sent on the chat-completions text mapping",
                ))
            }
            ContentBlock::ToolResult { content, .. } => refuse_images(content)?,
            _ => {}
        }
    }
    Ok(())
}

fn push_message(message: &Message, compat: &Compat, out: &mut Vec<Value>) -> Result<(), LlmError> {
    refuse_images(&message.content)?;
    match message.role {
        Role::System => {
            out.push(json!({"role": "system", "content": joined_text(&message.content, false)}));
        }
        Role::Assistant => {
            let tool_calls: Vec<Value> = message
                .tool_calls()
                .map(|(id, name, arguments)| {
                    json!({"id": id, "type": "function",
                           "function": {"name": name, "arguments": arguments}})
                })
                .collect();
            let mut wire = Map::new();
            wire.insert("role".into(), json!("assistant"));
            // Never null: some gateways refuse null content, and a refused message in the log
            // would break every later request of the session.
            wire.insert(
                "content".into(),
                json!(joined_text(&message.content, false)),
            );
            let reasoning = joined_text(&message.content, true);
            let replay = match compat.reasoning_replay {
                ReasoningReplay::Off => false,
                ReasoningReplay::ToolCallTurns => !tool_calls.is_empty(),
                ReasoningReplay::Always => true,
            };
            if replay && !reasoning.is_empty() {
                wire.insert("reasoning_content".into(), json!(reasoning));
            }
            if !tool_calls.is_empty() {
                wire.insert("tool_calls".into(), Value::Array(tool_calls));
            }
            out.push(Value::Object(wire));
        }
        Role::User => {
            let text = joined_text(&message.content, false);
            let results: Vec<_> = message
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::ToolResult {
                        tool_call_id,
                        content,
                        ..
                    } => Some((tool_call_id, content)),
                    _ => None,
                })
                .collect();
            if !text.is_empty() || results.is_empty() {
                out.push(json!({"role": "user", "content": text}));
            }
            for (call_id, content) in results {
                let output = joined_text(content, false);
                let output = if output.is_empty() {
                    EMPTY_TOOL_OUTPUT.to_string()
                } else {
                    output
                };
                out.push(json!({"role": "tool", "tool_call_id": call_id, "content": output}));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
