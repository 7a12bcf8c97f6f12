//! From settings to mountable rows: the plugin table, the configs computed from the settings
//! for the [`DERIVED_ROWS`](crate::config::DERIVED_ROWS), and the checks that must pass before
//! anything is mounted.

use super::error::AppError;
use crate::config::{self, ApiKeyStatus, Provider, Settings, Source, DEEPSEEK_ROUTE, OPENAI_ROUTE};
use dsh_hooks::{Dialect, HookSource, HooksConfig, SourceScope};
use dsh_kernel::{Composition, PluginTable};
use dsh_llm_openai::{Compat, ModelCatalog, OpenAiConfig, RouteConfig};
use dsh_session::{EventDeclaration, SessionError};
use dsh_tools_builtin::{
    ApprovalSettings, BuiltinToolsConfig, ToolSelection, WebFetchSettings, BUILTIN_TOOL_NAMES,
};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Every plugin the `dsh` binary can mount, by name.
pub fn plugin_table() -> PluginTable {
    PluginTable::new()
        .with::<dsh_session::SessionsPlugin>()
        .with::<dsh_store::JsonlPersistencePlugin>()
        .with::<dsh_store_postgres::PostgresPersistencePlugin>()
        .with::<dsh_store::CheckpointPolicyPlugin>()
        .with::<dsh_attachments::AttachmentsPlugin>()
        .with::<dsh_llm::LlmPlugin>()
        .with::<dsh_llm_openai::OpenAiPlugin>()
        .with::<dsh_agent_loop::RetryPlugin>()
        .with::<dsh_compaction::CompactionPlugin>()
        .with::<dsh_prompt::SystemPromptPlugin>()
        .with::<dsh_tools::ToolsPlugin>()
        .with::<dsh_tools_builtin::BuiltinToolsPlugin>()
        .with::<dsh_tools_builtin::ApprovalPlugin>()
        .with::<dsh_jobs::JobsPlugin>()
        .with::<dsh_hooks::HooksPlugin>()
        .with::<dsh_skills::SkillsPlugin>()
        .with::<dsh_agent::AgentsPlugin>()
        .with::<dsh_agent_loop::AgentLoopPlugin>()
        .with::<dsh_subagents::SubagentsPlugin>()
        .with::<dsh_mcp::McpPlugin>()
        .with::<dsh_memory::MemoryPlugin>()
        .with::<dsh_modes::goal::GoalPlugin>()
        .with::<dsh_modes::guard::RepeatToolReminderPlugin>()
        .with::<dsh_modes::UserQuestionsPlugin>()
        .with::<dsh_modes::PlanModePlugin>()
        .with::<dsh_modes::SessionTitlePlugin>()
}

/// Every plugin-declared session event type the `dsh` binary links, one batch per owning
/// crate. Registered before anything reads a log ([`register_event_types`]), since knowing a
/// type is what lets a stored log holding it load, whichever plugins end up mounted.
pub static EVENT_TYPES: &[&[EventDeclaration]] = &[
    dsh_tools_builtin::approval::EVENT_TYPES,
    dsh_compaction::EVENT_TYPES,
    dsh_subagents::EVENT_TYPES,
    dsh_hooks::EVENT_TYPES,
    dsh_skills::EVENT_TYPES,
    dsh_modes::goal::EVENT_TYPES,
    dsh_modes::EVENT_TYPES,
];

/// Adds [`EVENT_TYPES`] to this process's session vocabulary, and the invariant companions
/// (the compaction bracket rules) to every session; idempotent. Companions sit here for the
/// same reason as the types: verify and resume must apply them with nothing mounted.
pub fn register_event_types() -> Result<(), SessionError> {
    EVENT_TYPES
        .iter()
        .try_for_each(|batch| dsh_session::register_event_types(batch))?;
    dsh_compaction::invariant::register()
}

const POSTGRES_PLUGIN: &str =
    <dsh_store_postgres::PostgresPersistencePlugin as dsh_kernel::Plugin>::NAME;

/// Where session logs live: `$DSH_HOME/sessions`.
pub fn sessions_root(settings: &Settings) -> PathBuf {
    settings.home.value.join("sessions")
}

/// Where image attachments live: `$DSH_HOME/attachments/v1` (the original's store, which
/// reads the same layout).
pub fn attachments_root(settings: &Settings) -> PathBuf {
    settings.home.value.join("attachments").join("v1")
}

