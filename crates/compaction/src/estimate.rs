//! The fixed token heuristic: four UTF-16 code units per token, plus four tokens of
//! overhead per block and per message.
//!
//! | item | price |
//! |---|---|
//! | `text` / `reasoning` block | `ceil(len(text)/4) + 4` |
//! | `tool-call` block | `ceil(len(name)/4) + ceil(len(arguments)/4) + 4` |
//! | `tool-result` block | the price of its inner blocks `+ 4` |
//! | any other block (image, unknown) | `ceil(len(json(block))/4) + 4` |
//! | message | the price of its blocks `+ 4` |
//! | header | `ceil(len(system)/4) + 4` (0 without a system prompt) plus `ceil(len(json(tools))/4) + 4` (0 without tools) |
//!
//! `len` counts UTF-16 code units, as the original's JavaScript `string.length` does, so an
//! astral character (an emoji, say) weighs two units. Counting bytes or chars would make the
//! two implementations disagree on every non-ASCII session.

use dsh_protocol::{ContentBlock, EpochHeader, Message};
use dsh_session::{derive_event_message, SessionEvent};
use serde::Serialize;

/// The overhead of one block, and of one message's role.
pub const OVERHEAD: u64 = 4;

/// `ceil(utf16_len(text) / 4)`.
pub fn text_tokens(text: &str) -> u64 {
    units_to_tokens(utf16_len(text))
}

/// The length of `text` in UTF-16 code units, from its UTF-8 bytes: every byte that starts a
/// character is one unit, and a four-byte character (outside the BMP) is one more.
pub fn utf16_len(text: &str) -> u64 {
    utf16_units(text.as_bytes())
}

fn utf16_units(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .map(|&b| u64::from((b & 0xC0) != 0x80) + u64::from(b >= 0xF0))
        .sum()
}

fn units_to_tokens(units: u64) -> u64 {
    units.div_ceil(4)
}

/// The price of one content block.
pub fn estimate_block(block: &ContentBlock) -> u64 {
    match block {
        ContentBlock::Text { text } | ContentBlock::Reasoning { text } => {
            text_tokens(text) + OVERHEAD
        }
        ContentBlock::ToolCall {
            name, arguments, ..
        } => text_tokens(name) + text_tokens(arguments) + OVERHEAD,
        ContentBlock::ToolResult { content, .. } => estimate_blocks(content) + OVERHEAD,
        other => json_tokens(other) + OVERHEAD,
    }
}

/// The price of a block list (no message overhead).
pub fn estimate_blocks(blocks: &[ContentBlock]) -> u64 {
    blocks.iter().map(estimate_block).sum()
}

/// The price of one message: its blocks plus the role overhead.
pub fn estimate_message(message: &Message) -> u64 {
    estimate_blocks(&message.content) + OVERHEAD
}

/// The price of what a request carries besides messages: the system prompt and the tool
/// schemas. Empty ones cost nothing, as absent ones do.
pub fn estimate_header(header: &EpochHeader) -> u64 {
    let system = match header.system.as_deref() {
        Some(system) if !system.is_empty() => text_tokens(system) + OVERHEAD,
        _ => 0,
    };
    let tools = match header.tools.as_deref() {
        Some(tools) if !tools.is_empty() => json_tokens(&tools) + OVERHEAD,
        _ => 0,
    };
    system + tools
}

/// The price one log event adds to the surface: its derived message's price, or 0 when the
/// event derives no message (an empty assistant message, any log-only event).
pub fn estimate_event(event: &SessionEvent) -> u64 {
    derive_event_message(event).map_or(0, |m| estimate_message(&m))
}

/// `ceil(utf16_len(json(value)) / 4)`, counted while serializing (no string is built).
fn json_tokens<T: Serialize + ?Sized>(value: &T) -> u64 {
    let mut counter = Utf16Counter(0);
    // Writing to the counter cannot fail, and these values always serialize (string keys).
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => units_to_tokens(counter.0),
        Err(_) => 0,
    }
}

/// Counts the UTF-16 units of the UTF-8 it is given. Byte classification is per byte, so it
/// does not matter where the serializer splits its writes.
struct Utf16Counter(u64);

impl std::io::Write for Utf16Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += utf16_units(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_length_matches_the_standard_library() {
        for s in [
            "",
            "abc",
            "é",
            "日本語",
            "😀",
            "a😀b",
            "\u{10FFFF}",
            "\u{7FF}\u{800}",
        ] {
            assert_eq!(utf16_len(s), s.encode_utf16().count() as u64, "{s}");
        }
    }
}
