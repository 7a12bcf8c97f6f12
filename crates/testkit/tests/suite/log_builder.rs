//! Hand-built session logs for checker tests: seqs are assigned in push order, times are 0.
//! Builders do not validate anything, so broken logs are as easy to write as good ones.

use std::sync::Arc;

use dsh_protocol::{CallId, ContentBlock, Message, MessageSource, StreamChunk, TokenUsage};
use dsh_session::{
    AssistantChunk, AssistantMessage, EventData, SessionEvent, StepBoundary, SurfaceOp, ToolCall,
    ToolResult, TurnEnd, TurnEndReason, TurnStart,
};

#[derive(Default)]
pub struct Log {
    pub events: Vec<SessionEvent>,
}

impl Log {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn next_seq(&self) -> u64 {
        self.events.len() as u64
    }

    pub fn push_with(
        &mut self,
        data: EventData,
        surface_op: Option<SurfaceOp>,
        sources: Option<Vec<u64>>,
    ) -> u64 {
        let seq = self.next_seq();
        self.events.push(SessionEvent {
            seq,
            time: 0,
            data,
            ignorable: false,
            surface_op,
            source_event_seqs: sources,
        });
        seq
    }

    pub fn push(&mut self, data: EventData) -> u64 {
        self.push_with(data, None, None)
    }

    pub fn turn_start(&mut self, turn: u64) -> &mut Self {
        self.push(EventData::TurnStart(TurnStart { turn }));
        self
    }

    pub fn turn_end(&mut self, turn: u64, reason: TurnEndReason) -> &mut Self {
        self.push(EventData::TurnEnd(TurnEnd { turn, reason }));
        self
    }

    pub fn step_start(&mut self, turn: u64, step: u64) -> &mut Self {
        self.push(EventData::StepStart(StepBoundary { turn, step }));
        self
    }

    pub fn step_end(&mut self, turn: u64, step: u64) -> &mut Self {
        self.push(EventData::StepEnd(StepBoundary { turn, step }));
        self
    }

    pub fn user(&mut self, text: &str) -> u64 {
        self.push_with(
            EventData::UserMessage(Arc::new(Message::user_text(text))),
            Some(SurfaceOp::Append),
            None,
        )
    }

    pub fn chunks(&mut self, turn: u64, step: u64, chunks: Vec<StreamChunk>) -> Vec<u64> {
        chunks
            .into_iter()
            .map(|chunk| {
                self.push(EventData::AssistantChunk(AssistantChunk {
                    turn,
                    step,
                    chunk,
                }))
            })
            .collect()
    }

    pub fn message(
        &mut self,
        (turn, step): (u64, u64),
        content: Vec<ContentBlock>,
        usage: Option<TokenUsage>,
        interrupted: bool,
        sources: Vec<u64>,
    ) -> u64 {
        let message = Message::assistant(content, MessageSource::model("scripted", "m"));
        self.push_with(
            EventData::AssistantMessage(AssistantMessage {
                turn,
                step,
                message: Arc::new(message),
                usage,
                interrupted,
            }),
            Some(SurfaceOp::Append),
            Some(sources),
        )
    }

    pub fn call(&mut self, (turn, step): (u64, u64), id: &str, name: &str, args: &str) -> u64 {
        self.push(EventData::ToolCall(ToolCall {
            turn,
            step,
            call_id: CallId::from(id),
            name: name.into(),
            arguments: args.into(),
        }))
    }

    pub fn result(&mut self, (turn, step): (u64, u64), id: &str, sources: Option<Vec<u64>>) -> u64 {
        let message = Message::tool_result(CallId::from(id), vec![ContentBlock::text("ok")], false);
        self.push_with(
            EventData::ToolResult(ToolResult {
                turn,
                step,
                message: Arc::new(message),
                error: None,
                meta: None,
            }),
            Some(SurfaceOp::Append),
            sources,
        )
    }

    /// Streams `chunks` and appends the assistant message a correct loop would write.
    pub fn model_call(&mut self, at: (u64, u64), chunks: Vec<StreamChunk>) -> u64 {
        let usage = chunks.iter().find_map(|c| match c {
            StreamChunk::Usage { usage } => Some(*usage),
            _ => None,
        });
        let content = chunks
            .iter()
            .filter_map(|c| match c {
                StreamChunk::BlockEnd { block, .. } => Some(ContentBlock::clone(block)),
                _ => None,
            })
            .collect();
        let seqs = self.chunks(at.0, at.1, chunks);
        self.message(at, content, usage, false, seqs)
    }
}

pub fn tool_call(id: &str, name: &str, args: &str) -> ContentBlock {
    ContentBlock::ToolCall {
        id: CallId::from(id),
        name: name.into(),
        arguments: args.into(),
    }
}
