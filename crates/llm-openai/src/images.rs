//! The bytes of a request's images, read from the attachment store before the body is built.
//!
//! The log holds references only (`image` blocks naming a stored attachment); the wire needs
//! the bytes, as `data:` URLs. What cannot be sent becomes a text naming the image and why,
//! never an error: a lost attachment file must not make every later request of a session
//! fail. Which images are sent depends only on the log (their order and recorded sizes) and
//! the budget, so the same history always yields the same request.

use base64::Engine as _;
use dsh_attachments::{image_refs, text, ImageRef, ImageStore};
use dsh_llm::LlmRequest;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The most base64 image data one request carries (the original's default for inline
/// images); older images beyond it are replaced by [`OFFLOADED`].
pub const MAX_REQUEST_IMAGE_BASE64: u64 = 20 * 1024 * 1024;

/// What an image left out for the budget becomes (the original's words).
pub const OFFLOADED: &str = "[image omitted to keep the request within its image limit; older images are omitted first. If this image is still needed, read its file again when a path is available; otherwise ask the user to attach it again.]";

/// One image of a request, ready for the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireImage {
    /// Sent: the reference and its `data:` URL.
    Sent { image: ImageRef, data_url: String },
    /// Not sent: the text in its place.
    Text(String),
}

/// The request's images by attachment id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestImages {
    by_id: HashMap<String, WireImage>,
}

impl RequestImages {
    /// How the image block with `attachment` goes on the wire. An image nobody resolved (a
    /// body built without the store) is a text saying so.
    pub fn wire(&self, attachment: &Value) -> WireImage {
        let id = attachment.get("attachmentId").and_then(Value::as_str);
        match id.and_then(|id| self.by_id.get(id)) {
            Some(image) => image.clone(),
            None => WireImage::Text(text::unreadable(
                attachment,
                "its bytes were not loaded for this request",
            )),
        }
    }

    /// Records `image` as sent with `data`.
    pub fn insert_sent(&mut self, image: ImageRef, data: &[u8]) {
        let data_url = format!(
            "data:{};base64,{}",
            image.media_type,
            base64::engine::general_purpose::STANDARD.encode(data)
        );
        self.by_id.insert(
            image.attachment_id.clone(),
            WireImage::Sent { image, data_url },
        );
    }

    /// Records `id` as not sent, with `text` in its place.
    pub fn insert_text(&mut self, id: String, text: String) {
        self.by_id.insert(id, WireImage::Text(text));
    }
}

fn base64_len(bytes: u64) -> u64 {
    bytes.div_ceil(3) * 4
}

/// Reads every image `request` references from `store` (on a blocking thread), newest first
/// within [`MAX_REQUEST_IMAGE_BASE64`].
pub async fn resolve(request: &LlmRequest, store: Option<Arc<dyn ImageStore>>) -> RequestImages {
    resolve_within(request, store, MAX_REQUEST_IMAGE_BASE64).await
}

/// [`resolve`] with `budget` bytes of base64 image data.
pub async fn resolve_within(
    request: &LlmRequest,
    store: Option<Arc<dyn ImageStore>>,
    budget: u64,
) -> RequestImages {
    // Distinct references, newest first.
    let mut seen = std::collections::HashSet::new();
    let mut refs: Vec<(String, Value)> = Vec::new();
    for message in request.messages.iter().rev() {
        for attachment in image_refs(&message.content).into_iter().rev() {
            let Some(id) = attachment.get("attachmentId").and_then(Value::as_str) else {
                continue;
            };
            if seen.insert(id.to_owned()) {
                refs.push((id.to_owned(), attachment.clone()));
            }
        }
    }
    let mut images = RequestImages::default();
    if refs.is_empty() {
        return images;
    }
    let Some(store) = store else {
        for (id, attachment) in refs {
            let text = text::unreadable(&attachment, "no attachment store is mounted");
            images.insert_text(id, text);
        }
        return images;
    };
    let mut budget = budget;
    let mut to_read = Vec::new();
    for (id, attachment) in refs {
        let Some(image) = ImageRef::from_value(&attachment) else {
            let text = text::unreadable(&attachment, "the reference is not one dsh can read");
            images.insert_text(id, text);
            continue;
        };
        let cost = base64_len(image.bytes);
        if cost > budget {
            // Once one image is left out, every older one is too: the cut is a prefix of
            // the history, so later requests keep the same images while it grows.
            budget = 0;
            images.insert_text(id, OFFLOADED.to_owned());
            continue;
        }
        budget -= cost;
        to_read.push((attachment, image));
    }
    let read = tokio::task::spawn_blocking(move || {
        to_read
            .into_iter()
            .map(|(attachment, image)| {
                let data = store.read_image(&image);
                (attachment, image, data)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    for (attachment, image, data) in read {
        match data {
            Ok(data) => images.insert_sent(image, &data),
            Err(error) => {
                tracing::warn!(attachment = %image.attachment_id, %error, "image not sent");
                let text = text::unreadable(&attachment, &error.to_string());
                images.insert_text(image.attachment_id, text);
            }
        }
    }
    images
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_attachments::{ImageLimits, LocalImageStore, SaveImage};
    use dsh_protocol::{CallId, ContentBlock, LlmCallConfig, Message};

    fn png(seed: u8) -> Vec<u8> {
        let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x01\0\0\0\x01".to_vec();
        data.extend(std::iter::repeat_n(seed, 11));
        data
    }

    #[tokio::test]
    async fn newest_images_are_read_within_the_budget_and_lost_ones_become_text() {
        let dir = tempfile::tempdir().unwrap();
        let local = LocalImageStore::new(dir.path(), ImageLimits::default());
        let save = |seed| {
            local
                .save_image(SaveImage {
                    data: png(seed),
                    media_type: "image/png".into(),
                    name: None,
                })
                .unwrap()
        };
        let (old, new, lost) = (save(1), save(2), save(3));
        std::fs::remove_file(local.object_path(lost.digest().unwrap())).unwrap();
        let result = |image: &ImageRef| {
            Arc::new(Message::tool_result(
                CallId::from("c"),
                vec![ContentBlock::text("x"), image.block()],
                false,
            ))
        };
        let request = LlmRequest::new(
            LlmCallConfig::default(),
            vec![result(&old), result(&new), result(&lost), result(&new)],
        );
        let store: Arc<dyn ImageStore> = Arc::new(local);
        // 35 bytes are 48 of base64: room for two images, and `lost` costs its share.
        let images = resolve_within(&request, Some(store.clone()), 96).await;
        assert!(matches!(
            images.wire(&new.to_value()),
            WireImage::Sent { .. }
        ));
        assert_eq!(
            images.wire(&old.to_value()),
            WireImage::Text(OFFLOADED.into())
        );
        let WireImage::Text(text) = images.wire(&lost.to_value()) else {
            panic!("a lost image is not sent")
        };
        assert!(
            text.starts_with("[image unavailable: image/png, 1x1 px, 35 bytes"),
            "{text}"
        );
        assert!(text.contains("is not in the store"), "{text}");
        // Without a store nothing is read, and each image says so.
        let none = resolve(&request, None).await;
        let WireImage::Text(text) = none.wire(&new.to_value()) else {
            panic!()
        };
        assert!(
            text.ends_with("; no attachment store is mounted]"),
            "{text}"
        );
    }
}
