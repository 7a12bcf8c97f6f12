//! Realistic session content shared by the storage benches.
//!
//! Texts are deterministic (a tiny LCG over a word list) so every run writes the same bytes,
//! but they vary like real streamed output, which keeps zstd honest.

use dsh_protocol::{
    BlockType, CallId, ContentBlock, FinishReason, Message, MessageId, MessageSource, Role,
    StreamChunk, TokenUsage,
};
use dsh_session::{
    AppendOptions, AssistantChunk, AssistantMessage, EventData, Session, SessionError,
    StepBoundary, ToolCall, ToolResult, TurnEnd, TurnEndReason, TurnStart,
};
use std::sync::Arc;

const WORDS: &[&str] = &[
    "the", "function", "returns", "a", "value", "when", "called", "with", "session", "log",
    "index", "we", "need", "to", "check", "file", "error", "result", "test", "because", "of",
    "config", "path", "and", "then", "read", "write", "store", "event", "stream", "model", "is",
    "not", "yet", "handled", "in", "this", "case", "so", "let", "me", "look", "at", "it",
];

/// Deterministic text source.
pub struct Texts(u64);

impl Texts {
    pub fn new(seed: u64) -> Self {
        Texts(seed.wrapping_mul(6364136223846793005).wrapping_add(1))
    }

    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }

    /// About `len` bytes of words, cut anywhere (as stream deltas are).
    pub fn delta(&mut self, len: usize) -> String {
        let mut out = String::with_capacity(len + 12);
        while out.len() < len {
            out.push_str(WORDS[self.next() % WORDS.len()]);
            out.push(' ');
        }
        out.truncate(len);
        out
    }
}

/// One `assistant/chunk` text delta.
pub fn text_delta(turn: u64, step: u64, index: u32, text: String) -> EventData {
    chunk(turn, step, StreamChunk::TextDelta { index, text })
}

fn chunk(turn: u64, step: u64, chunk: StreamChunk) -> EventData {
    EventData::AssistantChunk(AssistantChunk { turn, step, chunk })
}

fn log_only(session: &Session, data: EventData) -> Result<u64, SessionError> {
    Ok(session.append(data, AppendOptions::log_only())?.seq)
}

/// Appends one realistic turn (exactly [`EVENTS_PER_TURN`] events): a prompt, one step
/// streaming reasoning, text and a tool call (block starts, deltas, block ends, usage,
/// finish), the assembled answer, the tool call and its result, and the closing
/// boundaries. Returns the seqs after which the agent loop would have flushed (before the
/// model request and before the tool runs), so callers can store it in realistic batches.
pub fn append_turn(
    session: &Session,
    turn: u64,
    texts: &mut Texts,
) -> Result<Vec<u64>, SessionError> {
    let step = 1;
    let mut flush_after = Vec::new();
    log_only(session, EventData::TurnStart(TurnStart { turn }))?;
    let prompt = Arc::new(Message {
        id: MessageId::new(format!("user-{turn}")),
        role: Role::User,
        content: vec![ContentBlock::text(texts.delta(120))],
        source: MessageSource::user(),
    });
    session.append(
        EventData::UserMessage(prompt),
        AppendOptions::surface_append(),
    )?;
    flush_after.push(log_only(
        session,
        EventData::StepStart(StepBoundary { turn, step }),
    )?);

    let mut chunk_seqs = Vec::new();
    let mut push = |data: EventData| -> Result<(), SessionError> {
        chunk_seqs.push(log_only(session, data)?);
        Ok(())
    };
    let call_id = CallId::new(format!("call_{turn}"));
    let mut reasoning = String::new();
    push(chunk(
        turn,
        step,
        StreamChunk::BlockStart {
            index: 0,
            block_type: BlockType::Reasoning,
        },
    ))?;
    for _ in 0..REASONING_DELTAS {
        let text = texts.delta(20);
        reasoning.push_str(&text);
        push(chunk(
            turn,
            step,
            StreamChunk::ReasoningDelta { index: 0, text },
        ))?;
    }
    let mut answer = String::new();
    push(chunk(
        turn,
        step,
        StreamChunk::BlockStart {
            index: 1,
            block_type: BlockType::Text,
        },
    ))?;
    for _ in 0..TEXT_DELTAS {
        let text = texts.delta(20);
        answer.push_str(&text);
        push(text_delta(turn, step, 1, text))?;
    }
    let mut arguments = String::new();
    push(chunk(
        turn,
        step,
        StreamChunk::BlockStart {
            index: 2,
            block_type: BlockType::ToolCall,
        },
    ))?;
    for _ in 0..TOOL_DELTAS {
        let delta = texts.delta(16);
        arguments.push_str(&delta);
        push(chunk(
            turn,
            step,
            StreamChunk::ToolCallDelta {
                index: 2,
                id: call_id.as_str().to_owned(),
                name: Some("bash".into()),
                arguments_delta: delta,
            },
        ))?;
    }
    let blocks = vec![
        ContentBlock::Reasoning { text: reasoning },
        ContentBlock::text(answer),
        ContentBlock::ToolCall {
            id: call_id.clone(),
            name: "bash".into(),
            arguments: arguments.clone(),
        },
    ];
    for (index, block) in blocks.iter().enumerate() {
        push(chunk(
            turn,
            step,
            StreamChunk::BlockEnd {
                index: index as u32,
                block: Box::new(block.clone()),
            },
        ))?;
    }
    let usage = TokenUsage {
        input_tokens: 8000 + turn,
        output_tokens: 400,
        ..TokenUsage::default()
    };
    push(chunk(turn, step, StreamChunk::Usage { usage }))?;
    push(chunk(
        turn,
        step,
        StreamChunk::finish(FinishReason::ToolCalls),
    ))?;

    let message = Arc::new(Message {
        id: MessageId::new(format!("assistant-{turn}")),
        role: Role::Assistant,
        content: blocks,
        source: MessageSource::model("deepseek", "deepseek-chat"),
    });
    session.append(
        EventData::AssistantMessage(AssistantMessage {
            turn,
            step,
            message,
            usage: Some(usage),
            interrupted: false,
        }),
        AppendOptions::surface_append().sources(chunk_seqs),
    )?;
    let call_seq = log_only(
        session,
        EventData::ToolCall(ToolCall {
            turn,
            step,
            call_id: call_id.clone(),
            name: "bash".into(),
            arguments,
        }),
    )?;
    flush_after.push(call_seq);
    let mut result =
        Message::tool_result(call_id, vec![ContentBlock::text(texts.delta(200))], false);
    result.id = MessageId::new(format!("result-{turn}"));
    session.append(
        EventData::ToolResult(ToolResult {
            turn,
            step,
            message: Arc::new(result),
            error: None,
            meta: None,
        }),
        AppendOptions::surface_append().sources(vec![call_seq]),
    )?;
    log_only(session, EventData::StepEnd(StepBoundary { turn, step }))?;
    log_only(
        session,
        EventData::TurnEnd(TurnEnd {
            turn,
            reason: TurnEndReason::Completed,
        }),
    )?;
    Ok(flush_after)
}

const REASONING_DELTAS: u64 = 32;
const TEXT_DELTAS: u64 = 42;
const TOOL_DELTAS: u64 = 10;
/// Events [`append_turn`] writes: 8 boundaries/messages/tool events, 3 block starts,
/// the deltas, 3 block ends, usage and finish.
pub const EVENTS_PER_TURN: u64 = 8 + 3 + REASONING_DELTAS + TEXT_DELTAS + TOOL_DELTAS + 3 + 2;
