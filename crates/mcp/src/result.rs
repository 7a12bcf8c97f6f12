//! From an MCP `tools/call` result to the canonical value and the model's projection
//! (spec extensions §1.6).
//!
//! The canonical value is `{content: [...MCP blocks], structuredContent?}`. Inline base64 never
//! enters a session event: image and audio blocks keep their type and media type, their `data`
//! is replaced by a short marker, and an image records in `unavailable` why the model cannot
//! see it (dsh has no attachment store yet, so no image is admitted to the model's context).

use dsh_protocol::ContentBlock;
use serde_json::{json, Map, Value};

/// Media types an image may have to be admitted.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];

/// What one call produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Mapped {
    /// A success: the canonical value (rendered later with [`project`]).
    Value(Value),
    /// `isError: true`: the model sees `Error: <message>`.
    Error(String),
}

/// Maps a server's `CallToolResult` (as JSON) for the raw tool `raw`.
pub fn map_result(raw: &str, result: &Value) -> Mapped {
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
    let blocks = admit_images(content);
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

/// Strips inline data and decides, all or nothing, whether the images reach the model.
fn admit_images(content: &[Value]) -> Vec<Value> {
    let own_reason = |block: &Value| -> Option<&'static str> {
        let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("");
        if !IMAGE_TYPES.contains(&mime) {
            return Some("the declared media type is not PNG, JPEG, WebP, or GIF");
        }
        let data = block.get("data").and_then(Value::as_str).unwrap_or("");
        if !is_canonical_base64(data) {
            return Some("the image data is not canonical base64");
        }
        None
    };
    let any_invalid = content
        .iter()
        .any(|b| is_type(b, "image") && own_reason(b).is_some());
    content
        .iter()
        .map(|block| {
            let Some(object) = block.as_object() else {
                return block.clone();
            };
            let kind = object.get("type").and_then(Value::as_str);
            if !matches!(kind, Some("image" | "audio")) {
                return block.clone();
            }
            let mut stripped = object.clone();
            if let Some(Value::String(data)) = object.get("data") {
                stripped.insert(
                    "data".into(),
                    Value::String(format!("[{} base64 characters omitted]", data.len())),
                );
            }
            if kind == Some("image") {
                let reason = match own_reason(block) {
                    Some(reason) => reason,
                    None if any_invalid => "another image in the same result was invalid",
                    None => "no attachment store is mounted",
                };
                stripped.insert("unavailable".into(), Value::String(reason.into()));
            }
            Value::Object(stripped)
        })
        .collect()
}

fn is_type(block: &Value, kind: &str) -> bool {
    block.get("type").and_then(Value::as_str) == Some(kind)
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

/// The model's view of a canonical value: one text block.
pub fn project(raw: &str, value: &Value) -> Vec<ContentBlock> {
    vec![ContentBlock::text(projection_text(raw, value))]
}

fn projection_text(raw: &str, value: &Value) -> String {
    let mut lines: Vec<String> = Vec::new();
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        if let Some(line) = project_block(block) {
            lines.push(line);
        }
    }
    if lines.is_empty() {
        return format!("({raw} returned no model-visible content)");
    }
    lines.join("\n")
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
        "resource" => Some(
            "[embedded resource unsupported; raw resource data remains available to programmatic callers]"
                .into(),
        ),
        "image" => Some(format!(
            "[image unavailable: {}; {}; raw image data remains available to programmatic callers]",
            str_field("mimeType").unwrap_or("unknown media type"),
            str_field("unavailable").unwrap_or("this result was not admitted to durable model context")
        )),
        other => Some(format!("[unsupported MCP content type: {other}]")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(raw: &str, mapped: Mapped) -> String {
        match mapped {
            Mapped::Value(value) => project(raw, &value)[0].as_text().unwrap().to_owned(),
            Mapped::Error(message) => format!("Error: {message}"),
        }
    }

    #[test]
    fn text_runs_join_and_structured_content_is_kept() {
        let result = json!({"content": [{"type": "text", "text": "a"}, {"type": "text"},
            {"type": "text", "text": "b"}], "structuredContent": {"sum": 3}});
        let Mapped::Value(value) = map_result("t", &result) else {
            panic!()
        };
        assert_eq!(value["structuredContent"], json!({"sum": 3}));
        assert_eq!(
            project("t", &value)[0].as_text().unwrap().to_owned(),
            "a\nb"
        );
    }

    #[test]
    fn every_block_kind_projects_to_the_spec_text() {
        let result = json!({"content": [
            {"type": "resource_link", "name": "n", "uri": "file:///x"},
            {"type": "resource_link", "uri": "file:///x"},
            {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "u", "text": "t"}},
            {"type": "video"},
            7
        ]});
        assert_eq!(
            text_of("t", map_result("t", &result)),
            "Resource link: n (file:///x)\n\
             [resource link unavailable: the MCP block is missing its name or URI]\n\
             [audio result unsupported: audio/wav; raw audio data remains available to programmatic callers]\n\
             [embedded resource unsupported; raw resource data remains available to programmatic callers]\n\
             [unsupported MCP content type: video]\n\
             [unsupported MCP content block: expected an object]"
        );
    }

    #[test]
    fn images_never_keep_their_data_and_fail_all_or_nothing() {
        let good = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
        let bad = json!({"type": "image", "mimeType": "image/tiff", "data": "AAAA"});
        let Mapped::Value(value) = map_result("img", &json!({"content": [good, bad]})) else {
            panic!()
        };
        assert_eq!(
            value["content"][0]["data"],
            "[12 base64 characters omitted]"
        );
        assert_eq!(
            project("img", &value)[0].as_text().unwrap().to_owned(),
            "[image unavailable: image/png; another image in the same result was invalid; raw image data remains available to programmatic callers]\n\
             [image unavailable: image/tiff; the declared media type is not PNG, JPEG, WebP, or GIF; raw image data remains available to programmatic callers]"
        );
        let alone = json!({"content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]});
        assert!(
            text_of("img", map_result("img", &alone)).contains("no attachment store is mounted")
        );
        let noncanonical = json!({"content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgp="}]});
        assert!(text_of("img", map_result("img", &noncanonical)).contains("not canonical base64"));
    }

    #[test]
    fn errors_legacy_shapes_and_empty_results() {
        let error = json!({"isError": true, "content": [{"type": "text", "text": "boom"}]});
        assert_eq!(map_result("t", &error), Mapped::Error("boom".into()));
        let legacy = json!({"toolResult": {"ok": 1}});
        assert_eq!(text_of("t", map_result("t", &legacy)), "{\"ok\":1}");
        assert_eq!(text_of("t", map_result("t", &json!({}))), "(no output)");
        assert_eq!(
            map_result("t", &json!({"isError": true, "toolResult": "x"})),
            Mapped::Error("\"x\"".into())
        );
        assert_eq!(
            text_of("t", map_result("t", &json!({"content": []}))),
            "(t returned no model-visible content)"
        );
    }
}
