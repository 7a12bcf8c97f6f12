use crate::failure::LlmFailure;
use crate::message::{ContentBlock, TokenUsage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind of a content block announced by `block-start`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockType {
    Text,
    Reasoning,
    ToolCall,
    Image,
    #[serde(untagged)]
    Other(String),
}

/// One element of a model stream, recorded verbatim as an `assistant/chunk`.
///
/// Protocol: block indexes correlate interleaved deltas; `usage` precedes the terminal
/// `finish`; nothing follows `finish`; tool arguments stay raw strings.
///
/// `Deserialize` is written by hand (`crate::tagged`) and reads what the derive would.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum StreamChunk {
    #[serde(rename_all = "camelCase")]
    BlockStart {
        index: u32,
        block_type: BlockType,
    },
    TextDelta {
        index: u32,
        text: String,
    },
    ReasoningDelta {
        index: u32,
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallDelta {
        index: u32,
        /// Latest known call id, or empty while unknown.
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        arguments_delta: String,
    },
    /// The authoritative assembled block for `index`. Boxed, like the rare large parts of
    /// `finish`, so that the common small chunks (a long log is mostly deltas) are not
    /// sized for them: every chunk held in memory pays for the largest variant.
    BlockEnd {
        index: u32,
        block: Box<ContentBlock>,
    },
    Usage {
        usage: TokenUsage,
    },
    #[serde(rename_all = "camelCase")]
    Finish {
        reason: FinishReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay_state: Option<Box<Value>>,
    },
}

impl StreamChunk {
    /// The terminal chunk of a failed call.
    pub fn error(failure: LlmFailure) -> Self {
        Self::finish(FinishReason::error(failure))
    }

    /// The terminal chunk of an aborted call.
    pub fn aborted(failure: LlmFailure) -> Self {
        Self::finish(FinishReason::aborted(failure))
    }

    /// The authoritative `block-end` of block `index`.
    pub fn block_end(index: u32, block: ContentBlock) -> Self {
        Self::BlockEnd {
            index,
            block: Box::new(block),
        }
    }

    /// A `finish` chunk with `reason` and no replay state.
    pub fn finish(reason: FinishReason) -> Self {
        Self::Finish {
            reason,
            replay_state: None,
        }
    }
}

/// Why a model stream ended. The failures are boxed: they are rare, and inline they made
/// every chunk (and so every `assistant/chunk` event) more than twice its usual size.
///
/// `Deserialize` is written by hand (`crate::tagged`) and reads what the derive would.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    MaxTokens,
    Aborted { failure: Box<LlmFailure> },
    Error { failure: Box<LlmFailure> },
}

impl FinishReason {
    /// An `error` finish.
    pub fn error(failure: LlmFailure) -> Self {
        Self::Error {
            failure: Box::new(failure),
        }
    }

    /// An `aborted` finish.
    pub fn aborted(failure: LlmFailure) -> Self {
        Self::Aborted {
            failure: Box::new(failure),
        }
    }

    /// The failure of an `error` or `aborted` finish.
    pub fn failure(&self) -> Option<&LlmFailure> {
        match self {
            Self::Aborted { failure } | Self::Error { failure } => Some(failure),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chunks_match_the_original_wire_shape() {
        let cases = [
            json!({"type":"block-start","index":2,"blockType":"tool-call"}),
            json!({"type":"tool-call-delta","index":2,"id":"call_0","name":"bash","argumentsDelta":"{\"c"}),
            json!({"type":"block-end","index":0,"block":{"type":"reasoning","text":"t"}}),
            json!({"type":"usage","usage":{"inputTokens":8005,"outputTokens":36,"cacheReadTokens":0,"reasoningTokens":15}}),
            json!({"type":"finish","reason":{"kind":"tool-calls"}}),
            json!({"type":"finish","reason":{"kind":"error","failure":{"message":"m","code":"SERVER","status":500}}}),
            json!({"type":"block-start","index":0,"blockType":"hologram"}),
        ];
        for raw in cases {
            let chunk: StreamChunk = serde_json::from_value(raw.clone()).unwrap();
            assert_eq!(serde_json::to_value(&chunk).unwrap(), raw);
        }
    }
}
