//! [`ContentBlock`]: entries collected once, the variant built from them by moving, `Other`
//! holding the whole object when the derived reader's tagged variants would fail.

use super::{
    is_string_at, known_keys, optional_at, positions, single, tag_value, tag_words, take_string,
};
use crate::ids::CallId;
use crate::message::ContentBlock;
use serde::de::value::SeqAccessDeserializer;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::fmt;

/// The derived reader of the tagged [`ContentBlock`] variants, for the array form.
#[derive(Deserialize)]
#[serde(remote = "ContentBlock", tag = "type", rename_all = "kebab-case")]
enum ContentBlockMirror {
    Text {
        text: String,
    },
    Reasoning {
        text: String,
    },
    Image {
        attachment: Value,
    },
    ToolCall {
        id: CallId,
        name: String,
        arguments: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_call_id: CallId,
        content: Vec<ContentBlock>,
        #[serde(default)]
        is_error: Option<bool>,
    },
}

const NO_VARIANT: &str = "data did not match any variant of untagged enum ContentBlock";

tag_words!(
    /// `ContentBlock`'s `type` words, in declaration order.
    BlockTag {
        Text = "text",
        Reasoning = "reasoning",
        Image = "image",
        ToolCall = "tool-call",
        ToolResult = "tool-result",
    }
);

known_keys!(BlockKey {
    Type = "type",
    Text = "text",
    Attachment = "attachment",
    Id = "id",
    Name = "name",
    Arguments = "arguments",
    ToolCallId = "toolCallId",
    Content = "content",
    IsError = "isError",
});

type Entries = Vec<(BlockKey, Value)>;

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a content block object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContentBlock, A::Error> {
        let mut entries = Entries::with_capacity(4);
        while let Some(key) = map.next_key::<BlockKey>()? {
            entries.push((key, map.next_value()?));
        }
        Ok(from_entries(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ContentBlock, A::Error> {
        let value = Value::deserialize(SeqAccessDeserializer::new(seq))?;
        ContentBlockMirror::deserialize(value).map_err(|_| de::Error::custom(NO_VARIANT))
    }
}

/// A block from an object already parsed into a map (the items of a tool result).
fn from_map(map: Map<String, Value>) -> ContentBlock {
    let entries = map
        .into_iter()
        .map(|(key, value)| {
            let key = BlockKey::known(&key).unwrap_or(BlockKey::Unknown(key));
            (key, value)
        })
        .collect();
    from_entries(entries)
}

fn from_entries(mut entries: Entries) -> ContentBlock {
    match typed(&mut entries) {
        Some(block) => block,
        None => ContentBlock::Other(
            entries
                .into_iter()
                .map(|(key, value)| (key.into_string(), value))
                .collect(),
        ),
    }
}

/// The tagged variant, or `None` (entries untouched) where the derived reader failed it.
fn typed(entries: &mut Entries) -> Option<ContentBlock> {
    let tag = single(entries, &BlockKey::Type)?;
    let tag = tag_value(&entries[tag].1, BlockTag::from_word, BlockTag::from_index)?;
    Some(match tag {
        BlockTag::Text | BlockTag::Reasoning => {
            let [text] = positions(entries, [&BlockKey::Text])?;
            if !is_string_at(entries, text) {
                return None;
            }
            let text = take_string(entries, text);
            if tag == BlockTag::Text {
                ContentBlock::Text { text }
            } else {
                ContentBlock::Reasoning { text }
            }
        }
        BlockTag::Image => {
            let [attachment] = positions(entries, [&BlockKey::Attachment])?;
            ContentBlock::Image {
                attachment: std::mem::take(&mut entries[attachment?].1),
            }
        }
        BlockTag::ToolCall => {
            let [id, name, arguments] = positions(
                entries,
                [&BlockKey::Id, &BlockKey::Name, &BlockKey::Arguments],
            )?;
            if ![id, name, arguments]
                .iter()
                .all(|at| is_string_at(entries, *at))
            {
                return None;
            }
            ContentBlock::ToolCall {
                id: CallId::from(take_string(entries, id)),
                name: take_string(entries, name),
                arguments: take_string(entries, arguments),
            }
        }
        BlockTag::ToolResult => {
            let [call_id, content, is_error] = positions(
                entries,
                [
                    &BlockKey::ToolCallId,
                    &BlockKey::Content,
                    &BlockKey::IsError,
                ],
            )?;
            if !is_string_at(entries, call_id) {
                return None;
            }
            let is_error = match optional_at(entries, is_error) {
                None => None,
                Some(Value::Bool(b)) => Some(*b),
                Some(_) => return None,
            };
            let content = match &mut entries[content?].1 {
                // Objects always read (as `Other` at worst): move them.
                Value::Array(items) if items.iter().all(Value::is_object) => std::mem::take(items)
                    .into_iter()
                    .map(|item| match item {
                        Value::Object(map) => from_map(map),
                        _ => ContentBlock::Other(Map::new()),
                    })
                    .collect(),
                // Anything else may fail: try it without taking it.
                value => Vec::<ContentBlock>::deserialize(&*value).ok()?,
            };
            ContentBlock::ToolResult {
                tool_call_id: CallId::from(take_string(entries, call_id)),
                content,
                is_error,
            }
        }
    })
}
