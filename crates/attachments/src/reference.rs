//! [`ImageRef`]: what an `image` content block records about its image.

use crate::media::ImageMediaType;
use dsh_protocol::ContentBlock;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The prefix of every id this build writes: the id is the SHA-256 of the bytes.
pub const SHA256_PREFIX: &str = "sha256:";

/// A durable reference to one stored image: the `attachment` of an `image` content block.
///
/// The shape is the original's `ImageAttachmentRef`, field for field, so either
/// implementation reads the other's logs: an opaque id (`sha256:<hex>` here), the media type
/// read from the bytes, the exact byte length and the intrinsic size in pixels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRef {
    pub attachment_id: String,
    pub media_type: ImageMediaType,
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
    /// A display name without any path (an MCP resource's file name, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ImageRef {
    /// Reads the `attachment` value of an `image` block; `None` when it is not a reference of
    /// this shape (a block from a newer or foreign writer).
    pub fn from_value(value: &Value) -> Option<Self> {
        serde_json::from_value(value.clone()).ok()
    }

    /// The reference as the JSON an `image` block holds.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The `image` content block for this reference.
    pub fn block(&self) -> ContentBlock {
        ContentBlock::Image {
            attachment: self.to_value(),
        }
    }

    /// The hex digest, when the id is a `sha256:` id of 64 lowercase hex digits.
    pub fn digest(&self) -> Option<&str> {
        let hex = self.attachment_id.strip_prefix(SHA256_PREFIX)?;
        let valid = hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then_some(hex)
    }

    /// `sha256:1a2b3c4d`: the id cut to 8 digits, for texts people and models read.
    pub fn short_id(&self) -> String {
        match self.attachment_id.strip_prefix(SHA256_PREFIX) {
            Some(hex) => format!("{SHA256_PREFIX}{}", hex.get(..8).unwrap_or(hex)),
            None => self.attachment_id.clone(),
        }
    }
}

/// Every `image` block of `blocks`, tool results included, in order, with its attachment value.
pub fn image_refs(blocks: &[ContentBlock]) -> Vec<&Value> {
    fn walk<'a>(blocks: &'a [ContentBlock], out: &mut Vec<&'a Value>) {
        for block in blocks {
            match block {
                ContentBlock::Image { attachment } => out.push(attachment),
                ContentBlock::ToolResult { content, .. } => walk(content, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(blocks, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_original_shape_round_trips() {
        let raw = json!({"attachmentId": format!("sha256:{}", "ab".repeat(32)),
            "mediaType": "image/png", "bytes": 95, "width": 12, "height": 12});
        let image = ImageRef::from_value(&raw).unwrap();
        assert_eq!(image.to_value(), raw);
        assert_eq!(image.digest(), Some("ab".repeat(32).as_str()));
        assert_eq!(image.short_id(), "sha256:abababab");
        // The original may add `originalDimensions`; reading ignores it (the block keeps it).
        let mut extended = raw.clone();
        extended["originalDimensions"] = json!({"width": 4000, "height": 3000});
        assert_eq!(ImageRef::from_value(&extended), Some(image));
        assert!(ImageRef::from_value(&json!({"id": "a1"})).is_none());
    }

    #[test]
    fn digests_must_be_sha256_hex() {
        let mut image = ImageRef {
            attachment_id: "sha256:../../etc/passwd".into(),
            media_type: ImageMediaType::Png,
            bytes: 1,
            width: 1,
            height: 1,
            name: None,
        };
        assert_eq!(image.digest(), None);
        image.attachment_id = format!("sha256:{}", "AB".repeat(32));
        assert_eq!(image.digest(), None);
    }

    #[test]
    fn images_are_found_inside_tool_results() {
        let a = json!({"a": 1});
        let b = json!({"b": 2});
        let blocks = vec![
            ContentBlock::Image {
                attachment: a.clone(),
            },
            ContentBlock::ToolResult {
                tool_call_id: "c".into(),
                content: vec![
                    ContentBlock::text("x"),
                    ContentBlock::Image {
                        attachment: b.clone(),
                    },
                ],
                is_error: None,
            },
        ];
        assert_eq!(image_refs(&blocks), vec![&a, &b]);
    }
}
