//! A harness agent core with the goal and reminder plugins, scripted replies that read the
//! goal's id from the conversation, and a short digest of a whole log.

use dsh_agent::{Agent, AgentStatus};
use dsh_modes::goal::{GoalConfig, GoalDriver, GoalPlugin, Goals};
use dsh_modes::guard::{RepeatToolReminderConfig, RepeatToolReminderPlugin};
use dsh_protocol::ContentBlock;
use dsh_session::{EventData, SessionEvent};
use dsh_testkit::harness::{Harness, HarnessBuilder};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{tool_call_response, ScriptEntry};
use serde_json::{json, Value};
use std::sync::Arc;

pub fn register() {
    dsh_session::register_event_types(dsh_modes::goal::EVENT_TYPES).unwrap();
}

/// A harness with `goal` (config `config`) and, when `guard`, the repeat-tool reminder.
pub fn harness(builder: HarnessBuilder, config: Value, guard: bool) -> Harness {
    let h = harness_with(builder, config, None);
    if guard {
        h.ctx()
            .plugin::<RepeatToolReminderPlugin>(RepeatToolReminderConfig::default())
            .unwrap();
    }
    h
}

/// A harness with `goal` and the repeat-tool reminder with `guard` as its config.
pub fn harness_with(builder: HarnessBuilder, config: Value, guard: Option<Value>) -> Harness {
    register();
    let h = builder.build();
    let config: GoalConfig = serde_json::from_value(config).unwrap();
    h.ctx().plugin::<GoalPlugin>(config).unwrap();
    if let Some(guard) = guard {
        let guard: RepeatToolReminderConfig = serde_json::from_value(guard).unwrap();
        h.ctx().plugin::<RepeatToolReminderPlugin>(guard).unwrap();
    }
    h
}

pub fn goals(h: &Harness) -> Arc<Goals> {
    h.ctx().require::<Goals>().unwrap()
}

pub fn driver(h: &Harness) -> Arc<GoalDriver> {
    h.ctx().require::<GoalDriver>().unwrap()
}

/// Waits until the agent is idle and the driver has decided that no round follows; fails
/// the test after a generous guard (a hang guard, not a timing assertion).
pub async fn settle(h: &Harness, agent: &Arc<dyn Agent>) {
    let driver = driver(h);
    let settled = async {
        loop {
            agent.when_idle().await;
            driver.until_quiet(agent.id()).await;
            if agent.status() == AgentStatus::Idle && driver.is_quiet(agent.id()) {
                return;
            }
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(30), settled)
        .await
        .is_err()
    {
        panic!("the agent and its goal driver never settled");
    }
}

/// The `{goal:{id, revision, …}}` of the newest goal tool result the request holds.
fn last_goal(request: &dsh_llm::LlmRequest) -> Option<Value> {
    request.messages.iter().rev().find_map(|m| {
        m.content.iter().find_map(|block| match block {
            ContentBlock::ToolResult { content, .. } => content
                .iter()
                .filter_map(|b| b.as_text())
                .find_map(|t| serde_json::from_str::<Value>(t).ok())
                .filter(|v| v["goal"]["id"].is_string()),
            _ => None,
        })
    })
}

/// An `update_goal` call on the goal the conversation last showed, with `extra` arguments.
pub fn update_goal(call_id: &'static str, action: &'static str, extra: Value) -> ScriptEntry {
    ScriptEntry::respond(move |request| {
        let goal = last_goal(request).expect("a goal tool result precedes update_goal");
        let mut args = json!({
            "goal_id": goal["goal"]["id"],
            "revision": goal["goal"]["revision"],
            "action": action,
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            args[k] = v.clone();
        }
        tool_call_response(&[(call_id, "update_goal", &args.to_string())])
    })
}

pub fn call(call_id: &str, name: &str, args: Value) -> ScriptEntry {
    tool_call_response(&[(call_id, name, &args.to_string())]).into()
}

/// Replaces every `goal-<uuid>` with `goal-ID`.
fn mask_ids(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("goal-") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 5..];
        let id_len = tail
            .chars()
            .take_while(|c| c.is_ascii_hexdigit() || *c == '-')
            .count();
        if id_len == 36 {
            out.push_str("goal-ID");
            rest = &tail[36..];
        } else {
            out.push_str("goal-");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// Shortens the long prompt blocks to their tag and first fact.
fn shorten(line: &str) -> String {
    let mut line = line.to_owned();
    for (open, close, keep) in [
        ("<goal_round>", "</goal_round>", "Round: "),
        ("<goal_complete>", "</goal_complete>", ""),
        ("<goal_blocked>", "</goal_blocked>", "Blocked: "),
    ] {
        while let (Some(start), Some(end)) = (line.find(open), line.find(close)) {
            if end < start {
                break;
            }
            let block = &line[start..end + close.len()];
            let fact = if keep.is_empty() {
                String::new()
            } else {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(keep))
                    .map(|f| format!(" {f}"))
                    .unwrap_or_default()
            };
            let tag = format!("{}{fact}>", &open[..open.len() - 1]);
            line = format!("{}{tag}{}", &line[..start], &line[end + close.len()..]);
        }
    }
    line
}

/// One line per event, without chunks, headers and runtime-context snapshots; a
/// `goal/change` reads `goal/change <operation> r<revision> <phase> rounds=<n>`.
pub fn digest(events: &[Arc<SessionEvent>]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| {
            let line = match &event.data {
                EventData::AssistantChunk(_)
                | EventData::RequestHeader(_)
                | EventData::RequestContext(_) => return None,
                EventData::UserMessage(m) if matches!(&m.source, dsh_protocol::MessageSource::Plugin { plugin, .. } if plugin == dsh_protocol::SYSTEM_PROMPT_PLUGIN) => {
                    return None
                }
                EventData::Other { type_name, data } if type_name == "goal/change" => {
                    if data["operation"] == "clear" {
                        format!("goal/change clear r{}", data["cleared"]["revision"])
                    } else {
                        let reason = data["goal"]["blockedReason"]["code"]
                            .as_str()
                            .map(|c| format!(" ({c})"))
                            .unwrap_or_default();
                        format!(
                            "goal/change {} r{} {}{reason} rounds={}",
                            data["operation"].as_str().unwrap_or("?"),
                            data["goal"]["revision"],
                            data["goal"]["phase"].as_str().unwrap_or("?"),
                            data["roundsStarted"]
                        )
                    }
                }
                _ => outline(std::slice::from_ref(event)).remove(0),
            };
            let line = match line.find(" cites [") {
                Some(at) => line[..at].to_owned(),
                None => line,
            };
            Some(shorten(&mask_ids(&line)).replace(" +usage", ""))
        })
        .collect()
}
