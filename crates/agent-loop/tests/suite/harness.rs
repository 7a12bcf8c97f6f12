#![allow(dead_code)] // shared helpers; not every test uses every one
//! A kernel with every core service mounted, the loop installed and a scripted model
//! registered under the provider route `mock`.

use super::scripted::ScriptedModel;
use dsh_agent::{
    AgentCreated, AgentDisposed, AgentErrorEvent, AgentHandle, AgentOptions, AgentRegistry,
    AgentRequest, AgentStatusChanged, CreateAgentOptions, InboxClaimed, InboxDiscarded,
    InboxInserted, PreStep, SessionStart, TurnStopping,
};
use dsh_agent_loop::{AgentLoop, AgentLoopConfig};
use dsh_kernel::Context;
use dsh_llm::{LlmRuntime, LlmStream, ResolvedRetryPolicy};
use dsh_prompt::{SystemPrompt, SystemPromptAssemble, SystemPromptConfig, SystemPromptPlugin};
use dsh_protocol::{Message, SessionId};
use dsh_session::{SessionCreated, SessionDisposed, SessionEventPublished, SessionStore};
use dsh_tools::{Tool, ToolExecution, ToolFailure, ToolRuntime};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

pub type Log = Arc<Mutex<Vec<String>>>;

pub struct Harness {
    pub root: Context,
    pub registry: Arc<AgentRegistry>,
    pub sessions: Arc<SessionStore>,
    pub llm: Arc<LlmRuntime>,
    pub tools: Arc<ToolRuntime>,
    pub prompt: Arc<SystemPrompt>,
    pub agent_loop: Arc<AgentLoop>,
    pub model: Arc<ScriptedModel>,
    pub loop_ctx: Context,
}

impl Harness {
    /// Must be called inside a tokio runtime.
    pub fn new() -> Harness {
        Self::with_config(AgentLoopConfig::default())
    }

    pub fn with_config(config: AgentLoopConfig) -> Harness {
        let root = Context::root();
        root.plugin::<SystemPromptPlugin>(SystemPromptConfig::default())
            .unwrap();
        let sessions = Arc::new(SessionStore::new(&root));
        root.provide(sessions.clone()).unwrap().forget();
        let llm = LlmRuntime::install(&root).unwrap();
        let tools = ToolRuntime::new(&root);
        root.provide(tools.clone()).unwrap().forget();
        let registry = AgentRegistry::install(&root).unwrap();
        let loop_ctx = root.child("agent-loop").unwrap();
        let agent_loop = AgentLoop::install(&loop_ctx, config).unwrap();
        let model = Arc::new(ScriptedModel::default());
        // Dropping the handle keeps the registration (it is owned by the root fiber).
        drop(
            llm.register_adapter(
                &root,
                ["mock"],
                model.clone(),
                ResolvedRetryPolicy::default(),
            )
            .unwrap(),
        );
        let prompt = root.require::<SystemPrompt>().unwrap();
        Harness {
            root,
            registry,
            sessions,
            llm,
            tools,
            prompt,
            agent_loop,
            model,
            loop_ctx,
        }
    }

    /// The fiber the loop plugin lives on.
    pub fn agent_loop_fiber(&self) -> dsh_kernel::Fiber {
        self.loop_ctx.fiber().clone()
    }

    pub fn options() -> AgentOptions {
        AgentOptions::new("mock", "m")
    }

    /// Creates agent `id` with the mock route.
    pub async fn agent(&self, id: &str) -> AgentHandle {
        self.agent_with(id, Self::options()).await
    }

    pub async fn agent_with(&self, id: &str, options: AgentOptions) -> AgentHandle {
        self.registry
            .create(
                &self.root,
                CreateAgentOptions {
                    session_id: Some(SessionId::from(id)),
                    agent_options: options,
                    ..Default::default()
                },
            )
            .await
            .unwrap()
    }

    pub fn register(&self, tool: Arc<dyn Tool>) {
        self.tools.register(&self.root, tool).unwrap().forget();
    }

