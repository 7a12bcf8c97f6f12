//! Mapping harness requests to the chat-completions request body.

use crate::config::{Compat, MaxTokensField, ReasoningReplay, RouteConfig, Thinking};
use crate::images::{RequestImages, WireImage};
use dsh_attachments::text::{tool_image_caption, tool_image_handle, TOOL_IMAGES_HEADING};
use dsh_attachments::ImageRef;
use dsh_llm::{LlmError, LlmRequest};
use dsh_protocol::{codes, ContentBlock, Message, Role, ToolSchema};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// What an empty tool result is sent as: the wire refuses empty tool messages.
pub const EMPTY_TOOL_OUTPUT: &str = "(no output)";

/// Builds the JSON body for `request` on `route` with no image bytes at hand: an image
/// block becomes a text saying its bytes were not loaded ([`request_body_with_images`] sends
/// them).
pub fn request_body(request: &LlmRequest, route: &RouteConfig) -> Result<Value, LlmError> {
    request_body_with_images(request, route, &RequestImages::default())
}

/// Builds the JSON body for `request` on `route`, sending the images `images` resolved.
///
/// Chat completions allow image parts in user messages only, not in `tool` messages, so (as
/// the original does) a tool result's images are named in its `tool` message and sent in one
/// user message after the run of tool messages, headed "Attached image(s) from tool result:"
/// and each captioned with its call id. A user message with a sent image uses the array form
/// of `content`; every other message keeps the string form.
pub fn request_body_with_images(
    request: &LlmRequest,
    route: &RouteConfig,
    images: &RequestImages,
) -> Result<Value, LlmError> {
    let body = wire_body(request, route, images)?;
    serde_json::to_value(&body).map_err(unserializable)
}

/// The bytes [`request_body_with_images`] serializes to, written without building the
/// tools' part of the body as a value first: the schemas are serialized straight from the
/// request's shared ones (every step sends every schema).
pub fn request_bytes(
    request: &LlmRequest,
    route: &RouteConfig,
    images: &RequestImages,
) -> Result<Vec<u8>, LlmError> {
    let body = wire_body(request, route, images)?;
    serde_json::to_vec(&body).map_err(unserializable)
}

/// How many distinct tool lists a [`RequestEncoder`] keeps encoded: an agent and the
/// subagents it runs each have their own, and each resends it at every step.
const REMEMBERED_TOOL_LISTS: usize = 8;

/// Writes request bodies like [`request_bytes`], keeping the encoded `tools` array of the
/// tool lists it sent last.
///
/// A step resends every schema (tens of kilobytes with the built-in tools, MCP tools and
/// the history tools), and the schemas are shared (`Arc`) from one step to the next, so a
/// list whose every schema is the same shared value as a remembered one is sent as the
/// remembered text. The entries hold those `Arc`s, so an address cannot be reused for other
/// text while it is remembered; a list that differs in any way is encoded afresh.
#[derive(Default)]
pub struct RequestEncoder {
    recent: Mutex<VecDeque<EncodedTools>>,
}

struct EncodedTools {
    schemas: Vec<ToolSchema>,
    text: Arc<RawValue>,
}

impl RequestEncoder {
    /// The body of `request` on `route`: the same bytes as [`request_bytes`].
    pub fn encode(
        &self,
        request: &LlmRequest,
        route: &RouteConfig,
        images: &RequestImages,
    ) -> Result<Vec<u8>, LlmError> {
        let mut body = wire_body(request, route, images)?;
        for (_, field) in &mut body.fields {
            if let Field::Tools(tools) = field {
                *field = Field::Encoded(self.tools_text(tools)?);
            }
        }
        serde_json::to_vec(&body).map_err(unserializable)
    }

    fn tools_text(&self, tools: &[ToolSchema]) -> Result<Arc<RawValue>, LlmError> {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        // Newest last: a hit moves to the back, the front is forgotten first.
        let hit = recent.iter().position(|e| same_schemas(&e.schemas, tools));
        if let Some(entry) = hit.and_then(|at| recent.remove(at)) {
            let text = Arc::clone(&entry.text);
            recent.push_back(entry);
            return Ok(text);
        }
        let text = serde_json::to_string(&WireTools(tools)).map_err(unserializable)?;
        let text: Arc<RawValue> = RawValue::from_string(text).map_err(unserializable)?.into();
        if recent.len() == REMEMBERED_TOOL_LISTS {
            recent.pop_front();
        }
        recent.push_back(EncodedTools {
            schemas: tools.to_vec(),
            text: Arc::clone(&text),
        });
        Ok(text)
    }
}

