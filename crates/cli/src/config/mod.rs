//! Configuration: `$DSH_HOME/settings.toml`, environment overrides and command-line flags.
//!
//! Layers apply in order — built-in defaults, the settings file, environment variables,
//! flags ([`Overrides`]) — and every effective value is a [`Sourced`] that remembers the
//! layer that set it, so `dsh config show` can say why a value is what it is. Loading is all
//! or nothing: a problem anywhere is a [`ConfigError`] naming the file and line (or the env
//! var or flag), the full key, and what was expected; unknown keys get a "did you mean".
//!
//! ```toml
//! [model]
//! provider = "deepseek-official"        # a route below
//! model = "deepseek-v4-pro"
//!
//! [providers.local]                     # a new OpenAI-compatible route
//! base_url = "http://127.0.0.1:8080/v1"
//! api_key_env = "LOCAL_API_KEY"         # the variable's name, never the key
//! compat = { max_tokens_field = "max_completion_tokens" }
//! models = [{ id = "qwen3-coder", context_window = 131072, input = ["text"] }]
//!                                       # (an entry for a built-in model, such as
//!                                       # deepseek-v4-flash, changes only what it names)
//! max_sse_line_bytes = 16777216          # longest stream line or event (default 16 MiB)
//! max_response_bytes = 134217728         # most bytes of one response (default 128 MiB)
//!
//! [approval]
//! policy = "ask"                        # untrusted | ask | never (docs/safety.md)
//! rules = [                             # deny beats ask beats allow
//!   { action = "allow", tool = "bash", command_prefix = "cargo test" },
//!   { action = "ask", tool = "bash", command_prefix = "git push" },
//!   { action = "deny", tool = "write", path = "secrets/**" },
//! ]
//!
//! [sandbox]
//! mode = "workspace-write"              # read-only | workspace-write | danger-full-access
//!
//! [tools.web_fetch]
//! enabled = true
//! allow_private = false
//!
//! [compaction]                          # long sessions (docs/compaction.md)
//! threshold_ratio = 0.8                 # summarise older history at 80% of the window
//! retain_ratio = 0.16                   # keep the newest 16% verbatim (or retain_tokens)
//!
//! [store]                               # where sessions live (docs/postgres.md)
//! backend = "files"                     # files | postgres (then url or DSH_DATABASE_URL)
//!
//! [[plugins]]                           # patch a composition row by id
//! id = "tools"
//! config = { }
//! ```
//!
//! Secrets never enter the settings: a provider names the variable that holds its key and
//! only the variable's presence is recorded ([`ApiKeyStatus`]).
//!
//! The value types are the owning crates' own, not copies: the sandbox mode, approval policy
//! and rules of `dsh_tools_builtin`, the model entries and gateway switches of
//! `dsh_llm_openai`, the input modalities of `dsh_llm`. Closed word sets among them are
//! `dsh_protocol::words::Word`s, which is how the reader, the env layer and the flags list
//! the valid words in their errors.

mod compaction;
mod composition;
mod env;
mod error;
mod file;
mod mcp;
mod prices;
mod reader;
mod settings;
mod show;
mod source;
mod store;
mod tree;

pub use compaction::{
    CompactionSettings, Retention, SummarizerRoute, DEFAULT_RETAIN_RATIO,
    DEFAULT_SUMMARY_MAX_TOKENS, DEFAULT_THRESHOLD_RATIO,
};
pub use composition::{
    default_composition, AGENTS_ROW, AGENT_LOOP_ROW, APPROVAL_ROW, ATTACHMENTS_ROW, CHECKPOINT_ROW,
    COMPACTION_ROW, DERIVED_ROWS, GOAL_ROW, HOOKS_ROW, LLM_OPENAI_ROW, LLM_RETRY_ROW, LLM_ROW,
    MCP_ROW, MEMORY_ROW, PERSISTENCE_ROW, PLAN_MODE_ROW, REPEAT_TOOL_REMINDER_ROW, SESSIONS_ROW,
    SESSION_TITLE_ROW, SKILLS_ROW, SUBAGENTS_ROW, SYSTEM_PROMPT_ROW, TOOLS_BUILTIN_ROW, TOOLS_ROW,
    USER_QUESTIONS_ROW,
};
pub use env::{Env, ProcessEnv};
pub use error::{ConfigError, KeyHint};
pub use file::KNOWN_TOOLS;
pub(crate) use file::{check_url, URL_EXPECTED};
pub use prices::PriceSettings;
pub use settings::{
    ApiKeyStatus, ApprovalSettings, CompatSettings, HeaderValue, ModelChoice, Overrides, Provider,
    SandboxSettings, Settings, SkillSettings, StreamLimits, ToolSettings, UiSettings,
    DEEPSEEK_ROUTE, DEFAULT_MODEL, OPENAI_ROUTE,
};
pub use show::{render_json, render_text};
pub use source::{Location, Source, Sourced};
pub use store::{mask_url, DatabaseUrl, StoreBackend, StoreSettings, DATABASE_URL_ENV};
pub(crate) use tree::line_of;

use std::path::PathBuf;

/// The settings file's name inside `$DSH_HOME`.
pub const SETTINGS_FILE: &str = "settings.toml";
/// The largest settings file read (real ones are a few KiB; more is a mistake, or a device).
pub const SETTINGS_MAX_BYTES: u64 = 1 << 20;

/// `$DSH_HOME`: `--home`, else `DSH_HOME`, else `$HOME/.dsh`.
pub fn resolve_home(env: &dyn Env, flags: &Overrides) -> Result<Sourced<PathBuf>, ConfigError> {
    if let Some(home) = &flags.home {
        return Ok(Sourced::new(home.clone(), Source::Flag { flag: "--home" }));
    }
    if let Some(home) = env.get("DSH_HOME").filter(|v| !v.is_empty()) {
        return Ok(Sourced::new(
            PathBuf::from(home),
            Source::Env { var: "DSH_HOME" },
        ));
    }
    match env.get("HOME").filter(|v| !v.is_empty()) {
        Some(user_home) => Ok(Sourced::default_value(
            PathBuf::from(user_home).join(".dsh"),
        )),
        None => Err(ConfigError::NoHome),
    }
}

/// Loads the effective settings. A missing settings file means "all defaults"; an
/// unreadable or invalid one is an error, and so is one that is not a regular file or is
/// larger than [`SETTINGS_MAX_BYTES`] (it is never read: `/dev/zero` would never end and a
/// FIFO would never answer).
pub fn load(env: &dyn Env, flags: &Overrides) -> Result<Settings, ConfigError> {
    let home = resolve_home(env, flags)?;
    let path = home.value.join(SETTINGS_FILE);
    let file = match dsh_store::read_regular_text(&path, SETTINGS_MAX_BYTES) {
        Ok(text) => Some(file::read(&path, &text)?),
        Err(error) if error.is_not_found() => None,
        Err(error) => {
            return Err(ConfigError::Unreadable {
                reason: error.reason(),
                path,
            })
        }
    };
    settings::resolve(home, path, file, env, flags)
}

#[cfg(test)]
mod tests;
