//! [`Hooks`]: the loaded hook table and the one way to fire a point — match, build the
//! payload, run each hook in file order, record, decode, merge.

use crate::codec::{decode, HookOutcome, RawDecision};
use crate::config::{Dialect, HooksConfig};
use crate::event::HookEvent;
use crate::log::{stderr_summary, HookInvoked, HookResult};
use crate::merge::{merge, Merged};
use crate::parse::{load_source, HookGroup, LoadNotice, Substitutions};
use crate::runner::{run, RunSpec};
use dsh_session::Session;
use serde_json::{Map, Value};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a point is about: for tools, the dsh name and (Claude Code dialect) its Claude Code
/// name; for `SessionStart`, the source; nothing for `UserPromptSubmit` and `Stop`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Subject<'a> {
    pub name: Option<&'a str>,
    pub claude_alias: Option<&'a str>,
}

impl<'a> Subject<'a> {
    pub fn none() -> Self {
        Self::default()
    }

    pub fn named(name: &'a str) -> Self {
        Self {
            name: Some(name),
            claude_alias: None,
        }
    }

    fn names(&self, dialect: Dialect) -> Vec<&'a str> {
        let mut names: Vec<&str> = self.name.into_iter().collect();
        if dialect == Dialect::ClaudeCode {
            names.extend(self.claude_alias);
        }
        names
    }
}

/// Where and for whom a point fires.
#[derive(Clone, Debug)]
pub struct PointContext {
    pub session_id: String,
    /// The session's log file; `""` when there is none.
    pub transcript_path: String,
    pub cwd: PathBuf,
    /// The open turn: its hooks are recorded in `log` and Codex payloads carry `turn_id`.
    pub turn: Option<u64>,
    pub log: Option<Session>,
    /// Codex payloads' `model`.
    pub model: String,
    pub cancel: CancellationToken,
}

/// The loaded hooks of one process.
#[derive(Debug)]
pub struct Hooks {
    groups: Vec<HookGroup>,
    notices: Vec<LoadNotice>,
    config: HooksConfig,
    env: Vec<(OsString, OsString)>,
    counter: AtomicU64,
}

impl Hooks {
    /// Reads every source of `config` in order (project ones only when trusted). `env` is the
    /// environment hooks start from (credentials are scrubbed from it here).
    pub fn load(config: HooksConfig, env: &[(OsString, OsString)]) -> Self {
        let subst = Substitutions {
            project_dir: config
                .project_dir
                .as_ref()
                .map(|dir| dir.to_string_lossy().into_owned()),
            plugin_root: None,
        };
        let mut notices = Vec::new();
        let mut groups = Vec::new();
        for source in &config.sources {
            if source.scope.is_project() && !config.project_trusted {
                if source.path.is_file() {
                    notices.push(LoadNotice {
                        path: source.path.clone(),
                        line: None,
                        key: None,
                        message: "skipped: the workspace is not trusted (`dsh trust` trusts it)"
                            .into(),
                    });
                }
                continue;
            }
            groups.extend(load_source(source, &subst, &mut notices));
        }
        Self::from_groups(groups, notices, config, env)
    }

    /// A table from already parsed groups.
    pub fn from_groups(
        groups: Vec<HookGroup>,
        notices: Vec<LoadNotice>,
        config: HooksConfig,
        env: &[(OsString, OsString)],
    ) -> Self {
        Self {
            groups,
            notices,
            config,
            env: dsh_tools_builtin::scrub::scrub_child_env(env),
            counter: AtomicU64::new(0),
        }
    }

    /// Problems met while loading, in file order.
    pub fn notices(&self) -> &[LoadNotice] {
        &self.notices
    }

    pub fn config(&self) -> &HooksConfig {
        &self.config
    }

    pub fn groups(&self) -> &[HookGroup] {
        &self.groups
    }

