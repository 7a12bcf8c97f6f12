//! Shared helpers for the dsh-tools integration tests.

mod pipeline;
mod policy;
mod registry;

use dsh_agent::Agent;
use dsh_kernel::Context;
use dsh_protocol::SessionId;
use dsh_session::{Session, SessionHeader};
use dsh_testkit::fake_agent::FakeAgent;
use dsh_tools::{Tool, ToolExecution, ToolFailure, ToolRuntime};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

type Body =
    dyn Fn(Value, &ToolExecution) -> BoxFuture<'static, Result<Value, ToolFailure>> + Send + Sync;

/// A tool assembled from closures.
pub struct TestTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub timeout: Option<Duration>,
    pub safe: Arc<dyn Fn(&Value) -> bool + Send + Sync>,
    pub body: Arc<Body>,
}

impl TestTool {
    /// A tool that echoes its arguments back.
    pub fn echo(name: &str) -> Self {
        Self {
            name: name.into(),
            description: format!("{name} tool"),
            parameters: json!({"type": "object", "properties": {}}),
            timeout: None,
            safe: Arc::new(|_| false),
            body: Arc::new(|args, _| Box::pin(async move { Ok(args) })),
        }
    }

    pub fn described(mut self, description: &str) -> Self {
        self.description = description.into();
        self
    }

    pub fn parameters(mut self, parameters: Value) -> Self {
        self.parameters = parameters;
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn safe(mut self, safe: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Self {
        self.safe = Arc::new(safe);
        self
    }

    pub fn body(
        mut self,
        body: impl Fn(Value, &ToolExecution) -> BoxFuture<'static, Result<Value, ToolFailure>>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.body = Arc::new(body);
        self
    }

    pub fn arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl Tool for TestTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> String {
        self.description.clone()
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
    fn is_concurrency_safe(&self, args: &Value) -> bool {
        (self.safe)(args)
    }
    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        (self.body)(args, exec)
    }
}

/// A do-nothing agent over a fresh session `id`, scoped under `ctx`.
pub fn agent(ctx: &Context, id: &str) -> Arc<dyn Agent> {
    let header = SessionHeader::new(SessionId::from(id), 1);
    let session = Session::builder(header).build().unwrap();
    FakeAgent::create(ctx, session).unwrap()
}

/// A fresh kernel with a tool runtime provided as a service.
pub fn setup() -> (Context, Arc<ToolRuntime>) {
    let ctx = Context::root();
    let tools = ToolRuntime::new(&ctx);
    ctx.provide(tools.clone()).unwrap().forget();
    (ctx, tools)
}