/// The memory row's config: the index under `$DSH_HOME/memory`, notes beside the settings.
pub fn memory_config(settings: &Settings) -> dsh_memory::MemoryConfig {
    dsh_memory::MemoryConfig {
        index: Some(
            settings
                .home
                .value
                .join("memory")
                .join(dsh_memory::INDEX_FILE),
        ),
        dsh_home: Some(settings.home.value.clone()),
        ..dsh_memory::MemoryConfig::default()
    }
}

/// The composition to mount: the settings' rows, with computed configs filled in for the
/// derived rows the settings file left at `null`.
pub fn boot_composition(settings: &Settings) -> Composition {
    boot_composition_with_user_id(settings, None)
}

/// [`boot_composition`], with the installation's anonymous id in the derived adapter config
/// (a hand-written `llm-openai` row config is left as written).
pub fn boot_composition_with_user_id(settings: &Settings, user_id: Option<String>) -> Composition {
    let mut composition = settings.composition.clone();
    for row in &mut composition.rows {
        if !row.config.is_null() {
            continue;
        }
        let derived = match row.id.as_str() {
            config::PERSISTENCE_ROW if row.plugin == POSTGRES_PLUGIN => {
                settings.store.postgres_config()
            }
            config::PERSISTENCE_ROW => Some(json!({ "root": sessions_root(settings) })),
            config::ATTACHMENTS_ROW => Some(json!({ "root": attachments_root(settings) })),
            config::LLM_OPENAI_ROW => serde_json::to_value(OpenAiConfig {
                user_id: user_id.clone(),
                ..openai_config(settings)
            })
            .ok(),
            config::TOOLS_BUILTIN_ROW => serde_json::to_value(builtin_tools_config(settings)).ok(),
            config::APPROVAL_ROW => serde_json::to_value(approval_config(settings)).ok(),
            config::COMPACTION_ROW => {
                serde_json::to_value(settings.compaction.plugin_config()).ok()
            }
            config::MEMORY_ROW => serde_json::to_value(memory_config(settings)).ok(),
            _ => None,
        };
        if let Some(config) = derived {
            row.config = config;
        }
    }
    composition
}

/// The hooks row's config: `$DSH_HOME/hooks.json`, then the `hooks` key of Claude Code's
/// user settings, Codex's `~/.codex/hooks.json` (Codex dialect), then Claude Code's project
/// and local settings. The project and local files come with the workspace and
/// load only when it is trusted; `home` is `$HOME` from the boot environment.
pub fn hooks_config(settings: &Settings, workspace: &Path, home: Option<&Path>) -> HooksConfig {
    let source = |path: PathBuf, dialect, scope| HookSource {
        path,
        dialect,
        scope,
    };
    let mut sources = vec![source(
        settings.home.value.join("hooks.json"),
        Dialect::ClaudeCode,
        SourceScope::Dsh,
    )];
    if let Some(home) = home {
        sources.push(source(
            home.join(".claude").join("settings.json"),
            Dialect::ClaudeCode,
            SourceScope::User,
        ));
        // Codex keeps its hooks in their own file, in its own dialect (regex matchers, its
        // payload shape); a person's own file, so trusted like the Claude user file.
        sources.push(source(
            home.join(".codex").join("hooks.json"),
            Dialect::Codex,
            SourceScope::User,
        ));
    }
    let claude = workspace.join(".claude");
    sources.push(source(
        claude.join("settings.json"),
        Dialect::ClaudeCode,
        SourceScope::Project,
    ));
    sources.push(source(
        claude.join("settings.local.json"),
        Dialect::ClaudeCode,
        SourceScope::Local,
    ));
    HooksConfig {
        sources,
        // Project hook files run code the repository supplies: only once the person
        // trusted the workspace (docs/trust.md).
        project_trusted: crate::trust::is_trusted(&settings.home.value, workspace),
        project_dir: Some(workspace.to_path_buf()),
        ..HooksConfig::default()
    }
}

/// Fills the hooks row's config when the settings left it `null` (it needs the workspace and
/// `$HOME`, which [`boot_composition`] does not know).
pub fn fill_hooks_row(composition: &mut Composition, config: &HooksConfig) {
    for row in &mut composition.rows {
        if row.id == config::HOOKS_ROW && row.config.is_null() {
            if let Ok(value) = serde_json::to_value(config) {
                row.config = value;
            }
        }
    }
}

