//! Log builders shared by the suites.
#![allow(dead_code)]

use dsh_protocol::{
    CallId, ContentBlock, EpochHeader, LlmCallConfig, Message, MessageId, MessageSource, Role,
    StreamChunk, TokenUsage, ToolSchema,
};
use dsh_session::*;
use serde_json::{json, Value};
use std::sync::Arc;

pub const TIME: u64 = 7;

pub fn session(id: &str) -> Session {
    Session::builder(SessionHeader::new(id.into(), 1))
        .clock(Arc::new(|| TIME))
        .build()
        .unwrap()
}

pub fn log_only() -> AppendOptions {
    AppendOptions::log_only()
}

pub fn surface() -> AppendOptions {
    AppendOptions::surface_append()
}

pub fn text_message(id: &str, text: &str) -> Message {
    Message {
        id: MessageId::new(id),
        role: Role::User,
        content: vec![ContentBlock::text(text)],
        source: MessageSource::user(),
    }
}

pub fn user(id: &str, text: &str) -> EventData {
    EventData::UserMessage(Arc::new(text_message(id, text)))
}

pub fn header(system: &str) -> EventData {
    EventData::RequestHeader(Box::new(RequestHeader {
        header: EpochHeader {
            config: LlmCallConfig {
                provider: "p".into(),
                model: "m".into(),
                ..Default::default()
            },
            adapter_defaults: None,
            system: Some(system.into()),
            tools: Some(vec![ToolSchema {
                name: "read".into(),
                description: "Reads a file".into(),
                parameters: json!({"type": "object"}).into(),
            }]),
        },
        reason: HeaderReason::Initial,
    }))
}

pub fn step_start(turn: u64, step: u64) -> EventData {
    EventData::StepStart(StepBoundary { turn, step })
}

pub fn step_end(turn: u64, step: u64) -> EventData {
    EventData::StepEnd(StepBoundary { turn, step })
}

pub fn turn_start(turn: u64) -> EventData {
    EventData::TurnStart(TurnStart { turn })
}

pub fn chunk(turn: u64, step: u64, chunk: StreamChunk) -> EventData {
    EventData::AssistantChunk(AssistantChunk { turn, step, chunk })
}

pub fn assistant(
    turn: u64,
    step: u64,
    id: &str,
    content: Vec<ContentBlock>,
    usage: Option<TokenUsage>,
) -> EventData {
    EventData::AssistantMessage(AssistantMessage {
        turn,
        step,
        message: Arc::new(Message {
            id: MessageId::new(id),
            role: Role::Assistant,
            content,
            source: MessageSource::model("p", "m"),
        }),
        usage,
        interrupted: false,
    })
}

pub fn tool_call_block(call: &str) -> ContentBlock {
    ContentBlock::ToolCall {
        id: CallId::new(call),
        name: "read".into(),
        arguments: "{\"file_path\":\"a\"}".into(),
    }
}

pub fn tool_call(turn: u64, step: u64, call: &str) -> EventData {
    EventData::ToolCall(ToolCall {
        turn,
        step,
        call_id: CallId::new(call),
        name: "read".into(),
        arguments: "{\"file_path\":\"a\"}".into(),
    })
}

pub fn tool_result(turn: u64, step: u64, call: &str, content: Vec<ContentBlock>) -> EventData {
    let mut message = Message::tool_result(CallId::new(call), content, false);
    message.id = MessageId::new(format!("r-{call}"));
    EventData::ToolResult(dsh_session::ToolResult {
        turn,
        step,
        message: Arc::new(message),
        error: None,
        meta: None,
    })
}

pub fn usage(input: u64, output: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: None,
        cache_write_tokens: None,
        reasoning_tokens: None,
    }
}

