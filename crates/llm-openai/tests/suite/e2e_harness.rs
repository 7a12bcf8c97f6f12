#![allow(dead_code)] // shared by the e2e_* files; not every test uses every helper
//! End-to-end harness: the real agent loop, the real chat-completions adapter and the retry
//! plugin, talking HTTP to the fault-injecting mock model server on 127.0.0.1.
//!
//! Every run ends with the same three checks: the log's structural invariants
//! (`dsh_testkit::checks`), the in-process reconstruction check on each `llm/stream`
//! dispatch (`dsh_testkit::recon`), and [`assert_requests_rebuild`], which rebuilds every
//! request *body the server received* from the final log alone, through the adapter's own
//! wire mapping.

use dsh_agent::{Agent, AgentOptions, AgentRegistry, CreateAgentOptions};
use dsh_agent_loop::{AgentLoop, AgentLoopConfig, RetryPlugin, RetryPluginConfig};
use dsh_kernel::Context;
use dsh_llm::{Backoff, LlmRequest, LlmRuntime, NormalRetry, ResolvedRetryPolicy};
use dsh_llm_openai::{wire, OpenAiAdapter, RouteConfig};
use dsh_prompt::{SystemPromptConfig, SystemPromptPlugin};
use dsh_protocol::{Message, MessageId, SessionId, StreamChunk};
use dsh_session::SessionStore;
use dsh_session::{derive_messages, fold_request_header, EventData, Session, SessionEvent};
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{MockServer, RecordedRequest, Script};
use dsh_testkit::normalize::log_json;
use dsh_testkit::recon::RequestReconstructionCheck;
use dsh_tools::{Tool, ToolExecution, ToolFailure, ToolRuntime};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The fake key; it must reach the server as a bearer token and nowhere else.
pub const KEY: &str = "sk-e2e-fake-0000";
pub const MODEL: &str = "deepseek-v4-flash";
pub const ROUTE: &str = "deepseek-official";
pub const SYSTEM: &str = "You are an AI agent powered by DeepSeek Harness.";

/// How long a test waits for a turn before declaring it stuck (never a timing assertion).
const TURN_LIMIT: Duration = Duration::from_secs(20);

/// A retry policy with the default codes and limit but a short, jitter-free backoff, so
/// retried runs are quick and their `delayMs` is exact.
pub fn fast_policy(max_retries: u32) -> ResolvedRetryPolicy {
    ResolvedRetryPolicy::Normal(NormalRetry {
        max_retries,
        backoff: Backoff {
            initial_delay_ms: 5,
            max_delay_ms: 2_000,
            jitter_ratio: 0.0,
        },
        ..NormalRetry::default()
    })
}

/// The policy key of `fast_policy(max)`.
pub fn fast_key(max: u32) -> String {
    format!(
        "[\"normal\",{max},[\"EMPTY_RESPONSE\",\"RATE_LIMIT\",\"SERVER\",\"TIMEOUT\",\"TRANSPORT\"],5,2000,0]"
    )
}

/// How the harness is put together.
pub struct Setup {
    pub route: RouteConfig,
    pub retry: bool,
    pub tools: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            route: RouteConfig {
                stream_idle_timeout_ms: 10_000,
                retry_policy: fast_policy(5),
                ..RouteConfig::deepseek()
            },
            retry: true,
            tools: false,
        }
    }
}

impl Setup {
    pub fn with_tools(mut self) -> Self {
        self.tools = true;
        self
    }

    pub fn without_retry(mut self) -> Self {
        self.retry = false;
        self
    }

    pub fn policy(mut self, policy: ResolvedRetryPolicy) -> Self {
        self.route.retry_policy = policy;
        self
    }

    pub fn idle_timeout_ms(mut self, ms: u64) -> Self {
        self.route.stream_idle_timeout_ms = ms;
        self
    }
}

pub struct E2e {
    pub root: Context,
    pub server: MockServer,
    pub route: RouteConfig,
    pub registry: Arc<AgentRegistry>,
    pub recon: RequestReconstructionCheck,
    pub agent: Arc<dyn Agent>,
    /// Keeps the agent published for the test's lifetime.
    _handle: dsh_agent::AgentHandle,
}

