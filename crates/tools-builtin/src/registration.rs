//! Turning the tool bodies into registry tools (`dsh_tools::Tool`).
//!
//! The adapter parses arguments with the body's own serde type, finds the session's
//! [`ToolEnv`] (in the execution's extensions, else registered for the call's scope in
//! [`ToolEnvs`]), runs the body with the execution's signal and maps [`ToolError`] to a coded
//! [`ToolFailure`]. The canonical value is the serialized
//! [`ToolOutput`]: its `content` is what the model reads, its `metadata` becomes the result's
//! `meta` for the UI and the log.

use std::sync::Arc;
use std::time::Duration;

use dsh_protocol::ContentBlock;
use dsh_session::{AppendOptions, EventData};
use dsh_tools::{render_json, Tool, ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::bash::Bash;
use crate::env::{ToolEnv, WebFetchConfig};
use crate::envs::ToolEnvs;
use crate::error::ToolError;
use crate::fs_tools::{Edit, Read, Write};
use crate::search::{Glob, Grep};
use crate::todo::TodoWrite;
use crate::tool::{BuiltinTool, ToolOutput};
use crate::web_fetch::WebFetch;

/// Code of the failure reported when a call arrives without a [`ToolEnv`].
pub const TOOL_ENV_MISSING: &str = "TOOL_ENV_MISSING";

/// What the registry needs to know about a body beyond its schema.
pub trait Registrable: BuiltinTool {
    /// The pipeline's backstop timeout. Bodies enforce their own limits; this only catches a
    /// body that hangs.
    fn pipeline_timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(120))
    }

    /// Runs after a successful body and before its result settles; a failure turns the call
    /// into an error result.
    fn after_success(
        &self,
        _exec: &ToolExecution,
        _output: &ToolOutput,
    ) -> Result<(), ToolFailure> {
        Ok(())
    }
}

impl Registrable for Bash {
    /// bash enforces the call's `timeoutMs` itself (killing the process group), so a second
    /// clock here would only race it.
    fn pipeline_timeout(&self) -> Option<Duration> {
        None
    }
}

impl Registrable for Read {}
impl Registrable for Write {}
impl Registrable for Edit {}
impl Registrable for Glob {}
impl Registrable for Grep {}
impl Registrable for WebFetch {}

impl Registrable for TodoWrite {
    fn pipeline_timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }

    /// The todo list is a projection of the log: record it as `todo/write` in the calling
    /// agent's session. Calls without an agent (programmatic use) have no session to record in.
    fn after_success(&self, exec: &ToolExecution, output: &ToolOutput) -> Result<(), ToolFailure> {
        let Some(caller) = exec.caller() else {
            tracing::debug!("todo_write ran without an agent; the list is not recorded");
            return Ok(());
        };
        let todos = output.metadata.get("todos").cloned().unwrap_or(Value::Null);
        let todos = serde_json::from_value(todos).map_err(|e| record_failure(&e))?;
        caller
            .session()
            .append(
                EventData::TodoWrite(dsh_session::TodoWrite { todos }),
                AppendOptions::log_only(),
            )
            .map_err(|e| record_failure(&e))?;
        Ok(())
    }
}

fn record_failure(error: &dyn std::fmt::Display) -> ToolFailure {
    ToolFailure::coded(
        "SessionError",
        "TODO_NOT_RECORDED",
        format!("the todo list could not be recorded in the session: {error}"),
    )
}

/// A built-in body as a registry tool.
#[derive(Debug, Clone)]
pub struct BuiltinAdapter<T> {
    tool: T,
    web_fetch: Option<WebFetchConfig>,
    envs: Option<Arc<ToolEnvs>>,
}

impl<T: Registrable> BuiltinAdapter<T> {
    pub fn new(tool: T) -> Self {
        Self {
            tool,
            web_fetch: None,
            envs: None,
        }
    }

    /// Looks up the environment of calls that carry none in their extensions in `envs`, by
    /// the call's scope.
    pub fn with_envs(mut self, envs: Arc<ToolEnvs>) -> Self {
        self.envs = Some(envs);
        self
    }