/// The same schemas: equal names and the very same shared description and parameters.
fn same_schemas(remembered: &[ToolSchema], tools: &[ToolSchema]) -> bool {
    remembered.len() == tools.len()
        && remembered.iter().zip(tools).all(|(a, b)| {
            a.name == b.name
                && Arc::ptr_eq(&a.description, &b.description)
                && Arc::ptr_eq(&a.parameters, &b.parameters)
        })
}

fn unserializable(error: serde_json::Error) -> LlmError {
    LlmError::new(codes::INVALID_REQUEST, "request body is not serializable").with_source(error)
}

/// A request body in wire order; the tool schemas are borrowed from the request.
struct WireBody<'a> {
    fields: Vec<(&'static str, Field<'a>)>,
}

enum Field<'a> {
    Json(Value),
    /// The history, serialized straight from the request's messages (it grows every
    /// step; building it as a `Value` first copied every text of it twice).
    Messages(Vec<WireMessage<'a>>),
    Tools(&'a [ToolSchema]),
    /// The `tools` array already encoded ([`RequestEncoder`]).
    Encoded(Arc<RawValue>),
}

/// One chat-completions message, borrowing the request's texts where they go out as
/// they are. Keys serialize in the order the wire has always had.
enum WireMessage<'a> {
    /// `{"role": "system", "content"}`.
    System(Cow<'a, str>),
    /// `{"role": "assistant", "content", "reasoning_content"?, "tool_calls"?}`.
    Assistant {
        content: Cow<'a, str>,
        reasoning: Option<Cow<'a, str>>,
        tool_calls: Vec<WireCall<'a>>,
    },
    /// `{"role": "user", "content"}`: a string, or parts when an image is sent.
    User(UserContent<'a>),
    /// `{"role": "tool", "tool_call_id", "content"}`.
    Tool {
        call_id: &'a str,
        content: Cow<'a, str>,
    },
}

enum UserContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Value>),
}

/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
struct WireCall<'a> {
    id: &'a str,
    name: &'a str,
    arguments: &'a str,
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            WireMessage::System(content) => {
                map.serialize_entry("role", "system")?;
                map.serialize_entry("content", content)?;
            }
            WireMessage::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                map.serialize_entry("role", "assistant")?;
                map.serialize_entry("content", content)?;
                if let Some(reasoning) = reasoning {
                    map.serialize_entry("reasoning_content", reasoning)?;
                }
                if !tool_calls.is_empty() {
                    map.serialize_entry("tool_calls", tool_calls)?;
                }
            }
            WireMessage::User(content) => {
                map.serialize_entry("role", "user")?;
                match content {
                    UserContent::Text(text) => map.serialize_entry("content", text)?,
                    UserContent::Parts(parts) => map.serialize_entry("content", parts)?,
                }
            }
            WireMessage::Tool { call_id, content } => {
                map.serialize_entry("role", "tool")?;
                map.serialize_entry("tool_call_id", call_id)?;
                map.serialize_entry("content", content)?;
            }
        }
        map.end()
    }
}

impl Serialize for WireCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Function<'a>(&'a WireCall<'a>);
        impl Serialize for Function<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("name", self.0.name)?;
                map.serialize_entry("arguments", self.0.arguments)?;
                map.end()
            }
        }
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("id", self.id)?;
        map.serialize_entry("type", "function")?;
        map.serialize_entry("function", &Function(self))?;
        map.end()
    }
}

impl Serialize for WireBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (key, field) in &self.fields {
            match field {
                Field::Json(value) => map.serialize_entry(key, value)?,
                Field::Messages(messages) => map.serialize_entry(key, messages)?,
                Field::Tools(tools) => {
                    map.serialize_entry(key, &WireTools(tools))?;
                }
                Field::Encoded(text) => map.serialize_entry(key, &**text)?,
            }
        }
        map.end()
    }
}

/// `[{"type": "function", "function": {"name", "description", "parameters"}}, ...]`.
struct WireTools<'a>(&'a [ToolSchema]);