/// Appends one tool-using step: step/start, an entered user message, the streamed
/// tool call (chunks cited by the message), the call, its result, step/end. Returns the seqs
/// of (user message, assistant message, tool result).
pub fn tool_step(
    session: &Session,
    turn: u64,
    step: u64,
    result_text: &str,
    reported: Option<TokenUsage>,
) -> (u64, u64, u64) {
    let call = format!("c{turn}-{step}");
    session.append(step_start(turn, step), log_only()).unwrap();
    let u = session
        .append(user(&format!("u{turn}-{step}"), "go on"), surface())
        .unwrap()
        .seq;
    let block = tool_call_block(&call);
    let c1 = session
        .append(
            chunk(
                turn,
                step,
                StreamChunk::BlockEnd {
                    index: 0,
                    block: Box::new(block.clone()),
                },
            ),
            log_only(),
        )
        .unwrap()
        .seq;
    let a = session
        .append(
            assistant(
                turn,
                step,
                &format!("a{turn}-{step}"),
                vec![block],
                reported,
            ),
            surface().sources(vec![c1]),
        )
        .unwrap()
        .seq;
    session
        .append(tool_call(turn, step, &call), log_only())
        .unwrap();
    let r = session
        .append(
            tool_result(turn, step, &call, vec![ContentBlock::text(result_text)]),
            surface(),
        )
        .unwrap()
        .seq;
    session.append(step_end(turn, step), log_only()).unwrap();
    (u, a, r)
}

pub fn log_json(session: &Session) -> Value {
    serde_json::to_value(session.events().iter().map(|e| &**e).collect::<Vec<_>>()).unwrap()
}

/// A compaction checkpoint `user/message` (source `{kind: plugin, plugin: compact}`).
pub fn checkpoint_message(id: &str, text: &str) -> EventData {
    let mut extra = serde_json::Map::new();
    extra.insert("compactionId".into(), json!(id));
    EventData::UserMessage(Arc::new(Message {
        id: MessageId::new(format!("m-{id}")),
        role: Role::User,
        content: vec![
            ContentBlock::text("checkpoint preamble\n\n<compacted-summary>"),
            ContentBlock::text(text),
            ContentBlock::text("</compacted-summary>"),
        ],
        source: MessageSource::Plugin {
            plugin: dsh_compaction::CHECKPOINT_PLUGIN.into(),
            extra,
        },
    }))
}

/// Appends a complete compaction bracket (start, summary, the checkpoint replace of
/// `start..=end` shadowing `shadowed`, end), as the engine writes it, so logs built here pass
/// the invariant companion registered by the engine suites; returns the checkpoint's seq.
pub fn append_checkpoint(
    s: &Session,
    id: &str,
    text: &str,
    start: u64,
    end: u64,
    shadowed: Vec<u64>,
) -> u64 {
    use dsh_compaction::{CompactionEnd, CompactionStart, CompactionSummary, SeqRange};
    let start_seq = s
        .append_typed(&CompactionStart {
            compaction_id: id.into(),
            source_command_id: None,
            turn: None,
        })
        .unwrap()
        .seq;
    let summary_seq = s
        .append_typed(&CompactionSummary {
            compaction_id: id.into(),
            source_command_id: None,
            summary: vec![ContentBlock::text(text)],
            raw_output: None,
            llm_stream_call: None,
            shadowed_range: SeqRange {
                start: shadowed[0],
                end: *shadowed.last().unwrap(),
            },
            shadowed_seqs: shadowed.clone(),
            shadowed_token_count: 0,
            provider: "p".into(),
            model: "m".into(),
            max_tokens: None,
            usage: None,
        })
        .unwrap()
        .seq;
    let mut sources = vec![start_seq, summary_seq];
    sources.extend(shadowed);
    let seq = s
        .append(
            checkpoint_message(id, text),
            AppendOptions::surface_replace(start, end).sources(sources),
        )
        .unwrap()
        .seq;
    s.append_typed(&CompactionEnd {
        compaction_id: id.into(),
        source_command_id: None,
        turn: None,
        error: None,
    })
    .unwrap();
    seq
}