    /// Runs calls with these web_fetch settings instead of the session's.
    pub fn with_web_fetch(mut self, config: WebFetchConfig) -> Self {
        self.web_fetch = Some(config);
        self
    }

    /// The erased form the registry takes.
    pub fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }

    async fn run(&self, args: Value, exec: &ToolExecution) -> Result<Value, ToolFailure> {
        let env = tool_env(exec, self.envs.as_deref())?;
        let env = match &self.web_fetch {
            Some(config) => env.with_web_fetch(config.clone()),
            None => env,
        };
        let args = self.tool.parse_args(args).map_err(|e| to_failure(&e))?;
        let output = self
            .tool
            .run(args, &env, exec.signal().clone())
            .await
            .map_err(|e| to_failure(&e))?;
        self.tool.after_success(exec, &output)?;
        serde_json::to_value(&output).map_err(|e| {
            ToolFailure::coded(
                "InvalidToolOutputError",
                dsh_tools::codes::INVALID_TOOL_OUTPUT,
                e.to_string(),
            )
        })
    }
}

/// The session's environment: the one whoever drives the call put in its extensions, else the
/// one registered for the call's scope (an agent's, set up when the agent was).
fn tool_env(exec: &ToolExecution, envs: Option<&ToolEnvs>) -> Result<ToolEnv, ToolFailure> {
    let found = match exec.extensions().get::<ToolEnv>() {
        Some(env) => Some(env.clone()),
        None => envs.and_then(|envs| envs.resolve(exec.scope())),
    };
    found.ok_or_else(|| {
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

impl<T: Registrable> Tool for BuiltinAdapter<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> String {
        self.tool.description().to_string()
    }

    fn parameters(&self) -> Value {
        self.tool.parameters()
    }

    fn timeout(&self) -> Option<Duration> {
        self.tool.pipeline_timeout()
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        self.tool.is_concurrency_safe()
    }

    fn check_arguments(&self, args: &Value) -> Result<(), String> {
        serde_json::from_value::<T::Args>(args.clone())
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(self.run(args, exec))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        match value.get("content").and_then(Value::as_str) {
            Some(text) => vec![ContentBlock::text(text)],
            None => render_json(value),
        }
    }

    fn presentation_meta(&self, _args: &Value, value: &Value) -> Option<Value> {
        value.get("metadata").filter(|m| !m.is_null()).cloned()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_and_flags_come_from_the_body() {
        let bash = BuiltinAdapter::new(Bash);
        assert_eq!(bash.name(), "bash");
        assert_eq!(bash.parameters(), Bash.parameters());
        assert_eq!(bash.timeout(), None);
        assert!(!bash.is_concurrency_safe(&json!({})));
        let grep = BuiltinAdapter::new(Grep);
        assert!(grep.is_concurrency_safe(&json!({})));
        assert_eq!(grep.timeout(), Some(Duration::from_secs(120)));
    }

    #[test]
    fn argument_problems_use_serde_messages() {
        let read = BuiltinAdapter::new(Read);
        assert_eq!(
            read.check_arguments(&json!({})).unwrap_err(),
            "missing field `file_path`"
        );
        assert!(read.check_arguments(&json!({"file_path": "a"})).is_ok());
    }

    #[test]
    fn value_renders_content_and_meta() {
        let out = ToolOutput::text("hi").with_metadata(json!({"exitCode": 0}));
        let value = serde_json::to_value(&out).unwrap();
        let bash = BuiltinAdapter::new(Bash);
        assert_eq!(
            bash.render(&json!({}), &value),
            vec![ContentBlock::text("hi")]
        );
        assert_eq!(
            bash.presentation_meta(&json!({}), &value),
            Some(json!({"exitCode": 0}))
        );
        let plain = serde_json::to_value(ToolOutput::text("x")).unwrap();
        assert_eq!(bash.presentation_meta(&json!({}), &plain), None);
    }

    #[test]
    fn errors_keep_their_code_and_message() {
        let failure = to_failure(&ToolError::EditNoChange);
        assert_eq!(failure.code(), Some("EDIT_NO_CHANGE"));
        assert_eq!(failure.info.unwrap().name, "EditError");
        assert!(failure
            .message
            .starts_with("old_string and new_string are identical"));
    }
}
