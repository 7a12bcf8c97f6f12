//! The shape every built-in tool shares, independent of any registry.

use std::future::Future;

use dsh_protocol::{ContentBlock, ToolSchema};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::env::ToolEnv;
use crate::error::ToolError;

/// What a tool returns: the text the model reads, plus structured metadata for the UI and the
/// log (exit code, spill path, truncation flags...). Metadata is never shown to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub content: String,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub metadata: Value,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            metadata: Value::Null,
        }
    }

    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// The content as the model sees it: one text block.
    pub fn content_blocks(&self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.content.clone())]
    }

    /// The metadata as a tool result's `meta`, when there is any.
    pub fn meta(&self) -> Option<Value> {
        (!self.metadata.is_null()).then(|| self.metadata.clone())
    }
}

/// A built-in tool: its model-facing schema and its body.
///
/// Tools are unit structs; everything session-specific arrives through [`ToolEnv`], so one
/// value serves every session and the schema never changes (which keeps the provider's prompt
/// cache warm).
pub trait BuiltinTool: Send + Sync + 'static {
    /// The name the model calls the tool by.
    const NAME: &'static str;
    /// The typed arguments, with the original parameter names.
    type Args: DeserializeOwned + Send + 'static;

    /// What the model is told the tool does.
    fn description(&self) -> &'static str;

    /// The JSON Schema of [`Self::Args`].
    fn parameters(&self) -> Value;

    /// Whether calls may run alongside other calls (only pure readers may).
    fn is_concurrency_safe(&self) -> bool;

    /// Runs one call. Cancelling `cancel` stops the work promptly (and kills any processes).
    fn run(
        &self,
        args: Self::Args,
        env: &ToolEnv,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;

    /// The schema the model is shown.
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: Self::NAME.to_string(),
            description: self.description().to_string(),
            parameters: self.parameters(),
        }
    }

    /// Deserializes raw arguments, turning serde's complaint into a model-readable error.
    fn parse_args(&self, args: Value) -> Result<Self::Args, ToolError> {
        serde_json::from_value(args).map_err(|e| ToolError::invalid(Self::NAME, e.to_string()))
    }

    /// Parses and runs in one go.
    fn run_json(
        &self,
        args: Value,
        env: &ToolEnv,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send {
        let parsed = self.parse_args(args);
        async move { self.run(parsed?, env, cancel).await }
    }
}

/// Runs a tool's synchronous file-system work on the blocking pool so it never stalls the
/// runtime. A task that panicked or was torn down surfaces as an I/O error while `action`
/// ("reading", "searching", ...), so the model gets an error result rather than a crash.
pub(crate) async fn run_blocking<F>(action: &'static str, work: F) -> Result<ToolOutput, ToolError>
where
    F: FnOnce() -> Result<ToolOutput, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::io(action, "", std::io::Error::other(e.to_string())))?
}

/// Serde helper: accepts a JSON number (integer or float, as models send both) as `u64`.
pub(crate) mod lenient_u64 {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Option<u64>, D::Error> {
        let value = Option::<f64>::deserialize(de)?;
        match value {
            None => Ok(None),
            Some(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64 => {
                Ok(Some(v as u64))
            }
            Some(v) => Err(serde::de::Error::custom(format!(
                "expected a non-negative whole number, got {v}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[derive(Deserialize)]
    struct Args {
        #[serde(default, with = "lenient_u64")]
        n: Option<u64>,
    }

    #[test]
    fn lenient_u64_accepts_whole_floats_only() {
        let a: Args = serde_json::from_value(serde_json::json!({"n": 5.0})).unwrap();
        assert_eq!(a.n, Some(5));
        let a: Args = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(a.n, None);
        assert!(serde_json::from_value::<Args>(serde_json::json!({"n": 1.5})).is_err());
        assert!(serde_json::from_value::<Args>(serde_json::json!({"n": -1})).is_err());
    }

    #[test]
    fn output_renders_as_one_text_block() {
        let out = ToolOutput::text("hi").with_metadata(serde_json::json!({"a": 1}));
        assert_eq!(out.content_blocks(), vec![ContentBlock::text("hi")]);
        assert_eq!(out.meta(), Some(serde_json::json!({"a": 1})));
        assert_eq!(ToolOutput::text("x").meta(), None);
    }

    #[tokio::test]
    async fn blocking_work_returns_its_result_and_a_panic_becomes_an_io_error() {
        let out = run_blocking("reading", || Ok(ToolOutput::text("done"))).await;
        assert_eq!(out.unwrap(), ToolOutput::text("done"));
        #[allow(clippy::panic)]
        let err = run_blocking("writing", || panic!("boom"))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                ToolError::Io {
                    action: "writing",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn output_serializes_without_null_metadata() {
        assert_eq!(
            serde_json::to_value(ToolOutput::text("hi")).unwrap(),
            serde_json::json!({"content": "hi"})
        );
    }
}
