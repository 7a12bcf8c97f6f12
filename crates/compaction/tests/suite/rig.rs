//! The engine's test rig: the agent core harness with the compaction plugin mounted.
#![allow(dead_code)]

use dsh_agent::Agent;
use dsh_compaction::{invariant, CompactionEngine, CompactionPlugin, EVENT_TYPES};
use dsh_protocol::{ContentBlock, StreamChunk};
use dsh_session::{register_event_types, EventData, SessionEvent, SurfaceOp};
use dsh_testkit::harness::Harness;
use dsh_testkit::scripted::{text_response, ScriptEntry, ScriptedAdapter};
use serde_json::Value;
use std::sync::Arc;

/// The scripted model's context window: threshold 3,200, retained tail 640 tokens.
pub const WINDOW: u64 = 4000;

/// The summary the scripted summarizer returns.
pub const SUMMARY: &str = "## Primary Request and Intent\n- read notes\n## Current Work\n- reading";

/// Registers the compaction types and the invariant, as the binary does.
pub fn register() {
    register_event_types(EVENT_TYPES).unwrap();
    invariant::register().unwrap();
}

/// A harness whose model has [`WINDOW`], with the plugin mounted with `config`.
pub fn rig(script: Vec<ScriptEntry>, config: Value) -> (Harness, Arc<CompactionEngine>) {
    register();
    let adapter = ScriptedAdapter::new([]).context_window(WINDOW);
    let h = Harness::builder().adapter(adapter).script(script).build();
    h.ctx()
        .plugin::<CompactionPlugin>(dsh_compaction::CompactionConfig::from_value(&config).unwrap())
        .unwrap();
    let engine = h.ctx().require::<CompactionEngine>().unwrap();
    (h, engine)
}

/// A prompt worth about `tokens` estimated tokens, starting with `tag`.
pub fn big(tag: &str, tokens: usize) -> String {
    let mut text = format!("{tag} ");
    while text.len() < tokens * 4 {
        text.push_str("note ");
    }
    text.truncate(tokens * 4);
    text
}

pub fn summary_response() -> ScriptEntry {
    text_response(SUMMARY).into()
}

pub fn answer(text: &str) -> ScriptEntry {
    text_response(text).into()
}

/// A short, stable line per event: the type, and for messages the first word.
pub fn shape(events: &[Arc<SessionEvent>]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let op = match e.surface_op {
                Some(SurfaceOp::Replace { start, end }) => format!(" replace {start}-{end}"),
                _ => String::new(),
            };
            let detail = match &e.data {
                EventData::UserMessage(m)
                | EventData::ToolResult(dsh_session::ToolResult { message: m, .. }) => {
                    format!(" {}", first_word(&m.content))
                }
                EventData::AssistantMessage(a) => format!(" {}", first_word(&a.message.content)),
                EventData::TurnStart(t) => format!(" {}", t.turn),
                EventData::TurnEnd(t) => format!(" {}", t.turn),
                EventData::Other { data, .. } => match data.get("error") {
                    Some(Value::String(error)) => format!(" error: {error}"),
                    _ => String::new(),
                },
                _ => String::new(),
            };
            format!("{}{detail}{op}", e.type_name())
        })
        .filter(|line| !line.starts_with("assistant/chunk"))
        .collect()
}

fn first_word(content: &[ContentBlock]) -> String {
    for block in content {
        match block {
            ContentBlock::Text { text } => {
                return text.split_whitespace().next().unwrap_or("").to_string()
            }
            ContentBlock::ToolCall { name, .. } => return format!("call:{name}"),
            ContentBlock::ToolResult { content, .. } => return first_word(content),
            _ => {}
        }
    }
    String::new()
}

/// The first word of every message of request `n` (0-based) the model got.
pub fn request_words(h: &Harness, n: usize) -> Vec<String> {
    h.adapter().requests()[n]
        .messages
        .iter()
        .map(|m| first_word(&m.content))
        .collect()
}

/// Runs one follow-up turn and waits for idle.
pub async fn turn(agent: &Arc<dyn Agent>, text: &str) {
    dsh_testkit::harness::run_followup(agent, text).await;
}

pub fn chunks(entry: Vec<StreamChunk>) -> ScriptEntry {
    entry.into()
}
