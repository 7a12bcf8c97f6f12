//! The repeat-tool-call reminder (row `repeat-tool-reminder`): a nudge for a model stuck
//! calling the same tool with the same arguments.
//!
//! A `tools/post-execute` listener (which also hears denied calls) keeps, per agent, the
//! last tracked call's identity (the tool name and its arguments with object keys sorted)
//! and how many times in a row it came. When the count is exactly a threshold (3, 5 and 8
//! by default) a reminder is put first among the result's additional contexts, so it lands
//! as a user message after the step's tool results; the result itself is never rewritten.
//! Tools outside `include` or inside `exclude` are transparent (they neither count nor
//! reset). A step whose batch holds a person's message starts every chain over. The state is
//! in memory only: a resumed session starts fresh.

use dsh_agent::PreStep;
use dsh_kernel::sync::lock;
use dsh_kernel::{BoxError, Context, Plugin};
use dsh_protocol::{ContentBlock, Message, MessageSource, Role, SessionId};
use dsh_session::SessionDisposed;
use dsh_tools::{PostExecute, PostExecuteDecision};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The plugin name the reminders carry in their source.
pub const REMINDER_PLUGIN: &str = "repeat-tool-reminder";

/// The reminder at the first threshold.
pub const GENTLE_REMINDER: &str = "You are repeating the exact same tool call with identical \
arguments. Carefully analyze the previous result before calling again: if the task is not \
complete, try a different approach or different arguments instead of repeating the call.";

/// The reminder at the later thresholds, naming the tool, the run length and the arguments.
pub fn detailed_reminder(tool: &str, count: u64, arguments: &str) -> String {
    format!(
        "Repeated tool call detected:\n- tool: {tool}\n- consecutive_calls: {count}\n- arguments: {arguments}\n\
The repeated calls are not making progress. Do not call this tool with these exact arguments \
again. Inspect the latest result and choose a different action, different arguments, or finish \
the task if enough evidence has been gathered."
    )
}

/// The plugin's configuration (`null`/`{}` = the defaults).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct RepeatToolReminderConfig {
    /// Counts that trigger a reminder: integers ≥ 2, no duplicates, not empty (`[3, 5, 8]`).
    pub thresholds: Vec<u64>,
    /// Tool-name patterns (`*` wildcard) to track; empty tracks every tool.
    pub include: Vec<String>,
    /// Tool-name patterns that are transparent to the chain.
    pub exclude: Vec<String>,
    /// How much of the canonical arguments the detailed reminder quotes (500).
    pub arguments_preview_chars: usize,
}

impl Default for RepeatToolReminderConfig {
    fn default() -> Self {
        Self {
            thresholds: vec![3, 5, 8],
            include: Vec::new(),
            exclude: Vec::new(),
            arguments_preview_chars: 500,
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReminderConfigError {
    #[error("repeat-tool-reminder: `thresholds` must not be empty")]
    NoThresholds,
    #[error(
        "repeat-tool-reminder: invalid threshold {0}: every threshold must be an integer >= 2"
    )]
    BadThreshold(u64),
    #[error("repeat-tool-reminder: `thresholds` must not contain duplicates")]
    Duplicate,
    #[error("repeat-tool-reminder: argumentsPreviewChars must be an integer >= 1")]
    NoPreview,
}

/// The validated settings.
#[derive(Clone, Debug)]
pub struct RepeatGuard {
    thresholds: Vec<u64>,
    include: Vec<String>,
    exclude: Vec<String>,
    preview: usize,
    chains: Arc<Mutex<HashMap<SessionId, Chain>>>,
}

#[derive(Clone, Debug)]
struct Chain {
    key: String,
    count: u64,
}

impl RepeatGuard {
    pub fn new(config: RepeatToolReminderConfig) -> Result<Self, ReminderConfigError> {
        let mut thresholds = config.thresholds;
        if thresholds.is_empty() {
            return Err(ReminderConfigError::NoThresholds);
        }
        if let Some(bad) = thresholds.iter().find(|t| **t < 2) {
            return Err(ReminderConfigError::BadThreshold(*bad));
        }
        thresholds.sort_unstable();
        if thresholds.windows(2).any(|w| w[0] == w[1]) {
            return Err(ReminderConfigError::Duplicate);
        }
        if config.arguments_preview_chars == 0 {
            return Err(ReminderConfigError::NoPreview);
        }
        Ok(Self {
            thresholds,
            include: config.include,
            exclude: config.exclude,
            preview: config.arguments_preview_chars,
            chains: Arc::default(),
        })
    }

    fn tracked(&self, tool: &str) -> bool {
        if !self.include.is_empty() && !self.include.iter().any(|p| wildcard(p, tool)) {
            return false;
        }
        !self.exclude.iter().any(|p| wildcard(p, tool))
    }

    /// Counts one finished call of `agent`; the reminder when the count is a threshold.
    pub fn observe(&self, agent: &SessionId, tool: &str, arguments: &Value) -> Option<Message> {
        if !self.tracked(tool) {
            return None;
        }
        let canonical = canonical(arguments);
        let key = Value::from(vec![Value::from(tool), Value::from(canonical.clone())]).to_string();
        let count = {
            let mut chains = lock(&self.chains);
            let count = match chains.get(agent) {
                Some(chain) if chain.key == key => chain.count + 1,
                _ => 1,
            };
            chains.insert(agent.clone(), Chain { key, count });
            count
        };
        if !self.thresholds.contains(&count) {
            return None;
        }
        let text = if Some(&count) == self.thresholds.first() {
            GENTLE_REMINDER.to_owned()
        } else {
            detailed_reminder(tool, count, &preview(&canonical, self.preview))
        };
        let mut extra = Map::new();
        extra.insert("form".into(), json!("notice"));
        extra.insert("summary".into(), json!(format!("{tool} × {count}")));
        Some(Message::new(
            Role::User,
            vec![ContentBlock::text(text)],
            MessageSource::Plugin {
                plugin: REMINDER_PLUGIN.into(),
                extra,
            },
        ))
    }

