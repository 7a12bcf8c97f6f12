//! What approval sees of one call: what kind of call it is, the facts rules match on, the
//! summary a person is shown, and the grant "allow for this session" would create.

use std::path::{Component, Path, PathBuf};

use dsh_tools::ToolExecution;
use serde_json::Value;

use super::command::{command_grant, grant_covers, is_read_only_command, CommandGrant};
use super::events::{GrantScope, SessionGrant};
use super::rules::CallFacts;
use crate::env::ToolEnv;
use crate::output::truncate_chars;

/// What kind of call it is, which decides when the policy asks about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Reads and bookkeeping (`read`, `glob`, `grep`, `todo_write`): only an ask rule or a
    /// hook puts them to a person.
    ReadOnly,
    /// A shell command; `read_only` when it is one of the read-only commands `untrusted`
    /// lets through.
    Command { read_only: bool },
    /// A `write` or `edit`: fenced by the sandbox in-process, like a command.
    FileChange,
    /// A `web_fetch`: the sandbox does not confine the network.
    Network,
    /// Not a built-in tool: only rules and other hooks apply.
    Unmanaged,
}

/// One call as approval sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallView {
    pub tool: String,
    pub gate: Gate,
    pub command: Option<String>,
    pub path: Option<String>,
    pub host: Option<String>,
    pub raw_arguments: String,
    pub summary: String,
    /// A bash call asking to leave the sandbox (`sandbox_permissions`): its body asks.
    pub escalation: bool,
}

/// Lines of an edit shown per side in a summary.
const DIFF_LINES: usize = 6;
/// Characters of any one summary line.
const LINE_CHARS: usize = 200;

impl CallView {
    pub fn of(exec: &ToolExecution) -> Self {
        let workspace = workspace_of(exec);
        Self::from_parts(
            exec.name(),
            exec.arguments(),
            exec.raw_arguments(),
            workspace.as_deref(),
        )
    }

    pub fn from_parts(tool: &str, args: &Value, raw: &str, workspace: Option<&Path>) -> Self {
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        let file_path = text("file_path");
        let path = file_path.as_deref().map(|p| display_path(p, workspace));
        let mut view = Self {
            tool: tool.to_string(),
            gate: Gate::Unmanaged,
            command: None,
            path: None,
            host: None,
            raw_arguments: raw.to_string(),
            summary: format!("{tool} {}", clip(raw)),
            escalation: false,
        };
        match tool {
            "bash" => {
                let command = text("command").unwrap_or_default();
                view.summary = match text("workdir").filter(|w| !w.trim().is_empty()) {
                    Some(dir) => format!("{command}\n(in {dir})"),
                    None => command.clone(),
                };
                view.gate = Gate::Command {
                    read_only: is_read_only_command(&command),
                };
                view.command = Some(command);
                view.escalation = args
                    .get("sandbox_permissions")
                    .is_some_and(|v| !v.is_null());
            }
            "write" => {
                let path = path.unwrap_or_default();
                let lines = text("content").map_or(0, |c| c.lines().count());
                let exists = file_path
                    .as_deref()
                    .is_some_and(|p| absolute(p, workspace).exists());
                let verb = if exists { "overwrite" } else { "create" };
                view.summary = format!("{verb} {path} ({lines} lines)");
                view.path = Some(path);
                view.gate = Gate::FileChange;
            }
            "edit" => {
                let path = path.unwrap_or_default();
                let old = text("old_string").unwrap_or_default();
                let new = text("new_string").unwrap_or_default();
                let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
                view.summary = edit_summary(&path, &old, &new, all);
                view.path = Some(path);
                view.gate = Gate::FileChange;
            }
            "web_fetch" => {
                let url = text("url").unwrap_or_default();
                view.host = reqwest::Url::parse(&url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_string));
                view.summary = format!("fetch {}", clip(&url));
                view.gate = Gate::Network;
            }
            "read" => {
                view.summary = format!("read {}", path.clone().unwrap_or_default());
                view.path = path;
                view.gate = Gate::ReadOnly;
            }
            "glob" | "grep" | "todo_write" => view.gate = Gate::ReadOnly,
            _ => {}
        }
        view
    }

    pub fn facts(&self) -> CallFacts<'_> {
        CallFacts {
            tool: &self.tool,
            command: self.command.as_deref(),
            path: self.path.as_deref(),
        }
    }

    /// What "allow for this session" would remember for this call.
    pub fn grant(&self) -> SessionGrant {
        let scope = if let Some(command) = &self.command {
            match command_grant(command) {
                CommandGrant::Prefix(prefix) => GrantScope::CommandPrefix(prefix),
                CommandGrant::Exact(command) => GrantScope::Command(command),
            }
        } else if let Some(path) = &self.path {
            GrantScope::Path(path.clone())
        } else if let Some(host) = &self.host {
            GrantScope::Host(host.clone())
        } else {
            GrantScope::Arguments(self.raw_arguments.clone())
        };
        SessionGrant {
            tool: self.tool.clone(),
            scope,
        }
    }

    /// Whether an earlier grant covers this call.
    pub fn covered_by(&self, grant: &SessionGrant) -> bool {
        if grant.tool != self.tool {
            return false;
        }
        match &grant.scope {
            GrantScope::CommandPrefix(prefix) => self
                .command
                .as_deref()
                .is_some_and(|c| grant_covers(&CommandGrant::Prefix(prefix.clone()), c)),
            GrantScope::Command(exact) => self
                .command
                .as_deref()
                .is_some_and(|c| grant_covers(&CommandGrant::Exact(exact.clone()), c)),
            GrantScope::Path(path) => self.path.as_ref() == Some(path),
            GrantScope::Host(host) => self.host.as_ref() == Some(host),
            GrantScope::Arguments(raw) => {
                self.command.is_none()
                    && self.path.is_none()
                    && self.host.is_none()
                    && &self.raw_arguments == raw
            }
        }
    }
}

