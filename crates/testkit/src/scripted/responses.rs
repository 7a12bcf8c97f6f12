//! Chunk sequences shaped like a real adapter's output.
//!
//! The OpenAI-compatible adapter opens each block with `block-start`, streams its deltas,
//! closes every block with an authoritative `block-end` once the provider is done, then sends
//! `usage` and a terminal `finish`. Scripted replies follow the same order so a loop under
//! test records the same kind of log it would with a real model.

use dsh_protocol::{
    BlockType, CallId, ContentBlock, FinishReason, LlmFailure, StreamChunk, TokenUsage,
};

/// The usage every helper reports unless told otherwise.
pub const SCRIPTED_USAGE: TokenUsage = TokenUsage {
    input_tokens: 100,
    output_tokens: 10,
    cache_read_tokens: None,
    cache_write_tokens: None,
    reasoning_tokens: None,
};

#[derive(Clone, Debug)]
enum Block {
    Reasoning(String),
    Text(String),
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
}

/// Builds one scripted reply: blocks in model order, then usage and finish.
///
/// ```
/// use dsh_testkit::scripted::Response;
/// use dsh_protocol::FinishReason;
/// let chunks = Response::new()
///     .text("Let me look.")
///     .tool_call("call_1", "read", r#"{"path":"a"}"#)
///     .finish(FinishReason::ToolCalls)
///     .split(3)
///     .chunks();
/// assert!(matches!(chunks.last(), Some(dsh_protocol::StreamChunk::Finish { .. })));
/// ```
#[derive(Clone, Debug)]
pub struct Response {
    blocks: Vec<Block>,
    usage: Option<TokenUsage>,
    finish: FinishReason,
    split: usize,
}

impl Default for Response {
    fn default() -> Self {
        Self::new()
    }
}

impl Response {
    /// An empty reply: [`SCRIPTED_USAGE`], finish `stop`, one delta per block.
    pub fn new() -> Self {
        Self {
            blocks: Vec::new(),
            usage: Some(SCRIPTED_USAGE),
            finish: FinishReason::Stop,
            split: 1,
        }
    }

    /// Adds a reasoning block.
    pub fn reasoning(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Reasoning(text.into()));
        self
    }

    /// Adds a text block.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    /// Adds a tool-call block; `arguments` is the raw JSON text the model "wrote".
    pub fn tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.blocks.push(Block::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }

    /// Replaces the usage chunk (`None` sends none).
    pub fn usage(mut self, usage: Option<TokenUsage>) -> Self {
        self.usage = usage;
        self
    }

    /// Sets the finish reason.
    pub fn finish(mut self, reason: FinishReason) -> Self {
        self.finish = reason;
        self
    }

    /// Streams each block's text (or arguments) as up to `deltas` pieces, so cancel tests
    /// can stop a reply part-way. Splits on character boundaries; 0 counts as 1.
    pub fn split(mut self, deltas: usize) -> Self {
        self.split = deltas.max(1);
        self
    }

    /// The chunks, in the order a real adapter sends them.
    pub fn chunks(&self) -> Vec<StreamChunk> {
        let mut chunks = Vec::new();
        for (index, block) in (0u32..).zip(&self.blocks) {
            let (block_type, body) = match block {
                Block::Reasoning(text) => (BlockType::Reasoning, text),
                Block::Text(text) => (BlockType::Text, text),
                Block::ToolCall { arguments, .. } => (BlockType::ToolCall, arguments),
            };
            chunks.push(StreamChunk::BlockStart { index, block_type });
            for piece in split_text(body, self.split) {
                chunks.push(match block {
                    Block::Reasoning(_) => StreamChunk::ReasoningDelta { index, text: piece },
                    Block::Text(_) => StreamChunk::TextDelta { index, text: piece },
                    Block::ToolCall { id, name, .. } => StreamChunk::ToolCallDelta {
                        index,
                        id: id.clone(),
                        name: Some(name.clone()),
                        arguments_delta: piece,
                    },
                });
            }
        }
        for (index, block) in (0u32..).zip(&self.blocks) {
            chunks.push(StreamChunk::BlockEnd {
                index,
                block: Box::new(content_block(block)),
            });
        }
        if let Some(usage) = self.usage {
            chunks.push(StreamChunk::Usage { usage });
        }
        chunks.push(StreamChunk::finish(self.finish.clone()));
        chunks
    }
}

impl From<Response> for Vec<StreamChunk> {
    fn from(response: Response) -> Self {
        response.chunks()
    }
}

fn content_block(block: &Block) -> ContentBlock {
    match block {
        Block::Reasoning(text) => ContentBlock::Reasoning { text: text.clone() },
        Block::Text(text) => ContentBlock::Text { text: text.clone() },
        Block::ToolCall {
            id,
            name,
            arguments,
        } => ContentBlock::ToolCall {
            id: CallId::from(id.as_str()),
            name: name.clone(),
            arguments: arguments.clone(),
        },
    }
}