    /// A person spoke: repetition across their message is not a loop.
    pub fn reset(&self, agent: &SessionId) {
        lock(&self.chains).remove(agent);
    }
}

/// `JSON.stringify` of the value with object keys sorted at every depth.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for key in keys {
                    out.insert(key.clone(), sorted(&map[key]));
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// The first `cap` characters and how many more there were.
fn preview(canonical: &str, cap: usize) -> String {
    let total = canonical.chars().count();
    if total <= cap {
        return canonical.to_owned();
    }
    let head: String = canonical.chars().take(cap).collect();
    format!("{head}… (+{} more chars)", total - cap)
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters.
fn wildcard(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

/// Mounts the reminder: see the module docs.
#[derive(Debug)]
pub struct RepeatToolReminderPlugin;

impl Plugin for RepeatToolReminderPlugin {
    const NAME: &'static str = "repeat-tool-reminder";
    type Config = RepeatToolReminderConfig;

    fn apply(ctx: &Context, config: RepeatToolReminderConfig) -> Result<(), BoxError> {
        let guard = RepeatGuard::new(config)?;
        let observer = guard.clone();
        ctx.on_waterfall::<PostExecute, _, _>(move |args, next| {
            let guard = observer.clone();
            async move {
                // Count first, whatever the inner listeners decide; never veto.
                let reminder = args.exec.caller().and_then(|caller| {
                    guard.observe(caller.id(), args.exec.name(), args.exec.arguments())
                });
                let decision = next.run().await?;
                let Some(reminder) = reminder else {
                    return Ok(decision);
                };
                Ok(match decision {
                    PostExecuteDecision::Accept {
                        content,
                        value,
                        mut additional_contexts,
                    } => {
                        additional_contexts.insert(0, reminder);
                        PostExecuteDecision::Accept {
                            content,
                            value,
                            additional_contexts,
                        }
                    }
                    PostExecuteDecision::Block {
                        feedback,
                        mut additional_contexts,
                    } => {
                        additional_contexts.insert(0, reminder);
                        PostExecuteDecision::Block {
                            feedback,
                            additional_contexts,
                        }
                    }
                })
            }
        })?
        .forget();
        let resetter = guard.clone();
        ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
            let guard = resetter.clone();
            async move {
                if args
                    .messages
                    .iter()
                    .any(|m| matches!(m.source, MessageSource::User { .. }))
                {
                    guard.reset(args.agent.id());
                }
                next.run().await
            }
        })?
        .forget();
        ctx.on::<SessionDisposed>(move |session| {
            guard.reset(session.id());
            Ok(())
        })?
        .forget();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_like_the_original() {
        assert!(wildcard("todo_write", "todo_write"));
        assert!(!wildcard("todo_write", "todo_writer"));
        assert!(wildcard("mcp__*", "mcp__fs__read"));
        assert!(wildcard("*_goal", "get_goal"));
        assert!(wildcard("a*b*c", "aXbYc"));
        assert!(!wildcard("a*b*c", "aXc"));
        assert!(wildcard("*", "anything"));
    }

    #[test]
    fn arguments_are_canonical_and_previews_are_cut() {
        assert_eq!(
            canonical(&json!({"b": 1, "a": {"d": [1, {"z": 0, "y": 1}], "c": null}})),
            r#"{"a":{"c":null,"d":[1,{"y":1,"z":0}]},"b":1}"#
        );
        assert_eq!(preview("abcdef", 4), "abcd… (+2 more chars)");
        assert_eq!(preview("abc", 4), "abc");
    }

    #[test]
    fn bad_configurations_are_refused() {
        let config = |thresholds: Vec<u64>| RepeatToolReminderConfig {
            thresholds,
            ..Default::default()
        };
        assert_eq!(
            RepeatGuard::new(config(vec![])).unwrap_err(),
            ReminderConfigError::NoThresholds
        );
        assert_eq!(
            RepeatGuard::new(config(vec![1, 3])).unwrap_err(),
            ReminderConfigError::BadThreshold(1)
        );
        assert_eq!(
            RepeatGuard::new(config(vec![3, 3])).unwrap_err(),
            ReminderConfigError::Duplicate
        );
    }

    #[test]
    fn counts_fire_exactly_at_the_thresholds() {
        let guard = RepeatGuard::new(RepeatToolReminderConfig::default()).unwrap();
        let agent = SessionId::from("a");
        let fired: Vec<u64> = (1..=10)
            .filter(|_| guard.observe(&agent, "grep", &json!({"q": "x"})).is_some())
            .collect::<Vec<_>>()
            .into_iter()
            .collect();
        assert_eq!(fired.len(), 3);
        let agent = SessionId::from("b");
        let counts: Vec<bool> = (1..=10)
            .map(|_| guard.observe(&agent, "grep", &json!({"q": "x"})).is_some())
            .collect();
        assert_eq!(
            counts,
            [false, false, true, false, true, false, false, true, false, false]
        );
    }
}
