//! What a resumed parent learns about its continuable children from its own log: which
//! were started, which settled (and how), which were still working when the process ended,
//! and what each last reported. The children become known again (status `ready`, resumed
//! from the store by `send_message`), and the parent reads one notice saying all of it.

use crate::child::Provider;
use crate::descriptor::{SubagentDescriptor, SubagentMode, SUBAGENT_DESCRIPTOR_VERSION};
use crate::outcome::blocks_text;
use crate::service::{ChildRecord, Inner};
use dsh_agent::Agent;
use dsh_protocol::{ContentBlock, Message, MessageSource, Role, SessionId};
use dsh_session::{EventData, SessionEvent};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// One child as its parent's log tells it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecoveredChild {
    pub id: SessionId,
    pub label: String,
    /// The summary line of its last settlement notice, if its last epoch settled.
    pub settled: Option<String>,
    pub closing: Option<String>,
    pub last_report: Option<String>,
}

fn source_field<'a>(message: &'a Message, key: &str) -> Option<&'a Value> {
    match &message.source {
        MessageSource::Other(map) => map.get(key),
        _ => None,
    }
}

/// Folds a parent's log into its continuable children, in start order.
pub fn recover_children(events: &[Arc<SessionEvent>]) -> Vec<RecoveredChild> {
    let mut out: Vec<RecoveredChild> = Vec::new();
    for event in events {
        match &event.data {
            EventData::ToolResult(result) => {
                let meta = result.meta.as_ref().map(|m| m.to_value());
                let Some(link) = meta.as_ref().and_then(|m| m.get("subagent")) else {
                    continue;
                };
                let Some(id) = link.get("id").and_then(Value::as_str) else {
                    continue;
                };
                match link.get("event").and_then(Value::as_str) {
                    Some("started") => out.push(RecoveredChild {
                        id: SessionId::new(id),
                        label: link
                            .get("label")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        settled: None,
                        closing: None,
                        last_report: None,
                    }),
                    Some("continued") => {
                        if let Some(child) = out.iter_mut().find(|c| c.id.as_str() == id) {
                            child.settled = None;
                        }
                    }
                    _ => {}
                }
            }
            EventData::UserMessage(message) => {
                let kind = source_field(message, "kind").and_then(Value::as_str);
                let sender = source_field(message, "senderSessionId").and_then(Value::as_str);
                let Some(child) = sender.and_then(|s| out.iter_mut().find(|c| c.id.as_str() == s))
                else {
                    continue;
                };
                match kind {
                    Some("subagent-settled") => {
                        child.settled = message
                            .content
                            .first()
                            .map(|b| blocks_text(std::slice::from_ref(b)));
                        let closing = blocks_text(message.content.get(2..).unwrap_or_default());
                        child.closing = (!closing.is_empty()).then_some(closing);
                    }
                    Some("subagent-report") => {
                        let report = blocks_text(message.content.get(1..).unwrap_or_default());
                        child.last_report = Some(report);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    out
}

/// The notice a resumed parent reads about its children.
pub fn recovery_text(children: &[RecoveredChild]) -> String {
    let mut text =
        String::from("This session was resumed. The background subagents you started earlier:");
    for child in children {
        let state = match &child.settled {
            Some(_) => "finished its last piece of work",
            None => "was interrupted before it finished (the process ended)",
        };
        text.push_str(&format!("\n- {} ({}) {state}.", child.id, child.label));
        if let Some(report) = &child.last_report {
            text.push_str(&format!(" Last report: {report}"));
        }
        if let Some(closing) = &child.closing {
            text.push_str(&format!(" Closing message: {closing}"));
        }
    }
    text.push_str("\nEach is stored; send_message continues any of them in its own conversation.");
    text
}

/// On a parent's resume: learn its children again and tell it about them.
pub(crate) fn on_resume(
    inner: &Inner,
    agent: &Arc<dyn Agent>,
) -> Result<(), dsh_agent::AgentError> {
    let children = recover_children(&agent.session().events());
    if children.is_empty() {
        return Ok(());
    }
    let depth = crate::child::depth_of(agent.as_ref()) + 1;
    {
        let mut state = inner.state();
        for child in &children {
            if state.children.iter().any(|c| c.id == child.id) {
                continue;
            }
            let order = state.next_order;
            state.next_order += 1;
            state.children.push(ChildRecord {
                id: child.id.clone(),
                parent: agent.id().clone(),
                depth,
                descriptor: SubagentDescriptor {
                    version: SUBAGENT_DESCRIPTOR_VERSION,
                    mode: SubagentMode::Continuable,
                    provider: Provider::Spawn.name().to_owned(),
                    label: Some(child.label.clone()),
                    agent_provider: None,
                    agent_model: None,
                    persona: None,
                    tool_filter: None,
                },
                order,
                handle: None,
                working: false,
                epoch_start: 0,
                run_id: String::new(),
                last_report: child.last_report.clone(),
                last_output: child.closing.clone(),
                last_stop: None,
            });
        }
    }
    let mut extra = Map::new();
    extra.insert("form".into(), json!("notice"));
    let message = Message::new(
        Role::User,
        vec![ContentBlock::text(recovery_text(&children))],
        MessageSource::Plugin {
            plugin: "subagents".into(),
            extra,
        },
    );
    agent.inject(message)
}