/// Fills the `mcp` row's config with the resolved servers when the settings left it `null`
/// (it needs the workspace and its trust, which [`boot_composition`] does not know). Nothing
/// happens when no `mcp` row is mounted.
pub fn fill_mcp_row(composition: &mut Composition, mcp: &crate::mcp_config::McpConfig) {
    for row in &mut composition.rows {
        if row.id == config::MCP_ROW && row.config.is_null() {
            row.config = mcp.row_config();
        }
    }
}

/// Fills the `skills` row's config when the settings left it `null`: its roots depend on the
/// workspace and `$HOME`, which [`boot_composition`] does not know.
pub fn derive_skills_row(
    composition: &mut Composition,
    settings: &Settings,
    workspace: &Path,
    user_home: Option<&Path>,
) {
    for row in &mut composition.rows {
        if row.id == config::SKILLS_ROW && row.config.is_null() {
            if let Ok(value) = serde_json::to_value(skills_config(settings, workspace, user_home)) {
                row.config = value;
            }
        }
    }
}

/// The nearest ancestor of `workspace` (itself included) holding `.git`, else `workspace`.
pub fn project_root(workspace: &Path) -> PathBuf {
    workspace
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(workspace)
        .to_path_buf()
}

/// The skill and command roots, nearest first: the project's `.dsh`, `.agents` and `.claude`
/// folders, `[skills] dirs`, `$DSH_HOME`, then `~/.agents` and `~/.claude`. Skills and
/// commands are prompts, not code, so the project's load without workspace trust.
pub fn skills_config(
    settings: &Settings,
    workspace: &Path,
    user_home: Option<&Path>,
) -> dsh_skills::SkillsConfig {
    use dsh_skills::Root;
    let project = project_root(workspace);
    let home = &settings.home.value;
    let mut skill_roots = vec![
        Root::new(project.join(".dsh/skills"), "project-dsh"),
        Root::new(project.join(".agents/skills"), "project-agents"),
        Root::new(project.join(".claude/skills"), "project-claude"),
    ];
    skill_roots.extend(
        settings
            .skills
            .dirs
            .value
            .iter()
            .map(|dir| Root::new(dir.clone(), "custom")),
    );
    skill_roots.push(Root::new(home.join("skills"), "user-dsh"));
    let mut command_roots = vec![
        Root::new(project.join(".dsh/commands"), "project-dsh"),
        Root::new(project.join(".claude/commands"), "project-claude"),
        Root::new(home.join("commands"), "user-dsh"),
    ];
    if let Some(user) = user_home {
        skill_roots.push(Root::new(user.join(".agents/skills"), "user-agents"));
        skill_roots.push(Root::new(user.join(".claude/skills"), "user-claude"));
        command_roots.push(Root::new(user.join(".claude/commands"), "user-claude"));
    }
    let dedupe = |roots: &mut Vec<Root>| {
        let mut seen = std::collections::BTreeSet::new();
        roots.retain(|root| seen.insert(root.path.clone()));
    };
    dedupe(&mut skill_roots);
    dedupe(&mut command_roots);
    dsh_skills::SkillsConfig {
        skill_roots,
        command_roots,
        ..dsh_skills::SkillsConfig::default()
    }
}

/// What a surface says once before the first prompt about the workspace's extension
/// configuration: each skipped MCP file or server (file, line, key), and, in an untrusted
/// workspace that has project files that would run programs, which were ignored and the
/// command that trusts it.
pub fn workspace_notices(
    settings: &Settings,
    workspace: &Path,
    env: &dyn crate::config::Env,
) -> Vec<String> {
    let trust = crate::trust::TrustDecision::for_workspace(&settings.home.value, workspace);
    let mcp = crate::mcp_config::resolve(settings, workspace, trust, env);
    let mut notices: Vec<String> = mcp
        .problems
        .iter()
        .map(|p| format!("dsh: warning: MCP configuration: {p}"))
        .collect();
    if !trust.allows_project_files() {
        let project = crate::trust::ProjectConfig::scan(workspace, env);
        if !project.is_empty() {
            notices.push(crate::trust::untrusted_notice(workspace, &project));
        }
    }
    notices
}

