//! The default plugin composition and the `[[plugins]]` patches over it.

use super::error::{closest, ConfigError};
use super::file::PluginPatch;
use super::source::{Location, Source};
use dsh_kernel::{Composition, PatchOp, Plugin, Row};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Row id of the session log service.
pub const SESSIONS_ROW: &str = "sessions";
/// Row id of the session store: the JSONL/zstd files under `$DSH_HOME/sessions`, or the
/// PostgreSQL plugin when `[store] backend = "postgres"` (the id stays, so `[[plugins]]`
/// patches of it keep working).
pub const PERSISTENCE_ROW: &str = "session-persistence-jsonl";
/// Row id of the flush-before-side-effects policy.
pub const CHECKPOINT_ROW: &str = "session-checkpoint-policy";
/// Row id of the image attachment store (`$DSH_HOME/attachments/v1`).
pub const ATTACHMENTS_ROW: &str = "attachments";
/// Row id of the model runtime.
pub const LLM_ROW: &str = "llm";
/// Row id of the DeepSeek / OpenAI-compatible adapter (one route per provider).
pub const LLM_OPENAI_ROW: &str = "llm-openai";
/// Row id of the retry policy for failed model requests.
pub const LLM_RETRY_ROW: &str = "llm-retry";
/// Row id of the system prompt service.
pub const SYSTEM_PROMPT_ROW: &str = "system-prompt";
/// Row id of the tool registry.
pub const TOOLS_ROW: &str = "tools";
/// Row id of the built-in coding tools.
pub const TOOLS_BUILTIN_ROW: &str = "tools-builtin";
/// Row id of the approval policy and rules.
pub const APPROVAL_ROW: &str = "approval";
/// Row id of the background-job registry and the job tools.
pub const JOBS_ROW: &str = "jobs";
/// Row id of the Claude Code / Codex hooks.
pub const HOOKS_ROW: &str = "hooks";
/// Row id of skills and custom slash commands.
pub const SKILLS_ROW: &str = "skills";
/// Row id of the MCP client (mounted by the `dsh-mcp` plugin; its config is the server list
/// [`crate::mcp_config::resolve`] computes at boot).
pub const MCP_ROW: &str = "mcp";
/// Row id of memory across sessions (the search index, history tools, `@session`
/// references, `remember`; its config points at `$DSH_HOME`).
pub const MEMORY_ROW: &str = "memory";
/// Row id of the agent registry.
pub const AGENTS_ROW: &str = "agents";
/// Row id of the agent loop (the factory behind every agent).
pub const AGENT_LOOP_ROW: &str = "agent-loop";
/// Row id of delegation (the subagent tools, continuable children and their settlement).
pub const SUBAGENTS_ROW: &str = "subagents";

/// Row id of goals (the goal tools, the round driver, the policy section).
pub const GOAL_ROW: &str = "goal";
/// Row id of the repeat-tool-call reminder.
pub const REPEAT_TOOL_REMINDER_ROW: &str = "repeat-tool-reminder";
/// Row id of the user-questions service and `ask_user_question`.
pub const USER_QUESTIONS_ROW: &str = "user-questions";
/// Row id of plan mode (`plan:policy`, the refusal guard, `exit_plan_mode`).
pub const PLAN_MODE_ROW: &str = "plan-mode";
/// Row id of session titles (fallback, model title, renames).
pub const SESSION_TITLE_ROW: &str = "session-title";

/// Row id of the compaction engine (token meter, automatic and manual compaction, pruner).
pub const COMPACTION_ROW: &str = "compaction";

/// Rows whose configuration is computed from the settings when dsh boots, as long as the
/// row's config is left `null`. A `[[plugins]]` patch that sets a config replaces the computed
/// one wholesale.
pub const DERIVED_ROWS: &[&str] = &[
    PERSISTENCE_ROW,
    ATTACHMENTS_ROW,
    LLM_OPENAI_ROW,
    TOOLS_BUILTIN_ROW,
    APPROVAL_ROW,
    COMPACTION_ROW,
    HOOKS_ROW,
    SKILLS_ROW,
    MCP_ROW,
    MEMORY_ROW,
];

