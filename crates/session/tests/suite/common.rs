//! Builders shared by the suite.

use dsh_protocol::{CallId, ContentBlock, Message, MessageId, MessageSource, Role};
use dsh_session::*;
use serde_json::Value;
use std::sync::Arc;

pub const TIME: u64 = 1_000;

pub fn header(id: &str) -> SessionHeader {
    let mut header = SessionHeader::new(id.into(), TIME);
    header.cwd = Some("/work".into());
    header
}

/// An empty session whose clock always reads [`TIME`].
pub fn session(id: &str) -> Session {
    Session::builder(header(id))
        .clock(Arc::new(|| TIME))
        .build()
        .unwrap()
}

pub fn seeded(id: &str, seed: Vec<Arc<SessionEvent>>) -> Result<Session, SessionError> {
    Session::builder(header(id))
        .seed(seed, SeedSource::Import)
        .clock(Arc::new(|| TIME))
        .build()
}

pub fn user_message(id: &str, text: &str) -> Message {
    Message {
        id: MessageId::new(id),
        role: Role::User,
        content: vec![ContentBlock::text(text)],
        source: MessageSource::user(),
    }
}

pub fn user(id: &str, text: &str) -> EventData {
    EventData::UserMessage(Arc::new(user_message(id, text)))
}

pub fn assistant(turn: u64, step: u64, id: &str, content: Vec<ContentBlock>) -> EventData {
    EventData::AssistantMessage(AssistantMessage {
        turn,
        step,
        message: Arc::new(Message {
            id: MessageId::new(id),
            role: Role::Assistant,
            content,
            source: MessageSource::model("p", "m"),
        }),
        usage: None,
        interrupted: false,
    })
}

pub fn call_block(id: &str) -> ContentBlock {
    ContentBlock::ToolCall {
        id: CallId::from(id),
        name: "bash".into(),
        arguments: "{}".into(),
    }
}

pub fn tool_call(turn: u64, step: u64, id: &str) -> EventData {
    EventData::ToolCall(ToolCall {
        turn,
        step,
        call_id: CallId::from(id),
        name: "bash".into(),
        arguments: "{}".into(),
    })
}

pub fn tool_result(turn: u64, step: u64, call: &str, text: &str) -> EventData {
    let mut message =
        Message::tool_result(CallId::from(call), vec![ContentBlock::text(text)], false);
    message.id = MessageId::new(format!("result-{call}"));
    EventData::ToolResult(ToolResult {
        turn,
        step,
        message: Arc::new(message),
        error: None,
        meta: None,
    })
}

pub fn turn_start(turn: u64) -> EventData {
    EventData::TurnStart(TurnStart { turn })
}

pub fn turn_end(turn: u64) -> EventData {
    EventData::TurnEnd(TurnEnd {
        turn,
        reason: TurnEndReason::Completed,
    })
}

pub fn step_start(turn: u64, step: u64) -> EventData {
    EventData::StepStart(StepBoundary { turn, step })
}

pub fn step_end(turn: u64, step: u64) -> EventData {
    EventData::StepEnd(StepBoundary { turn, step })
}

pub fn log_only() -> AppendOptions {
    AppendOptions::log_only()
}

pub fn surface() -> AppendOptions {
    AppendOptions::surface_append()
}

/// The whole log as JSON, for whole-value assertions.
pub fn log_json(session: &Session) -> Value {
    serde_json::to_value(&*session.events()).unwrap()
}

/// Model history as JSON.
pub fn history_json(session: &Session) -> Value {
    serde_json::to_value(session.derive_messages()).unwrap()
}

/// Appends one complete turn: user prompt, an assistant tool call, its result, the answer.
pub fn tool_turn(session: &Session, turn: u64) {
    let call = format!("call-{turn}");
    session.append(turn_start(turn), log_only()).unwrap();
    session.append(step_start(turn, 1), log_only()).unwrap();
    session
        .append(user(&format!("u{turn}"), "do it"), surface())
        .unwrap();
    session
        .append(
            assistant(turn, 1, &format!("a{turn}"), vec![call_block(&call)]),
            surface().sources(vec![]),
        )
        .unwrap();
    let call_seq = session
        .append(tool_call(turn, 1, &call), log_only())
        .unwrap()
        .seq;
    session
        .append(
            tool_result(turn, 1, &call, "ok"),
            surface().sources(vec![call_seq]),
        )
        .unwrap();
    session.append(step_end(turn, 1), log_only()).unwrap();
    session.append(step_start(turn, 2), log_only()).unwrap();
    session
        .append(
            assistant(
                turn,
                2,
                &format!("b{turn}"),
                vec![ContentBlock::text("done")],
            ),
            surface().sources(vec![]),
        )
        .unwrap();
    session.append(step_end(turn, 2), log_only()).unwrap();
    session.append(turn_end(turn), log_only()).unwrap();
}
