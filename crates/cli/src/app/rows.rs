//! From settings to mountable rows: the plugin table, the configs computed from the settings
//! for the [`DERIVED_ROWS`](crate::config::DERIVED_ROWS), and the checks that must pass before
//! anything is mounted.

use super::error::AppError;
use crate::config::{self, ApiKeyStatus, Provider, Settings, Source, DEEPSEEK_ROUTE, OPENAI_ROUTE};
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
        .with::<dsh_store::CheckpointPolicyPlugin>()
        .with::<dsh_llm::LlmPlugin>()
        .with::<dsh_llm_openai::OpenAiPlugin>()
        .with::<dsh_agent_loop::RetryPlugin>()
        .with::<dsh_prompt::SystemPromptPlugin>()
        .with::<dsh_tools::ToolsPlugin>()
        .with::<dsh_tools_builtin::BuiltinToolsPlugin>()
        .with::<dsh_tools_builtin::ApprovalPlugin>()
        .with::<dsh_agent::AgentsPlugin>()
        .with::<dsh_agent_loop::AgentLoopPlugin>()
        .with::<dsh_mcp::McpPlugin>()
}

/// Every plugin-declared session event type the `dsh` binary links, one batch per owning
/// crate. Registered before anything reads a log ([`register_event_types`]), since knowing a
/// type is what lets a stored log holding it load, whichever plugins end up mounted.
pub static EVENT_TYPES: &[&[EventDeclaration]] = &[dsh_tools_builtin::approval::EVENT_TYPES];

/// Adds [`EVENT_TYPES`] to this process's session vocabulary; idempotent.
pub fn register_event_types() -> Result<(), SessionError> {
    EVENT_TYPES
        .iter()
        .try_for_each(|batch| dsh_session::register_event_types(batch))
}

/// Where session logs live: `$DSH_HOME/sessions`.
pub fn sessions_root(settings: &Settings) -> PathBuf {
    settings.home.value.join("sessions")
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
            config::PERSISTENCE_ROW => Some(json!({ "root": sessions_root(settings) })),
            config::LLM_OPENAI_ROW => serde_json::to_value(OpenAiConfig {
                user_id: user_id.clone(),
                ..openai_config(settings)
            })
            .ok(),
            config::TOOLS_BUILTIN_ROW => serde_json::to_value(builtin_tools_config(settings)).ok(),
            config::APPROVAL_ROW => serde_json::to_value(approval_config(settings)).ok(),
            _ => None,
        };
        if let Some(config) = derived {
            row.config = config;
        }
    }
    composition
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
            models: provider.models.value.clone(),
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

/// The persistence row's config as mounted (so the session commands read the same root, in
/// the same encoding, as runs write).
pub fn persistence_config(
    settings: &Settings,
) -> Result<dsh_store::JsonlPersistenceConfig, AppError> {
    let composition = boot_composition(settings);
    let row = composition
        .rows
        .iter()
        .find(|row| row.plugin == <dsh_store::JsonlPersistencePlugin as dsh_kernel::Plugin>::NAME)
        .filter(|row| !row.disabled);
    let Some(row) = row else {
        return Err(AppError::MissingPart {
            service: "session store",
            row: config::PERSISTENCE_ROW,
        });
    };
    serde_json::from_value(row.config.clone()).map_err(|error| {
        AppError::Mount(dsh_kernel::KernelError::InvalidConfig {
            id: row.id.clone(),
            plugin: row.plugin.clone(),
            message: error.to_string(),
        })
    })
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