/// Refuses to start a run whose model route cannot work: a required key that is not set.
pub fn check_credentials(settings: &Settings) -> Result<(), AppError> {
    let Some(provider) = settings.active_provider() else {
        return Ok(());
    };
    match &provider.api_key {
        ApiKeyStatus::NotSet { var } if key_required(provider) => {
            let hint = if provider.route == DEEPSEEK_ROUTE {
                format!(
                    "export it, or use --base-url with --provider {OPENAI_ROUTE} for a local server"
                )
            } else {
                format!(
                    "export it (provider route `{}` reads its API key from it)",
                    provider.route
                )
            };
            Err(AppError::MissingApiKey {
                var: var.clone(),
                route: provider.route.clone(),
                hint,
            })
        }
        _ => Ok(()),
    }
}

/// DeepSeek always needs its key; the generic route only when a key variable was configured
/// on purpose (local servers usually take none).
fn key_required(provider: &Provider) -> bool {
    match provider.route.as_str() {
        DEEPSEEK_ROUTE => true,
        _ => provider.api_key_env.value.is_some() && provider.api_key_env.source != Source::Default,
    }
}

/// The adapter's routes, one per provider in the settings, each with its effective base URL
/// spelled out (the settings already applied `*_BASE_URL` and `--base-url`).
pub fn openai_config(settings: &Settings) -> OpenAiConfig {
    OpenAiConfig {
        routes: settings.providers.iter().map(route_config).collect(),
        user_id: None,
    }
}

/// What the adapter will know about `model` on route `route` (its context window and where
/// that figure comes from, output caps, reasoning, input kinds); `None` for an unknown route
/// or a model the route refuses.
pub fn model_info(settings: &Settings, route: &str, model: &str) -> Option<dsh_llm::ModelInfo> {
    route_config(settings.provider(route)?).resolve_model(model)
}

fn route_config(provider: &Provider) -> RouteConfig {
    let base = if provider.route == DEEPSEEK_ROUTE {
        RouteConfig::deepseek()
    } else {
        RouteConfig::openai_compatible()
    };
    let compat = &provider.compat;
    RouteConfig {
        route: provider.route.clone(),
        base_url: Some(provider.base_url.value.clone()),
        base_url_env: None,
        default_base_url: provider.base_url.value.clone(),
        api_key_env: provider.api_key_env.value.clone().unwrap_or_default(),
        api_key_required: key_required(provider),
        headers: provider
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.value.expose().to_owned()))
            .collect(),
        catalog: ModelCatalog {
            models: provider.models.iter().map(|m| m.value.clone()).collect(),
            accept_unlisted: true,
            defaults: base.catalog.defaults.clone(),
        },
        compat: Compat {
            max_tokens_field: compat.max_tokens_field.value,
            send_thinking: compat.send_thinking.value,
            reasoning_replay: compat.replay_reasoning.value,
        },
        max_sse_line_bytes: provider.limits.max_sse_line_bytes.value,
        max_response_bytes: provider.limits.max_response_bytes.value,
        ..base
    }
}

/// `[tools]` as the built-in tools plugin's config: a switch for every built-in tool. Built as
/// the plugin's own type (not hand-written JSON), so the row cannot drift from what the plugin
/// reads.
pub fn builtin_tools_config(settings: &Settings) -> BuiltinToolsConfig {
    let flags = BUILTIN_TOOL_NAMES
        .iter()
        .map(|name| ((*name).to_owned(), settings.tools.is_enabled(name)))
        .collect();
    BuiltinToolsConfig {
        enabled: Some(ToolSelection::Flags(flags)),
        web_fetch: WebFetchSettings {
            enabled: settings.tools.is_enabled("web_fetch"),
            allow_private_addresses: settings.tools.web_fetch_allow_private.value,
        },
    }
}

/// `[approval]` as the approval plugin's config, in the plugin's own type.
pub fn approval_config(settings: &Settings) -> ApprovalSettings {
    ApprovalSettings {
        policy: settings.approval.policy.value,
        rules: settings
            .approval
            .rules
            .iter()
            .map(|rule| rule.value.clone())
            .collect(),
    }
}

/// Whether `path` is a directory we can work in, as its canonical form.
pub fn canonical_workspace(path: &Path) -> Result<PathBuf, AppError> {
    let canonical = path.canonicalize().map_err(|source| AppError::Workspace {
        path: path.to_path_buf(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(AppError::Workspace {
            path: path.to_path_buf(),
            source: std::io::Error::other("not a directory"),
        });
    }
    Ok(canonical)
}
