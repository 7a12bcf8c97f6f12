//! The plugin's configuration: which files to read, in which dialect, and the runner's limits.
//!
//! The CLI derives it at boot (row `hooks`): `$DSH_HOME/hooks.json`, then in the Claude Code
//! dialect the `hooks` key of `~/.claude/settings.json`, `<workspace>/.claude/settings.json` and
//! `<workspace>/.claude/settings.local.json`. The two workspace files are project files: they
//! load only when [`HooksConfig::project_trusted`] is set, since they run code a repository
//! supplies.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Claude Code's default (and the original's) per-hook timeout: 600 s.
pub const DEFAULT_TIMEOUT_MS: u64 = 600_000;
/// How much of a hook's stderr a `hook/result` record keeps.
pub const DEFAULT_STDERR_SUMMARY_MAX_CHARS: usize = 500;
/// How many times Stop hooks may send one turn back to the model.
pub const DEFAULT_MAX_STOP_BLOCKS: u32 = 5;
/// How much of a hook's stdout, and of its stderr, is kept in memory (the rest is drained and
/// dropped).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// Which hook protocol a file speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    ClaudeCode,
    Codex,
}

impl Dialect {
    /// The wire name in `hook/*` records (`claude-code`, `codex`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }

    /// The `plugin` of the context messages this dialect's hooks add.
    pub fn plugin_name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "hooks-claude-code",
            Self::Codex => "hooks-codex",
        }
    }
}

/// Who supplied a file, which decides whether it needs trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceScope {
    /// `$DSH_HOME/hooks.json`: the person's own.
    Dsh,
    /// `~/.claude/settings.json`: the person's own.
    User,
    /// `<workspace>/.claude/settings.json`: the repository's; needs trust.
    Project,
    /// `<workspace>/.claude/settings.local.json`: lives in the repository; needs trust.
    Local,
}

impl SourceScope {
    /// Whether the file comes with the workspace (and so loads only when it is trusted).
    pub fn is_project(self) -> bool {
        matches!(self, Self::Project | Self::Local)
    }
}

/// One file to read hooks from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSource {
    pub path: PathBuf,
    pub dialect: Dialect,
    pub scope: SourceScope,
}

/// The `hooks` row's config (camelCase JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HooksConfig {
    /// Read in order; hooks of one event run in this order, then in file order. A missing
    /// file is skipped without a word.
    pub sources: Vec<HookSource>,
    /// Whether the workspace is trusted: project and local sources are skipped (with a
    /// notice) otherwise.
    pub project_trusted: bool,
    /// `${CLAUDE_PROJECT_DIR}` in commands and the `CLAUDE_PROJECT_DIR` variable; the
    /// session's cwd when unset.
    pub project_dir: Option<PathBuf>,
    pub default_timeout_ms: u64,
    pub stderr_summary_max_chars: usize,
    /// Stop hooks may send one turn back to the model at most this often; `0` means no cap
    /// (the original's behaviour, which loops forever on a hook that always blocks).
    pub max_stop_blocks: u32,
    pub max_output_bytes: usize,
}

impl Default for HooksConfig {
    fn default() -> Self {
        Self {
            sources: Vec::new(),
            project_trusted: false,
            project_dir: None,
            default_timeout_ms: DEFAULT_TIMEOUT_MS,
            stderr_summary_max_chars: DEFAULT_STDERR_SUMMARY_MAX_CHARS,
            max_stop_blocks: DEFAULT_MAX_STOP_BLOCKS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}
