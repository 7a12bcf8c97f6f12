//! Folding a chunk stream back into message content.
//!
//! The loop records every chunk in the log and, in parallel, feeds it to a [`BlockAssembler`]
//! to build the assistant message. The assembler is deliberately forgiving: adapters that only
//! send deltas (no `block-start`), that repeat a start, or that keep talking after a block has
//! ended still produce a sensible message, because a log written by any of them must replay
//! to the same content.

use dsh_protocol::{BlockType, CallId, ContentBlock, FinishReason, StreamChunk, TokenUsage};
use serde_json::Value;
use std::collections::HashMap;

/// Why a set of chunks cannot be assembled into blocks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AssembleError {
    /// A block of a kind the assembler cannot build from deltas was never closed by a
    /// `block-end` carrying its authoritative content.
    #[error("block {index} of type {block_type:?} was never closed, and its content cannot be built from deltas")]
    UnclosedUnknownBlock { index: u32, block_type: BlockType },
}

impl AssembleError {
    /// A stable code for logs and surfaces.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnclosedUnknownBlock { .. } => "UNCLOSED_UNKNOWN_BLOCK",
        }
    }
}

/// One block in progress.
#[derive(Debug)]
struct Partial {
    block_type: BlockType,
    text: String,
    call_id: Option<String>,
    call_name: Option<String>,
    arguments: String,
    /// The authoritative block from the first `block-end` for this index.
    closed: Option<ContentBlock>,
}

impl Partial {
    fn new(block_type: BlockType) -> Self {
        Self {
            block_type,
            text: String::new(),
            call_id: None,
            call_name: None,
            arguments: String::new(),
            closed: None,
        }
    }

    fn build(&self, index: u32) -> Result<ContentBlock, AssembleError> {
        if let Some(block) = &self.closed {
            return Ok(block.clone());
        }
        match &self.block_type {
            BlockType::Text => Ok(ContentBlock::Text {
                text: self.text.clone(),
            }),
            BlockType::Reasoning => Ok(ContentBlock::Reasoning {
                text: self.text.clone(),
            }),
            BlockType::ToolCall => Ok(ContentBlock::ToolCall {
                id: CallId::from(
                    self.call_id
                        .clone()
                        .unwrap_or_else(|| format!("call-{index}")),
                ),
                name: self.call_name.clone().unwrap_or_default(),
                arguments: self.arguments.clone(),
            }),
            other => Err(AssembleError::UnclosedUnknownBlock {
                index,
                block_type: other.clone(),
            }),
        }
    }
}

/// The content and replay metadata of one finished stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Assembled {
    pub blocks: Vec<ContentBlock>,
    /// The adapter's replay state, with per-block entries kept aligned to `blocks`.
    pub replay_state: Option<Value>,
}

/// Folds [`StreamChunk`]s into content blocks, usage and a finish reason.
#[derive(Debug, Default)]
pub struct BlockAssembler {
    /// Indexes in the order they were first seen; the message keeps this order.
    order: Vec<u32>,
    partials: HashMap<u32, Partial>,
    usage: Option<TokenUsage>,
    finish: Option<FinishReason>,
    replay_state: Option<Value>,
}

