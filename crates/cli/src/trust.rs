//! Workspace trust: configuration a repository brings that makes dsh run programs — the
//! workspace's `.mcp.json` (server commands) and the `hooks` of `<workspace>/.claude/settings.json`
//! and `.claude/settings.local.json` (hook commands) — is ignored until the person trusts that
//! directory. Files under `$DSH_HOME` and `~/.claude` are the person's own and always count.
//!
//! The list of trusted directories is `$DSH_HOME/trusted.json`, keyed by canonical path and
//! written atomically (temporary file, fsync, rename, fsync of the directory):
//!
//! ```json
//! { "trusted": ["/home/me/src/project"] }
//! ```
//!
//! Trust is exact: trusting `/repo` does not trust `/repo/sub` (whose own `.mcp.json` is a
//! different file). `dsh trust [DIR]`, `dsh trust --revoke DIR` and `dsh trust --list` edit it;
//! the interactive UI asks once per workspace when such files exist.
//!
//! Loading code asks [`TrustDecision::for_workspace`] (or [`is_trusted`]) and reads project
//! files only when it [`allows_project_files`](TrustDecision::allows_project_files).

use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The trust list's file name inside `$DSH_HOME`.
pub const TRUST_FILE: &str = "trusted.json";
/// The largest trust list read (a path per line of a few hundred bytes; more is a mistake).
const TRUST_MAX_BYTES: u64 = 4 << 20;

/// Whether the project files of `workspace` may be used: true when its canonical path is in
/// `$DSH_HOME/trusted.json`. An unreadable or damaged list trusts nothing.
pub fn is_trusted(dsh_home: &Path, workspace: &Path) -> bool {
    let Ok(canonical) = workspace.canonicalize() else {
        return false;
    };
    read_list(dsh_home).is_ok_and(|list| list.trusted.contains(&canonical))
}

/// What the configuration loading does with a workspace's project files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrustDecision {
    /// In the trust list: project files load.
    Trusted,
    /// Not in the list: project files are skipped (a headless run says so once).
    Untrusted,
    /// The person said "no" in the interactive UI: skipped for this session, asked again
    /// next time.
    DeclinedForSession,
}

impl TrustDecision {
    /// The stored decision for `workspace`.
    pub fn for_workspace(dsh_home: &Path, workspace: &Path) -> Self {
        if is_trusted(dsh_home, workspace) {
            TrustDecision::Trusted
        } else {
            TrustDecision::Untrusted
        }
    }

    /// Whether project-supplied executable configuration may load.
    pub fn allows_project_files(self) -> bool {
        self == TrustDecision::Trusted
    }
}

/// A failure reading or writing the trust list.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
    #[error("{}: damaged trust list ({reason}); fix or delete it", path.display())]
    Damaged { path: PathBuf, reason: String },
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustList {
    #[serde(default)]
    trusted: Vec<PathBuf>,
}

fn list_path(dsh_home: &Path) -> PathBuf {
    dsh_home.join(TRUST_FILE)
}

fn read_list(dsh_home: &Path) -> Result<TrustList, TrustError> {
    let path = list_path(dsh_home);
    match dsh_store::read_regular_text(&path, TRUST_MAX_BYTES) {
        Ok(text) => serde_json::from_str(&text).map_err(|error| TrustError::Damaged {
            path,
            reason: error.to_string(),
        }),
        Err(error) if error.is_not_found() => Ok(TrustList::default()),
        Err(error) => Err(TrustError::Io {
            path,
            reason: error.reason(),
        }),
    }
}

fn write_list(dsh_home: &Path, list: &TrustList) -> Result<(), TrustError> {
    let path = list_path(dsh_home);
    let io = |error: std::io::Error| TrustError::Io {
        path: path.clone(),
        reason: error.to_string(),
    };
    fs::create_dir_all(dsh_home).map_err(io)?;
    let mut text = serde_json::to_string_pretty(list).map_err(|e| io(std::io::Error::other(e)))?;
    text.push('\n');
    let temp = dsh_home.join(format!(".{TRUST_FILE}.{}.tmp", std::process::id()));
    let written = fs::File::create(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&temp, &path))
        .and_then(|()| fs::File::open(dsh_home)?.sync_all());
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.map_err(io)
}

/// The canonical form of `dir`, which must be an existing directory.
pub fn canonical_dir(dir: &Path) -> Result<PathBuf, TrustError> {
    let canonical = dir.canonicalize().map_err(|error| TrustError::Io {
        path: dir.to_path_buf(),
        reason: error.to_string(),
    })?;
    if !canonical.is_dir() {
        return Err(TrustError::Io {
            path: dir.to_path_buf(),
            reason: "not a directory".into(),
        });
    }
    Ok(canonical)
}

/// Adds `dir` to the trust list; returns its canonical path and whether it was new.
pub fn grant(dsh_home: &Path, dir: &Path) -> Result<(PathBuf, bool), TrustError> {
    let canonical = canonical_dir(dir)?;
    let mut list = read_list(dsh_home)?;
    if list.trusted.contains(&canonical) {
        return Ok((canonical, false));
    }
    list.trusted.push(canonical.clone());
    list.trusted.sort();
    write_list(dsh_home, &list)?;
    Ok((canonical, true))
}

