//! The loop's configuration and the services every agent of one loop shares.

use dsh_llm::LlmRuntime;
use dsh_prompt::SystemPrompt;
use dsh_tools::ToolRuntime;
use serde::Deserialize;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How many tool calls of one parallel group may run at once unless configured.
pub const DEFAULT_MAX_PARALLEL_TOOL_CALLS: usize = 10;

/// Configuration of the `agent-loop` plugin (camelCase keys).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AgentLoopConfig {
    /// Cap of concurrently running calls in a parallel group (1 = serial); default 10.
    pub max_parallel_tool_calls: Option<u64>,
    /// Agents started when the plugin loads.
    pub agents: Vec<ConfiguredAgent>,
}

/// One declaratively started agent.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfiguredAgent {
    pub id: String,
    /// Exact session id: resumed when stored, created otherwise.
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub cwd: Option<String>,
    /// A stored session that must be resumed (needs persistence).
    #[serde(default)]
    pub resume_session_id: Option<String>,
}

impl AgentLoopConfig {
    /// Checks the rules the schema cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_parallel_tool_calls == Some(0) {
            return Err("maxParallelToolCalls must be a positive integer".into());
        }
        let mut ids = HashSet::new();
        let mut sessions = HashSet::new();
        for agent in &self.agents {
            if !ids.insert(agent.id.as_str()) {
                return Err(format!("agents: duplicate id \"{}\"", agent.id));
            }
            if agent.session_id.is_some() && agent.resume_session_id.is_some() {
                return Err(format!(
                    "agents[\"{}\"]: sessionId and resumeSessionId are mutually exclusive",
                    agent.id
                ));
            }
            if let Some(exact) = agent
                .session_id
                .as_ref()
                .or(agent.resume_session_id.as_ref())
            {
                if !sessions.insert(exact.as_str()) {
                    return Err(format!("agents: session \"{exact}\" is configured twice"));
                }
            }
        }
        Ok(())
    }
}

/// Services and live settings shared by the agents of one loop.
pub(crate) struct LoopServices {
    pub(crate) llm: Arc<LlmRuntime>,
    pub(crate) tools: Arc<ToolRuntime>,
    pub(crate) prompt: Arc<SystemPrompt>,
    max_parallel: AtomicUsize,
}

impl LoopServices {
    pub(crate) fn new(
        llm: Arc<LlmRuntime>,
        tools: Arc<ToolRuntime>,
        prompt: Arc<SystemPrompt>,
        max_parallel: usize,
    ) -> Self {
        Self {
            llm,
            tools,
            prompt,
            max_parallel: AtomicUsize::new(max_parallel.max(1)),
        }
    }

    /// Read live at every parallel group.
    pub(crate) fn max_parallel(&self) -> usize {
        self.max_parallel.load(Ordering::SeqCst).max(1)
    }

    pub(crate) fn set_max_parallel(&self, n: usize) {
        self.max_parallel.store(n.max(1), Ordering::SeqCst);
    }
}
