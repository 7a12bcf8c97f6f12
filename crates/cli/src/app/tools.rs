//! The built-in tools bound to one session's [`ToolEnv`].
//!
//! The `tools-builtin` row registers the tools globally, where a call finds no session
//! environment. Each agent gets the same tools again in its own scope (nearest wins in the
//! registry, so the catalog and its order stay the same), each holding the agent's
//! [`EnvSlot`]: workspace, private temp and spill directories, sandbox mode and secrets.

use dsh_kernel::{Context, Disposer};
use dsh_protocol::ContentBlock;
use dsh_tools::{Tool, ToolExecution, ToolFailure, ToolRuntime};
use dsh_tools_builtin::{
    to_failure, Bash, BuiltinAdapter, BuiltinTool, BuiltinToolsConfig, Edit, Glob, Grep, Read,
    Registrable, TodoWrite, ToolEnv, WebFetch, Write,
};
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

/// The environment of one session's tools; replaced when the session's sandbox mode is
/// settled (a resumed session keeps the mode its log records).
#[derive(Clone, Debug)]
pub struct EnvSlot(Arc<RwLock<ToolEnv>>);

impl EnvSlot {
    pub fn new(env: ToolEnv) -> Self {
        Self(Arc::new(RwLock::new(env)))
    }

    pub fn get(&self) -> ToolEnv {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn set(&self, env: ToolEnv) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = env;
    }
}

/// A built-in body run with its session's environment; everything else comes from the
/// registry adapter, so schema, limits and rendering are exactly the global tool's.
struct SessionTool<T> {
    adapter: BuiltinAdapter<T>,
    body: T,
    env: EnvSlot,
    /// The registration's web_fetch settings, which win over the session env's.
    web_fetch: Option<dsh_tools_builtin::WebFetchConfig>,
}

impl<T: Registrable + Clone> SessionTool<T> {
    fn erased(body: T, env: EnvSlot) -> Arc<dyn Tool> {
        Self::with_web_fetch(body, env, None)
    }

    fn with_web_fetch(
        body: T,
        env: EnvSlot,
        web_fetch: Option<dsh_tools_builtin::WebFetchConfig>,
    ) -> Arc<dyn Tool> {
        let mut adapter = BuiltinAdapter::new(body.clone());
        if let Some(config) = &web_fetch {
            adapter = adapter.with_web_fetch(config.clone());
        }
        Arc::new(Self {
            adapter,
            body,
            env,
            web_fetch,
        })
    }

    async fn run(&self, args: Value, exec: &ToolExecution) -> Result<Value, ToolFailure> {
        let mut env = self.env.get();
        if let Some(config) = &self.web_fetch {
            env = env.with_web_fetch(config.clone());
        }
        let args = self.body.parse_args(args).map_err(|e| to_failure(&e))?;
        let output = self
            .body
            .run(args, &env, exec.signal().clone())
            .await
            .map_err(|e| to_failure(&e))?;
        self.body.after_success(exec, &output)?;
        serde_json::to_value(&output).map_err(|e| {
            ToolFailure::coded(
                "InvalidToolOutputError",
                dsh_tools::codes::INVALID_TOOL_OUTPUT,
                e.to_string(),
            )
        })
    }
}

impl<T: Registrable + Clone> Tool for SessionTool<T> {
    fn name(&self) -> &str {
        self.adapter.name()
    }

    fn description(&self) -> String {
        self.adapter.description()
    }

    fn parameters(&self) -> Value {
        self.adapter.parameters()
    }

    fn timeout(&self) -> Option<Duration> {
        self.adapter.timeout()
    }

    fn is_concurrency_safe(&self, args: &Value) -> bool {
        self.adapter.is_concurrency_safe(args)
    }

    fn check_arguments(&self, args: &Value) -> Result<(), String> {
        self.adapter.check_arguments(args)
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(self.run(args, exec))
    }

    fn render(&self, args: &Value, value: &Value) -> Vec<ContentBlock> {
        self.adapter.render(args, value)
    }

    fn presentation_meta(&self, args: &Value, value: &Value) -> Option<Value> {
        self.adapter.presentation_meta(args, value)
    }
}

/// Registers the tools `config` selects, bound to `env`, in `ctx`'s scope (an agent's).
pub fn register_session_tools(
    ctx: &Context,
    tools: &ToolRuntime,
    config: &BuiltinToolsConfig,
    env: &EnvSlot,
) -> Result<Vec<Disposer>, dsh_tools_builtin::BuiltinToolsError> {
    let web_fetch = dsh_tools_builtin::WebFetchConfig {
        enabled: config.web_fetch.enabled,
        allow_private_addresses: config.web_fetch.allow_private_addresses,
    };
    let mut registered = Vec::new();
    for name in config.tool_names()? {
        let tool = match name {
            Bash::NAME => SessionTool::erased(Bash, env.clone()),
            Read::NAME => SessionTool::erased(Read, env.clone()),
            Write::NAME => SessionTool::erased(Write, env.clone()),
            Edit::NAME => SessionTool::erased(Edit, env.clone()),
            Glob::NAME => SessionTool::erased(Glob, env.clone()),
            Grep::NAME => SessionTool::erased(Grep, env.clone()),
            TodoWrite::NAME => SessionTool::erased(TodoWrite, env.clone()),
            WebFetch::NAME => {
                SessionTool::with_web_fetch(WebFetch, env.clone(), Some(web_fetch.clone()))
            }
            _ => continue,
        };
        match tools.register(ctx, tool) {
            Ok(disposer) => registered.push(disposer),
            Err(error) => {
                registered.iter().for_each(Disposer::dispose);
                return Err(error.into());
            }
        }
    }
    Ok(registered)
}