/// The environment the adapter sees: only the mock's address and the fake key.
pub fn env_for(base_url: &str) -> Arc<HashMap<String, String>> {
    Arc::new(HashMap::from([
        ("DEEPSEEK_API_KEY".to_string(), KEY.to_string()),
        ("DEEPSEEK_BASE_URL".to_string(), base_url.to_string()),
    ]))
}

impl E2e {
    /// Mounts the core services, the loop, the adapter (pointed at a mock serving
    /// `script`) and, unless disabled, the retry plugin; then creates agent `s1`.
    pub async fn start(script: Script, setup: Setup) -> E2e {
        let server = MockServer::start(script).await.unwrap();
        Self::start_with_server(server, setup).await
    }

    pub async fn start_with_server(server: MockServer, setup: Setup) -> E2e {
        Self::start_at(server, None, setup).await
    }

    /// Like [`start_with_server`](Self::start_with_server), with the adapter pointed at
    /// `base_url` instead of the server (a proxy in front of it).
    pub async fn start_at(server: MockServer, base_url: Option<String>, setup: Setup) -> E2e {
        let root = Context::root();
        root.plugin::<SystemPromptPlugin>(SystemPromptConfig::default())
            .unwrap();
        let sessions = Arc::new(SessionStore::new(&root));
        root.provide(sessions).unwrap().forget();
        let recon = RequestReconstructionCheck::install(&root).unwrap();
        let llm = LlmRuntime::install(&root).unwrap();
        let tools = ToolRuntime::new(&root);
        root.provide(tools.clone()).unwrap().forget();
        if setup.tools {
            for tool in [EchoTool::arc("echo"), EchoTool::arc("shout")] {
                tools.register(&root, tool).unwrap().forget();
            }
        }
        let registry = AgentRegistry::install(&root).unwrap();
        let loop_ctx = root.child("agent-loop").unwrap();
        AgentLoop::install(&loop_ctx, AgentLoopConfig::default()).unwrap();
        if setup.retry {
            root.plugin::<RetryPlugin>(RetryPluginConfig::default())
                .unwrap();
        }
        let base_url = base_url.unwrap_or_else(|| server.base_url());
        let client = dsh_llm_openai::client_builder().no_proxy().build().unwrap();
        let adapter =
            OpenAiAdapter::with_client(setup.route.clone(), env_for(&base_url), client).unwrap();
        drop(
            llm.register_adapter(
                &root,
                [ROUTE],
                Arc::new(adapter),
                setup.route.retry_policy.clone(),
            )
            .unwrap(),
        );
        let handle = registry
            .create(
                &root,
                CreateAgentOptions {
                    session_id: Some(SessionId::from("s1")),
                    agent_options: AgentOptions::new(ROUTE, MODEL),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let agent = handle.agent().clone();
        E2e {
            root,
            server,
            route: setup.route,
            registry,
            recon,
            agent,
            _handle: handle,
        }
    }

    /// Sends `prompt` as a follow-up and waits for the agent to go idle.
    pub async fn run(&self, prompt: &str) {
        self.agent.followup(user_msg(prompt)).unwrap();
        self.idle().await;
    }

    pub async fn idle(&self) {
        tokio::time::timeout(TURN_LIMIT, self.agent.when_idle())
            .await
            .expect("the turn never went idle");
    }

    pub fn session(&self) -> &Session {
        self.agent.session()
    }

    /// The whole log, normalized (no times; UUIDs as `<id-N>`).
    pub fn log(&self) -> Value {
        log_json(&self.session().events())
    }

    /// The log with `llm/retry` delays replaced by `"<delay>"` (for jittered policies).
    pub fn log_without_delays(&self) -> Value {
        let mut log = self.log();
        for event in log.as_array_mut().unwrap() {
            if event["type"] == "llm/retry" {
                event["data"]["delayMs"] = json!("<delay>");
            }
        }
        log
    }

    /// The checks every test ends with; see the module docs.
    pub fn verify(&self) {
        let events = self.session().events();
        assert_log_ok(&events);
        self.recon.assert_clean();
        let requests: Vec<RecordedRequest> = self.server.requests();
        assert_requests_rebuild(self.session(), &self.route, &requests);
        assert_eq!(self.recon.checked(), requests.len());
    }
}

/// A user message with a stable id.
pub fn user_msg(text: &str) -> Message {
    let mut message = Message::user_text(text);
    message.id = MessageId::from(format!("m-{text}"));
    message
}

/// Seqs of the first chunk of every model attempt: a chunk that follows a non-chunk event or
/// a `finish` chunk. Each attempt reaches the log as at least one chunk (a failed start
/// becomes a terminal `finish` chunk), except one cancelled before its first chunk.
pub fn attempt_starts(events: &[Arc<SessionEvent>]) -> Vec<usize> {
    let is_chunk = |e: &SessionEvent| matches!(e.data, EventData::AssistantChunk(_));
    let is_finish = |e: &SessionEvent| matches!(&e.data, EventData::AssistantChunk(c) if matches!(c.chunk, StreamChunk::Finish { .. }));
    (0..events.len())
        .filter(|&i| {
            is_chunk(&events[i])
                && (i == 0 || !is_chunk(&events[i - 1]) || is_finish(&events[i - 1]))
        })
        .collect()
}

/// The request body the adapter would send for the attempt whose first chunk is at `at`:
/// messages derived from the log before it, config/system/tools from the header folded so
/// far, mapped through the adapter's own `wire::request_body`.
pub fn rebuild_body(session: &Session, route: &RouteConfig, at: usize) -> Value {
    let events = session.events();
    let prefix = &events[..at];
    let header = fold_request_header(prefix, None).expect("a request/header before the request");
    let mut request = LlmRequest::new(header.config, derive_messages(prefix).unwrap());
    request.system = header.system;
    request.tools = header.tools;
    request.session_id = Some(session.id().clone());
    wire::request_body(&request, route).unwrap()
}

/// "Model-visible ⇔ recorded" over HTTP: each body the server received equals the body
/// rebuilt from the log at that attempt, and the transport headers carry the key and the
/// session id.
pub fn assert_requests_rebuild(
    session: &Session,
    route: &RouteConfig,
    requests: &[RecordedRequest],
) {
    let starts = attempt_starts(&session.events());
    assert_eq!(
        starts.len(),
        requests.len(),
        "one logged attempt per request the server received"
    );
    for (n, (at, recorded)) in starts.iter().zip(requests).enumerate() {
        assert_eq!(recorded.path, "/chat/completions");
        assert_eq!(
            recorded.body,
            rebuild_body(session, route, *at),
            "request {n} differs from its log reconstruction"
        );
        assert_eq!(
            recorded.header("authorization"),
            Some(&*format!("Bearer {KEY}"))
        );
        assert_eq!(
            recorded.header("x-deepseek-harness-session-id"),
            Some(session.id().as_str())
        );
    }
}

/// `assert_eq!` on two logs, reporting the first differing event readably.
#[track_caller]
pub fn assert_log_eq(actual: &Value, expected: &[Value]) {
    let actual = actual.as_array().expect("a log is an array");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert_eq!(a, e, "event {i} differs:\n  actual   {a}\n  expected {e}");
    }
    let extra = |events: &[Value], from: usize| -> Vec<String> {
        events.iter().skip(from).map(Value::to_string).collect()
    };
    assert_eq!(
        actual.len(),
        expected.len(),
        "log length differs; actual extra: {:#?}; expected extra: {:#?}",
        extra(actual, expected.len()),
        extra(expected, actual.len())
    );
}

// ---- expected-log builders -------------------------------------------------------------

pub fn user_json(text: &str) -> Value {
    json!({"id": format!("m-{text}"), "role": "user",
        "content": [{"type": "text", "text": text}], "source": {"kind": "user"}})
}

/// The header the loop logs for the DeepSeek route with the adapter's defaults.
pub fn header_json(tools: bool) -> Value {
    let mut header = json!({
        "config": {"provider": ROUTE, "model": MODEL, "reasoningEffort": "high", "maxTokens": 256000},
        "adapterDefaults": {"reasoningEffort": true, "maxTokens": true},
        "system": SYSTEM,
    });
    if tools {
        header["tools"] = json!([
            EchoTool::schema_json("echo"),
            EchoTool::schema_json("shout")
        ]);
    }
    header
}

/// The first events of turn 1 of a fresh session, up to the first chunk (seqs 0..=6).
pub fn turn_opening(prompt: &str, tools: bool) -> Vec<Value> {
    vec![
        json!({"type": "agent/inbox/spliced", "seq": 0, "data": {"target": "next-turn", "start": 0, "inserted": [user_json(prompt)]}}),
        json!({"type": "turn/start", "seq": 1, "data": {"turn": 1}}),
        json!({"type": "agent/inbox/spliced", "seq": 2, "data": {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}}),
        json!({"type": "step/start", "seq": 3, "data": {"turn": 1, "step": 1}}),
        json!({"type": "user/message", "seq": 4, "data": user_json(prompt), "surfaceOp": "append"}),
        json!({"type": "request/header", "seq": 5, "data": {"header": header_json(tools), "reason": "initial"}}),
        json!({"type": "request/context", "seq": 6, "data": {"provider": ROUTE, "model": MODEL, "contextWindow": 1000000}}),
    ]
}

/// Numbers events: each expected event gets `seq` = `first` + its position.
pub struct Seq(pub u64);

impl Seq {
    pub fn next(&mut self) -> u64 {
        let seq = self.0;
        self.0 += 1;
        seq
    }

