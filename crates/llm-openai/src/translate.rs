//! Turning chat-completions stream payloads into harness stream chunks.
//!
//! Deltas are passed on as they arrive. Block ends, usage and the finish reason are held back
//! until `[DONE]`: providers send the finish reason and usage in different orders (attached to
//! the last delta or in a trailing usage-only chunk), and holding them guarantees the harness
//! order — every `block-end`, then `usage`, then `finish`, and nothing after it.
//!
//! An error the server reports inside the stream (a payload with an `error` member, or an
//! `event: error`) ends the response with the failure [`stream_failure`] maps it to, rather
//! than being skipped as a payload without choices.

use crate::sse::{SseEvent, SseOverflow, SseParser};
use crate::status::stream_failure;
use dsh_llm::LlmError;
use dsh_protocol::{
    codes, BlockType, CallId, ContentBlock, FinishReason, LlmFailure, StreamChunk, TokenUsage,
};
use serde::Deserialize;
use std::collections::HashMap;

/// The payload that ends a stream.
pub const DONE: &str = "[DONE]";

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Present (and not null) when the server reports an error mid-stream.
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// `"error"` on servers that send a bare error object as the payload.
    #[serde(default)]
    object: Option<String>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// Maps wire usage to disjoint harness counts: the wire's prompt count includes cache hits,
/// the harness's input count does not.
fn map_usage(usage: &WireUsage) -> TokenUsage {
    let cached = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
        .or(usage.prompt_cache_hit_tokens);
    TokenUsage {
        input_tokens: usage
            .prompt_tokens
            .unwrap_or(0)
            .saturating_sub(cached.unwrap_or(0)),
        output_tokens: usage.completion_tokens.unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: None,
        reasoning_tokens: usage
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens),
    }
}

/// Maps a wire `finish_reason`; unknown reasons (`content_filter`, ...) become errors coded
/// with the upper-cased reason.
pub fn map_finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" => FinishReason::ToolCalls,
        "length" => FinishReason::MaxTokens,
        other => FinishReason::error(LlmFailure::new(
            other.to_uppercase(),
            format!("model stopped: {other}"),
        )),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
    ToolCall,
}

struct OpenBlock {
    index: u32,
    kind: Kind,
    text: String,
    call_id: Option<String>,
    name: Option<String>,
}

impl OpenBlock {
    fn close(&mut self) -> ContentBlock {
        let text = std::mem::take(&mut self.text);
        match self.kind {
            Kind::Text => ContentBlock::Text { text },
            Kind::Reasoning => ContentBlock::Reasoning { text },
            Kind::ToolCall => ContentBlock::ToolCall {
                id: CallId::from(self.call_id.clone().unwrap_or_default()),
                name: self.name.clone().unwrap_or_default(),
                arguments: text,
            },
        }
    }
}

/// Stateful translator for one response.
#[derive(Default)]
pub struct Translator {
    /// The response's request id, for failures reported mid-stream.
    request_id: Option<String>,
    blocks: Vec<OpenBlock>,
    text: Option<usize>,
    reasoning: Option<usize>,
    /// Wire tool-call index → position in `blocks`.
    tools: HashMap<u32, usize>,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    done: bool,
}

impl Translator {
    /// A translator for a new response.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the response's request id (the `x-request-id` header) in mid-stream failures.
    pub fn with_request_id(mut self, request_id: Option<String>) -> Self {
        self.request_id = request_id;
        self
    }

