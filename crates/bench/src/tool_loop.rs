//! `tool-loop`: harness time per step of a 20-step tool loop against the mock model server.
//!
//! One turn of 19 tool-call steps (one call each to a no-op tool) plus a final answer, through
//! the real agent loop, `LlmRuntime`, chat-completions adapter and tool pipeline, against the
//! `dsh-mock-llm` server on 127.0.0.1 with no scripted delay.
//!
//! The turn's wall time includes the server's work (rendering and writing the replies) and
//! the HTTP exchange itself. To isolate the harness, a baseline replays the very same 20
//! request bodies the server recorded, in order, with a bare `reqwest` client (same client
//! settings, kept-alive connection) against a fresh server running the same script, reading
//! every response to the end. Everything runs on one thread (a current-thread runtime), so
//! server and client work never overlap and wall time is the sum of the parts:
//!
//! `harness per step = (turn wall time − baseline wall time) / 20`
//!
//! The difference is what the harness adds on top of an ideal client: SSE parsing and
//! translation, the runtime boundary, the loop's session appends and folds, request building
//! (history derivation, header checks) and the tool pipeline. Budget: ≤ 1 ms per step.

use crate::stats::{summarize, Summary};
use dsh_agent::{Agent, AgentOptions, AgentRegistry, CreateAgentOptions};
use dsh_agent_loop::{AgentLoop, AgentLoopConfig};
use dsh_kernel::Context;
use dsh_llm::LlmRuntime;
use dsh_llm_openai::{OpenAiAdapter, RouteConfig};
use dsh_prompt::{SystemPromptConfig, SystemPromptPlugin};
use dsh_protocol::{Message, SessionId};
use dsh_session::{EventData, SessionStore, TurnEndReason};
use dsh_testkit::mock_llm::{IndexBy, MockServer, Reply, Script};
use dsh_tools::{Tool, ToolExecution, ToolFailure, ToolRuntime};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const STEPS: usize = 20;
const RUNS: usize = 30;
const BUDGET_PER_STEP: Duration = Duration::from_millis(1);
const ROUTE: &str = "deepseek-official";

fn err(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{error}")
}

/// A tool that does nothing, so the figure is the harness and not the tool.
struct NoopTool;

impl Tool for NoopTool {
    fn name(&self) -> &str {
        "noop"
    }

    fn description(&self) -> String {
        "Does nothing.".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn execute<'a>(
        &'a self,
        _args: Value,
        _exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async { Ok(json!("ok")) })
    }
}

/// 19 tool-call replies then an answer, picked by the number of assistant messages in the
/// request, so one server can answer any number of runs (and the baseline's replays).
fn script() -> Script {
    let mut script = Script::new().index_by(IndexBy::AssistantTurns);
    for step in 1..STEPS {
        script = script.respond(
            Reply::tool_call("noop", json!({}))
                .with_text(format!("Step {step}: calling the tool.")),
        );
    }
    script.respond(Reply::text("All steps done."))
}

fn client() -> anyhow::Result<reqwest::Client> {
    dsh_llm_openai::client_builder()
        .no_proxy()
        .build()
        .map_err(err)
}

/// The loop with the real adapter pointed at `base_url`.
struct Stack {
    root: Context,
    registry: Arc<AgentRegistry>,
}

impl Stack {
    fn new(base_url: &str) -> anyhow::Result<Stack> {
        let root = Context::root();
        root.plugin::<SystemPromptPlugin>(SystemPromptConfig::default())
            .map_err(err)?;
        root.provide(Arc::new(SessionStore::new(&root)))
            .map_err(err)?
            .forget();
        let llm = LlmRuntime::install(&root).map_err(err)?;
        let tools = ToolRuntime::new(&root);
        root.provide(tools.clone()).map_err(err)?.forget();
        tools
            .register(&root, Arc::new(NoopTool))
            .map_err(err)?
            .forget();
        let registry = AgentRegistry::install(&root).map_err(err)?;
        let loop_ctx = root.child("agent-loop").map_err(err)?;
        AgentLoop::install(&loop_ctx, AgentLoopConfig::default()).map_err(err)?;
        let env: HashMap<String, String> = HashMap::from([
            ("DEEPSEEK_API_KEY".into(), "sk-bench".into()),
            ("DEEPSEEK_BASE_URL".into(), base_url.into()),
        ]);
        let route = RouteConfig::deepseek();
        let policy = route.retry_policy.clone();
        let adapter = OpenAiAdapter::with_client(route, Arc::new(env), client()?).map_err(err)?;
        // The registration is owned by the root fiber; the handle is not needed.
        drop(
            llm.register_adapter(&root, [ROUTE], Arc::new(adapter), policy)
                .map_err(err)?,
        );
        Ok(Stack { root, registry })
    }

