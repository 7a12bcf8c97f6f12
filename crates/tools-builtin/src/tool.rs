//! What every built-in tool shares: its output shape, where its session environment comes
//! from, how its errors reach the model, and its backstop timeout.
//!
//! Each tool is a unit struct with an inherent `run(args, &ToolEnv, cancel)` body (what tests
//! call directly) and a `dsh_tools::TypedTool` impl that the registry takes as
//! `Typed::arc(tool)`: it finds the call's [`ToolEnv`] with [`tool_env`], runs the body with
//! the execution's signal, and renders the canonical [`ToolOutput`] value.

use std::time::Duration;

use dsh_protocol::ContentBlock;
use dsh_tools::{render_json, ToolExecution, ToolFailure};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::env::ToolEnv;
use crate::envs::ToolEnvs;
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

    /// What the model sees of a canonical output value: its `content` as one text block.
    /// A value of another shape (a `tools/post-execute` hook may replace it) renders as JSON.
    pub fn render_value(value: &Value) -> Vec<ContentBlock> {
        match value.get("content").and_then(Value::as_str) {
            Some(text) => vec![ContentBlock::text(text)],
            None => render_json(value),
        }
    }

    /// The `meta` of a canonical output value: its non-null `metadata`.
    pub fn value_meta(value: &Value) -> Option<Value> {
        value.get("metadata").filter(|m| !m.is_null()).cloned()
    }
}

/// The pipeline's backstop timeout for the built-in tools that have no clock of their own.
/// Bodies enforce their own limits; this only catches one that hangs.
pub(crate) const BACKSTOP_TIMEOUT: Duration = Duration::from_secs(120);

/// Code of the failure reported when a call arrives without a [`ToolEnv`].
pub const TOOL_ENV_MISSING: &str = "TOOL_ENV_MISSING";

/// The session environment a call runs in: the one whoever drives the call put in its
/// extensions, else the one registered in [`ToolEnvs`] for the call's scope (an agent's, set
/// up with the agent), found through the calling agent's context. A call with neither fails
/// with [`TOOL_ENV_MISSING`].
pub(crate) fn tool_env(exec: &ToolExecution) -> Result<ToolEnv, ToolFailure> {
    if let Some(env) = exec.extensions().get::<ToolEnv>() {
        return Ok(env.clone());
    }
    exec.caller()
        .and_then(|caller| caller.ctx().get::<ToolEnvs>())
        .and_then(|envs| envs.resolve(exec.scope()))
        .ok_or_else(|| {
            ToolFailure::coded(
                "ToolEnvMissingError",
                TOOL_ENV_MISSING,
                format!(
                    "the built-in tool \"{}\" has no session environment (workspace, sandbox) to run in; \
                     this is a harness setup problem, not a problem with the call. Tell the user.",
                    exec.name()
                ),
            )
        })
}

/// A body's error as the failure the model reads (the message) and the log keeps (the code).
pub fn to_failure(error: &ToolError) -> ToolFailure {
    ToolFailure::coded(error.name(), error.code(), error.to_string())
}

impl From<ToolError> for ToolFailure {
    fn from(error: ToolError) -> Self {
        to_failure(&error)
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
    use dsh_tools::{Tool, Typed, TypedTool};

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
    fn schema_and_flags_come_from_the_tool() {
        let bash = Typed(crate::Bash);
        assert_eq!(bash.name(), "bash");
        assert_eq!(bash.parameters(), TypedTool::parameters(&crate::Bash));
        assert_eq!(bash.timeout(), None);
        assert!(!bash.is_concurrency_safe(&serde_json::json!({})));
        let grep = Typed(crate::Grep);
        assert!(grep.is_concurrency_safe(&serde_json::json!({})));
        assert_eq!(grep.timeout(), Some(BACKSTOP_TIMEOUT));
    }

    #[test]
    fn argument_problems_use_serde_messages() {
        let read = Typed(crate::Read);
        assert_eq!(
            read.check_arguments(&serde_json::json!({})).unwrap_err(),
            "missing field `file_path`"
        );
        assert!(read
            .check_arguments(&serde_json::json!({"file_path": "a"}))
            .is_ok());
    }

    #[test]
    fn value_renders_content_and_meta() {
        let out = ToolOutput::text("hi").with_metadata(serde_json::json!({"exitCode": 0}));
        let value = serde_json::to_value(&out).unwrap();
        let bash = Typed(crate::Bash);
        let args = serde_json::json!({});
        assert_eq!(bash.render(&args, &value), vec![ContentBlock::text("hi")]);
        assert_eq!(
            bash.presentation_meta(&args, &value),
            Some(serde_json::json!({"exitCode": 0}))
        );
        let plain = serde_json::to_value(ToolOutput::text("x")).unwrap();
        assert_eq!(bash.presentation_meta(&args, &plain), None);
        // A value of another shape (replaced by a hook) still renders, as JSON, and keeps
        // whatever metadata it carries.
        let other = serde_json::json!({"metadata": {"a": 1}});
        assert_eq!(
            bash.render(&args, &other),
            vec![ContentBlock::text("{\"metadata\":{\"a\":1}}")]
        );
        assert_eq!(
            bash.presentation_meta(&args, &other),
            Some(serde_json::json!({"a": 1}))
        );
    }

    #[test]
    fn errors_keep_their_code_and_message() {
        let failure = ToolFailure::from(ToolError::EditNoChange);
        assert_eq!(failure.code(), Some("EDIT_NO_CHANGE"));
        assert_eq!(failure.info.unwrap().name, "EditError");
        assert!(failure
            .message
            .starts_with("old_string and new_string are identical"));
    }

    #[test]
    fn output_serializes_without_null_metadata() {
        assert_eq!(
            serde_json::to_value(ToolOutput::text("hi")).unwrap(),
            serde_json::json!({"content": "hi"})
        );
    }
}
