//! `send_message`, `interrupt_agent` and `list_agents`: a parent's handles on the
//! continuable children it started.

use crate::continuable;
use crate::descriptor::SubagentMode;
use crate::error::SubagentError;
use crate::service::{ChildRecord, Inner};
use dsh_protocol::{ContentBlock, SessionId};
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Weak;

fn non_empty(name: &str, field: &str, value: &str) -> Result<(), ToolFailure> {
    if value.trim().is_empty() {
        return Err(ToolFailure::coded(
            name,
            "INVALID_TOOL_ARGUMENTS",
            format!("invalid {field}: expected a non-empty string, got \"{value}\""),
        ));
    }
    Ok(())
}

#[derive(Debug, Deserialize)]
pub struct SendMessageArgs {
    pub subagent_id: String,
    pub message: String,
}

/// `send_message`: the next turn of a continuable child.
pub struct SendMessage {
    inner: Weak<Inner>,
}

impl SendMessage {
    pub(crate) fn new(inner: Weak<Inner>) -> Self {
        Self { inner }
    }
}

const SEND: &str = "send_message";

impl TypedTool for SendMessage {
    type Args = SendMessageArgs;
    type Output = Value;

    fn name(&self) -> &str {
        SEND
    }

    fn description(&self) -> String {
        "Send a message to a background subagent by its subagent id, continuing the same conversation. It becomes the subagent's next turn: if it is still working, the message waits until its current turn finishes, so it cannot redirect work already underway. This call returns no answer from the subagent — only confirmation that the message was delivered — so use it to give it more work. A failure means the message was NOT delivered.".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "subagent_id": {"type": "string", "description": "The subagent id returned when the background subagent was started."},
            "message": {"type": "string", "description": "The message to deliver to the subagent."}},
            "required": ["subagent_id", "message"]})
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: SendMessageArgs,
        exec: &ToolExecution,
    ) -> Result<Value, ToolFailure> {
        non_empty(SEND, "subagent_id", &args.subagent_id)?;
        let (inner, caller) =
            super::context(&self.inner, exec, SEND).map_err(|e| e.into_failure(SEND))?;
        let target = SessionId::new(args.subagent_id.clone());
        let id = continuable::send(&inner, caller, &target, &args.message)
            .await
            .map_err(|e| e.into_failure(SEND))?;
        Ok(json!({"messageId": id.as_str(), "subagentId": args.subagent_id}))
    }

    fn presentation_meta(&self, _args: &Value, value: &Value) -> Option<Value> {
        let id = value["subagentId"].as_str()?;
        Some(json!({"subagent": {"id": id, "event": "continued"}}))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        vec![ContentBlock::text(format!(
            "message queued as the next turn for subagent {}",
            value["subagentId"].as_str().unwrap_or_default()
        ))]
    }
}

#[derive(Debug, Deserialize)]
pub struct InterruptArgs {
    pub agent_id: String,
}

/// `interrupt_agent`: stop a descendant's current turn.
pub struct InterruptAgent {
    inner: Weak<Inner>,
}

impl InterruptAgent {
    pub(crate) fn new(inner: Weak<Inner>) -> Self {
        Self { inner }
    }
}

const INTERRUPT: &str = "interrupt_agent";

impl TypedTool for InterruptAgent {
    type Args = InterruptArgs;
    type Output = Value;

    fn name(&self) -> &str {
        INTERRUPT
    }

