//! The texts shown in place of an image, all naming the image (type, size, short id) so a
//! model or a person knows what is missing and why.

use crate::error::human_bytes;
use crate::reference::ImageRef;
use serde_json::Value;

/// What a text-only model sees for an image block whose reference cannot be read.
pub const TEXT_ONLY_UNKNOWN: &str = "[image omitted: this model does not accept image input]";

/// The original's heading of the user message that carries a tool result's images.
pub const TOOL_IMAGES_HEADING: &str = "Attached image(s) from tool result:";

/// `image/png, 12x12 px, 95 bytes, sha256:1a2b3c4d`.
pub fn describe(image: &ImageRef) -> String {
    format!(
        "{}, {}x{} px, {}, {}",
        image.media_type,
        image.width,
        image.height,
        human_bytes(image.bytes),
        image.short_id()
    )
}

/// `image/png, 12x12 px, ...` for a block's `attachment` value, or `None` when it is not a
/// reference this build reads.
pub fn describe_value(attachment: &Value) -> Option<String> {
    ImageRef::from_value(attachment).map(|image| describe(&image))
}

/// The text a model that reads text only gets for an image block.
pub fn text_only(attachment: &Value) -> String {
    match describe_value(attachment) {
        Some(description) => {
            format!("[image omitted: this model does not accept image input; {description}]")
        }
        None => TEXT_ONLY_UNKNOWN.to_owned(),
    }
}

/// The text sent instead of an image whose bytes could not be read back (`reason` says why).
pub fn unreadable(attachment: &Value, reason: &str) -> String {
    match describe_value(attachment) {
        Some(description) => format!("[image unavailable: {description}; {reason}]"),
        None => format!("[image unavailable: {reason}]"),
    }
}

/// The text in a tool message where an image was: the wire carries the image itself in the
/// user message that follows the tool messages.
pub fn tool_image_handle(image: &ImageRef) -> String {
    format!(
        "[image {}: {}, {}x{} px, {}; attached in the next message]",
        image.short_id(),
        image.media_type,
        image.width,
        image.height,
        human_bytes(image.bytes)
    )
}

/// The caption before each image in that user message: which call produced it.
pub fn tool_image_caption(image: &ImageRef, call_id: &str) -> String {
    format!("Image {} from tool call {call_id}:", image.short_id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_name_the_image_and_its_size() {
        let attachment = json!({"attachmentId": format!("sha256:{}", "0f".repeat(32)),
            "mediaType": "image/png", "bytes": 95, "width": 12, "height": 12});
        assert_eq!(
            text_only(&attachment),
            "[image omitted: this model does not accept image input; image/png, 12x12 px, 95 bytes, sha256:0f0f0f0f]"
        );
        assert_eq!(text_only(&json!({"x": 1})), TEXT_ONLY_UNKNOWN);
        assert_eq!(
            unreadable(&attachment, "it is not in the store"),
            "[image unavailable: image/png, 12x12 px, 95 bytes, sha256:0f0f0f0f; it is not in the store]"
        );
        let image = ImageRef::from_value(&attachment).unwrap();
        assert_eq!(
            tool_image_handle(&image),
            "[image sha256:0f0f0f0f: image/png, 12x12 px, 95 bytes; attached in the next message]"
        );
    }
}
