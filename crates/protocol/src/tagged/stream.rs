//! [`StreamChunk`] and [`FinishReason`]: tag first → fields straight from the input;
//! anything else → the derived reader of a mirror.

use super::{fill, required, tag_words, FirstKey, FirstKeySeed, Replay};
use crate::failure::LlmFailure;
use crate::message::{ContentBlock, TokenUsage};
use crate::stream::{BlockType, FinishReason, StreamChunk};
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::fmt;

/// The derived reader of [`StreamChunk`], for objects whose tag is not first.
#[derive(Deserialize)]
#[serde(remote = "StreamChunk", tag = "type", rename_all = "kebab-case")]
enum StreamChunkMirror {
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
        id: String,
        #[serde(default)]
        name: Option<String>,
        arguments_delta: String,
    },
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
        #[serde(default)]
        replay_state: Option<Box<Value>>,
    },
}

/// The derived reader of [`FinishReason`], for objects whose tag is not first.
#[derive(Deserialize)]
#[serde(remote = "FinishReason", tag = "kind", rename_all = "kebab-case")]
enum FinishReasonMirror {
    Stop,
    ToolCalls,
    MaxTokens,
    Aborted { failure: Box<LlmFailure> },
    Error { failure: Box<LlmFailure> },
}

tag_words!(
    /// `StreamChunk`'s `type` words, in declaration order.
    ChunkTag {
        BlockStart = "block-start",
        TextDelta = "text-delta",
        ReasoningDelta = "reasoning-delta",
        ToolCallDelta = "tool-call-delta",
        BlockEnd = "block-end",
        Usage = "usage",
        Finish = "finish",
    }
);

tag_words!(
    /// `FinishReason`'s `kind` words, in declaration order.
    FinishTag {
        Stop = "stop",
        ToolCalls = "tool-calls",
        MaxTokens = "max-tokens",
        Aborted = "aborted",
        Error = "error",
    }
);

/// The keys any `StreamChunk` variant reads; everything else is ignored.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ChunkKey {
    Type,
    Index,
    BlockType,
    Text,
    Id,
    Name,
    ArgumentsDelta,
    Block,
    Usage,
    Reason,
    ReplayState,
    #[serde(other)]
    Ignored,
}

impl<'de> Deserialize<'de> for StreamChunk {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ChunkVisitor)
    }
}

struct ChunkVisitor;