/// Splits `text` into at most `parts` non-empty pieces of near-equal length. An empty text
/// still yields one (empty) delta, as a provider announcing a block would.
fn split_text(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let parts = parts.clamp(1, chars.len());
    let size = chars.len().div_ceil(parts);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// A plain answer: one text block, usage, finish `stop`.
pub fn text_response(text: &str) -> Vec<StreamChunk> {
    Response::new().text(text).chunks()
}

/// A thinking model's answer: a reasoning block then a text block, usage, finish `stop`.
pub fn reasoning_text_response(reasoning: &str, text: &str) -> Vec<StreamChunk> {
    Response::new().reasoning(reasoning).text(text).chunks()
}

/// Tool calls `(id, name, raw arguments)` in model order, usage, finish `tool-calls`.
pub fn tool_call_response(calls: &[(&str, &str, &str)]) -> Vec<StreamChunk> {
    calls
        .iter()
        .fold(Response::new(), |r, (id, name, args)| {
            r.tool_call(*id, *name, *args)
        })
        .finish(FinishReason::ToolCalls)
        .chunks()
}

/// A reply cut by the output cap: text (if any) and tool calls, usage, finish `max-tokens`.
/// The loop must drop the tool calls.
pub fn max_tokens_response(text: &str, calls: &[(&str, &str, &str)]) -> Vec<StreamChunk> {
    let base = if text.is_empty() {
        Response::new()
    } else {
        Response::new().text(text)
    };
    calls
        .iter()
        .fold(base, |r, (id, name, args)| r.tool_call(*id, *name, *args))
        .finish(FinishReason::MaxTokens)
        .chunks()
}

/// An in-band provider failure with `code`: only the terminal `finish {error}` chunk, which
/// is what a real adapter's failed call records (no blocks, no usage).
pub fn error_finish(code: &str) -> Vec<StreamChunk> {
    error_finish_with(LlmFailure::new(code, format!("scripted failure ({code})")))
}

/// An in-band failure with exactly `failure`.
pub fn error_finish_with(failure: LlmFailure) -> Vec<StreamChunk> {
    vec![StreamChunk::error(failure)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn wire(chunks: &[StreamChunk]) -> Value {
        serde_json::to_value(chunks).unwrap()
    }

    #[test]
    fn text_reply_matches_the_adapter_shape() {
        assert_eq!(
            wire(&text_response("Hi")),
            json!([
                {"type": "block-start", "index": 0, "blockType": "text"},
                {"type": "text-delta", "index": 0, "text": "Hi"},
                {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hi"}},
                {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 10}},
                {"type": "finish", "reason": {"kind": "stop"}},
            ])
        );
    }

    #[test]
    fn reasoning_reply_closes_blocks_after_all_deltas() {
        assert_eq!(
            wire(&reasoning_text_response("think", "say")),
            json!([
                {"type": "block-start", "index": 0, "blockType": "reasoning"},
                {"type": "reasoning-delta", "index": 0, "text": "think"},
                {"type": "block-start", "index": 1, "blockType": "text"},
                {"type": "text-delta", "index": 1, "text": "say"},
                {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "think"}},
                {"type": "block-end", "index": 1, "block": {"type": "text", "text": "say"}},
                {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 10}},
                {"type": "finish", "reason": {"kind": "stop"}},
            ])
        );
    }

    #[test]
    fn tool_calls_and_max_tokens() {
        assert_eq!(
            wire(&tool_call_response(&[
                ("c1", "read", "{}"),
                ("c2", "bash", "")
            ])),
            json!([
                {"type": "block-start", "index": 0, "blockType": "tool-call"},
                {"type": "tool-call-delta", "index": 0, "id": "c1", "name": "read", "argumentsDelta": "{}"},
                {"type": "block-start", "index": 1, "blockType": "tool-call"},
                {"type": "tool-call-delta", "index": 1, "id": "c2", "name": "bash", "argumentsDelta": ""},
                {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c1", "name": "read", "arguments": "{}"}},
                {"type": "block-end", "index": 1, "block": {"type": "tool-call", "id": "c2", "name": "bash", "arguments": ""}},
                {"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 10}},
                {"type": "finish", "reason": {"kind": "tool-calls"}},
            ])
        );
        let capped = wire(&max_tokens_response("cut", &[("c1", "read", "{")]));
        assert_eq!(capped[0]["blockType"], "text");
        assert_eq!(capped[2]["blockType"], "tool-call");
        assert_eq!(
            capped.as_array().unwrap().last().unwrap(),
            &json!({"type": "finish", "reason": {"kind": "max-tokens"}})
        );
        assert_eq!(
            wire(&error_finish("SERVER")),
            json!([{"type": "finish", "reason": {"kind": "error",
                "failure": {"message": "scripted failure (SERVER)", "code": "SERVER"}}}])
        );
    }

    #[test]
    fn split_streams_text_in_pieces() {
        let chunks = Response::new()
            .text("abcdefg")
            .usage(None)
            .split(3)
            .chunks();
        let deltas: Vec<&str> = chunks
            .iter()
            .filter_map(|c| match c {
                StreamChunk::TextDelta { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, ["abc", "def", "g"]);
        assert_eq!(chunks.len(), 1 + 3 + 1 + 1);
        assert_eq!(split_text("ab", 5), ["a", "b"]);
        assert_eq!(split_text("", 5), [""]);
    }
}
