//! The SDK runtime's notifications, from the workspace's session and agent events.

use crate::rpc::Peer;
use dsh_agent::{AgentStatus, AgentStatusChanged};
use dsh_kernel::{Context, Disposer};
use dsh_session::SessionEventPublished;
use dsh_subagents::{StopReason, SubagentEnd, SubagentStart};
use serde_json::json;

/// Installs the listeners; disposing them stops the notifications.
pub fn install(ctx: &Context, peer: &Peer) -> Result<Vec<Disposer>, String> {
    let mut listeners = Vec::new();
    let events = peer.clone();
    listeners.push(
        ctx.on::<SessionEventPublished>(move |published| {
            events.notify(
                "session.event",
                json!({ "sessionId": published.session.id().as_str(), "event": &*published.event }),
            );
            Ok(())
        })
        .map_err(|e| e.to_string())?,
    );
    let status = peer.clone();
    listeners.push(
        ctx.on::<AgentStatusChanged>(move |changed| {
            let word = match changed.data {
                AgentStatus::Running => "running",
                AgentStatus::Idle => "idle",
            };
            status.notify(
                "session.status",
                json!({ "sessionId": changed.agent.id().as_str(), "status": word }),
            );
            Ok(())
        })
        .map_err(|e| e.to_string())?,
    );
    let started = peer.clone();
    listeners.push(
        ctx.on::<SubagentStart>(move |child| {
            started.notify(
                "subagent.started",
                json!({ "parentSessionId": child.parent.as_str(), "childSessionId": child.id.as_str() }),
            );
            Ok(())
        })
        .map_err(|e| e.to_string())?,
    );
    let finished = peer.clone();
    listeners.push(
        ctx.on::<SubagentEnd>(move |child| {
            let stop = child.stop.unwrap_or(StopReason::Error);
            let last: Vec<_> = child
                .last_message
                .iter()
                .map(|text| json!({ "type": "text", "text": text }))
                .collect();
            finished.notify(
                "subagent.finished",
                json!({
                    "provider": child.provider,
                    "agentId": child.id.as_str(),
                    "parentSessionId": child.parent.as_str(),
                    "childSessionId": child.id.as_str(),
                    "status": if stop == StopReason::Completed { "ok" } else { "error" },
                    "stopReason": stop.as_str(),
                    "lastAssistantMessage": last,
                }),
            );
            Ok(())
        })
        .map_err(|e| e.to_string())?,
    );
    Ok(listeners)
}