    /// Records live events and session events, interleaved, as short strings.
    pub fn record(&self) -> Log {
        let log: Log = Arc::default();
        let ctx = &self.root;
        let push = |log: &Log, s: String| log.lock().unwrap().push(s);
        macro_rules! on {
            ($event:ty, $f:expr) => {{
                let l = log.clone();
                let f = $f;
                ctx.on::<$event>(move |e| {
                    push(&l, f(e));
                    Ok(())
                })
                .unwrap()
                .forget();
            }};
        }
        on!(
            SessionEventPublished,
            |e: &dsh_session::PublishedEvent| format!("session {}", e.event.type_name())
        );
        on!(AgentStatusChanged, |e: &dsh_agent::AgentEvent<
            dsh_agent::AgentStatus,
        >| format!(
            "status {:?}",
            e.data
        )
        .to_lowercase());
        on!(
            InboxInserted,
            |e: &dsh_agent::AgentEvent<Arc<Message>>| format!("inserted {}", e.data.text())
        );
        on!(
            InboxDiscarded,
            |e: &dsh_agent::AgentEvent<Arc<Message>>| format!("discarded {}", e.data.text())
        );
        on!(InboxClaimed, |e: &dsh_agent::AgentEvent<
            dsh_agent::ClaimedMessage,
        >| format!(
            "claimed {} turn {}",
            e.data.message.text(),
            e.data.turn
        ));
        on!(AgentCreated, |_: &dsh_agent::AgentEvent<()>| {
            "agent/created".to_string()
        });
        on!(AgentDisposed, |_: &dsh_agent::AgentEvent<()>| {
            "agent/disposed".to_string()
        });
        on!(SessionStart, |e: &dsh_agent::AgentEvent<
            dsh_agent::SessionStartSource,
        >| format!(
            "session-start {:?}",
            e.data
        )
        .to_lowercase());
        on!(AgentErrorEvent, |e: &dsh_agent::AgentEvent<
            dsh_agent::AgentErrorReport,
        >| format!(
            "agent/error {}",
            e.data.failure.code
        ));
        on!(SessionCreated, |_: &dsh_session::Session| "session/created"
            .to_string());
        on!(SessionDisposed, |_: &dsh_session::Session| {
            "session/disposed".to_string()
        });
        let l = log.clone();
        ctx.on_waterfall::<PreStep, _, _>(move |_, next| {
            push(&l, "agent/pre-step".into());
            next.run()
        })
        .unwrap()
        .forget();
        let l = log.clone();
        ctx.on_waterfall::<AgentRequest, _, _>(move |_, next| {
            push(&l, "agent/request".into());
            next.run()
        })
        .unwrap()
        .forget();
        let l = log.clone();
        ctx.on_waterfall::<LlmStream, _, _>(move |_, next| {
            push(&l, "llm/stream".into());
            next.run()
        })
        .unwrap()
        .forget();
        let l = log.clone();
        ctx.on_waterfall::<SystemPromptAssemble, _, _>(move |_, next| {
            push(&l, "system-prompt/assemble".into());
            next.run()
        })
        .unwrap()
        .forget();
        let l = log.clone();
        ctx.on_serial::<TurnStopping, _, _>(move |_| {
            push(&l, "agent/turn-stopping".into());
            async { Ok(None) }
        })
        .unwrap()
        .forget();
        log
    }
}

/// Polls until `done` holds (the driver runs on other tasks).
pub async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..2000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("condition not reached");
}

pub fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

/// A test tool: echoes `args.text`, records start/end, optionally waits on a gate.
pub struct TestTool {
    pub name: &'static str,
    pub parallel: bool,
    pub gate: Option<Arc<Semaphore>>,
    pub delay: Option<Duration>,
    pub log: Log,
    pub concludes: bool,
    pub context: Option<&'static str>,
    /// Waits for its gate even when cancelled (exercises drain-after-abort).
    pub stubborn: bool,
}

impl TestTool {
    pub fn new(name: &'static str, log: &Log) -> Self {
        TestTool {
            name,
            parallel: false,
            gate: None,
            delay: None,
            log: log.clone(),
            concludes: false,
            context: None,
            stubborn: false,
        }
    }
    pub fn parallel(mut self) -> Self {
        self.parallel = true;
        self
    }
    pub fn gated(mut self, gate: &Arc<Semaphore>) -> Self {
        self.gate = Some(gate.clone());
        self
    }
    pub fn delay(mut self, ms: u64) -> Self {
        self.delay = Some(Duration::from_millis(ms));
        self
    }
    pub fn arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl Tool for TestTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> String {
        format!("the {} test tool", self.name)
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        self.parallel
    }
    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let id = exec.call_id().to_string();
            self.log.lock().unwrap().push(format!("start {id}"));
            if let (Some(gate), true) = (&self.gate, self.stubborn) {
                drop(gate.acquire().await);
            } else if let Some(gate) = &self.gate {
                tokio::select! {
                    permit = gate.acquire() => drop(permit),
                    () = exec.signal().cancelled() => {}
                }
            }
            if let Some(delay) = self.delay {
                tokio::time::sleep(delay).await;
            }
            if self.concludes {
                exec.conclude_turn();
            }
            if let Some(context) = self.context {
                exec.defer_context(Message::user_text(context));
            }
            self.log.lock().unwrap().push(format!("end {id}"));
            Ok(json!(format!(
                "{}:{}",
                self.name,
                args.get("text").and_then(Value::as_str).unwrap_or("")
            )))
        })
    }
}