    /// Runs one turn in a fresh agent; returns its wall time (prompt to idle).
    async fn turn(&self, id: &str) -> anyhow::Result<Duration> {
        let handle = self
            .registry
            .create(
                &self.root,
                CreateAgentOptions {
                    session_id: Some(SessionId::from(id)),
                    agent_options: AgentOptions::new(ROUTE, "deepseek-v4-flash"),
                    ..Default::default()
                },
            )
            .await
            .map_err(err)?;
        let agent = handle.agent().clone();
        let started = Instant::now();
        agent
            .followup(Message::user_text("Call the tool until done."))
            .map_err(err)?;
        agent.when_idle().await;
        let elapsed = started.elapsed();
        check_turn(agent.as_ref())?;
        handle.dispose().await;
        Ok(elapsed)
    }
}

/// The run only counts if the turn really took every step and completed.
fn check_turn(agent: &dyn Agent) -> anyhow::Result<()> {
    let events = agent.session().events();
    let steps = events
        .iter()
        .filter(|e| matches!(e.data, EventData::StepStart(_)))
        .count();
    let completed = events.iter().any(
        |e| matches!(&e.data, EventData::TurnEnd(end) if end.reason == TurnEndReason::Completed),
    );
    anyhow::ensure!(
        steps == STEPS && completed,
        "the turn did not run {STEPS} steps to completion ({steps} steps, completed: {completed})"
    );
    Ok(())
}

/// The bare-client replay of `bodies` against `base_url`; returns its wall time.
async fn replay(
    client: &reqwest::Client,
    base_url: &str,
    bodies: &[Vec<u8>],
) -> anyhow::Result<Duration> {
    let url = format!("{base_url}/chat/completions");
    let started = Instant::now();
    for body in bodies {
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.clone())
            .send()
            .await
            .map_err(err)?;
        anyhow::ensure!(response.status().is_success(), "baseline request failed");
        let bytes = response.bytes().await.map_err(err)?;
        anyhow::ensure!(bytes.ends_with(b"data: [DONE]\n\n"), "baseline stream cut");
    }
    Ok(started.elapsed())
}

async fn measure() -> anyhow::Result<(Summary, Summary, Summary)> {
    let server = MockServer::start(script()).await.map_err(err)?;
    let stack = Stack::new(&server.base_url())?;
    // Warm-up: connection pool, allocator, lazily built tables.
    stack.turn("warm-up").await?;
    let warm_requests = server.requests().len();
    anyhow::ensure!(
        warm_requests == STEPS,
        "expected {STEPS} requests, saw {warm_requests}"
    );

    let mut turns = Vec::with_capacity(RUNS);
    for run in 0..RUNS {
        turns.push(stack.turn(&format!("run-{run}")).await?);
    }
    // The bodies of one measured turn (they differ between runs only in the session id).
    let bodies: Vec<Vec<u8>> = server.requests()[STEPS..2 * STEPS]
        .iter()
        .map(|r| serde_json::to_vec(&r.body))
        .collect::<Result<_, _>>()?;

    let baseline_server = MockServer::start(script()).await.map_err(err)?;
    let client = client()?;
    replay(&client, &baseline_server.base_url(), &bodies).await?;
    let mut baselines = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        baselines.push(replay(&client, &baseline_server.base_url(), &bodies).await?);
    }

    let turn = summarize(turns.clone());
    let baseline = summarize(baselines.clone());
    // Pair each turn with the median baseline: the baseline's spread is small and pairing
    // by index would mix unrelated noise.
    let per_step: Vec<Duration> = turns
        .iter()
        .map(|t| t.saturating_sub(baseline.median) / STEPS as u32)
        .collect();
    server.shutdown().await;
    baseline_server.shutdown().await;
    Ok((turn, baseline, summarize(per_step)))
}

pub fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (turn, baseline, per_step) = runtime.block_on(measure())?;
    let per = |d: Duration| d / STEPS as u32;
    println!("method: one thread; harness/step = (turn wall − bare-client replay wall) / {STEPS}");
    println!(
        "{:<44} median {:>10.3?}  p90 {:>10.3?}  ({} samples, {:.3?}/step at median)",
        "turn: 20 steps, loop + adapter + tools",
        turn.median,
        turn.p90,
        turn.samples,
        per(turn.median)
    );
    println!(
        "{:<44} median {:>10.3?}  p90 {:>10.3?}  ({} samples, {:.3?}/step at median)",
        "baseline: same 20 requests, bare client",
        baseline.median,
        baseline.p90,
        baseline.samples,
        per(baseline.median)
    );
    let verdict = if per_step.median <= BUDGET_PER_STEP {
        "within"
    } else {
        "OVER"
    };
    println!(
        "{:<44} median {:>10.3?}  p90 {:>10.3?}  ({verdict} the 1 ms budget at median)",
        "harness time per step", per_step.median, per_step.p90
    );
    println!("    command: cargo run --release -p dsh-bench -- tool-loop");
    Ok(())
}