impl Serialize for WireTools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(WireTool))
    }
}

struct WireTool<'a>(&'a ToolSchema);

impl Serialize for WireTool<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", "function")?;
        map.serialize_entry("function", &WireFunction(self.0))?;
        map.end()
    }
}

struct WireFunction<'a>(&'a ToolSchema);

impl Serialize for WireFunction<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tool = self.0;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("name", &tool.name)?;
        map.serialize_entry("description", &*tool.description)?;
        map.serialize_entry("parameters", &*tool.parameters)?;
        map.end()
    }
}

fn wire_body<'a>(
    request: &'a LlmRequest,
    route: &RouteConfig,
    images: &RequestImages,
) -> Result<WireBody<'a>, LlmError> {
    let config = &request.config;
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(WireMessage::System(Cow::Borrowed(system)));
    }
    let mut pending = Vec::new();
    for message in &request.messages {
        push_message(message, &route.compat, images, &mut pending, &mut messages);
    }
    flush_tool_images(&mut pending, &mut messages);
    let mut fields = Vec::with_capacity(10);
    let mut body = |key: &'static str, value: Value| fields.push((key, Field::Json(value)));
    body("model", json!(config.model));
    fields.push(("messages", Field::Messages(messages)));
    let mut body = |key: &'static str, value: Value| fields.push((key, Field::Json(value)));
    body("stream", json!(true));
    body("stream_options", json!({"include_usage": true}));
    let effort = config.reasoning_effort.clone().or_else(|| {
        route
            .resolve_model(&config.model)
            .and_then(|info| info.reasoning)
            .and_then(|reasoning| reasoning.default_effort)
    });
    let (thinking, wire_effort) = resolve_thinking(effort.as_deref(), route)?;
    if let Some(thinking) = thinking {
        body("thinking", json!({"type": thinking.wire()}));
    }
    if let Some(effort) = wire_effort {
        body("reasoning_effort", json!(effort));
    }
    if let Some(tools) = request.tools.as_ref().filter(|tools| !tools.is_empty()) {
        fields.push(("tools", Field::Tools(tools)));
    }
    let mut body = |key: &'static str, value: Value| fields.push((key, Field::Json(value)));
    if let Some(temperature) = config.temperature {
        body("temperature", json!(temperature));
    }
    if let Some(max_tokens) = config.max_tokens {
        let field = match route.compat.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        body(field, json!(max_tokens));
    }
    if let Some(stop) = &config.stop {
        body("stop", json!(stop));
    }
    Ok(WireBody { fields })
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

/// The text (or reasoning) blocks joined; borrowed when there is at most one.
fn joined_text(blocks: &[ContentBlock], want_reasoning: bool) -> Cow<'_, str> {
    let mut texts = blocks.iter().filter_map(|block| match block {
        ContentBlock::Text { text } if !want_reasoning => Some(text.as_str()),
        ContentBlock::Reasoning { text } if want_reasoning => Some(text.as_str()),
        _ => None,
    });
    let Some(first) = texts.next() else {
        return Cow::Borrowed("");
    };
    match texts.next() {
        None => Cow::Borrowed(first),
        Some(second) => {
            let mut out = String::from(first);
            out.push_str(second);
            texts.for_each(|text| out.push_str(text));
            Cow::Owned(out)
        }
    }
}

/// One piece of a message's content on its way to the wire.
enum Piece<'a> {
    Text(&'a str),
    /// Text standing where an image was; set apart from its neighbours by newlines.
    ImageText(String),
    /// An image sent as an `image_url` part.
    Image {
        image: ImageRef,
        part: Value,
    },
}

impl Piece<'_> {
    /// The text of a text piece (an image's stand-in text included).
    fn text(&self) -> Option<&str> {
        match self {
            Piece::Text(text) => Some(text),
            Piece::ImageText(text) => Some(text),
            Piece::Image { .. } => None,
        }
    }
}

fn pieces<'a>(blocks: &'a [ContentBlock], images: &RequestImages, in_tool: bool) -> Vec<Piece<'a>> {
    let mut out = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text } => out.push(Piece::Text(text)),
            ContentBlock::Image { attachment } => match images.wire(attachment) {
                WireImage::Sent { image, data_url } => {
                    if in_tool {
                        out.push(Piece::ImageText(tool_image_handle(&image)));
                    }
                    let part = json!({"type": "image_url", "image_url": {"url": data_url}});
                    out.push(Piece::Image { image, part });
                }
                WireImage::Text(text) => out.push(Piece::ImageText(text)),
            },
            _ => {}
        }
    }
    out
}

