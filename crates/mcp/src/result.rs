//! From an MCP `tools/call` result to the canonical value and the model's projection
//! (spec extensions §1.6).
//!
//! The canonical value is `{content: [...MCP blocks], structuredContent?}`. Inline base64 never
//! enters a session event: image and audio blocks keep their type and media type, and their
//! `data` (an embedded resource's `blob`) is replaced by a short marker. An image the
//! attachment store admitted gains `attachment` (its reference) and reaches the model as an
//! `image` block; one it did not gains `unavailable` (why) and reaches it as a text. Images
//! come from `image` blocks and from embedded `resource` blocks holding an image `blob`.
//!
//! Admission is all or nothing per result, as in the original: [`decode_images`] finds and
//! decodes the images, the caller stores them (or not) and describes the outcome as an
//! [`Admission`], which [`map_result`] records.

use base64::Engine as _;
use dsh_attachments::{ImageRef, SaveImage};
use dsh_protocol::ContentBlock;
use serde_json::{json, Map, Value};

/// Media types an image may have to be admitted.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];

/// The most images one result may bring into the model's context (the original's
/// per-message limit).
pub const MAX_IMAGES_PER_RESULT: usize = 20;

/// What one call produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Mapped {
    /// A success: the canonical value (rendered later with [`project`]).
    Value(Value),
    /// `isError: true`: the model sees `Error: <message>`.
    Error(String),
}

/// What became of a result's images, in the order [`decode_images`] found them.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Admission {
    /// Nothing was tried (an error result, or no images).
    #[default]
    NotTried,
    /// Every image is stored; its reference.
    Admitted(Vec<ImageRef>),
    /// No image is admitted; why, per image.
    Refused(Vec<String>),
}

impl Admission {
    /// Every image of `count` refused for one `reason`.
    pub fn refuse_all(count: usize, reason: &str) -> Self {
        Self::Refused(vec![reason.to_owned(); count])
    }
}

/// The images of a result, in block order: each decoded, or why it cannot be (its media
/// type, non-canonical base64). An error result has none: its images are never admitted.
pub fn decode_images(result: &Value) -> Vec<Result<SaveImage, &'static str>> {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Vec::new();
    }
    let Some(content) = result.get("content").and_then(Value::as_array) else {
        return Vec::new();
    };
    content
        .iter()
        .filter_map(image_source)
        .map(decode)
        .collect()
}

/// An image's declared type, base64 data and name, for an image block or an embedded
/// resource holding an image.
struct ImageSource<'a> {
    mime: &'a str,
    data: &'a str,
    name: Option<String>,
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn image_source(block: &Value) -> Option<ImageSource<'_>> {
    match str_of(block, "type")? {
        "image" => Some(ImageSource {
            mime: str_of(block, "mimeType").unwrap_or(""),
            data: str_of(block, "data").unwrap_or(""),
            name: None,
        }),
        "resource" => {
            let resource = block.get("resource")?;
            let mime = str_of(resource, "mimeType")?;
            let data = str_of(resource, "blob")?;
            if !mime.starts_with("image/") {
                return None;
            }
            let name = str_of(resource, "uri")
                .and_then(|uri| uri.rsplit('/').next())
                .filter(|name| !name.is_empty())
                .map(str::to_owned);
            Some(ImageSource { mime, data, name })
        }
        _ => None,
    }
}

