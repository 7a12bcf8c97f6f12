//! The `skills` plugin: provides [`Skills`], registers the `skill` tool and the catalog
//! section, and sits on `agent/pre-step` for commands, the `/name` gesture and the catalog
//! record.

use crate::events::SkillCatalog;
use crate::gesture::transform;
use crate::render::DEFAULT_DESCRIPTION_MAX;
use crate::scan::Root;
use crate::service::Skills;
use crate::tool::SkillTool;
use dsh_agent::{PreStep, PreStepDecision};
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_prompt::{Section, SystemPrompt};
use dsh_session::{EventData, SessionDisposed, SessionEventPublished};
use dsh_tools::{ToolRuntime, Typed};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Name of the catalog's system-prompt section.
pub const CATALOG_SECTION: &str = "skills:catalog";
/// The prompt variable holding the catalog text (a variable, so braces in descriptions are
/// never read as references).
pub const CATALOG_VARIABLE: &str = "skills_catalog";
/// Where the catalog sits among the sections: after the persona (0).
pub const CATALOG_ORDER: f64 = 50.0;

/// The `skills` row's config (camelCase JSON). The `dsh` binary derives it at boot from the
/// workspace, `[skills] dirs`, `$DSH_HOME` and `$HOME`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Skill roots, nearest (winning) first.
    pub skill_roots: Vec<Root>,
    /// Command roots, nearest (winning) first.
    pub command_roots: Vec<Root>,
    /// Catalog descriptions longer than this are cut; at least 3.
    pub catalog_description_max_length: usize,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            skill_roots: Vec::new(),
            command_roots: Vec::new(),
            catalog_description_max_length: DEFAULT_DESCRIPTION_MAX,
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct SkillsPlugin;

impl Plugin for SkillsPlugin {
    const NAME: &'static str = "skills";
    type Config = SkillsConfig;

    fn requires() -> Vec<ServiceName> {
        vec![
            ServiceName::of::<ToolRuntime>(),
            ServiceName::of::<SystemPrompt>(),
        ]
    }

    fn apply(ctx: &Context, config: SkillsConfig) -> Result<(), BoxError> {
        if config.catalog_description_max_length < 3 {
            return Err("catalogDescriptionMaxLength must be at least 3".into());
        }
        let tools = ctx.require::<ToolRuntime>()?;
        let prompt = ctx.require::<SystemPrompt>()?;
        let skills = Arc::new(Skills::new(&config));
        ctx.provide(skills.clone())?.forget();
        tools
            .register(ctx, Typed::arc(SkillTool::new(skills.clone())))?
            .forget();
        let catalog = skills.clone();
        prompt
            .variable(ctx, CATALOG_VARIABLE, move |_| {
                Some(catalog.turn_catalog_text())
            })?
            .forget();
        prompt
            .section(
                ctx,
                Section::new(
                    CATALOG_SECTION,
                    CATALOG_ORDER,
                    format!("{{{{{CATALOG_VARIABLE}}}}}"),
                ),
            )?
            .forget();
        let gate = skills.clone();
        ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
            let skills = gate.clone();
            async move {
                let decision = next.run().await?;
                let PreStepDecision::Enter(messages) = decision else {
                    return Ok(decision);
                };
                let messages = transform(&skills, messages);
                let session = args.agent.session();
                if let Some(record) = skills.catalog_record(session) {
                    session.append_typed::<SkillCatalog>(&record)?;
                }
                Ok(PreStepDecision::Enter(messages))
            }
        })?
        .forget();
        let turns = skills.clone();
        ctx.on::<SessionEventPublished>(move |published| {
            if matches!(published.event.data, EventData::TurnStart(_)) {
                turns.turn_started();
            }
            Ok(())
        })?
        .forget();
        ctx.on::<SessionDisposed>(move |session| {
            skills.forget_session(session.id());
            Ok(())
        })?
        .forget();
        Ok(())
    }
}
