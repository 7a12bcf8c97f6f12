//! The `memory` plugin: names the index (opened by its first use), starts the live indexer on `session/event`,
//! registers the history tools and `remember` with its gate, and enters `@session`
//! snapshots at pre-step.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_agent::{PreStep, PreStepDecision};
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_prompt::{Section, SystemPrompt};
use dsh_session::SessionEventPublished;
use dsh_store::SessionPersistence;
use dsh_tools::{ToolRuntime, Typed};
use serde::{Deserialize, Serialize};

use crate::index::MemoryIndex;
use crate::indexer::Indexer;
use crate::reference::{transform, PREFIX};
use crate::remember::{install_gate, NoteFiles, RememberTool};
use crate::service::Memory;
use crate::tools::{
    EventReadTool, EventSearchTool, EventTraceTool, SessionSearchTool, SessionTraceTool,
    PROMPT_TEXT,
};

/// Name of the history tools' system-prompt section (the original's).
pub const HISTORY_SECTION: &str = "tool:session-query";
const HISTORY_ORDER: f64 = 113.0;

/// The `memory` row's config (camelCase JSON). The `dsh` binary derives it from `$DSH_HOME`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// The index file (`$DSH_HOME/memory/index.sqlite`); required.
    pub index: Option<PathBuf>,
    /// `$DSH_HOME`, where the user's AGENTS.md is; required for `remember`.
    pub dsh_home: Option<PathBuf>,
    /// Index sessions as they are written (otherwise searches catch up from the logs).
    pub live_index: bool,
    /// The five history tools.
    pub history_tools: bool,
    /// `@session:ID` references in prompts.
    pub references: bool,
    /// The `remember` tool.
    pub remember: bool,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            index: None,
            dsh_home: None,
            live_index: true,
            history_tools: true,
            references: true,
            remember: true,
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct MemoryPlugin;

impl Plugin for MemoryPlugin {
    const NAME: &'static str = "memory";
    type Config = MemoryConfig;

    fn requires() -> Vec<ServiceName> {
        vec![
            ServiceName::of::<dyn SessionPersistence>(),
            ServiceName::of::<ToolRuntime>(),
            ServiceName::of::<SystemPrompt>(),
        ]
    }

    fn apply(ctx: &Context, config: MemoryConfig) -> Result<(), BoxError> {
        let Some(path) = config.index.clone() else {
            return Err("the memory row needs `index` (the index file's path)".into());
        };
        let persistence = ctx.require::<dyn SessionPersistence>()?;
        let tools = ctx.require::<ToolRuntime>()?;
        let prompt = ctx.require::<SystemPrompt>()?;
        // Opened by its first use (the indexer's first event, or a search), off the boot path.
        let index = Arc::new(MemoryIndex::lazy(&path));
        let indexer = if config.live_index {
            let indexer = Indexer::start(index.clone())?;
            let feed = indexer.clone();
            ctx.on::<SessionEventPublished>(move |published| {
                feed.offer(&published.session, &published.event);
                Ok(())
            })?
            .forget();
            Some(indexer)
        } else {
            None
        };
        let memory = Arc::new(Memory::new(index, persistence, indexer));
        ctx.provide(memory.clone())?.forget();

        if config.history_tools {
            tools
                .register(ctx, Typed::arc(SessionSearchTool::new(memory.clone())))?
                .forget();
            tools
                .register(ctx, Typed::arc(EventSearchTool::new(memory.clone())))?
                .forget();
            tools
                .register(ctx, Typed::arc(SessionTraceTool::new(memory.clone())))?
                .forget();
            tools
                .register(ctx, Typed::arc(EventTraceTool::new(memory.clone())))?
                .forget();
            tools
                .register(ctx, Typed::arc(EventReadTool::new(memory.clone())))?
                .forget();
            prompt
                .section(
                    ctx,
                    Section::new(HISTORY_SECTION, HISTORY_ORDER, PROMPT_TEXT),
                )?
                .forget();
        }
        if config.remember {
            let Some(dsh_home) = config.dsh_home.clone() else {
                return Err("the memory row needs `dshHome` for the remember tool".into());
            };
            let files = NoteFiles { dsh_home };
            tools
                .register(ctx, Typed::arc(RememberTool::new(files.clone())))?
                .forget();
            install_gate(ctx, files)?.forget();
        }
        if config.references {
            let memory = memory.clone();
            ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
                let memory = memory.clone();
                async move {
                    let decision = next.run().await?;
                    let PreStepDecision::Enter(messages) = decision else {
                        return Ok(decision);
                    };
                    if !messages.iter().any(|m| m.text().contains(PREFIX)) {
                        return Ok(PreStepDecision::Enter(messages));
                    }
                    let own = args.agent.session().id().as_str().to_owned();
                    let entered =
                        tokio::task::spawn_blocking(move || transform(&memory, &own, messages))
                            .await?;
                    Ok(PreStepDecision::Enter(entered))
                }
            })?
            .forget();
        }
        Ok(())
    }
}