fn decode(source: ImageSource<'_>) -> Result<SaveImage, &'static str> {
    if !IMAGE_TYPES.contains(&source.mime) {
        return Err("the declared media type is not PNG, JPEG, WebP, or GIF");
    }
    if !is_canonical_base64(source.data) {
        return Err("the image data is not canonical base64");
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(source.data)
        .map_err(|_| "the image data is not canonical base64")?;
    Ok(SaveImage {
        data,
        media_type: source.mime.to_owned(),
        name: source.name,
    })
}

/// The reasons for [`decode_images`]' outcome when any image failed: its own, or that another
/// one did (all or nothing). `None` when every image decoded.
pub fn decode_refusal(decoded: &[Result<SaveImage, &'static str>]) -> Option<Admission> {
    if decoded.iter().all(Result::is_ok) {
        return None;
    }
    Some(Admission::Refused(
        decoded
            .iter()
            .map(|image| match image {
                Err(reason) => (*reason).to_owned(),
                Ok(_) => "another image in the same result was invalid".to_owned(),
            })
            .collect(),
    ))
}

/// Maps a server's `CallToolResult` (as JSON) for the raw tool `raw`, recording what
/// `admission` says about its images.
pub fn map_result(raw: &str, result: &Value, admission: &Admission) -> Mapped {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let Some(content) = result.get("content").and_then(Value::as_array) else {
        // The legacy shape: `toolResult` instead of `content`.
        let text = match result.get("toolResult") {
            Some(tool_result) => tool_result.to_string(),
            None => "(no output)".to_owned(),
        };
        if is_error {
            return Mapped::Error(text);
        }
        let mut value = json!({ "content": [{"type": "text", "text": text}] });
        if let Some(structured) = result.get("structuredContent") {
            value["structuredContent"] = structured.clone();
        }
        return Mapped::Value(value);
    };
    let blocks = record_images(content, admission);
    let mut value = Map::new();
    value.insert("content".into(), Value::Array(blocks));
    if let Some(structured) = result.get("structuredContent") {
        value.insert("structuredContent".into(), structured.clone());
    }
    let value = Value::Object(value);
    if is_error {
        return Mapped::Error(projection_text(raw, &value));
    }
    Mapped::Value(value)
}

/// Strips inline data, and marks each image with its reference or the reason it has none.
fn record_images(content: &[Value], admission: &Admission) -> Vec<Value> {
    let mut next_image = 0;
    content
        .iter()
        .map(|block| {
            let Some(object) = block.as_object() else {
                return block.clone();
            };
            let is_image = image_source(block).is_some();
            let mut stripped = object.clone();
            match object.get("type").and_then(Value::as_str) {
                Some("image" | "audio") => {
                    if let Some(Value::String(data)) = object.get("data") {
                        stripped.insert("data".into(), omitted(data));
                    }
                }
                Some("resource") => {
                    if let Some(Value::Object(resource)) = object.get("resource") {
                        if let Some(Value::String(blob)) = resource.get("blob") {
                            let mut resource = resource.clone();
                            resource.insert("blob".into(), omitted(blob));
                            stripped.insert("resource".into(), Value::Object(resource));
                        }
                    }
                }
                _ => {}
            }
            if is_image {
                let index = next_image;
                next_image += 1;
                match admission {
                    Admission::Admitted(refs) if index < refs.len() => {
                        stripped.insert("attachment".into(), refs[index].to_value());
                    }
                    Admission::Refused(reasons) if index < reasons.len() => {
                        stripped
                            .insert("unavailable".into(), Value::String(reasons[index].clone()));
                    }
                    _ => {}
                }
            }
            Value::Object(stripped)
        })
        .collect()
}

fn omitted(data: &str) -> Value {
    Value::String(format!("[{} base64 characters omitted]", data.len()))
}

/// Standard alphabet, padded, no whitespace, and zero bits where padding leaves spare bits.
fn is_canonical_base64(data: &str) -> bool {
    let bytes = data.as_bytes();
    if bytes.is_empty() || !bytes.len().is_multiple_of(4) {
        return false;
    }
    let value = |b: u8| -> Option<u8> {
        match b {
            b'A'..=b'Z' => Some(b - b'A'),
            b'a'..=b'z' => Some(b - b'a' + 26),
            b'0'..=b'9' => Some(b - b'0' + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    };
    let pad = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    if pad > 2 {
        return false;
    }
    let body = &bytes[..bytes.len() - pad];
    if body.iter().any(|&b| value(b).is_none()) {
        return false;
    }
    match (pad, body.last().and_then(|&b| value(b))) {
        (1, Some(last)) => last & 0b11 == 0,
        (2, Some(last)) => last & 0b1111 == 0,
        _ => true,
    }
}

/// The model's view of a canonical value: runs of text joined by newlines, and each admitted
/// image as an `image` block at its place.
pub fn project(raw: &str, value: &Value) -> Vec<ContentBlock> {
    let mut out = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    let flush = |lines: &mut Vec<String>, out: &mut Vec<ContentBlock>| {
        if !lines.is_empty() {
            out.push(ContentBlock::text(lines.join("\n")));
            lines.clear();
        }
    };
    for block in content_of(value) {
        match block.get("attachment").filter(|_| block.is_object()) {
            Some(attachment) if ImageRef::from_value(attachment).is_some() => {
                flush(&mut lines, &mut out);
                out.push(ContentBlock::Image {
                    attachment: attachment.clone(),
                });
            }
            _ => lines.extend(project_block(block)),
        }
    }
    flush(&mut lines, &mut out);
    if out.is_empty() {
        out.push(ContentBlock::text(format!(
            "({raw} returned no model-visible content)"
        )));
    }
    out
}

fn content_of(value: &Value) -> &[Value] {
    value
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn projection_text(raw: &str, value: &Value) -> String {
    let lines: Vec<String> = content_of(value).iter().filter_map(project_block).collect();
    if lines.is_empty() {
        return format!("({raw} returned no model-visible content)");
    }
    lines.join("\n")
}

fn image_unavailable(mime: Option<&str>, reason: Option<&str>) -> String {
    format!(
        "[image unavailable: {}; {}; raw image data remains available to programmatic callers]",
        mime.unwrap_or("unknown media type"),
        reason.unwrap_or("this result was not admitted to durable model context")
    )
}

fn project_block(block: &Value) -> Option<String> {
    let Some(object) = block.as_object() else {
        return Some("[unsupported MCP content block: expected an object]".into());
    };
    let str_field = |key: &str| object.get(key).and_then(Value::as_str);
    match str_field("type").unwrap_or("") {
        "text" => str_field("text").map(str::to_owned),
        "resource_link" => Some(match (str_field("name"), str_field("uri")) {
            (Some(name), Some(uri)) => format!("Resource link: {name} ({uri})"),
            _ => "[resource link unavailable: the MCP block is missing its name or URI]".into(),
        }),
        "audio" => Some(format!(
            "[audio result unsupported: {}; raw audio data remains available to programmatic callers]",
            str_field("mimeType").unwrap_or("unknown media type")
        )),
        "resource" if image_source(block).is_some() => Some(image_unavailable(
            block["resource"].get("mimeType").and_then(Value::as_str),
            str_field("unavailable"),
        )),
        "resource" => Some(
            "[embedded resource unsupported; raw resource data remains available to programmatic callers]"
                .into(),
        ),
        "image" => Some(image_unavailable(
            str_field("mimeType"),
            str_field("unavailable"),
        )),
        other => Some(format!("[unsupported MCP content type: {other}]")),
    }
}

#[cfg(test)]
mod tests;
