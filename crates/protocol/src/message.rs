use crate::ids::{CallId, MessageId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The plugin name the runtime-context projection writes in its message sources; readers use
/// it to recognise snapshot messages when rebuilding projection state from a log.
pub const SYSTEM_PROMPT_PLUGIN: &str = "@deepseek-ai/dsh-system-prompt";

/// Who a message speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One identified, immutable message.
///
/// The three message shapes of the model layer are all `Message`s:
/// - a *user message*: role `user`, any content, any non-model source;
/// - an *assistant message*: role `assistant`, source [`MessageSource::Model`];
/// - a *tool-result message*: role `user`, content exactly one [`ContentBlock::ToolResult`],
///   source [`MessageSource::Tool`] naming the same call.
///
/// [`Message::check_shape`] enforces these rules where a log is validated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: MessageId,
    pub role: Role,
    pub content: Vec<ContentBlock>,
    pub source: MessageSource,
}

/// Where a message came from. Unknown kinds are carried through as [`MessageSource::Other`].
///
/// `Deserialize` is written by hand (`crate::tagged`) and reads what the derive would.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum MessageSource {
    /// Typed by a person.
    User {
        /// Fields added by plugins, kept verbatim.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// Produced by a plugin (runtime-context snapshots, instructions, notices, ...).
    Plugin {
        plugin: String,
        /// `form`, `sections` and any other plugin-defined fields, kept verbatim.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// Produced by a model.
    Model {
        provider: String,
        model: String,
        #[serde(
            rename = "replayState",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        replay_state: Option<Value>,
    },
    /// The result of a tool call.
    Tool {
        #[serde(rename = "callId")]
        call_id: CallId,
    },
    /// A kind this build does not know.
    #[serde(untagged)]
    Other(Map<String, Value>),
}

impl MessageSource {
    /// The plain `{kind: "user"}` source.
    pub fn user() -> Self {
        Self::User { extra: Map::new() }
    }

    /// A `{kind: "plugin", plugin}` source with no further fields.
    pub fn plugin(plugin: impl Into<String>) -> Self {
        Self::Plugin {
            plugin: plugin.into(),
            extra: Map::new(),
        }
    }

    /// A `{kind: "model", provider, model}` source.
    pub fn model(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self::Model {
            provider: provider.into(),
            model: model.into(),
            replay_state: None,
        }
    }
}

/// One block of message content. Unknown block types are carried through as
/// [`ContentBlock::Other`].
///
/// `Deserialize` is written by hand (`crate::tagged`) and reads what the derive would.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    /// The model's thinking channel.
    Reasoning {
        text: String,
    },
    /// A durable reference to a stored image attachment.
    Image {
        attachment: Value,
    },
    /// A tool call as the model produced it; `arguments` stays the raw JSON text.
    ToolCall {
        id: CallId,
        name: String,
        arguments: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_call_id: CallId,
        content: Vec<ContentBlock>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    #[serde(untagged)]
    Other(Map<String, Value>),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The block's text, for text and reasoning blocks.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } | Self::Reasoning { text } => Some(text),
            _ => None,
        }
    }
}

