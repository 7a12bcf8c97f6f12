//! What a tool is: the [`Tool`] trait the registry stores, and [`TypedTool`], the same with
//! serde-typed arguments and output (adapted by [`Typed`]).

use crate::error::ToolFailure;
use crate::execution::ToolExecution;
use dsh_protocol::ContentBlock;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// A tool the model can call. Registered as `Arc<dyn Tool>`; the name, description and
/// parameter schema are read once at registration and frozen into the schema the model sees.
pub trait Tool: Send + Sync + 'static {
    /// 1-64 characters from `[A-Za-z0-9_-]`; `run_code` is reserved.
    fn name(&self) -> &str;

    fn description(&self) -> String;

    /// A JSON Schema with `"type": "object"`; calls are checked against it before any hook.
    fn parameters(&self) -> Value;

    /// How long the body may run; `None` means no limit.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether this call may run beside others. Only an explicit `true` makes it parallel; a
    /// panic counts as `false`.
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        false
    }

    /// Checks beyond the JSON schema; `Err(message)` becomes an invalid-arguments result that
    /// the model sees before any hook runs.
    fn check_arguments(&self, _args: &Value) -> Result<(), String> {
        Ok(())
    }

    /// The body. Returns canonical JSON (finite numbers, no negative zero); the pipeline turns
    /// it into content with [`Tool::render`]. Watch `exec.signal()` for cancellation.
    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>>;

    /// Turns a value into the content the model sees.
    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        render_json(value)
    }

    /// UI-only metadata recorded as the `tool/result` event's `meta`.
    fn presentation_meta(&self, _args: &Value, _value: &Value) -> Option<Value> {
        None
    }

    /// The last word on a settled result's content (success or failure).
    fn finalize_content(
        &self,
        _exec: &ToolExecution,
        content: Vec<ContentBlock>,
    ) -> Vec<ContentBlock> {
        content
    }
}

/// The default rendering: a string value as its text, anything else as compact JSON text.
pub fn render_json(value: &Value) -> Vec<ContentBlock> {
    match value {
        Value::String(text) => vec![ContentBlock::text(text.clone())],
        other => vec![ContentBlock::text(other.to_string())],
    }
}

/// A [`Tool`] whose arguments and output are serde types: the typed convenience layer.
/// Register it as `Typed::arc(tool)`.
///
/// Only the body is typed. [`Typed`] checks every call's arguments by deserializing them
/// into [`Self::Args`] (serde's message reaches the model as an invalid-arguments result,
/// before any hook runs) and serializes the body's [`Self::Output`] into the canonical value.
/// The other hooks see JSON, as [`Tool`]'s do: the concurrency flag must not depend on
/// whether the arguments are valid, and rendering works on the canonical value, which a
/// `tools/post-execute` hook may have replaced.
///
/// ```
/// use dsh_tools::{Tool, ToolExecution, ToolFailure, ToolRuntime, Typed, TypedTool};
/// use serde::{Deserialize, Serialize};
/// use serde_json::{json, Value};
///
/// #[derive(Deserialize)]
/// struct NoteArgs {
///     text: String,
/// }
///
/// #[derive(Serialize)]
/// struct Noted {
///     session: Option<String>,
///     chars: usize,
/// }
///
/// struct Note;
///
/// impl TypedTool for Note {
///     type Args = NoteArgs;
///     type Output = Noted;
///     fn name(&self) -> &str {
///         "note"
///     }
///     fn description(&self) -> String {
///         "Remember a short note.".into()
///     }
///     fn parameters(&self) -> Value {
///         json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
///     }
///     async fn execute(&self, args: NoteArgs, exec: &ToolExecution) -> Result<Noted, ToolFailure> {
///         // The agent the call runs for, when there is one: its session, context, registry.
///         let session = exec.caller().map(|caller| caller.session().id().to_string());
///         Ok(Noted { session, chars: args.text.chars().count() })
///     }
/// }
///
/// let ctx = dsh_kernel::Context::root();
/// let tools = ToolRuntime::new(&ctx);
/// tools.register(&ctx, Typed::arc(Note)).unwrap().forget();
/// assert_eq!(tools.names(None), ["note"]);
/// // serde's message is what the model reads about bad arguments
/// let problem = Typed(Note).check_arguments(&json!({"text": 1})).unwrap_err();
/// assert!(problem.starts_with("invalid type: integer `1`"), "{problem}");
/// ```
pub trait TypedTool: Send + Sync + 'static {
    type Args: DeserializeOwned + Send + 'static;
    type Output: Serialize + Send + 'static;

    /// As [`Tool::name`].
    fn name(&self) -> &str;

    fn description(&self) -> String;

    /// The JSON Schema of [`Self::Args`], as [`Tool::parameters`].
    fn parameters(&self) -> Value;

    /// As [`Tool::timeout`].
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// As [`Tool::is_concurrency_safe`].
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        false
    }

    /// The body, with arguments already checked. Watch `exec.signal()` for cancellation.
    fn execute(
        &self,
        args: Self::Args,
        exec: &ToolExecution,
    ) -> impl Future<Output = Result<Self::Output, ToolFailure>> + Send;

    /// As [`Tool::render`].
    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        render_json(value)
    }

    /// As [`Tool::presentation_meta`].
    fn presentation_meta(&self, _args: &Value, _value: &Value) -> Option<Value> {
        None
    }
}

/// Adapts a [`TypedTool`] to [`Tool`].
#[derive(Debug, Clone)]
pub struct Typed<T>(pub T);

impl<T: TypedTool> Typed<T> {
    /// The erased form the registry takes.
    pub fn arc(tool: T) -> Arc<dyn Tool> {
        Arc::new(Self(tool))
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn description(&self) -> String {
        self.0.description()
    }

    fn parameters(&self) -> Value {
        self.0.parameters()
    }

    fn timeout(&self) -> Option<Duration> {
        self.0.timeout()
    }

    fn is_concurrency_safe(&self, args: &Value) -> bool {
        self.0.is_concurrency_safe(args)
    }

    fn check_arguments(&self, args: &Value) -> Result<(), String> {
        serde_json::from_value::<T::Args>(args.clone())
            .map(drop)
            .map_err(|error| error.to_string())
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let args: T::Args = serde_json::from_value(args)
                .map_err(|error| ToolFailure::invalid_arguments(error.to_string()))?;
            let output = self.0.execute(args, exec).await?;
            serde_json::to_value(output).map_err(|error| {
                ToolFailure::coded(
                    "InvalidToolOutputError",
                    crate::codes::INVALID_TOOL_OUTPUT,
                    error.to_string(),
                )
            })
        })
    }

    fn render(&self, args: &Value, value: &Value) -> Vec<ContentBlock> {
        self.0.render(args, value)
    }

    fn presentation_meta(&self, args: &Value, value: &Value) -> Option<Value> {
        self.0.presentation_meta(args, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_rendering() {
        assert_eq!(render_json(&json!("hi")), vec![ContentBlock::text("hi")]);
        assert_eq!(
            render_json(&json!({"a": [1, true]})),
            vec![ContentBlock::text("{\"a\":[1,true]}")]
        );
    }
}
