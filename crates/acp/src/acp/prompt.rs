//! Prompt admission: ACP content blocks to the text of one user message, with the original's
//! rules and error texts.

use crate::rpc::RpcError;
use serde_json::Value;

/// The largest prompt dsh accepts, in bytes of text: far beyond any model's context, small
/// enough that a runaway client cannot make every later request carry megabytes.
pub const MAX_PROMPT_BYTES: usize = 4 << 20;

/// The prompt's text, or the error the client gets.
pub fn admit(blocks: &[Value]) -> Result<String, RpcError> {
    let mut text = String::new();
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => {
                let part = block.get("text").and_then(Value::as_str).ok_or_else(|| {
                    RpcError::invalid_params("a text block needs a string `text`")
                })?;
                text.push_str(part);
            }
            "resource_link" => {
                let field = |key: &str| {
                    serde_json::to_string(block.get(key).unwrap_or(&Value::Null))
                        .unwrap_or_default()
                };
                text.push_str(&format!(
                    "\n[resource_link name={} uri={}]\n",
                    field("name"),
                    field("uri")
                ));
            }
            "image" => {
                return Err(RpcError::invalid_params(
                    "inline image prompts were not advertised by this connection",
                ))
            }
            "audio" => {
                return Err(RpcError::invalid_params(
                    "audio prompt content is not supported",
                ))
            }
            "resource" => {
                return Err(RpcError::invalid_params(
                    "embedded resource prompt content is not supported",
                ))
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "unknown prompt content type: {other:?}"
                )))
            }
        }
        if text.len() > MAX_PROMPT_BYTES {
            return Err(RpcError::invalid_params(format!(
                "the prompt is larger than {} MiB",
                MAX_PROMPT_BYTES >> 20
            )));
        }
    }
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params("empty prompt"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_resource_links_are_joined() {
        let text = admit(&[
            json!({"type": "text", "text": "look at"}),
            json!({"type": "resource_link", "name": "a.rs", "uri": "file:///a.rs"}),
        ])
        .unwrap();
        assert_eq!(
            text,
            "look at\n[resource_link name=\"a.rs\" uri=\"file:///a.rs\"]\n"
        );
    }

    #[test]
    fn unsupported_and_empty_prompts_get_the_originals_errors() {
        let message = |blocks: &[Value]| admit(blocks).unwrap_err().message;
        assert_eq!(message(&[]), "Invalid params: empty prompt");
        assert_eq!(
            message(&[json!({"type": "image", "data": "", "mimeType": "image/png"})]),
            "Invalid params: inline image prompts were not advertised by this connection"
        );
        assert_eq!(
            message(&[json!({"type": "audio", "data": "", "mimeType": "audio/wav"})]),
            "Invalid params: audio prompt content is not supported"
        );
        let big = "x".repeat(MAX_PROMPT_BYTES + 1);
        assert_eq!(
            message(&[json!({"type": "text", "text": big})]),
            "Invalid params: the prompt is larger than 4 MiB"
        );
    }
}
