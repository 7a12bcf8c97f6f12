//! Tests of configuration loading: layers and provenance, error messages, and `config show`.

mod compaction;
mod errors;
mod layers;
mod models;
mod show;
mod store;

use super::*;
use dsh_llm::Modality;
use dsh_llm_openai::{MaxTokensField, ModelEntry, ReasoningReplay};
use dsh_tools_builtin::{ApprovalPolicy, SandboxMode};
use std::collections::BTreeMap;
use std::path::Path;

/// A temp `$DSH_HOME` holding `settings` (when given).
pub(super) fn home_with(settings: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if let Some(text) = settings {
        std::fs::write(dir.path().join(SETTINGS_FILE), text).unwrap();
    }
    dir
}

pub(super) fn env_of(home: &Path, vars: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    env.insert("DSH_HOME".into(), home.display().to_string());
    env
}

pub(super) fn load_with(
    settings: &str,
    vars: &[(&str, &str)],
    flags: &Overrides,
) -> Result<Settings, ConfigError> {
    let home = home_with(Some(settings));
    load(&env_of(home.path(), vars), flags)
}

/// The error message, with the temp path replaced by `settings.toml`.
pub(super) fn error_of(settings: &str) -> String {
    error_with(settings, &[], &Overrides::default())
}

pub(super) fn error_with(settings: &str, vars: &[(&str, &str)], flags: &Overrides) -> String {
    let home = home_with(Some(settings));
    let error = load(&env_of(home.path(), vars), flags).unwrap_err();
    let path = home.path().join(SETTINGS_FILE).display().to_string();
    error.to_string().replace(&path, "settings.toml")
}

pub(super) const VALID: &str = r#"
[model]
provider = "local"
model = "qwen3-coder"

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "LOCAL_KEY"
headers = { X-Title = "dsh" }
compat = { max_tokens_field = "max_completion_tokens", replay_reasoning = "tool-call-turns" }

[[providers.local.models]]
id = "qwen3-coder"
context_window = 131072
max_output_tokens = 8192
reasoning_efforts = ["low", "high"]
default_effort = "low"
input = ["text", "image"]

[providers.deepseek-official]
base_url = "https://gateway.example/deepseek"

[approval]
policy = "ask"
rules = [
  { action = "allow", tool = "bash", command_prefix = "cargo test" },
  { action = "deny", tool = "write", path = "secrets/**" },
]

[sandbox]
mode = "read-only"

[tools.bash]
enabled = false

[tools.web_fetch]
enabled = true
allow_private = true

[[plugins]]
id = "tools"
config = { max_parallel = 4 }

[[plugins]]
id = "audit"
plugin = "audit-log"
disabled = true
"#;
