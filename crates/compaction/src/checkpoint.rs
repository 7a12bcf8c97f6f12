//! The checkpoint: the `user/message` that replaces a compacted span (spec §2.6).
//!
//! Its content is exactly the preamble with the open tag, the summary's text blocks, and the
//! close tag:
//!
//! ```json
//! [ {"type":"text","text":"<CHECKPOINT_PREAMBLE>\n\n<compacted-summary>"},
//!   ...summary text blocks...,
//!   {"type":"text","text":"</compacted-summary>"} ]
//! ```
//!
//! Its source is `{kind:'plugin', plugin:'compact', compactionId, sourceCommandId?}`, which is
//! how readers (the invariant, transcripts) recognise a checkpoint among user messages.

pub use crate::select::{is_compact_checkpoint_source as is_checkpoint_source, CHECKPOINT_PLUGIN};
use dsh_protocol::{ContentBlock, Message, MessageId, MessageSource, Role};
use serde_json::{Map, Value};

/// The tag that opens the summary inside a checkpoint.
pub const SUMMARY_OPEN: &str = "<compacted-summary>";

/// The tag that closes it.
pub const SUMMARY_CLOSE: &str = "</compacted-summary>";

/// What the model is told about a checkpoint: three sentences, ahead of the summary.
pub const CHECKPOINT_PREAMBLE: &str = "This message was written automatically: it stands in \
for an earlier part of this conversation, condensed to save context. Take what it records as \
settled background that you already know. Carry on with the work from the messages after it, \
without remarking on this checkpoint.";

/// The source of a checkpoint message.
pub fn checkpoint_source(compaction_id: &str, source_command_id: Option<&str>) -> MessageSource {
    let mut extra = Map::new();
    extra.insert(
        "compactionId".into(),
        Value::String(compaction_id.to_owned()),
    );
    if let Some(command) = source_command_id {
        extra.insert("sourceCommandId".into(), Value::String(command.to_owned()));
    }
    MessageSource::Plugin {
        plugin: CHECKPOINT_PLUGIN.into(),
        extra,
    }
}

/// The compaction a checkpoint source names: `Some("")` for a checkpoint source without a
/// usable id (so the invariant refuses it), `None` for any other source.
pub fn checkpoint_compaction_id(source: &MessageSource) -> Option<&str> {
    match source {
        MessageSource::Plugin { plugin, extra } if plugin == CHECKPOINT_PLUGIN => Some(
            extra
                .get("compactionId")
                .and_then(Value::as_str)
                .unwrap_or(""),
        ),
        _ => None,
    }
}

/// The content of a checkpoint framing `summary` (its text blocks, in order).
pub fn frame_summary(summary: &[ContentBlock]) -> Vec<ContentBlock> {
    let mut content = Vec::with_capacity(summary.len() + 2);
    content.push(ContentBlock::text(format!(
        "{CHECKPOINT_PREAMBLE}\n\n{SUMMARY_OPEN}"
    )));
    content.extend(
        summary
            .iter()
            .filter(|block| matches!(block, ContentBlock::Text { .. }))
            .cloned(),
    );
    content.push(ContentBlock::text(SUMMARY_CLOSE));
    content
}

/// The estimated price of a checkpoint whose summary is empty: the framing alone (preamble,
/// tags, message overhead). A span worth no more than this can never be replaced by a smaller
/// checkpoint, so selection refuses it before any model call is spent on it.
pub fn framing_tokens() -> u64 {
    crate::estimate::estimate_message(&checkpoint_message("", None, &[]))
}

/// The checkpoint message for one compaction, with a fresh id.
pub fn checkpoint_message(
    compaction_id: &str,
    source_command_id: Option<&str>,
    summary: &[ContentBlock],
) -> Message {
    Message {
        id: MessageId::random(),
        role: Role::User,
        content: frame_summary(summary),
        source: checkpoint_source(compaction_id, source_command_id),
    }
}
