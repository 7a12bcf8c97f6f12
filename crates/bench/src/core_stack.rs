//! The agent core mounted for the in-process benches (`agent-step`, `agents-1000`).
//!
//! The same plugins a composition mounts (sessions, llm, system prompt, tools, agents, agent
//! loop), a no-op tool, and optionally JSONL persistence in a temp dir. Unlike the testkit
//! harness, no checker listens to requests, so the figures are the core alone.

use dsh_agent::{Agent, AgentOptions, AgentRegistry, AgentsConfig, AgentsPlugin};
use dsh_agent_loop::{AgentLoopConfig, AgentLoopPlugin};
use dsh_kernel::Context;
use dsh_llm::{
    ChunkStream, LlmAdapter, LlmError, LlmPlugin, LlmPluginConfig, LlmRequest, LlmRuntime,
    ModelInfo, ResolvedRetryPolicy,
};
use dsh_prompt::{SystemPromptConfig, SystemPromptPlugin};
use dsh_protocol::{FinishReason, LlmCallConfig, StreamChunk};
use dsh_session::{EventData, SessionsPlugin, TurnEndReason};
use dsh_store::{CheckpointPolicyPlugin, JsonlPersistenceConfig, JsonlPersistencePlugin};
use dsh_testkit::scripted::{text_response, Response};
use dsh_tools::{Tool, ToolExecution, ToolFailure, ToolRuntime, ToolsConfig, ToolsPlugin};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// The route the bench adapter serves.
pub const PROVIDER: &str = "bench";
pub const MODEL: &str = "bench-model";
pub const TOOL: &str = "noop";

pub fn err(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{error}")
}

/// A tool that does nothing, so the figure is the harness and not the tool.
pub struct NoopTool;