/// Token counts of one model call. The counts are disjoint: `input_tokens` excludes cached
/// input, which is counted in `cache_read_tokens`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl Message {
    /// A new message with a fresh random id.
    pub fn new(role: Role, content: Vec<ContentBlock>, source: MessageSource) -> Self {
        Self {
            id: MessageId::random(),
            role,
            content,
            source,
        }
    }

    /// A user message holding one text block, typed by a person.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(
            Role::User,
            vec![ContentBlock::text(text)],
            MessageSource::user(),
        )
    }

    /// An assistant message from `provider`/`model`.
    pub fn assistant(content: Vec<ContentBlock>, source: MessageSource) -> Self {
        Self::new(Role::Assistant, content, source)
    }

    /// The tool-result message for `call_id`.
    pub fn tool_result(call_id: CallId, content: Vec<ContentBlock>, is_error: bool) -> Self {
        Self::new(
            Role::User,
            vec![ContentBlock::ToolResult {
                tool_call_id: call_id.clone(),
                content,
                is_error: Some(is_error),
            }],
            MessageSource::Tool { call_id },
        )
    }

    /// All text blocks joined (reasoning excluded).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool-call blocks, in model order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&CallId, &str, &str)> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => Some((id, name.as_str(), arguments.as_str())),
            _ => None,
        })
    }

    /// Checks the role/source/content rules of the three message shapes.
    ///
    /// `expected` says which shape the caller requires (the event type decides it).
    pub fn check_shape(&self, expected: MessageShape) -> Result<(), String> {
        if self.id.as_str().is_empty() {
            return Err("message id must not be empty".into());
        }
        match expected {
            MessageShape::User => {
                if self.role != Role::User {
                    return Err(format!("user message has role {:?}", self.role));
                }
                if matches!(
                    self.source,
                    MessageSource::Model { .. } | MessageSource::Tool { .. }
                ) {
                    return Err("user message must not carry a model or tool source".into());
                }
            }
            MessageShape::Assistant => {
                if self.role != Role::Assistant {
                    return Err(format!("assistant message has role {:?}", self.role));
                }
                match &self.source {
                    MessageSource::Model {
                        provider, model, ..
                    } if !provider.is_empty() && !model.is_empty() => {}
                    _ => {
                        return Err(
                            "assistant message needs source {kind: model, provider, model}".into(),
                        )
                    }
                }
            }
            MessageShape::ToolResult => {
                if self.role != Role::User {
                    return Err(format!("tool-result message has role {:?}", self.role));
                }
                let MessageSource::Tool { call_id } = &self.source else {
                    return Err("tool-result message needs source {kind: tool, callId}".into());
                };
                match self.content.as_slice() {
                    [ContentBlock::ToolResult { tool_call_id, .. }] if tool_call_id == call_id => {}
                    _ => {
                        return Err(format!(
                            "tool-result message must hold exactly one tool-result block for call {call_id}"
                        ))
                    }
                }
            }
        }
        Ok(())
    }
}

/// The three message shapes, for [`Message::check_shape`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageShape {
    User,
    Assistant,
    ToolResult,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fixture_shapes_round_trip() {
        let raw = json!({"content":[{"type":"text","text":"Current runtime context."}],
            "source":{"kind":"plugin","plugin":"@deepseek-ai/dsh-system-prompt","form":"snapshot",
                "sections":[{"name":"sandbox:policy","text":"x"}]},
            "role":"user","id":"29dbc6b2"});
        let message: Message = serde_json::from_value(raw.clone()).unwrap();
        assert!(
            matches!(&message.source, MessageSource::Plugin { plugin, extra }
            if plugin == SYSTEM_PROMPT_PLUGIN && extra.contains_key("sections"))
        );
        assert_eq!(serde_json::to_value(&message).unwrap(), raw);
    }

    #[test]
    fn unknown_blocks_and_sources_are_kept() {
        let raw = json!({"id":"m","role":"user",
            "content":[{"type":"audio","clip":"a.wav"},{"type":"tool-result","toolCallId":"c","content":[],"isError":false}],
            "source":{"kind":"hook","hook":"SessionStart"}});
        let message: Message = serde_json::from_value(raw.clone()).unwrap();
        assert!(matches!(message.content[0], ContentBlock::Other(_)));
        assert!(matches!(message.source, MessageSource::Other(_)));
        assert_eq!(serde_json::to_value(&message).unwrap(), raw);
    }

    #[test]
    fn shapes_are_checked() {
        let result =
            Message::tool_result(CallId::from("c1"), vec![ContentBlock::text("ok")], false);
        assert!(result.check_shape(MessageShape::ToolResult).is_ok());
        assert!(result.check_shape(MessageShape::User).is_err());
        let assistant = Message::assistant(vec![], MessageSource::model("p", "m"));
        assert!(assistant.check_shape(MessageShape::Assistant).is_ok());
        let bad = Message::assistant(vec![], MessageSource::model("", "m"));
        assert!(bad.check_shape(MessageShape::Assistant).is_err());
    }
}
