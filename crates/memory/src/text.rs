//! What of an event is searchable, and how text is clipped for the model and the terminal.

use dsh_protocol::{ContentBlock, Message, MessageSource};
use dsh_session::{EventData, SessionEvent};
use serde_json::Value;

/// Characters of one event indexed. A huge tool output is mostly noise for recall and would
/// make the index as large as the logs; its head is what a person remembers.
pub const INDEXED_CHARS: usize = 8_000;

/// The searchable text of one event, or `None` for events with nothing a person would look
/// for (chunks, boundaries, headers). Prompts typed by a person, the model's text, tool calls
/// and results, compaction summaries and titles are indexed; injected instructions and other
/// plugin messages are not (every session would match their words).
pub fn event_text(event: &SessionEvent) -> Option<String> {
    let text = match &event.data {
        EventData::UserMessage(message) => match &message.source {
            MessageSource::User { .. } => message_text(message),
            _ => return None,
        },
        EventData::AssistantMessage(assistant) => message_text(&assistant.message),
        EventData::ToolCall(call) => format!("{} {}", call.name, call.arguments),
        EventData::ToolResult(result) => message_text(&result.message),
        EventData::Other { type_name, data } => other_text(type_name, data)?,
        _ => return None,
    };
    let text = clip(text.trim(), INDEXED_CHARS);
    (!text.is_empty()).then_some(text)
}

fn other_text(type_name: &str, data: &Value) -> Option<String> {
    match type_name {
        "compaction/summary" => {
            let blocks: Vec<ContentBlock> =
                serde_json::from_value(data.get("summary")?.clone()).ok()?;
            Some(blocks_text(&blocks))
        }
        t if t.ends_with("/title") => data.get("title")?.as_str().map(str::to_owned),
        _ => None,
    }
}

/// Text and tool-result text of a message, tool calls as `name arguments`; no reasoning.
pub fn message_text(message: &Message) -> String {
    blocks_text(&message.content)
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    let mut out = String::new();
    for block in blocks {
        let piece = match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::ToolCall {
                name, arguments, ..
            } => format!("{name} {arguments}"),
            ContentBlock::ToolResult { content, .. } => blocks_text(content),
            _ => continue,
        };
        if !out.is_empty() && !piece.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    out
}

/// `text` cut to `max` characters, with `…` when cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// One line: runs of whitespace become one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_counts_characters_not_bytes() {
        assert_eq!(clip("héllo", 3), "hél…");
        assert_eq!(clip("hé", 3), "hé");
    }

    #[test]
    fn one_line_folds_whitespace() {
        assert_eq!(one_line(" a\n b\t\tc "), "a b c");
    }
}