impl BlockAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk.
    pub fn push(&mut self, chunk: &StreamChunk) {
        match chunk {
            StreamChunk::BlockStart { index, block_type } => {
                self.partial(*index, block_type);
            }
            StreamChunk::TextDelta { index, text } => {
                if let Some(partial) = self.open_partial(*index, &BlockType::Text) {
                    partial.text.push_str(text);
                }
            }
            StreamChunk::ReasoningDelta { index, text } => {
                if let Some(partial) = self.open_partial(*index, &BlockType::Reasoning) {
                    partial.text.push_str(text);
                }
            }
            StreamChunk::ToolCallDelta {
                index,
                id,
                name,
                arguments_delta,
            } => {
                if let Some(partial) = self.open_partial(*index, &BlockType::ToolCall) {
                    // Ids may arrive late (empty until known); the latest known one wins.
                    if !id.is_empty() {
                        partial.call_id = Some(id.clone());
                    }
                    if let Some(name) = name {
                        partial.call_name = Some(name.clone());
                    }
                    partial.arguments.push_str(arguments_delta);
                }
            }
            StreamChunk::BlockEnd { index, block } => {
                let partial = self.partial(*index, &block_type_of(block));
                if partial.closed.is_none() {
                    partial.closed = Some(ContentBlock::clone(block));
                }
            }
            StreamChunk::Usage { usage } => self.usage = Some(*usage),
            StreamChunk::Finish {
                reason,
                replay_state,
            } => {
                self.finish = Some(reason.clone());
                self.replay_state = replay_state.as_deref().cloned();
            }
        }
    }

    /// The partial for `index`, created with `block_type` on first sight.
    fn partial(&mut self, index: u32, block_type: &BlockType) -> &mut Partial {
        let order = &mut self.order;
        self.partials.entry(index).or_insert_with(|| {
            order.push(index);
            Partial::new(block_type.clone())
        })
    }

    /// The partial a delta should extend, or `None` when that index is already closed.
    fn open_partial(&mut self, index: u32, block_type: &BlockType) -> Option<&mut Partial> {
        let partial = self.partial(index, block_type);
        partial.closed.is_none().then_some(partial)
    }

    /// The finish reason seen last; a stream that ended without one counts as `stop`.
    pub fn finish(&self) -> FinishReason {
        self.finish.clone().unwrap_or(FinishReason::Stop)
    }

    /// True once a `finish` chunk has been seen.
    pub fn has_finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The latest usage report.
    pub fn usage(&self) -> Option<TokenUsage> {
        self.usage
    }

    /// The replay state as the adapter sent it (see [`Self::assemble`] for the aligned form).
    pub fn raw_replay_state(&self) -> Option<&Value> {
        self.replay_state.as_ref()
    }

    /// The message content: every block in first-seen order.
    ///
    /// A stream cut off at the output cap (`max-tokens`) may have half-written tool calls, so
    /// tool-call blocks are dropped then.
    pub fn blocks(&self) -> Result<Vec<ContentBlock>, AssembleError> {
        Ok(self.assemble()?.blocks)
    }

    /// The message content plus the replay state, pruned in step with dropped blocks.
    ///
    /// Replay state of the form `{response, blocks: [..]}` carries one entry per block. When
    /// tool calls are dropped, their entries go too; when the adapter's per-block count does
    /// not match the blocks at all, the per-block part is unusable and is discarded.
    pub fn assemble(&self) -> Result<Assembled, AssembleError> {
        let mut all = Vec::with_capacity(self.order.len());
        for index in &self.order {
            if let Some(partial) = self.partials.get(index) {
                all.push(partial.build(*index)?);
            }
        }
        let drop_tool_calls = matches!(self.finish, Some(FinishReason::MaxTokens));
        let keep: Vec<bool> = all
            .iter()
            .map(|block| !(drop_tool_calls && matches!(block, ContentBlock::ToolCall { .. })))
            .collect();
        let replay_state = self.replay_state.clone().map(|mut state| {
            prune_replay_blocks(&mut state, &keep);
            state
        });
        let blocks = all
            .into_iter()
            .zip(&keep)
            .filter_map(|(block, keep)| keep.then_some(block))
            .collect();
        Ok(Assembled {
            blocks,
            replay_state,
        })
    }

    /// What survives an interruption: text and reasoning blocks (closed or still open) with
    /// visible text. Tool calls are never kept, since a cut-off call cannot be run.
    pub fn interrupted_blocks(&self) -> Vec<ContentBlock> {
        let mut out = Vec::new();
        for index in &self.order {
            let Some(partial) = self.partials.get(index) else {
                continue;
            };
            let block = match &partial.closed {
                Some(block) => block.clone(),
                None => match partial.block_type {
                    BlockType::Text => ContentBlock::Text {
                        text: partial.text.clone(),
                    },
                    BlockType::Reasoning => ContentBlock::Reasoning {
                        text: partial.text.clone(),
                    },
                    _ => continue,
                },
            };
            let visible = match &block {
                ContentBlock::Text { text } | ContentBlock::Reasoning { text } => {
                    !text.trim().is_empty()
                }
                _ => false,
            };
            if visible {
                out.push(block);
            }
        }
        out
    }
}

fn block_type_of(block: &ContentBlock) -> BlockType {
    match block {
        ContentBlock::Text { .. } => BlockType::Text,
        ContentBlock::Reasoning { .. } => BlockType::Reasoning,
        ContentBlock::ToolCall { .. } => BlockType::ToolCall,
        ContentBlock::Image { .. } => BlockType::Image,
        ContentBlock::ToolResult { .. } => BlockType::Other("tool-result".into()),
        ContentBlock::Other(map) => BlockType::Other(
            map.get("type")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_string(),
        ),
    }
}

fn prune_replay_blocks(state: &mut Value, keep: &[bool]) {
    let Some(object) = state.as_object_mut() else {
        return;
    };
    let Some(entries) = object.get("blocks").and_then(Value::as_array) else {
        return;
    };
    if entries.len() != keep.len() {
        object.remove("blocks");
        return;
    }
    let pruned: Vec<Value> = entries
        .iter()
        .zip(keep)
        .filter(|(_, keep)| **keep)
        .map(|(entry, _)| entry.clone())
        .collect();
    object.insert("blocks".into(), Value::Array(pruned));
}

#[cfg(test)]
mod tests;
