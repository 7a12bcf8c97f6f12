//! [`McpTool`]: one server tool as a dsh tool.

use crate::client::{self, CallError};
use crate::result::{self, Admission, Mapped, MAX_IMAGES_PER_RESULT};
use dsh_attachments::ImageStore;
use dsh_kernel::Context;
use dsh_protocol::ContentBlock;
use dsh_tools::{Tool, ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use rmcp::{Peer, RoleClient};
use serde_json::{Map, Value};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The server's live peer, shared by its tools; `None` while it is down.
pub(crate) type LivePeer = Arc<RwLock<Option<Peer<RoleClient>>>>;

/// A server tool registered under its public name.
pub struct McpTool {
    pub(crate) public: String,
    pub(crate) raw: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
    pub(crate) timeout: Duration,
    pub(crate) live: LivePeer,
    /// Where the `dyn ImageStore` service is looked up when a result holds images.
    pub(crate) services: Context,
}

impl McpTool {
    /// The name the server knows it by.
    pub fn raw_name(&self) -> &str {
        &self.raw
    }

    /// Stores the result's images, all or none, before the result (and so the `tool/result`
    /// event referencing them) exists: `save_images` returns once the bytes are synced.
    async fn admit(&self, result: &serde_json::Value) -> Admission {
        let decoded = result::decode_images(result);
        if decoded.is_empty() {
            return Admission::NotTried;
        }
        if let Some(refusal) = result::decode_refusal(&decoded) {
            return refusal;
        }
        let count = decoded.len();
        if count > MAX_IMAGES_PER_RESULT {
            let reason = format!(
                "the result holds {count} images; at most {MAX_IMAGES_PER_RESULT} are admitted"
            );
            return Admission::refuse_all(count, &reason);
        }
        let Some(store) = self.services.get::<dyn ImageStore>() else {
            return Admission::refuse_all(count, "no attachment store is mounted");
        };
        let images = decoded.into_iter().flatten().collect();
        let saved = tokio::task::spawn_blocking(move || store.save_images(images)).await;
        match saved {
            Ok(Ok(refs)) => Admission::Admitted(refs),
            Ok(Err(error)) if error.is_admission() => Admission::refuse_all(
                count,
                &format!("image admission rejected the result: {error}"),
            ),
            Ok(Err(error)) => {
                tracing::warn!(tool = %self.public, %error, "MCP image not stored");
                Admission::refuse_all(
                    count,
                    &format!("durable image storage rejected the result: {error}"),
                )
            }
            Err(_) => Admission::refuse_all(count, "durable image storage rejected the result"),
        }
    }
}

/// The input schema the registry accepts, from the server's `inputSchema`: an object schema,
/// verbatim; one without `type` gets `"type": "object"`. Anything else is refused.
pub fn input_schema(schema: Option<&Value>) -> Result<Value, String> {
    match schema {
        None | Some(Value::Null) => Ok(serde_json::json!({"type": "object"})),
        Some(Value::Object(object)) => match object.get("type") {
            None => {
                let mut fixed = object.clone();
                fixed.insert("type".into(), Value::String("object".into()));
                Ok(Value::Object(fixed))
            }
            Some(Value::String(kind)) if kind == "object" => Ok(Value::Object(object.clone())),
            Some(other) => Err(format!("inputSchema type must be \"object\", not {other}")),
        },
        Some(other) => Err(format!("inputSchema must be a JSON object, not {other}")),
    }
}

/// Arguments as sent: an object as is, anything else (null, a string, a number) as `{}`, so the
/// server reports its own missing-parameter error.
pub fn call_arguments(args: Value) -> Map<String, Value> {
    match args {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.public
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let peer = self.live.read().unwrap_or_else(|p| p.into_inner()).clone();
            let Some(peer) = peer else {
                return Err(ToolFailure::new("Not connected"));
            };
            let outcome = client::call_tool(
                &peer,
                &self.raw,
                call_arguments(args),
                self.timeout,
                exec.signal(),
            )
            .await;
            match outcome {
                Ok(json) => {
                    let admission = self.admit(&json).await;
                    match result::map_result(&self.raw, &json, &admission) {
                        Mapped::Value(value) => Ok(value),
                        Mapped::Error(message) => Err(ToolFailure::new(message)),
                    }
                }
                Err(CallError::Failed(message)) => Err(ToolFailure::new(message)),
                Err(CallError::Aborted) => Err(ToolFailure::new("tool call aborted")),
            }
        })
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        result::project(&self.raw, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_and_arguments() {
        assert_eq!(input_schema(None).unwrap(), json!({"type": "object"}));
        assert_eq!(
            input_schema(Some(&json!({"properties": {}}))).unwrap(),
            json!({"properties": {}, "type": "object"})
        );
        assert!(input_schema(Some(&json!({"type": "string"}))).is_err());
        assert!(input_schema(Some(&json!([1]))).is_err());
        assert!(call_arguments(Value::Null).is_empty());
        assert!(call_arguments(json!("text")).is_empty());
        assert_eq!(call_arguments(json!({"a": 1})).len(), 1);
    }
}
