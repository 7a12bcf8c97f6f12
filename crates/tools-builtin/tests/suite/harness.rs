//! A real kernel with the session store, the tool runtime, the built-in tools and approval
//! mounted, plus a minimal agent so `exec.caller()` finds the session.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dsh_agent::{Agent, AgentStatus};
use dsh_kernel::Context;
use dsh_protocol::{CallId, SessionId};
use dsh_session::{Session, SessionOptions, SessionStore, SessionsPlugin};
use dsh_testkit::fake_agent::FakeAgent;
use dsh_tools::{
    Extensions, InvocationResult, ToolInvocation, ToolRuntime, ToolsConfig, ToolsPlugin,
};
use dsh_tools_builtin::{
    ApprovalAnswerer, ApprovalDecision, ApprovalPlugin, ApprovalQuestion, Approvals,
    BuiltinToolsPlugin, SandboxMode,
};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::support::Fixture;

/// The agent a tool call runs under: reported as mid-turn, as it is when the loop runs tools.
pub fn running_agent(root: &Context, session: Session) -> Arc<dyn Agent> {
    FakeAgent::builder()
        .status(AgentStatus::Running)
        .create(root, session)
        .unwrap()
}

/// An answerer that records every question and answers from a script. Past the script it
/// denies ("unscripted ask"), or, when `silent`, never answers (a person who walked away),
/// noting when its future is dropped.
#[derive(Default)]
pub struct ScriptedAnswerer {
    pub requests: Mutex<Vec<ApprovalQuestion>>,
    script: Mutex<VecDeque<ApprovalDecision>>,
    silent: bool,
    pub dropped_unanswered: AtomicBool,
}

impl ScriptedAnswerer {
    pub fn new(script: impl IntoIterator<Item = ApprovalDecision>) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(script.into_iter().collect()),
            ..Self::default()
        })
    }

    pub fn silent() -> Arc<Self> {
        Arc::new(Self {
            silent: true,
            ..Self::default()
        })
    }

    pub fn asked(&self) -> Vec<ApprovalQuestion> {
        self.requests.lock().unwrap().clone()
    }
}

struct DropFlag<'a>(&'a AtomicBool);

impl Drop for DropFlag<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl ApprovalAnswerer for ScriptedAnswerer {
    fn answer(&self, request: ApprovalQuestion) -> BoxFuture<'_, ApprovalDecision> {
        self.requests.lock().unwrap().push(request);
        let next = self.script.lock().unwrap().pop_front();
        Box::pin(async move {
            match next {
                Some(decision) => decision,
                None if !self.silent => ApprovalDecision::Deny {
                    feedback: Some("unscripted ask".into()),
                },
                None => {
                    let _flag = DropFlag(&self.dropped_unanswered);
                    std::future::pending().await
                }
            }
        })
    }
}

pub struct Harness {
    pub root: Context,
    pub tools: Arc<ToolRuntime>,
    pub approvals: Arc<Approvals>,
    pub fx: Fixture,
    pub agent: Arc<dyn Agent>,
    pub session: Session,
    next_call: Mutex<u32>,
}

impl Harness {
    /// Default tools and approval settings `approval` (e.g. `{"policy": "ask"}`).
    pub fn new(approval: Value) -> Self {
        Self::with(json!({}), approval)
    }

    pub fn with(tools_config: Value, approval: Value) -> Self {
        Self::with_fixture(tools_config, approval, Fixture::new())
    }

    /// Default tools, approval settings `approval`, the workspace in sandbox mode `mode`.
    pub fn in_mode(mode: SandboxMode, approval: Value) -> Self {
        Self::with_fixture(json!({}), approval, Fixture::mode(mode))
    }

    pub fn with_fixture(tools_config: Value, approval: Value, fx: Fixture) -> Self {
        let root = Context::root();
        root.plugin::<SessionsPlugin>(()).unwrap();
        root.plugin::<ToolsPlugin>(ToolsConfig::default()).unwrap();
        root.plugin::<BuiltinToolsPlugin>(serde_json::from_value(tools_config).unwrap())
            .unwrap();
        root.plugin::<ApprovalPlugin>(serde_json::from_value(approval).unwrap())
            .unwrap();
        let store = root.require::<SessionStore>().unwrap();
        let options = SessionOptions {
            cwd: Some(fx.ws().display().to_string()),
            clock: Some(Arc::new(|| 7)),
            ..SessionOptions::default()
        };
        let session = store
            .create(&root, Some(SessionId::from("s1")), options)
            .unwrap();
        let agent = running_agent(&root, session.clone());
        Self {
            tools: root.require::<ToolRuntime>().unwrap(),
            approvals: root.require::<Approvals>().unwrap(),
            root,
            fx,
            agent,
            session,
            next_call: Mutex::new(0),
        }
    }

    pub fn answer_with(&self, answerer: &Arc<ScriptedAnswerer>) {
        let answerer: Arc<dyn ApprovalAnswerer> = answerer.clone();
        self.approvals.set_answerer(Some(answerer));
    }

    /// A call as the agent loop plans it: scoped to the agent, carrying it and the ToolEnv.
    pub fn call(&self, name: &str, args: Value) -> ToolInvocation {
        let id = {
            let mut n = self.next_call.lock().unwrap();
            *n += 1;
            format!("call-{n}")
        };
        ToolInvocation::new(CallId::from(id), name, args.to_string())
            .scope(self.agent.scope_key().clone())
            .caller(self.agent.clone())
            .extensions(Extensions::new().with(self.fx.env.clone()))
    }

    pub async fn run(&self, name: &str, args: Value) -> InvocationResult {
        self.tools.execute(self.call(name, args)).await
    }

    pub async fn run_with(
        &self,
        name: &str,
        args: Value,
        signal: CancellationToken,
    ) -> InvocationResult {
        self.tools
            .execute(self.call(name, args).signal(signal))
            .await
    }

    /// The `{type, data}` of every logged event whose type starts with one of `prefixes`.
    pub fn events(&self, prefixes: &[&str]) -> Vec<Value> {
        self.session
            .events()
            .iter()
            .filter(|e| prefixes.iter().any(|p| e.type_name().starts_with(p)))
            .map(|e| json!({"type": e.type_name(), "data": e.data.to_value()}))
            .collect()
    }

    pub fn approval_events(&self) -> Vec<Value> {
        self.events(&["approval/"])
    }
}

/// The text the model sees for a result.
pub fn text(result: &InvocationResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text())
        .collect()
}

pub fn asked(call: &str, tool: &str, summary: &str, reason: &str) -> Value {
    json!({"type": "approval/asked", "data": {"callId": call, "tool": tool, "summary": summary, "reason": reason}})
}

pub fn decided(call: &str, data: Value) -> Value {
    let mut data = data;
    data["callId"] = json!(call);
    json!({"type": "approval/decided", "data": data})
}
