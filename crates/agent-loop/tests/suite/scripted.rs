#![allow(dead_code)] // shared helpers; not every test uses every one
//! A scripted in-process model: one script entry per call, every request recorded.

use dsh_llm::{ChunkStream, LlmAdapter, LlmError, LlmRequest, ModelInfo};
use dsh_protocol::{
    BlockType, CallId, ContentBlock, FinishReason, LlmCallConfig, StreamChunk, TokenUsage,
};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, Semaphore};

pub type RequestFn = Box<dyn Fn(&LlmRequest) -> Vec<StreamChunk> + Send + Sync>;

/// What one model call does.
pub enum Reply {
    Chunks(Vec<StreamChunk>),
    Computed(RequestFn),
    /// Never yields.
    Hang,
    /// Yields the first `n` chunks, then hangs.
    HangAfter(Vec<StreamChunk>, usize),
    /// Yields the first `n` chunks, waits for a permit of the gate, then yields the rest.
    Gated(Vec<StreamChunk>, usize, Arc<Semaphore>),
    /// The adapter fails to start the call.
    Fail(String, String),
}

#[derive(Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<Reply>>,
    pub requests: Mutex<Vec<Arc<LlmRequest>>>,
    pub started: Notify,
    pub info: Mutex<ModelInfo>,
}

impl ScriptedModel {
    pub fn push(&self, reply: Reply) {
        self.script.lock().unwrap().push_back(reply);
    }

    pub fn requests(&self) -> Vec<Arc<LlmRequest>> {
        self.requests.lock().unwrap().clone()
    }

    /// Resolves once at least `n` requests have started.
    pub async fn wait_requests(&self, n: usize) {
        loop {
            let notified = self.started.notified();
            if self.requests.lock().unwrap().len() >= n {
                return;
            }
            notified.await;
        }
    }
}

fn ok(chunks: Vec<StreamChunk>) -> ChunkStream {
    stream::iter(chunks.into_iter().map(Ok)).boxed()
}

impl LlmAdapter for ScriptedModel {
    fn stream(&self, request: Arc<LlmRequest>) -> BoxFuture<'_, Result<ChunkStream, LlmError>> {
        let reply = self.script.lock().unwrap().pop_front();
        self.requests.lock().unwrap().push(request.clone());
        self.started.notify_waiters();
        Box::pin(async move {
            match reply {
                None => Err(LlmError::new(
                    "SCRIPT_EXHAUSTED",
                    "the scripted model has no reply left",
                )),
                Some(Reply::Chunks(chunks)) => Ok(ok(chunks)),
                Some(Reply::Computed(f)) => Ok(ok(f(&request))),
                Some(Reply::Hang) => Ok(stream::pending().boxed()),
                Some(Reply::HangAfter(chunks, n)) => {
                    let head: Vec<_> = chunks.into_iter().take(n).collect();
                    Ok(ok(head).chain(stream::pending()).boxed())
                }
                Some(Reply::Gated(chunks, n, gate)) => {
                    let mut chunks = chunks;
                    let tail = chunks.split_off(n.min(chunks.len()));
                    let rest = stream::once(async move {
                        let _permit = gate.acquire().await;
                        stream::iter(tail.into_iter().map(Ok))
                    })
                    .flatten();
                    Ok(ok(chunks).chain(rest).boxed())
                }
                Some(Reply::Fail(code, message)) => Err(LlmError::new(code, message)),
            }
        })
    }

    fn resolve_model<'a>(
        &'a self,
        _config: &'a LlmCallConfig,
    ) -> BoxFuture<'a, Result<ModelInfo, LlmError>> {
        let info = self.info.lock().unwrap().clone();
        Box::pin(async move { Ok(info) })
    }
}

pub fn usage() -> StreamChunk {
    StreamChunk::Usage {
        usage: TokenUsage {
            input_tokens: 10,
            output_tokens: 5,
            ..TokenUsage::default()
        },
    }
}

pub fn text_chunks(text: &str, finish: FinishReason) -> Vec<StreamChunk> {
    vec![
        StreamChunk::BlockStart {
            index: 0,
            block_type: BlockType::Text,
        },
        StreamChunk::TextDelta {
            index: 0,
            text: text.into(),
        },
        StreamChunk::BlockEnd {
            index: 0,
            block: ContentBlock::text(text),
        },
        usage(),
        StreamChunk::finish(finish),
    ]
}

/// A plain text answer.
pub fn text(text: &str) -> Reply {
    Reply::Chunks(text_chunks(text, FinishReason::Stop))
}

/// Tool calls `(id, name, arguments)` in this order, optionally after some text.
pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
    Reply::Chunks(tool_call_chunks(calls, FinishReason::ToolCalls))
}

pub fn tool_call_chunks(calls: &[(&str, &str, &str)], finish: FinishReason) -> Vec<StreamChunk> {
    let mut chunks = Vec::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let index = i as u32;
        chunks.push(StreamChunk::BlockStart {
            index,
            block_type: BlockType::ToolCall,
        });
        chunks.push(StreamChunk::ToolCallDelta {
            index,
            id: (*id).into(),
            name: Some((*name).into()),
            arguments_delta: (*args).into(),
        });
        chunks.push(StreamChunk::BlockEnd {
            index,
            block: ContentBlock::ToolCall {
                id: CallId::from(*id),
                name: (*name).into(),
                arguments: (*args).into(),
            },
        });
    }
    chunks.push(StreamChunk::finish(finish));
    chunks
}

/// Text cut off at the output cap, with a half-written tool call that must be dropped.
pub fn max_tokens(text: &str) -> Reply {
    let mut chunks = vec![
        StreamChunk::BlockStart {
            index: 0,
            block_type: BlockType::Text,
        },
        StreamChunk::TextDelta {
            index: 0,
            text: text.into(),
        },
        StreamChunk::BlockStart {
            index: 1,
            block_type: BlockType::ToolCall,
        },
        StreamChunk::ToolCallDelta {
            index: 1,
            id: "cut".into(),
            name: Some("echo".into()),
            arguments_delta: "{\"te".into(),
        },
    ];
    chunks.push(StreamChunk::finish(FinishReason::MaxTokens));
    Reply::Chunks(chunks)
}

/// An in-band provider failure (finish {error}).
pub fn failure(code: &str) -> Reply {
    Reply::Chunks(vec![StreamChunk::error(dsh_protocol::LlmFailure::new(
        code,
        format!("{code} from provider"),
    ))])
}