impl Tool for NoopTool {
    fn name(&self) -> &str {
        TOOL
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

/// An in-process model that plays prebuilt replies in call order and keeps nothing else.
///
/// Like the testkit's `ScriptedAdapter` with `Chunks` entries, minus its request recording:
/// that keeps every request (and so every step's copy of the history) alive, which would
/// bill the bench's bookkeeping to the core.
#[derive(Default)]
pub struct PrebuiltReplies {
    replies: Mutex<VecDeque<Vec<StreamChunk>>>,
}

impl PrebuiltReplies {
    pub fn push(&self, reply: Vec<StreamChunk>) {
        self.lock().push_back(reply);
    }

    pub fn remaining(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Vec<StreamChunk>>> {
        self.replies.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LlmAdapter for PrebuiltReplies {
    fn stream(&self, _request: Arc<LlmRequest>) -> BoxFuture<'_, Result<ChunkStream, LlmError>> {
        let reply = self.lock().pop_front();
        Box::pin(async move {
            let chunks = reply
                .ok_or_else(|| LlmError::new("BENCH_SCRIPT_EXHAUSTED", "no prebuilt reply left"))?;
            Ok(stream::iter(chunks.into_iter().map(Ok)).boxed())
        })
    }

    fn resolve_model<'a>(
        &'a self,
        _config: &'a LlmCallConfig,
    ) -> BoxFuture<'a, Result<ModelInfo, LlmError>> {
        Box::pin(async { Ok(ModelInfo::default()) })
    }
}

/// What keeps the logs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Persistence {
    /// Sessions live in memory only.
    None,
    /// JSONL + zstd with the default write-behind window.
    Jsonl,
    /// [`Persistence::Jsonl`] plus the checkpoint policy (a durable flush before every
    /// model request, pre-step and tool call), as the `dsh` composition mounts it.
    JsonlCheckpoints,
    /// [`Persistence::Jsonl`] plus the `memory` plugin (live index, history tools), as the
    /// `dsh` composition mounts it.
    JsonlMemory,
    /// [`Persistence::Jsonl`] plus the `memory` plugin's live indexer only (no history
    /// tools, references or `remember`): what indexing alone adds to a step.
    JsonlIndexing,
}

/// The mounted core. Dropping it removes the temp dir.
pub struct Core {
    pub ctx: Context,
    pub registry: Arc<AgentRegistry>,
    _dir: Option<tempfile::TempDir>,
}

impl Core {
    pub fn mount(adapter: Arc<dyn LlmAdapter>, persistence: Persistence) -> anyhow::Result<Core> {
        let ctx = Context::root();
        ctx.plugin::<SessionsPlugin>(())?;
        let dir = match persistence {
            Persistence::None => None,
            Persistence::Jsonl
            | Persistence::JsonlCheckpoints
            | Persistence::JsonlMemory
            | Persistence::JsonlIndexing => {
                let dir = tempfile::tempdir()?;
                ctx.plugin::<JsonlPersistencePlugin>(JsonlPersistenceConfig::new(dir.path()))?;
                if persistence == Persistence::JsonlCheckpoints {
                    ctx.plugin::<CheckpointPolicyPlugin>(())?;
                }
                Some(dir)
            }
        };
        ctx.plugin::<LlmPlugin>(LlmPluginConfig::default())?;
        ctx.plugin::<SystemPromptPlugin>(SystemPromptConfig::default())?;
        ctx.plugin::<ToolsPlugin>(ToolsConfig::default())?;
        ctx.plugin::<AgentsPlugin>(AgentsConfig::default())?;
        ctx.plugin::<AgentLoopPlugin>(AgentLoopConfig::default())?;
        let llm = ctx.require::<LlmRuntime>()?;
        // The registration is owned by the root fiber; the handle is not needed.
        drop(
            llm.register_adapter(&ctx, [PROVIDER], adapter, ResolvedRetryPolicy::default())
                .map_err(err)?,
        );
        let tools = ctx.require::<ToolRuntime>()?;
        tools
            .register(&ctx, Arc::new(NoopTool))
            .map_err(err)?
            .forget();
        if let Some(dir) = &dir {
            let whole = dsh_memory::MemoryConfig {
                index: Some(dir.path().join("memory").join(dsh_memory::INDEX_FILE)),
                dsh_home: Some(dir.path().to_path_buf()),
                ..dsh_memory::MemoryConfig::default()
            };
            match persistence {
                Persistence::JsonlMemory => {
                    ctx.plugin::<dsh_memory::MemoryPlugin>(whole)?;
                }
                Persistence::JsonlIndexing => {
                    ctx.plugin::<dsh_memory::MemoryPlugin>(dsh_memory::MemoryConfig {
                        history_tools: false,
                        references: false,
                        remember: false,
                        ..whole
                    })?;
                }
                _ => {}
            }
        }
        Ok(Core {
            registry: ctx.require::<AgentRegistry>()?,
            ctx,
            _dir: dir,
        })
    }
}

pub fn agent_options() -> AgentOptions {
    AgentOptions::new(PROVIDER, MODEL)
}

/// The reply of step `step` (1-based) of a `steps`-step turn: a short text and one call to
/// the no-op tool, or on the last step a plain answer.
pub fn reply(step: usize, steps: usize) -> Vec<StreamChunk> {
    if step >= steps {
        return text_response("All steps done.");
    }
    Response::new()
        .text(format!("Step {step}: calling the tool."))
        .tool_call(format!("call_{step}"), TOOL, "{}")
        .finish(FinishReason::ToolCalls)
        .chunks()
}

/// The turn only counts if the agent's latest turn took `steps` steps and completed.
pub fn check_last_turn(agent: &dyn Agent, steps: usize) -> anyhow::Result<()> {
    let events = agent.session().events();
    let turn_start = events
        .iter()
        .rposition(|e| matches!(e.data, EventData::TurnStart(_)))
        .unwrap_or(0);
    let turn = &events[turn_start..];
    let taken = turn
        .iter()
        .filter(|e| matches!(e.data, EventData::StepStart(_)))
        .count();
    let completed = turn.iter().any(
        |e| matches!(&e.data, EventData::TurnEnd(end) if end.reason == TurnEndReason::Completed),
    );
    anyhow::ensure!(
        taken == steps && completed,
        "agent {}: the turn did not run {steps} steps to completion ({taken} steps, completed: {completed})",
        agent.id()
    );
    Ok(())
}