    /// True once `[DONE]` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn open(&mut self, kind: Kind, out: &mut Vec<StreamChunk>) -> usize {
        let index = self.blocks.len() as u32;
        self.blocks.push(OpenBlock {
            index,
            kind,
            text: String::new(),
            call_id: None,
            name: None,
        });
        let block_type = match kind {
            Kind::Text => BlockType::Text,
            Kind::Reasoning => BlockType::Reasoning,
            Kind::ToolCall => BlockType::ToolCall,
        };
        out.push(StreamChunk::BlockStart { index, block_type });
        self.blocks.len() - 1
    }

    /// Translates one SSE event, appending chunks to `out`. Events after `[DONE]` are
    /// ignored; an `event: error` fails the response whatever its data.
    pub fn push_event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamChunk>,
    ) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if event.is_error() {
            let value = serde_json::from_str::<serde_json::Value>(&event.data).ok();
            return Err(stream_failure(
                value.as_ref(),
                &event.data,
                self.request_id.as_deref(),
            ));
        }
        self.push(&event.data, out)
    }

    /// Translates one SSE data payload, appending chunks to `out`. Payloads after `[DONE]`
    /// are ignored.
    pub fn push(&mut self, payload: &str, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if payload == DONE {
            self.done = true;
            self.finish_into(out);
            return Ok(());
        }
        let chunk: WireChunk = serde_json::from_str(payload).map_err(|error| {
            let preview: String = payload.chars().take(120).collect();
            LlmError::new(
                codes::MALFORMED_RESPONSE,
                format!("malformed stream payload: {preview}"),
            )
            .with_source(error)
        })?;
        let reported = chunk.error.is_some_and(|error| !error.is_null());
        if reported || chunk.object.as_deref() == Some("error") {
            // Parsed again as a whole: only this rare path pays for a generic value.
            let value = serde_json::from_str::<serde_json::Value>(payload).ok();
            return Err(stream_failure(
                value.as_ref(),
                payload,
                self.request_id.as_deref(),
            ));
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(map_finish_reason(&reason));
            }
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(map_usage(usage));
        }
        Ok(())
    }

    fn delta(&mut self, delta: WireDelta, out: &mut Vec<StreamChunk>) {
        // Reasoning comes first: thinking models stream it before the answer.
        if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
            let slot = match self.reasoning {
                Some(slot) => slot,
                None => {
                    let slot = self.open(Kind::Reasoning, out);
                    self.reasoning = Some(slot);
                    slot
                }
            };
            let block = &mut self.blocks[slot];
            block.text.push_str(&text);
            out.push(StreamChunk::ReasoningDelta {
                index: block.index,
                text,
            });
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            let slot = match self.text {
                Some(slot) => slot,
                None => {
                    let slot = self.open(Kind::Text, out);
                    self.text = Some(slot);
                    slot
                }
            };
            let block = &mut self.blocks[slot];
            block.text.push_str(&text);
            out.push(StreamChunk::TextDelta {
                index: block.index,
                text,
            });
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let wire_index = call.index.unwrap_or(0);
            let slot = match self.tools.get(&wire_index) {
                Some(slot) => *slot,
                None => {
                    let slot = self.open(Kind::ToolCall, out);
                    self.tools.insert(wire_index, slot);
                    slot
                }
            };
            let block = &mut self.blocks[slot];
            if let Some(id) = call.id {
                block.call_id = Some(id);
            }
            let (name, fragment) = match call.function {
                Some(function) => (function.name, function.arguments.unwrap_or_default()),
                None => (None, String::new()),
            };
            if let Some(name) = name {
                block.name = Some(name);
            }
            block.text.push_str(&fragment);
            out.push(StreamChunk::ToolCallDelta {
                index: block.index,
                id: block.call_id.clone().unwrap_or_default(),
                name: block.name.clone(),
                arguments_delta: fragment,
            });
        }
    }

    fn finish_into(&mut self, out: &mut Vec<StreamChunk>) {
        for block in &mut self.blocks {
            out.push(StreamChunk::BlockEnd {
                index: block.index,
                block: Box::new(block.close()),
            });
        }
        if let Some(usage) = self.usage.take() {
            out.push(StreamChunk::Usage { usage });
        }
        let reason = match self.finish.take().unwrap_or(FinishReason::Stop) {
            FinishReason::Stop if self.blocks.is_empty() => FinishReason::error(LlmFailure::new(
                codes::EMPTY_RESPONSE,
                "the model returned an empty response",
            )),
            reason => reason,
        };
        out.push(StreamChunk::finish(reason));
    }
}

/// SSE framing plus translation: raw body bytes in, harness chunks out.
#[derive(Default)]
pub struct StreamDecoder {
    sse: SseParser,
    events: Vec<SseEvent>,
    translator: Translator,
    /// What an overflowing line is called in the error (the setting that bounds it).
    limit_name: Option<String>,
}

impl StreamDecoder {
    /// A decoder for a new response body, with the parser's default line limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder refusing lines and events longer than `max_line_bytes`. `limit_name` names
    /// the setting in the error (`max_sse_line_bytes of provider route 'x'`).
    pub fn with_limits(max_line_bytes: usize, limit_name: impl Into<String>) -> Self {
        Self {
            sse: SseParser::with_max_line(max_line_bytes),
            limit_name: Some(limit_name.into()),
            ..Self::default()
        }
    }

    /// Names the response's request id in mid-stream failures.
    pub fn with_request_id(mut self, request_id: Option<String>) -> Self {
        self.translator = std::mem::take(&mut self.translator).with_request_id(request_id);
        self
    }

    /// True once `[DONE]` was seen; nothing more will be produced.
    pub fn is_done(&self) -> bool {
        self.translator.is_done()
    }

    /// Feeds body bytes, appending the chunks they complete to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        let framed = self.sse.push(bytes, &mut self.events);
        // Events completed before an overflow still count (they may even end the stream).
        self.drain(out)?;
        match framed {
            Err(overflow) if !self.is_done() => Err(self.too_long(overflow)),
            _ => Ok(()),
        }
    }

    /// Ends the body. A body that ends before `[DONE]` was cut short (`STREAM_CLOSED`): its
    /// content cannot be trusted to be complete.
    pub fn end(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        let mut cut = None;
        if !self.is_done() {
            // Whatever is left had no event terminator; if it does not parse, it is the
            // torn end of a cut-off stream rather than a malformed payload.
            if let Err(overflow) = self.sse.finish(&mut self.events) {
                return Err(self.too_long(overflow));
            }
            cut = self.drain(out).err();
        }
        if self.is_done() {
            return Ok(());
        }
        let closed = LlmError::new(
            codes::STREAM_CLOSED,
            "the response stream ended without [DONE]",
        );
        Err(match cut {
            Some(torn) if torn.code() == codes::MALFORMED_RESPONSE => closed.with_source(torn),
            // A server's own error report is the failure, not the missing `[DONE]`.
            Some(reported) => reported,
            None => closed,
        })
    }

    fn too_long(&self, overflow: SseOverflow) -> LlmError {
        let setting = self
            .limit_name
            .as_deref()
            .map_or(String::new(), |name| format!(" ({name})"));
        LlmError::new(
            codes::RESPONSE_TOO_LARGE,
            format!(
                "the model API sent an event-stream line or event longer than {} bytes{setting}; the rest of the response was not read",
                overflow.limit
            ),
        )
    }

    fn drain(&mut self, out: &mut Vec<StreamChunk>) -> Result<(), LlmError> {
        for event in self.events.drain(..) {
            if self.translator.is_done() {
                break;
            }
            self.translator.push_event(&event, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