/// The rows dsh mounts when the settings file changes nothing, in mount order.
///
/// `null` configs mean "the plugin's defaults", except for the [`DERIVED_ROWS`], whose config
/// is built from the settings at boot (routes from `[providers]`, the store root from
/// `$DSH_HOME`, tool switches from `[tools]`, policy and rules from `[approval]`, the compaction
/// policy from `[compaction]`, hook files from `$DSH_HOME`, `~` and the workspace, skill and
/// command roots from the workspace, `[skills] dirs`, `$DSH_HOME` and `$HOME`, MCP servers from
/// `[mcp_servers]`, `mcp.json` and a trusted `.mcp.json`).
pub fn default_composition() -> Composition {
    let null = |id: &str, plugin: &str| Row::new(id, plugin, Value::Null);
    Composition {
        rows: vec![
            null(SESSIONS_ROW, dsh_session::SessionsPlugin::NAME),
            null(PERSISTENCE_ROW, dsh_store::JsonlPersistencePlugin::NAME),
            null(CHECKPOINT_ROW, dsh_store::CheckpointPolicyPlugin::NAME),
            null(ATTACHMENTS_ROW, dsh_attachments::AttachmentsPlugin::NAME),
            null(LLM_ROW, dsh_llm::LlmPlugin::NAME),
            null(LLM_OPENAI_ROW, dsh_llm_openai::OpenAiPlugin::NAME),
            null(LLM_RETRY_ROW, dsh_agent_loop::RetryPlugin::NAME),
            // Early, so its pre-step listener relieves pressure before later rows' pre-step
            // listeners decide on the step; after the retry row, whose request-error listener
            // sees a failure first and passes on the context overflows it does not retry.
            null(COMPACTION_ROW, dsh_compaction::CompactionPlugin::NAME),
            Row::new(
                SYSTEM_PROMPT_ROW,
                dsh_prompt::SystemPromptPlugin::NAME,
                json!({ "persona": crate::persona::PERSONA_TEMPLATE }),
            ),
            null(TOOLS_ROW, dsh_tools::ToolsPlugin::NAME),
            null(
                TOOLS_BUILTIN_ROW,
                dsh_tools_builtin::BuiltinToolsPlugin::NAME,
            ),
            null(APPROVAL_ROW, dsh_tools_builtin::ApprovalPlugin::NAME),
            null(JOBS_ROW, dsh_jobs::JobsPlugin::NAME),
            // After approval: its pre-execute listener runs the hooks as its inner layer.
            null(HOOKS_ROW, dsh_hooks::HooksPlugin::NAME),
            null(USER_QUESTIONS_ROW, dsh_modes::UserQuestionsPlugin::NAME),
            // After approval: plan mode's refusal is its inner pre-execute layer, so it wins
            // over an allow and nobody is asked about a call plan mode refuses.
            null(PLAN_MODE_ROW, dsh_modes::PlanModePlugin::NAME),
            null(SESSION_TITLE_ROW, dsh_modes::SessionTitlePlugin::NAME),
            null(SKILLS_ROW, dsh_skills::SkillsPlugin::NAME),
            null(MCP_ROW, dsh_mcp::McpPlugin::NAME),
            // After approval: its `remember` gate is inner to the approval listener.
            null(MEMORY_ROW, dsh_memory::MemoryPlugin::NAME),
            null(GOAL_ROW, dsh_modes::goal::GoalPlugin::NAME),
            null(
                REPEAT_TOOL_REMINDER_ROW,
                dsh_modes::guard::RepeatToolReminderPlugin::NAME,
            ),
            null(AGENTS_ROW, dsh_agent::AgentsPlugin::NAME),
            null(AGENT_LOOP_ROW, dsh_agent_loop::AgentLoopPlugin::NAME),
            null(SUBAGENTS_ROW, dsh_subagents::SubagentsPlugin::NAME),
        ],
    }
}

/// Mounts the PostgreSQL session store in the persistence row (`[store] backend =
/// "postgres"`); its config is derived from `[store]` at boot like the file store's.
pub(crate) fn select_postgres(composition: &mut Composition) {
    for row in &mut composition.rows {
        if row.id == PERSISTENCE_ROW {
            row.plugin = dsh_store_postgres::PostgresPersistencePlugin::NAME.to_owned();
        }
    }
}

/// Applies the file's rows in order: an existing id is patched (config replaced, disabled
/// or enabled), a new id with a `plugin` is appended. All or nothing.
pub(crate) fn patch_composition(
    composition: &mut Composition,
    row_sources: &mut BTreeMap<String, Source>,
    patches: &[PluginPatch],
    settings_path: &Path,
) -> Result<(), ConfigError> {
    let mut next = composition.clone();
    let mut sources = row_sources.clone();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for patch in patches {
        let key = |field: &str| format!("plugins[{}].{field}", patch.index);
        let at = |line: u32| Location::File {
            path: settings_path.to_path_buf(),
            line,
        };
        let id = patch.id.value.as_str();
        if let Some(first) = seen.insert(id, patch.index) {
            return Err(ConfigError::Inconsistent {
                at: at(patch.id.line),
                key: key("id"),
                message: format!(
                    "row `{id}` is already patched by plugins[{first}]; merge the two entries"
                ),
            });
        }
        let mut ops = Vec::new();
        match next.rows.iter().find(|r| r.id == id) {
            Some(row) => {
                if let Some(plugin) = &patch.plugin {
                    if plugin.value != row.plugin {
                        return Err(ConfigError::Inconsistent {
                            at: at(plugin.line),
                            key: key("plugin"),
                            message: format!(
                                "row `{id}` mounts plugin `{}`; use a new id to add another plugin",
                                row.plugin
                            ),
                        });
                    }
                }
                if let Some(config) = &patch.config {
                    ops.push(PatchOp::Replace {
                        id: id.to_owned(),
                        config: config.value.clone(),
                    });
                }
            }
            None => {
                let Some(plugin) = &patch.plugin else {
                    let ids: Vec<&str> = next.rows.iter().map(|r| r.id.as_str()).collect();
                    let hint = match closest(id, &ids) {
                        Some(near) => format!("did you mean `{near}`? "),
                        None => String::new(),
                    };
                    return Err(ConfigError::Inconsistent {
                        at: at(patch.id.line),
                        key: key("id"),
                        message: format!(
                            "no row is named `{id}`; {hint}to add a new row, also set `plugin`"
                        ),
                    });
                };
                let mut row = Row::new(id, plugin.value.clone(), Value::Null);
                if let Some(config) = &patch.config {
                    row.config = config.value.clone();
                }
                ops.push(PatchOp::Insert { row, after: None });
            }
        }
        match patch.disabled.as_ref().map(|d| d.value) {
            Some(true) => ops.push(PatchOp::Disable { id: id.to_owned() }),
            Some(false) => ops.push(PatchOp::Enable { id: id.to_owned() }),
            None => {}
        }
        next.patch(ops).map_err(|error| ConfigError::Inconsistent {
            at: at(patch.id.line),
            key: key("id"),
            message: format!("cannot apply the row patch: {error} ({})", error.code()),
        })?;
        sources.insert(
            id.to_owned(),
            Source::File {
                line: patch.id.line,
            },
        );
    }
    *composition = next;
    *row_sources = sources;
    Ok(())
}