    /// Whether any group is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.groups.iter().any(|g| g.event == event)
    }

    /// The groups of `event` whose matcher accepts `subject`, in order.
    pub fn matching<'s>(&'s self, event: HookEvent, subject: Subject<'_>) -> Vec<&'s HookGroup> {
        self.groups
            .iter()
            .filter(|g| g.event == event)
            .filter(|g| !event.has_matcher() || g.matcher.matches(&subject.names(g.dialect)))
            .collect()
    }

    /// Runs every matching hook, one at a time in order, and merges what they said; `None`
    /// when no hook matched. `extra` adds the event's own payload fields for a dialect.
    pub async fn fire(
        &self,
        event: HookEvent,
        subject: Subject<'_>,
        point: &PointContext,
        extra: &(dyn Fn(Dialect) -> Map<String, Value> + Send + Sync),
    ) -> Option<Merged> {
        let groups = self.matching(event, subject);
        let first = groups.first()?.dialect;
        let mut payloads: [Option<Vec<u8>>; 2] = [None, None];
        let mut outcomes: Vec<HookOutcome> = Vec::new();
        for group in groups {
            let slot = match group.dialect {
                Dialect::ClaudeCode => 0,
                Dialect::Codex => 1,
            };
            let stdin = payloads[slot]
                .get_or_insert_with(|| payload_bytes(event, group.dialect, point, extra))
                .clone();
            for hook in &group.hooks {
                if point.cancel.is_cancelled() {
                    break;
                }
                let mut outcome = self.run_one(event, group, hook, stdin.clone(), point).await;
                // Codex hooks can only deny a tool call.
                if group.dialect == Dialect::Codex && outcome.decision == Some(RawDecision::Ask) {
                    outcome.decision = None;
                }
                outcomes.push(outcome);
            }
        }
        let mut merged = merge(&outcomes);
        merged.dialect = Some(first);
        Some(merged)
    }

    async fn run_one(
        &self,
        event: HookEvent,
        group: &HookGroup,
        hook: &crate::parse::HookCommand,
        stdin: Vec<u8>,
        point: &PointContext,
    ) -> HookOutcome {
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        let handler_id = format!("{}:{}:{n}", group.dialect.as_str(), event.as_str());
        let record = point.log.as_ref().zip(point.turn);
        if let Some((session, turn)) = record {
            let invoked = HookInvoked {
                turn,
                point: event.as_str().to_owned(),
                dialect: group.dialect,
                matcher: group.matcher_text.clone(),
                handler_id: handler_id.clone(),
            };
            if let Err(error) = session.append_typed(&invoked) {
                tracing::warn!(%error, "hooks: cannot record hook/invoked");
            }
        }
        let spec = RunSpec {
            command: hook.command.clone(),
            stdin,
            cwd: point.cwd.clone(),
            env: self.env_for(group.dialect, point),
            timeout: hook
                .timeout
                .unwrap_or(Duration::from_millis(self.config.default_timeout_ms)),
            max_output_bytes: self.config.max_output_bytes,
        };
        let output = run(spec, &point.cancel).await;
        let outcome = decode(event, output.exit_code, &output.stdout, &output.stderr);
        if outcome.updated_input.is_some() {
            tracing::warn!(handler = %handler_id, "hooks: updatedInput is not applied");
        }
        if let Some((session, turn)) = record {
            let result = HookResult {
                turn,
                point: event.as_str().to_owned(),
                handler_id,
                decision: outcome.record_decision().to_owned(),
                exit_code: output.exit_code,
                stderr_summary: stderr_summary(
                    &output.stderr,
                    self.config.stderr_summary_max_chars,
                ),
                duration_ms: output.duration.as_secs_f64() * 1000.0,
            };
            if let Err(error) = session.append_typed(&result) {
                tracing::warn!(%error, "hooks: cannot record hook/result");
            }
        }
        outcome
    }

    fn env_for(&self, dialect: Dialect, point: &PointContext) -> Vec<(OsString, OsString)> {
        let mut env = self.env.clone();
        if dialect == Dialect::ClaudeCode {
            let dir = self
                .config
                .project_dir
                .clone()
                .unwrap_or_else(|| point.cwd.clone());
            env.retain(|(k, _)| k != "CLAUDE_PROJECT_DIR");
            env.push(("CLAUDE_PROJECT_DIR".into(), dir.into_os_string()));
        }
        env
    }
}

/// The stdin of one point for `dialect`: the base fields, then the event's own.
pub fn payload(
    event: HookEvent,
    dialect: Dialect,
    point: &PointContext,
    extra: &(dyn Fn(Dialect) -> Map<String, Value> + Send + Sync),
) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("session_id".into(), point.session_id.clone().into());
    let transcript = match (dialect, point.transcript_path.is_empty()) {
        (Dialect::Codex, true) => Value::Null,
        _ => point.transcript_path.clone().into(),
    };
    object.insert("transcript_path".into(), transcript);
    object.insert(
        "cwd".into(),
        point.cwd.to_string_lossy().into_owned().into(),
    );
    object.insert("hook_event_name".into(), event.as_str().into());
    if dialect == Dialect::Codex {
        object.insert("model".into(), point.model.clone().into());
        object.insert("permission_mode".into(), "default".into());
        if let Some(turn) = point.turn {
            object.insert("turn_id".into(), turn.to_string().into());
        }
    }
    object.extend(extra(dialect));
    object
}

fn payload_bytes(
    event: HookEvent,
    dialect: Dialect,
    point: &PointContext,
    extra: &(dyn Fn(Dialect) -> Map<String, Value> + Send + Sync),
) -> Vec<u8> {
    let mut bytes = Value::Object(payload(event, dialect, point, extra))
        .to_string()
        .into_bytes();
    if dialect == Dialect::ClaudeCode {
        bytes.push(b'\n');
    }
    bytes
}
