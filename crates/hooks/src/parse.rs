//! Reading one hooks file: `{"hooks": {...}}` (a settings file or a `hooks.json`) or the bare
//! event map, into groups of commands.
//!
//! A problem never costs more than it must: a file that is not JSON loads nothing, and every
//! other problem drops only the group or hook it is in. Each becomes a [`LoadNotice`] naming
//! the file, the line and the key. Events dsh does not support are ignored before anything
//! under them is read, so a broken matcher there cannot disable the file.

use crate::config::{Dialect, HookSource};
use crate::event::HookEvent;
use crate::matcher::Matcher;
use serde_json::{Map, Value};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One problem found while loading hooks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadNotice {
    pub path: PathBuf,
    /// 1-based, when known.
    pub line: Option<usize>,
    /// The JSON key path, e.g. `hooks.PreToolUse[0].matcher`.
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for LoadNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hooks: {}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// One command hook.
#[derive(Clone, Debug)]
pub struct HookCommand {
    pub command: String,
    /// `timeout` (Codex also `timeoutSec`), in seconds in the file.
    pub timeout: Option<Duration>,
}

/// A matcher and its hooks, under one event of one file.
#[derive(Clone, Debug)]
pub struct HookGroup {
    pub event: HookEvent,
    pub dialect: Dialect,
    /// The pattern as written; `None` when the group matches everything.
    pub matcher_text: Option<String>,
    pub matcher: Matcher,
    pub hooks: Vec<HookCommand>,
}

/// What `parse_file` substitutes in commands (Claude Code dialect only).
#[derive(Clone, Debug, Default)]
pub struct Substitutions {
    pub project_dir: Option<String>,
    pub plugin_root: Option<String>,
}

/// Reads `source` from disk; a missing file is no hooks and no notice.
pub fn load_source(
    source: &HookSource,
    subst: &Substitutions,
    notices: &mut Vec<LoadNotice>,
) -> Vec<HookGroup> {
    match std::fs::read_to_string(&source.path) {
        Ok(text) => parse_file(&source.path, &text, source.dialect, subst, notices),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => {
            notices.push(LoadNotice {
                path: source.path.clone(),
                line: None,
                key: None,
                message: format!("cannot read: {error}"),
            });
            Vec::new()
        }
    }
}

/// Parses one file's text. A top-level `"dialect": "codex"` (or `"claude-code"`) overrides
/// `dialect`.
pub fn parse_file(
    path: &Path,
    text: &str,
    dialect: Dialect,
    subst: &Substitutions,
    notices: &mut Vec<LoadNotice>,
) -> Vec<HookGroup> {
    let mut p = FileParser {
        path,
        text,
        notices,
    };
    let root: Value = match serde_json::from_str(text) {
        Ok(root) => root,
        Err(error) => {
            p.notices.push(LoadNotice {
                path: path.to_path_buf(),
                line: Some(error.line()),
                key: None,
                message: format!("not valid JSON (column {}): {error}", error.column()),
            });
            return Vec::new();
        }
    };
    let Some(object) = root.as_object() else {
        p.notice(&[], "the file must hold a JSON object");
        return Vec::new();
    };
    let dialect = match object.get("dialect") {
        None => dialect,
        Some(Value::String(name)) if name == "codex" => Dialect::Codex,
        Some(Value::String(name)) if name == "claude-code" => Dialect::ClaudeCode,
        Some(other) => {
            p.notice(
                &["dialect"],
                &format!("must be \"claude-code\" or \"codex\", not {other}; using the default"),
            );
            dialect
        }
    };
    let (map, prefix): (&Map<String, Value>, &str) = match object.get("hooks") {
        Some(Value::Object(map)) => (map, "hooks"),
        Some(_) => {
            p.notice(&["hooks"], "must be an object of events");
            return Vec::new();
        }
        // A settings file without hooks has none; a bare map is the events themselves.
        None => (object, ""),
    };
    let mut groups = Vec::new();
    for (name, value) in map {
        if prefix.is_empty() && name == "dialect" {
            continue;
        }
        let Some(event) = HookEvent::parse(name).filter(|e| e.supported_by(dialect)) else {
            continue;
        };
        let key = join(prefix, name);
        let Some(list) = value.as_array() else {
            p.notice_key(&key, name, "must be an array of groups");
            continue;
        };
        for (index, group) in list.iter().enumerate() {
            let group_key = format!("{key}[{index}]");
            if let Some(group) = p.group(event, dialect, group, &group_key, name, subst) {
                groups.push(group);
            }
        }
    }
    groups
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

struct FileParser<'a> {
    path: &'a Path,
    text: &'a str,
    notices: &'a mut Vec<LoadNotice>,
}

impl FileParser<'_> {
    fn notice(&mut self, keys: &[&str], message: &str) {
        let line = keys.last().map(|k| self.line_of(k, None));
        self.notices.push(LoadNotice {
            path: self.path.to_path_buf(),
            line,
            key: (!keys.is_empty()).then(|| keys.join(".")),
            message: message.to_owned(),
        });
    }

    /// A notice for `key`, placed at the line of the first `needle` (a key or string) in the
    /// file.
    fn notice_key(&mut self, key: &str, needle: &str, message: &str) {
        let line = self.line_of(needle, None);
        self.notices.push(LoadNotice {
            path: self.path.to_path_buf(),
            line: Some(line),
            key: Some(key.to_owned()),
            message: message.to_owned(),
        });
    }

    /// The 1-based line of the first `"needle"` in the text at or after byte `from`, or of
    /// the first mention at all; line 1 when it is not there.
    fn line_of(&self, needle: &str, from: Option<usize>) -> usize {
        let quoted = Value::String(needle.to_owned()).to_string();
        let start = from.unwrap_or(0).min(self.text.len());
        let at = self
            .text
            .get(start..)
            .and_then(|rest| rest.find(&quoted))
            .map(|i| i + start)
            .or_else(|| self.text.find(&quoted));
        match at {
            Some(at) => self.text.get(..at).map_or(1, |b| b.lines().count().max(1)),
            None => 1,
        }
    }

    fn offset_of(&self, needle: &str) -> Option<usize> {
        self.text
            .find(&Value::String(needle.to_owned()).to_string())
    }

    fn group(
        &mut self,
        event: HookEvent,
        dialect: Dialect,
        group: &Value,
        key: &str,
        event_name: &str,
        subst: &Substitutions,
    ) -> Option<HookGroup> {
        let event_at = self.offset_of(event_name);
        let Some(group) = group.as_object() else {
            let line = self.line_of(event_name, None);
            self.push(line, key, "a group must be an object with `hooks`; skipped");
            return None;
        };
        let matcher_text = match group.get("matcher") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => {
                let line = self.line_of("matcher", event_at);
                self.push(
                    line,
                    &format!("{key}.matcher"),
                    "must be a string; group skipped",
                );
                return None;
            }
        };
        let matcher_text = matcher_text.filter(|_| event.has_matcher());
        let matcher = match Matcher::compile(dialect, matcher_text.as_deref()) {
            Ok(matcher) => matcher,
            Err(error) => {
                let needle = matcher_text.as_deref().unwrap_or("matcher");
                let line = self.line_of(needle, event_at);
                self.push(
                    line,
                    &format!("{key}.matcher"),
                    &format!("invalid regex: {error}; group skipped"),
                );
                return None;
            }
        };
        let Some(list) = group.get("hooks").and_then(Value::as_array) else {
            let line = self.line_of("hooks", event_at);
            self.push(
                line,
                &format!("{key}.hooks"),
                "must be an array; group skipped",
            );
            return None;
        };
        let mut hooks = Vec::new();
        for (index, hook) in list.iter().enumerate() {
            let hook_key = format!("{key}.hooks[{index}]");
            if let Some(hook) = self.hook(dialect, hook, &hook_key, event_at, subst) {
                hooks.push(hook);
            }
        }
        if hooks.is_empty() {
            return None;
        }
        let matcher_text = matcher_text.filter(|_| !matcher.matches_all());
        Some(HookGroup {
            event,
            dialect,
            matcher_text,
            matcher,
            hooks,
        })
    }

    fn hook(
        &mut self,
        dialect: Dialect,
        hook: &Value,
        key: &str,
        event_at: Option<usize>,
        subst: &Substitutions,
    ) -> Option<HookCommand> {
        let Some(hook) = hook.as_object() else {
            let line = self.line_of("hooks", event_at);
            self.push(line, key, "a hook must be an object; skipped");
            return None;
        };
        match hook.get("type") {
            None => {}
            Some(Value::String(kind)) if kind == "command" => {}
            Some(kind) => {
                let line = self.line_of("type", event_at);
                self.push(
                    line,
                    &format!("{key}.type"),
                    &format!("only `command` hooks run in dsh, not {kind}; skipped"),
                );
                return None;
            }
        }
        if dialect == Dialect::Codex && hook.get("async") == Some(&Value::Bool(true)) {
            let line = self.line_of("async", event_at);
            self.push(
                line,
                &format!("{key}.async"),
                "async hooks are not supported; skipped",
            );
            return None;
        }
        let Some(command) = hook.get("command").and_then(Value::as_str) else {
            let line = self.line_of("command", event_at);
            self.push(
                line,
                &format!("{key}.command"),
                "must be a string; hook skipped",
            );
            return None;
        };
        let mut timeout = hook.get("timeout");
        if dialect == Dialect::Codex && timeout.is_none() {
            timeout = hook.get("timeoutSec");
        }
        let timeout = match timeout {
            None | Some(Value::Null) => None,
            Some(value) => match value.as_f64().filter(|s| s.is_finite() && *s > 0.0) {
                Some(seconds) => Some(Duration::from_secs_f64(seconds.min(86_400.0))),
                None => {
                    let line = self.line_of("timeout", event_at);
                    self.push(
                        line,
                        &format!("{key}.timeout"),
                        "must be a positive number of seconds; using the default",
                    );
                    None
                }
            },
        };
        let command = match dialect {
            Dialect::ClaudeCode => substitute(command, subst),
            Dialect::Codex => command.to_owned(),
        };
        Some(HookCommand { command, timeout })
    }

    fn push(&mut self, line: usize, key: &str, message: &str) {
        self.notices.push(LoadNotice {
            path: self.path.to_path_buf(),
            line: Some(line),
            key: Some(key.to_owned()),
            message: message.to_owned(),
        });
    }
}

fn substitute(command: &str, subst: &Substitutions) -> String {
    let mut out = command.to_owned();
    if let Some(dir) = &subst.project_dir {
        out = out.replace("${CLAUDE_PROJECT_DIR}", dir);
    }
    if let Some(root) = &subst.plugin_root {
        out = out.replace("${CLAUDE_PLUGIN_ROOT}", root);
    }
    out
}