/// Removes `dir` (canonicalised when it still exists, else as written) from the trust list;
/// returns the path removed, if it was there.
pub fn revoke(dsh_home: &Path, dir: &Path) -> Result<Option<PathBuf>, TrustError> {
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut list = read_list(dsh_home)?;
    let before = list.trusted.len();
    list.trusted.retain(|p| *p != key);
    if list.trusted.len() == before {
        return Ok(None);
    }
    write_list(dsh_home, &list)?;
    Ok(Some(key))
}

/// The trusted directories, sorted.
pub fn trusted_dirs(dsh_home: &Path) -> Result<Vec<PathBuf>, TrustError> {
    Ok(read_list(dsh_home)?.trusted)
}

/// The project-supplied executable configuration a workspace has: what trusting it enables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectConfig {
    /// `<workspace>/.mcp.json`, when present, with the servers it would start
    /// (`name: command line` or `name: url`).
    pub mcp_json: Option<(PathBuf, Vec<String>)>,
    /// `.claude/settings.json` / `.claude/settings.local.json` that have a `hooks` key, with
    /// the hook commands they would run.
    pub hook_files: Vec<(PathBuf, Vec<String>)>,
}

impl ProjectConfig {
    /// Looks at `workspace` (never runs anything). `env` expands `${VAR}` in server commands.
    pub fn scan(workspace: &Path, env: &dyn crate::config::Env) -> Self {
        let mut found = ProjectConfig::default();
        let mcp = workspace.join(crate::mcp_config::WORKSPACE_FILE);
        if let Ok(text) = dsh_store::read_regular_text(&mcp, crate::mcp_config::MCP_MAX_BYTES) {
            let file = crate::mcp_config::json::read(
                &mcp,
                &text,
                crate::mcp_config::Scope::Workspace,
                env,
            );
            let servers = file
                .servers
                .iter()
                .map(|s| format!("{}: {}", s.name, s.transport.describe()))
                .collect();
            found.mcp_json = Some((mcp, servers));
        }
        for name in ["settings.json", "settings.local.json"] {
            let path = workspace.join(".claude").join(name);
            let Ok(text) = dsh_store::read_regular_text(&path, crate::mcp_config::MCP_MAX_BYTES)
            else {
                continue;
            };
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
                // Unparsable: the hooks loader reports it; it may still hold hooks.
                found.hook_files.push((path, Vec::new()));
                continue;
            };
            let Some(hooks) = value.get("hooks") else {
                continue;
            };
            found.hook_files.push((path, hook_commands(hooks)));
        }
        found
    }

    /// Whether the workspace has anything trust would enable.
    pub fn is_empty(&self) -> bool {
        self.mcp_json.is_none() && self.hook_files.is_empty()
    }

    /// The files, for a notice ("`.mcp.json`, `.claude/settings.json`").
    pub fn file_names(&self, workspace: &Path) -> Vec<String> {
        let rel = |p: &Path| p.strip_prefix(workspace).unwrap_or(p).display().to_string();
        self.mcp_json
            .iter()
            .map(|(p, _)| rel(p))
            .chain(self.hook_files.iter().map(|(p, _)| rel(p)))
            .collect()
    }

    /// What would run, one line each: `MCP server fs: npx -y ...`, `hook: ./fmt.sh`.
    pub fn would_run(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .mcp_json
            .iter()
            .flat_map(|(_, servers)| servers.iter().map(|s| format!("MCP server {s}")))
            .collect();
        for (path, commands) in &self.hook_files {
            if commands.is_empty() {
                lines.push(format!("hooks of {}", path.display()));
            }
            lines.extend(commands.iter().map(|c| format!("hook: {c}")));
        }
        lines
    }
}

/// The `command` strings of a Claude Code `hooks` map (`{Event: [{matcher, hooks: [{command}]}]}`).
fn hook_commands(hooks: &serde_json::Value) -> Vec<String> {
    let mut commands = Vec::new();
    let Some(events) = hooks.as_object() else {
        return commands;
    };
    for groups in events.values() {
        for group in groups.as_array().into_iter().flatten() {
            for hook in group
                .get("hooks")
                .and_then(|h| h.as_array())
                .into_iter()
                .flatten()
            {
                if let Some(command) = hook.get("command").and_then(|c| c.as_str()) {
                    if !commands.iter().any(|c| c == command) {
                        commands.push(command.to_owned());
                    }
                }
            }
        }
    }
    commands
}

/// The one stderr line a headless run prints when it skipped project files.
pub fn untrusted_notice(workspace: &Path, project: &ProjectConfig) -> String {
    format!(
        "dsh: notice: this workspace is not trusted, so its {} {} ignored (nothing in them \
         runs); to use them: dsh trust {}",
        project.file_names(workspace).join(", "),
        if project.file_names(workspace).len() == 1 {
            "is"
        } else {
            "are"
        },
        shell_quote(&workspace.display().to_string())
    )
}

fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
