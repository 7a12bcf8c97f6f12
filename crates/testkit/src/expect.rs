//! Expected session logs of [harness](crate::harness) agents, written event by event.
//!
//! Each helper returns the JSON of one event (or of a run of chunk events) as
//! [`log_json`](crate::normalize::log_json) renders it, without its `seq`; [`log`] numbers a
//! whole expected log, so tests state complete logs as values without counting seqs by hand,
//! and [`assert_log`] names the first event where two logs part.
//!
//! ```
//! use dsh_testkit::expect::*;
//! let expected = log(&flat(vec![
//!     vec![insert("next-turn", 0, &["hi"]), turn_start(1), claim("next-turn", 0, 1)],
//!     vec![step_start(1, 1), user("hi")],
//! ]));
//! assert_eq!(expected[4]["seq"], 4);
//! ```

use crate::harness::{msg_json, TestTool, MODEL, PROVIDER};
use crate::scripted::text_response;
use dsh_protocol::StreamChunk;
use serde_json::{json, Value};

pub type Events = Vec<Value>;

/// Joins runs of events built piecewise (an [`answer`] is two runs) into one list for [`log`].
pub fn flat(parts: Vec<Vec<Events>>) -> Vec<Events> {
    parts.into_iter().flatten().collect()
}

/// The five chunk events of a scripted text answer plus its assistant message (id
/// `<id-{id}>`), which cites the chunks at `first_seq..first_seq + 5`.
pub fn answer(turn: u64, step: u64, id: u32, text_: &str, first_seq: u64) -> Vec<Events> {
    vec![
        chunks(turn, step, &text_response(text_)),
        assistant(turn, step, id, text(text_), true, first_seq..first_seq + 5),
    ]
}

/// Numbers `parts` into one log: `seq` = position.
pub fn log(parts: &[Events]) -> Value {
    Value::Array(
        parts
            .iter()
            .flatten()
            .zip(0u64..)
            .map(|(event, seq)| {
                let mut event = event.clone();
                event["seq"] = json!(seq);
                event
            })
            .collect(),
    )
}

/// Asserts two logs are equal; on failure names the first differing event.
#[allow(clippy::panic)] // an assertion helper: failing loudly is its job
#[track_caller]
pub fn assert_log(actual: &Value, expected: &Value) {
    if actual == expected {
        return;
    }
    let (a, e) = (
        actual.as_array().cloned().unwrap_or_default(),
        expected.as_array().cloned().unwrap_or_default(),
    );
    let first = (0..a.len().max(e.len())).find(|&i| a.get(i) != e.get(i));
    let pretty = |v: Option<&Value>| v.map(pretty_json).unwrap_or_else(|| "<nothing>".into());
    match first {
        Some(i) => panic!(
            "logs differ first at seq {i} ({} events logged, {} expected)\n  logged: {}\nexpected: {}\nwhole log:\n{}",
            a.len(),
            e.len(),
            pretty(a.get(i)),
            pretty(e.get(i)),
            pretty_json(actual)
        ),
        None => panic!("logs differ"),
    }
}

fn pretty_json(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The events of `log` (a [`log_json`](crate::normalize::log_json) array) whose type is one
/// of `types`, in order.
pub fn of_types(log: &Value, types: &[&str]) -> Vec<Value> {
    log.as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["type"].as_str().is_some_and(|t| types.contains(&t)))
        .cloned()
        .collect()
}

fn one(value: Value) -> Events {
    vec![value]
}

fn inserted(texts: &[&str]) -> Vec<Value> {
    texts.iter().map(|t| msg_json(t)).collect()
}

/// An inbox insertion: `inserted` appended at `start` of `target`.
pub fn insert(target: &str, start: u64, texts: &[&str]) -> Events {
    one(json!({"type": "agent/inbox/spliced",
        "data": {"target": target, "start": start, "inserted": inserted(texts)}}))
}

/// A claim: a pure deletion (no outcome).
pub fn claim(target: &str, start: u64, removed: u64) -> Events {
    one(json!({"type": "agent/inbox/spliced",
        "data": {"target": target, "start": start, "removedCount": removed, "inserted": []}}))
}

/// A cancellation: a deletion with outcome `canceled`.
pub fn cancel(target: &str, start: u64, removed: u64) -> Events {
    one(json!({"type": "agent/inbox/spliced",
        "data": {"target": target, "start": start, "removedCount": removed, "inserted": [],
            "outcome": "canceled"}}))
}

pub fn turn_start(turn: u64) -> Events {
    one(json!({"type": "turn/start", "data": {"turn": turn}}))
}

/// `turn/end` with `reason` (a full reason value, see [`completed`] etc.).
pub fn turn_end(turn: u64, reason: Value) -> Events {
    one(json!({"type": "turn/end", "data": {"turn": turn, "reason": reason}}))
}

pub fn completed() -> Value {
    json!({"kind": "completed"})
}

pub fn blocked() -> Value {
    json!({"kind": "blocked"})
}

pub fn max_tokens() -> Value {
    json!({"kind": "max-tokens"})
}

pub fn interrupted() -> Value {
    json!({"kind": "interrupted"})
}

/// `aborted` with a cause of `kind` (`user`, `parent`, `disposed`).
pub fn aborted(kind: &str) -> Value {
    json!({"kind": "aborted", "reason": {"kind": kind}})
}

pub fn aborted_by_hook(reason: &str) -> Value {
    json!({"kind": "aborted", "reason": {"kind": "hook", "reason": reason}})
}

pub fn error(code: &str, message: &str) -> Value {
    json!({"kind": "error", "error": {"message": message, "code": code}})
}