    fn description(&self) -> String {
        "Request cancellation of a background agent's current turn by its agent id. The target may be your direct child or a deeper agent created under you. Only the current turn stops: messages already queued for the agent stay parked until a later send_message, agents it started keep running, and the agent itself stays available for follow-ups. This call returns as soon as the stop request is accepted, so the target may keep running briefly; interrupting an agent that already finished is an accepted no-op.".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "agent_id": {"type": "string", "description": "The agent id of the running agent to interrupt."}},
            "required": ["agent_id"]})
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: InterruptArgs,
        exec: &ToolExecution,
    ) -> Result<Value, ToolFailure> {
        non_empty(INTERRUPT, "agent_id", &args.agent_id)?;
        let (inner, caller) =
            super::context(&self.inner, exec, INTERRUPT).map_err(|e| e.into_failure(INTERRUPT))?;
        continuable::interrupt(&inner, caller, &SessionId::new(args.agent_id.clone()))
            .map_err(|e| e.into_failure(INTERRUPT))?;
        Ok(json!({"accepted": true, "agentId": args.agent_id}))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        vec![ContentBlock::text(format!(
            "interrupt requested for agent {}",
            value["agentId"].as_str().unwrap_or_default()
        ))]
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ListScope {
    #[default]
    Children,
    Descendants,
}

#[derive(Debug, Deserialize)]
pub struct ListAgentsArgs {
    #[serde(default)]
    pub scope: ListScope,
}

/// `list_agents`: the continuable children (or the whole tree) below the caller.
pub struct ListAgents {
    inner: Weak<Inner>,
}

impl ListAgents {
    pub(crate) fn new(inner: Weak<Inner>) -> Self {
        Self { inner }
    }
}

const LIST: &str = "list_agents";

fn walk(
    inner: &Inner,
    records: &[ChildRecord],
    parent: &SessionId,
    depth_of_tree: bool,
    out: &mut Vec<Value>,
) {
    let mut children: Vec<&ChildRecord> = records.iter().filter(|c| &c.parent == parent).collect();
    children.sort_by(|a, b| {
        a.order
            .cmp(&b.order)
            .then_with(|| a.id.as_str().cmp(b.id.as_str()))
    });
    for child in children {
        if child.descriptor.mode == SubagentMode::Continuable {
            let snapshot = inner.snapshot(child);
            let mut entry = json!({"kind": "child", "id": child.id.as_str(),
                "label": snapshot.label, "status": snapshot.status});
            if depth_of_tree {
                entry["parent"] = json!(child.parent.as_str());
                entry["depth"] = json!(child.depth);
            }
            out.push(entry);
        }
        if depth_of_tree {
            walk(inner, records, &child.id, true, out);
        }
    }
}

impl TypedTool for ListAgents {
    type Args = ListAgentsArgs;
    type Output = Value;

    fn name(&self) -> &str {
        LIST
    }

    fn description(&self) -> String {
        "List your continuable background subagents by durable id and label. Use it to recall which ones you started, not to poll for completion — you are told when one finishes. Status comes from the live registry: running means the agent is working right now, idle means it is loaded but between turns (it may be waiting on agents it started), and ready means it exists only in storage — resumable, not terminal, and not a result waiting to be collected; a `send_message` starts a new turn on the same conversation, and a direct child remains a `send_message` candidate in every status. The snapshot is not a delivery promise — `send_message` performs the authoritative check and may still fail. Children that could not be read are reported as diagnostics instead of being silently dropped. Scope `descendants` walks the whole tree below you in stable pre-order, annotating each entry with its durable direct-parent session id and depth. You may use `send_message` only for depth-1 entries; deeper entries are candidates for `interrupt_agent` only.".into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "scope": {"type": "string", "description": "children (default) lists direct children only; descendants walks the complete tree below you.",
                "enum": ["children", "descendants"]}}})
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: ListAgentsArgs,
        exec: &ToolExecution,
    ) -> Result<Value, ToolFailure> {
        let (inner, caller) = super::context(&self.inner, exec, LIST)
            .map_err(|e: SubagentError| e.into_failure(LIST))?;
        let mut out = Vec::new();
        let state = inner.state();
        walk(
            &inner,
            &state.children,
            caller.id(),
            matches!(args.scope, ListScope::Descendants),
            &mut out,
        );
        Ok(Value::Array(out))
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        let entries = value.as_array().map(Vec::as_slice).unwrap_or_default();
        if entries.is_empty() {
            return vec![ContentBlock::text("(no subagents)")];
        }
        let lines: Vec<String> = entries
            .iter()
            .map(|e| {
                let id = e["id"].as_str().unwrap_or_default();
                let tree = match (e["parent"].as_str(), e["depth"].as_u64()) {
                    (Some(parent), Some(depth)) => format!(" parent={parent} depth={depth}"),
                    _ => String::new(),
                };
                format!(
                    "{id} [{}]{tree} — {}",
                    e["status"].as_str().unwrap_or_default(),
                    e["label"].as_str().unwrap_or_default()
                )
            })
            .collect();
        vec![ContentBlock::text(lines.join("\n"))]
    }
}