impl<'de> Visitor<'de> for ChunkVisitor {
    type Value = StreamChunk;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("internally tagged enum StreamChunk")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<StreamChunk, A::Error> {
        StreamChunkMirror::deserialize(SeqAccessDeserializer::new(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StreamChunk, A::Error> {
        match map.next_key_seed(FirstKeySeed("type"))? {
            None => Err(de::Error::missing_field("type")),
            Some(FirstKey::Other(key)) => {
                StreamChunkMirror::deserialize(MapAccessDeserializer::new(Replay {
                    first: Some(key),
                    rest: map,
                }))
            }
            Some(FirstKey::Tag) => {
                let tag: ChunkTag = map.next_value()?;
                chunk_fields(tag, map)
            }
        }
    }
}

/// Reads the fields of the `tag` variant; the tag was the first key.
fn chunk_fields<'de, A: MapAccess<'de>>(
    tag: ChunkTag,
    mut map: A,
) -> Result<StreamChunk, A::Error> {
    let mut index: Option<u32> = None;
    let mut block_type: Option<BlockType> = None;
    let mut text: Option<String> = None;
    let mut id: Option<String> = None;
    let mut name: Option<Option<String>> = None;
    let mut arguments_delta: Option<String> = None;
    let mut block: Option<Box<ContentBlock>> = None;
    let mut usage: Option<TokenUsage> = None;
    let mut reason: Option<FinishReason> = None;
    let mut replay_state: Option<Option<Box<Value>>> = None;
    use ChunkTag as T;
    while let Some(key) = map.next_key::<ChunkKey>()? {
        // A key the variant does not have is ignored, as the derived reader does.
        match (key, tag) {
            (ChunkKey::Type, _) => return Err(de::Error::duplicate_field("type")),
            (ChunkKey::Index, T::Usage | T::Finish) => {
                map.next_value::<IgnoredAny>()?;
            }
            (ChunkKey::Index, _) => fill(&mut index, "index", map.next_value()?)?,
            (ChunkKey::BlockType, T::BlockStart) => {
                fill(&mut block_type, "blockType", map.next_value()?)?
            }
            (ChunkKey::Text, T::TextDelta | T::ReasoningDelta) => {
                fill(&mut text, "text", map.next_value()?)?
            }
            (ChunkKey::Id, T::ToolCallDelta) => fill(&mut id, "id", map.next_value()?)?,
            (ChunkKey::Name, T::ToolCallDelta) => fill(&mut name, "name", map.next_value()?)?,
            (ChunkKey::ArgumentsDelta, T::ToolCallDelta) => {
                fill(&mut arguments_delta, "argumentsDelta", map.next_value()?)?
            }
            (ChunkKey::Block, T::BlockEnd) => fill(&mut block, "block", map.next_value()?)?,
            (ChunkKey::Usage, T::Usage) => fill(&mut usage, "usage", map.next_value()?)?,
            (ChunkKey::Reason, T::Finish) => fill(&mut reason, "reason", map.next_value()?)?,
            (ChunkKey::ReplayState, T::Finish) => {
                fill(&mut replay_state, "replayState", map.next_value()?)?
            }
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(match tag {
        T::BlockStart => StreamChunk::BlockStart {
            index: required(index, "index")?,
            block_type: required(block_type, "blockType")?,
        },
        T::TextDelta => StreamChunk::TextDelta {
            index: required(index, "index")?,
            text: required(text, "text")?,
        },
        T::ReasoningDelta => StreamChunk::ReasoningDelta {
            index: required(index, "index")?,
            text: required(text, "text")?,
        },
        T::ToolCallDelta => StreamChunk::ToolCallDelta {
            index: required(index, "index")?,
            id: required(id, "id")?,
            name: name.flatten(),
            arguments_delta: required(arguments_delta, "argumentsDelta")?,
        },
        T::BlockEnd => StreamChunk::BlockEnd {
            index: required(index, "index")?,
            block: required(block, "block")?,
        },
        T::Usage => StreamChunk::Usage {
            usage: required(usage, "usage")?,
        },
        T::Finish => StreamChunk::Finish {
            reason: required(reason, "reason")?,
            replay_state: replay_state.flatten(),
        },
    })
}

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FinishVisitor)
    }
}

struct FinishVisitor;

/// The keys any `FinishReason` variant reads.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum FinishKey {
    Kind,
    Failure,
    #[serde(other)]
    Ignored,
}

impl<'de> Visitor<'de> for FinishVisitor {
    type Value = FinishReason;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("internally tagged enum FinishReason")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<FinishReason, A::Error> {
        FinishReasonMirror::deserialize(SeqAccessDeserializer::new(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FinishReason, A::Error> {
        let tag: FinishTag = match map.next_key_seed(FirstKeySeed("kind"))? {
            None => return Err(de::Error::missing_field("kind")),
            Some(FirstKey::Other(key)) => {
                return FinishReasonMirror::deserialize(MapAccessDeserializer::new(Replay {
                    first: Some(key),
                    rest: map,
                }))
            }
            Some(FirstKey::Tag) => map.next_value()?,
        };
        let has_failure = matches!(tag, FinishTag::Aborted | FinishTag::Error);
        let mut failure: Option<Box<LlmFailure>> = None;
        while let Some(key) = map.next_key::<FinishKey>()? {
            match key {
                FinishKey::Kind => return Err(de::Error::duplicate_field("kind")),
                FinishKey::Failure if has_failure => {
                    fill(&mut failure, "failure", map.next_value()?)?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match tag {
            FinishTag::Stop => FinishReason::Stop,
            FinishTag::ToolCalls => FinishReason::ToolCalls,
            FinishTag::MaxTokens => FinishReason::MaxTokens,
            FinishTag::Aborted => FinishReason::Aborted {
                failure: required(failure, "failure")?,
            },
            FinishTag::Error => FinishReason::Error {
                failure: required(failure, "failure")?,
            },
        })
    }
}