/// The text of `pieces`: text blocks joined as they are (the text-only mapping's rule), an
/// image's text on a line of its own.
fn pieces_text<'a>(pieces: &[Piece<'a>]) -> Cow<'a, str> {
    // The usual content, one text block and nothing else, goes out as it is.
    match pieces {
        [] => return Cow::Borrowed(""),
        [Piece::Text(text)] => return Cow::Borrowed(text),
        _ => {}
    }
    let mut out = String::new();
    let mut after_image = false;
    for piece in pieces {
        match piece {
            Piece::Text(text) => {
                if after_image && !text.is_empty() && !text.starts_with('\n') {
                    out.push('\n');
                }
                out.push_str(text);
                after_image = false;
            }
            Piece::ImageText(text) => {
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(text);
                after_image = true;
            }
            Piece::Image { .. } => {}
        }
    }
    Cow::Owned(out)
}

/// A user message's `content`: the plain string unless an image is sent, then the parts.
fn user_content(pieces: Vec<Piece<'_>>) -> UserContent<'_> {
    if !pieces.iter().any(|p| matches!(p, Piece::Image { .. })) {
        return UserContent::Text(pieces_text(&pieces));
    }
    let parts: Vec<Value> = pieces
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Image { part, .. } => Some(part),
            text => text
                .text()
                .filter(|text| !text.is_empty())
                .map(|text| json!({"type": "text", "text": text})),
        })
        .collect();
    UserContent::Parts(parts)
}

/// Sends the images of the tool messages just pushed, in one user message.
fn flush_tool_images(pending: &mut Vec<Value>, out: &mut Vec<WireMessage<'_>>) {
    if pending.is_empty() {
        return;
    }
    let mut parts = vec![json!({"type": "text", "text": TOOL_IMAGES_HEADING})];
    parts.append(pending);
    out.push(WireMessage::User(UserContent::Parts(parts)));
}

fn push_message<'a>(
    message: &'a Message,
    compat: &Compat,
    images: &RequestImages,
    pending: &mut Vec<Value>,
    out: &mut Vec<WireMessage<'a>>,
) {
    match message.role {
        Role::System => {
            flush_tool_images(pending, out);
            out.push(WireMessage::System(joined_text(&message.content, false)));
        }
        Role::Assistant => {
            flush_tool_images(pending, out);
            let tool_calls: Vec<WireCall<'_>> = message
                .tool_calls()
                .map(|(id, name, arguments)| WireCall {
                    id: id.as_str(),
                    name,
                    arguments,
                })
                .collect();
            let reasoning = joined_text(&message.content, true);
            let replay = match compat.reasoning_replay {
                ReasoningReplay::Off => false,
                ReasoningReplay::ToolCallTurns => !tool_calls.is_empty(),
                ReasoningReplay::Always => true,
            };
            out.push(WireMessage::Assistant {
                // Never null: some gateways refuse null content, and a refused message in
                // the log would break every later request of the session.
                content: joined_text(&message.content, false),
                reasoning: (replay && !reasoning.is_empty()).then_some(reasoning),
                tool_calls,
            });
        }
        Role::User => {
            let own = pieces(&message.content, images, false);
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
            let has_own = own.iter().any(|p| match p {
                Piece::Image { .. } => true,
                text => text.text().is_some_and(|text| !text.is_empty()),
            });
            if has_own || results.is_empty() {
                flush_tool_images(pending, out);
                out.push(WireMessage::User(user_content(own)));
            }
            for (call_id, content) in results {
                let result = pieces(content, images, true);
                let output = pieces_text(&result);
                let output = if output.is_empty() {
                    Cow::Borrowed(EMPTY_TOOL_OUTPUT)
                } else {
                    output
                };
                out.push(WireMessage::Tool {
                    call_id: call_id.as_str(),
                    content: output,
                });
                for piece in result {
                    if let Piece::Image { image, part } = piece {
                        let caption = tool_image_caption(&image, call_id.as_str());
                        pending.push(json!({"type": "text", "text": caption}));
                        pending.push(part);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