pub fn step_start(turn: u64, step: u64) -> Events {
    one(json!({"type": "step/start", "data": {"turn": turn, "step": step}}))
}

pub fn step_end(turn: u64, step: u64) -> Events {
    one(json!({"type": "step/end", "data": {"turn": turn, "step": step}}))
}

/// `user/message` of [`msg`](crate::harness::msg)`(text)`.
pub fn user(text: &str) -> Events {
    one(json!({"type": "user/message", "surfaceOp": "append", "data": msg_json(text)}))
}

/// The system prompt of a harness agent with the default prompt config.
pub const SYSTEM: &str = "You are an AI agent powered by DeepSeek Harness.";

/// The header config of a harness agent.
pub fn config() -> Value {
    json!({"provider": PROVIDER, "model": MODEL})
}

/// `request/header` with the default system prompt, `tools` and `config`. Without a
/// configured tool order the prompt lists tools by name.
pub fn header_with(reason: &str, config: Value, tools: &[TestTool]) -> Events {
    let mut header = json!({"config": config, "system": SYSTEM});
    let mut tools = tools.to_vec();
    tools.sort_by_key(|t| t.name());
    if !tools.is_empty() {
        header["tools"] = tools.iter().map(|t| t.schema_json()).collect();
    }
    one(json!({"type": "request/header", "data": {"header": header, "reason": reason}}))
}

/// `request/header` of a harness agent.
pub fn header(reason: &str, tools: &[TestTool]) -> Events {
    header_with(reason, config(), tools)
}

/// `request/context` of a harness agent.
pub fn context() -> Events {
    one(json!({"type": "request/context", "data": {"provider": PROVIDER, "model": MODEL}}))
}

/// One `assistant/chunk` event per chunk.
pub fn chunks(turn: u64, step: u64, chunks: &[StreamChunk]) -> Events {
    chunks
        .iter()
        .map(|chunk| {
            json!({"type": "assistant/chunk",
                "data": {"turn": turn, "step": step, "chunk": chunk_json(chunk)}})
        })
        .collect()
}

fn chunk_json(chunk: &StreamChunk) -> Value {
    // Chunks serialize infallibly (string keys only).
    serde_json::to_value(chunk).unwrap_or(Value::Null)
}

/// The usage every scripted reply reports.
pub fn usage() -> Value {
    json!({"inputTokens": 100, "outputTokens": 10})
}

/// An `assistant/message` with message id `<id-N>`, `content` blocks, the scripted usage
/// when `with_usage`, citing `cites`.
pub fn assistant(
    turn: u64,
    step: u64,
    id: u32,
    content: Value,
    with_usage: bool,
    cites: impl IntoIterator<Item = u64>,
) -> Events {
    let mut data = json!({"turn": turn, "step": step,
        "message": {"id": format!("<id-{id}>"), "role": "assistant", "content": content,
            "source": {"kind": "model", "provider": PROVIDER, "model": MODEL}}});
    if with_usage {
        data["usage"] = usage();
    }
    one(
        json!({"type": "assistant/message", "surfaceOp": "append", "data": data,
        "sourceEventSeqs": cites.into_iter().collect::<Vec<_>>()}),
    )
}

/// An interrupted `assistant/message` (no usage unless `usage` is given).
pub fn interrupted_assistant(
    turn: u64,
    step: u64,
    id: u32,
    content: Value,
    cites: impl IntoIterator<Item = u64>,
) -> Events {
    let mut events = assistant(turn, step, id, content, false, cites);
    events[0]["data"]["interrupted"] = json!(true);
    events
}

/// A text content block list.
pub fn text(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

/// A tool-call block.
pub fn call_block(id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "tool-call", "id": id, "name": name, "arguments": arguments})
}

pub fn tool_call(turn: u64, step: u64, call_id: &str, name: &str, arguments: &str) -> Events {
    one(
        json!({"type": "tool/call", "data": {"turn": turn, "step": step, "callId": call_id,
        "name": name, "arguments": arguments}}),
    )
}

/// A successful `tool/result` with text `output`, message id `<id-N>`, citing its call.
pub fn tool_ok(
    turn: u64,
    step: u64,
    id: u32,
    call_id: &str,
    output: &str,
    call_seq: u64,
) -> Events {
    tool_result(turn, step, id, call_id, output, None, call_seq)
}

/// A `tool/result`; `error` = `(name, code)` makes it an error result.
pub fn tool_result(
    turn: u64,
    step: u64,
    id: u32,
    call_id: &str,
    output: &str,
    error: Option<(&str, &str)>,
    call_seq: u64,
) -> Events {
    let mut data = json!({"turn": turn, "step": step,
        "message": {"id": format!("<id-{id}>"), "role": "user",
            "content": [{"type": "tool-result", "toolCallId": call_id,
                "content": [{"type": "text", "text": output}], "isError": error.is_some()}],
            "source": {"kind": "tool", "callId": call_id}}});
    if let Some((name, code)) = error {
        data["error"] = json!({"name": name, "code": code});
    }
    one(
        json!({"type": "tool/result", "surfaceOp": "append", "data": data,
        "sourceEventSeqs": [call_seq]}),
    )
}

/// The synthetic pair the scheduler logs for a call an abort kept from starting.
pub fn skipped(
    turn: u64,
    step: u64,
    id: u32,
    call_id: &str,
    name: &str,
    arguments: &str,
    call_seq: u64,
) -> Events {
    let mut events = tool_call(turn, step, call_id, name, arguments);
    events.extend(tool_result(
        turn,
        step,
        id,
        call_id,
        "Error: tool call aborted before dispatch",
        Some(("AbortError", "ABORTED_BEFORE_DISPATCH")),
        call_seq,
    ));
    events
}