    /// An `assistant/chunk` of `turn`.`step`.
    pub fn chunk(&mut self, turn: u64, step: u64, chunk: Value) -> Value {
        json!({"type": "assistant/chunk", "seq": self.next(), "data": {"turn": turn, "step": step, "chunk": chunk}})
    }

    pub fn event(&mut self, kind: &str, data: Value) -> Value {
        json!({"type": kind, "seq": self.next(), "data": data})
    }
}

/// A model-sourced `assistant/message` of `(turn, step)` citing the chunk seqs `cites`.
pub fn assistant(
    s: &mut Seq,
    (turn, step): (u64, u64),
    id: &str,
    content: Value,
    usage: Option<Value>,
    cites: std::ops::Range<u64>,
) -> Value {
    let mut data = json!({"turn": turn, "step": step, "message": {"id": id, "role": "assistant",
        "content": content, "source": {"kind": "model", "provider": ROUTE, "model": MODEL}}});
    if let Some(usage) = usage {
        data["usage"] = usage;
    }
    json!({"type": "assistant/message", "seq": s.next(), "surfaceOp": "append", "data": data,
        "sourceEventSeqs": cites.collect::<Vec<u64>>()})
}

pub fn block_start(index: u32, kind: &str) -> Value {
    json!({"type": "block-start", "index": index, "blockType": kind})
}

pub fn text_delta(index: u32, text: &str) -> Value {
    json!({"type": "text-delta", "index": index, "text": text})
}

pub fn reasoning_delta(index: u32, text: &str) -> Value {
    json!({"type": "reasoning-delta", "index": index, "text": text})
}

pub fn block_end(index: u32, block: Value) -> Value {
    json!({"type": "block-end", "index": index, "block": block})
}

/// Usage as the adapter maps the mock's numbers (no cache hits).
pub fn usage_json(input: u64, output: u64, reasoning: u64) -> Value {
    json!({"inputTokens": input, "outputTokens": output, "cacheReadTokens": 0, "reasoningTokens": reasoning})
}

pub fn usage(input: u64, output: u64, reasoning: u64) -> Value {
    json!({"type": "usage", "usage": usage_json(input, output, reasoning)})
}

pub fn finish(kind: &str) -> Value {
    json!({"type": "finish", "reason": {"kind": kind}})
}

pub fn finish_error(failure: Value) -> Value {
    json!({"type": "finish", "reason": {"kind": "error", "failure": failure}})
}

// ---- test tools ---------------------------------------------------------------------------

/// Echoes `args.text` prefixed with its own name; concurrency-safe, so parallel calls run
/// together.
pub struct EchoTool {
    name: &'static str,
}

impl EchoTool {
    pub fn arc(name: &'static str) -> Arc<dyn Tool> {
        Arc::new(EchoTool { name })
    }

    fn parameters_json() -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }

    pub fn schema_json(name: &str) -> Value {
        json!({"name": name, "description": format!("Repeats the text ({name})."), "parameters": Self::parameters_json()})
    }
}

impl Tool for EchoTool {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> String {
        format!("Repeats the text ({}).", self.name)
    }

    fn parameters(&self) -> Value {
        Self::parameters_json()
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        _exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
            let out = if self.name == "shout" {
                text.to_uppercase()
            } else {
                text.to_string()
            };
            Ok(json!(out))
        })
    }
}