/// The session's workspace: the tool environment's, else the session's working directory.
fn workspace_of(exec: &ToolExecution) -> Option<PathBuf> {
    if let Some(env) = exec.extensions().get::<ToolEnv>() {
        return Some(env.workspace().to_path_buf());
    }
    let caller = exec.caller()?;
    caller.session().header().cwd.as_ref().map(PathBuf::from)
}

fn absolute(path: &str, workspace: Option<&Path>) -> PathBuf {
    let path = Path::new(path);
    let joined = match workspace {
        Some(ws) if path.is_relative() => ws.join(path),
        _ => path.to_path_buf(),
    };
    normalize(&joined)
}

/// Resolves `.` and `..` without touching the disk (the file may not exist yet).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path as rules see it: relative to the workspace when inside it, absolute otherwise.
fn display_path(path: &str, workspace: Option<&Path>) -> String {
    let Some(ws) = workspace else {
        return path.to_string();
    };
    let full = absolute(path, Some(ws));
    match full.strip_prefix(ws) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => full.display().to_string(),
    }
}

fn clip(text: &str) -> String {
    let (head, cut) = truncate_chars(text, LINE_CHARS);
    if cut {
        format!("{head}…")
    } else {
        head.to_string()
    }
}

fn edit_summary(path: &str, old: &str, new: &str, all: bool) -> String {
    let (old_n, new_n) = (old.lines().count(), new.lines().count());
    let mut out = format!("edit {path}: -{old_n} +{new_n} lines");
    if all {
        out.push_str(" (every occurrence)");
    }
    for (sign, text, count) in [("-", old, old_n), ("+", new, new_n)] {
        for line in text.lines().take(DIFF_LINES) {
            out.push_str(&format!("\n{sign} {}", clip(line)));
        }
        if count > DIFF_LINES {
            out.push_str(&format!("\n{sign} … ({} more lines)", count - DIFF_LINES));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn view(tool: &str, args: Value) -> CallView {
        let raw = args.to_string();
        CallView::from_parts(tool, &args, &raw, Some(Path::new("/ws")))
    }

    #[test]
    fn paths_are_workspace_relative_inside_and_absolute_outside() {
        assert_eq!(display_path("src/../a.rs", Some(Path::new("/ws"))), "a.rs");
        assert_eq!(display_path("/ws/b/c", Some(Path::new("/ws"))), "b/c");
        assert_eq!(display_path("../x", Some(Path::new("/ws"))), "/x");
        assert_eq!(display_path("a", None), "a");
    }

    #[test]
    fn edits_are_summarized_with_a_short_diff() {
        let v = view(
            "edit",
            json!({"file_path": "a.rs", "old_string": "let x = 1;", "new_string": "let x = 2;\nlet y = 3;"}),
        );
        assert_eq!(
            v.summary,
            "edit a.rs: -1 +2 lines\n- let x = 1;\n+ let x = 2;\n+ let y = 3;"
        );
        assert_eq!(v.gate, Gate::FileChange);
        assert_eq!(v.path.as_deref(), Some("a.rs"));
    }

    #[test]
    fn grants_cover_matching_calls_only() {
        let status = view("bash", json!({"command": "git status"}));
        let grant = status.grant();
        assert_eq!(grant.scope, GrantScope::CommandPrefix("git status".into()));
        assert!(view("bash", json!({"command": "git status -s"})).covered_by(&grant));
        assert!(!view("bash", json!({"command": "git push"})).covered_by(&grant));
        let write = view("write", json!({"file_path": "a", "content": ""}));
        assert!(write.covered_by(&write.grant()));
        assert!(!view(
            "edit",
            json!({"file_path": "a", "old_string": "x", "new_string": "y"})
        )
        .covered_by(&write.grant()));
        let fetch = view("web_fetch", json!({"url": "https://example.com/a"}));
        assert_eq!(fetch.grant().scope, GrantScope::Host("example.com".into()));
        assert!(
            view("web_fetch", json!({"url": "https://example.com/b"})).covered_by(&fetch.grant())
        );
    }

    #[test]
    fn calls_are_classified_by_kind() {
        assert_eq!(view("grep", json!({"pattern": "x"})).gate, Gate::ReadOnly);
        assert_eq!(
            view("bash", json!({"command": "git status"})).gate,
            Gate::Command { read_only: true }
        );
        let touch = view(
            "bash",
            json!({"command": "touch x", "sandbox_permissions": "danger-full-access"}),
        );
        assert_eq!(
            (touch.gate, touch.escalation),
            (Gate::Command { read_only: false }, true)
        );
        assert_eq!(
            view("web_fetch", json!({"url": "https://example.com"})).gate,
            Gate::Network
        );
        assert_eq!(view("read", json!({"file_path": "a"})).gate, Gate::ReadOnly);
        let other = view("mcp__x__y", json!({"q": 1}));
        assert_eq!(other.gate, Gate::Unmanaged);
        assert_eq!(other.summary, "mcp__x__y {\"q\":1}");
    }
}
