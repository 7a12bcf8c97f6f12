//! The hook events on dsh's extension points.
//!
//! | event | extension point |
//! |---|---|
//! | `SessionStart` | `agent/session-start` (detached; context is `inject()`ed) |
//! | `UserPromptSubmit` | `agent/pre-step`, when the claimed batch holds a person's message |
//! | `PreToolUse` | `tools/pre-execute` |
//! | `PostToolUse` | `tools/post-execute` |
//! | `Stop` | `agent/turn-stopping` (a block `steer()`s the turn on, up to the cap) |
//! | `SubagentStart` | `agent/created` of an agent another agent owns (detached) |
//! | `SubagentStop` | `agent/disposed` of such an agent (detached, observe-only) |
//!
//! `continue: false` from any turn-scoped hook cancels the turn with cause `hook` and the
//! hook's `stopReason`, which surfaces show.

use crate::config::Dialect;
use crate::event::HookEvent;
use crate::hooks::{Hooks, PointContext, Subject};
use crate::merge::{Decision, Merged};
use crate::names::{claude_name, claude_tool_input};
use dsh_agent::{
    Agent, AgentCancelCause, AgentCreated, AgentDisposed, AgentRegistry, CancelOptions, PreStep,
    PreStepDecision, SessionStart, SessionStartSource, TurnStopping,
};
use dsh_kernel::{BoxError, Context};
use dsh_protocol::{ContentBlock, Message, MessageSource, Role};
use dsh_session::SessionDisposed;
use dsh_tools::{PostExecute, PostExecuteDecision, PreExecute, PreExecuteDecision, ToolExecution};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

/// The text a denied call, a blocked result or a blocked stop carries when the hook gave no
/// reason (the original's words).
pub const PRE_TOOL_BLOCKED: &str = "blocked by PreToolUse hook";
pub const POST_TOOL_BLOCKED: &str = "blocked by PostToolUse hook";
pub const STOP_BLOCKED: &str = "continue: blocked by Stop hook";

/// Per-session state of the bridges: the open turn, and how often Stop hooks sent it back.
#[derive(Debug, Default)]
struct Turns {
    current: HashMap<String, u64>,
    stop_blocks: HashMap<String, (u64, u32)>,
    /// Live agents that another agent owns (their disposal fires `SubagentStop`).
    children: HashSet<String>,
}

#[derive(Debug)]
pub(crate) struct Bridge {
    hooks: Arc<Hooks>,
    turns: Mutex<Turns>,
    /// Cancelled when the plugin unloads: aborts detached hooks.
    detached: CancellationToken,
}

fn lock(turns: &Mutex<Turns>) -> MutexGuard<'_, Turns> {
    turns
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Bridge {
    fn point(
        &self,
        agent: Option<&Arc<dyn Agent>>,
        turn: Option<u64>,
        cancel: CancellationToken,
    ) -> PointContext {
        let session = agent.map(|a| a.session().clone());
        let cwd = session
            .as_ref()
            .and_then(|s| s.header().cwd.clone())
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        PointContext {
            session_id: agent
                .map(|a| a.id().as_str().to_owned())
                .unwrap_or_default(),
            transcript_path: String::new(),
            cwd,
            turn,
            log: session.filter(|_| turn.is_some()),
            model: agent
                .and_then(|a| a.options().model.clone())
                .unwrap_or_default(),
            cancel,
        }
    }

    fn turn_of(&self, agent: &Arc<dyn Agent>) -> Option<u64> {
        lock(&self.turns).current.get(agent.id().as_str()).copied()
    }

    /// Cancels the agent's turn for a `continue: false`; the reason is what surfaces show.
    fn stop_turn(
        &self,
        agent: Option<&Arc<dyn Agent>>,
        event: HookEvent,
        merged: &Merged,
    ) -> String {
        let reason = merged
            .stop_reason
            .clone()
            .unwrap_or_else(|| format!("stopped by {} hook", event.as_str()));
        if let Some(agent) = agent {
            if let Err(error) = agent.cancel(
                AgentCancelCause::hook(reason.clone()),
                CancelOptions::default(),
            ) {
                tracing::warn!(%error, "hooks: cannot stop the turn");
            }
        }
        reason
    }
}

/// One user message holding each context as a text block, from the hooks plugin of the
/// dialect that produced them.
pub fn context_message(merged: &Merged) -> Option<Message> {
    if merged.contexts.is_empty() {
        return None;
    }
    let plugin = merged.dialect.unwrap_or(Dialect::ClaudeCode).plugin_name();
    Some(Message::new(
        Role::User,
        merged
            .contexts
            .iter()
            .map(|c| ContentBlock::text(c.clone()))
            .collect(),
        MessageSource::plugin(plugin),
    ))
}

/// Registers every bridge through `ctx`.
pub(crate) fn install(ctx: &Context, hooks: Arc<Hooks>) -> Result<(), BoxError> {
    let bridge = Arc::new(Bridge {
        hooks,
        turns: Mutex::new(Turns::default()),
        detached: CancellationToken::new(),
    });
    let token = bridge.detached.clone();
    ctx.effect("hooks: abort detached hooks", move || token.cancel())?
        .forget();
    let weak = Arc::downgrade(&bridge);
    ctx.on::<SessionDisposed>(move |session| {
        if let Some(bridge) = weak.upgrade() {
            let mut turns = lock(&bridge.turns);
            turns.current.remove(session.id().as_str());
            turns.stop_blocks.remove(session.id().as_str());
        }
        Ok(())
    })?
    .forget();
    install_pre_step(ctx, bridge.clone())?;
    install_pre_tool(ctx, bridge.clone())?;
    install_post_tool(ctx, bridge.clone())?;
    install_stop(ctx, bridge.clone())?;
    install_session_start(ctx, bridge.clone())?;
    install_subagents(ctx, bridge)?;
    Ok(())
}

fn install_pre_step(ctx: &Context, bridge: Arc<Bridge>) -> Result<(), BoxError> {
    ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
        let bridge = bridge.clone();
        async move {
            let agent = args.agent.clone();
            lock(&bridge.turns)
                .current
                .insert(agent.id().as_str().to_owned(), args.turn);
            // Only a person's words are a prompt: steering, injected context and the Stop
            // hook's own continuation do not fire UserPromptSubmit.
            let prompt: Vec<&Arc<Message>> = args
                .messages
                .iter()
                .filter(|m| matches!(m.source, MessageSource::User { .. }))
                .collect();
            if prompt.is_empty() || !bridge.hooks.has(HookEvent::UserPromptSubmit) {
                return next.run().await;
            }
            let text: String = prompt.iter().map(|m| m.text()).collect();
            let point = bridge.point(Some(&agent), Some(args.turn), args.signal.child_token());
            let extra = move |_: Dialect| {
                let mut map = Map::new();
                map.insert("prompt".into(), Value::String(text.clone()));
                map
            };
            let Some(merged) = bridge
                .hooks
                .fire(HookEvent::UserPromptSubmit, Subject::none(), &point, &extra)
                .await
            else {
                return next.run().await;
            };
            if merged.stop {
                bridge.stop_turn(Some(&agent), HookEvent::UserPromptSubmit, &merged);
                return Ok(PreStepDecision::Reject);
            }
            if merged.decision == Decision::Deny {
                return Ok(PreStepDecision::Reject);
            }
            Ok(match next.run().await? {
                PreStepDecision::Enter(mut messages) => {
                    messages.extend(context_message(&merged).map(Arc::new));
                    PreStepDecision::Enter(messages)
                }
                reject => reject,
            })
        }
    })?
    .forget();
    Ok(())
}

/// `tool_name`, `tool_input` and `tool_use_id` of a call, in `dialect`'s names.
fn tool_fields(
    exec: &ToolExecution,
    dialect: Dialect,
    cwd: &std::path::Path,
) -> Map<String, Value> {
    let mut map = Map::new();
    let name = exec.name();
    let (tool_name, input) = match dialect {
        Dialect::ClaudeCode => (
            claude_name(name).unwrap_or(name).to_owned(),
            claude_tool_input(name, exec.arguments(), cwd),
        ),
        Dialect::Codex => {
            let command = exec
                .arguments()
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or("");
            (name.to_owned(), json!({ "command": command }))
        }
    };
    map.insert("tool_name".into(), Value::String(tool_name));
    map.insert("tool_input".into(), input);
    map.insert(
        "tool_use_id".into(),
        Value::String(exec.call_id().as_str().to_owned()),
    );
    map
}

fn tool_subject(exec: &ToolExecution) -> Subject<'_> {
    Subject {
        name: Some(exec.name()),
        claude_alias: claude_name(exec.name()),
    }
}

fn install_pre_tool(ctx: &Context, bridge: Arc<Bridge>) -> Result<(), BoxError> {
    ctx.on_waterfall::<PreExecute, _, _>(move |args, next| {
        let bridge = bridge.clone();
        async move {
            let exec = args.exec.clone();
            if bridge
                .hooks
                .matching(HookEvent::PreToolUse, tool_subject(&exec))
                .is_empty()
            {
                return next.run().await;
            }
            let agent = exec.caller().map(|c| c.agent().clone());
            let turn = agent.as_ref().and_then(|a| bridge.turn_of(a));
            let point = bridge.point(agent.as_ref(), turn, exec.signal().clone());
            let cwd = point.cwd.clone();
            let fields_exec = exec.clone();
            let extra = move |dialect: Dialect| tool_fields(&fields_exec, dialect, &cwd);
            let Some(merged) = bridge
                .hooks
                .fire(HookEvent::PreToolUse, tool_subject(&exec), &point, &extra)
                .await
            else {
                return next.run().await;
            };
            if merged.stop {
                let reason = bridge.stop_turn(agent.as_ref(), HookEvent::PreToolUse, &merged);
                return Ok(PreExecuteDecision::Deny { reason });
            }
            match merged.decision {
                Decision::Deny => Ok(PreExecuteDecision::Deny {
                    reason: merged.reason.unwrap_or_else(|| PRE_TOOL_BLOCKED.to_owned()),
                }),
                Decision::Ask => Ok(PreExecuteDecision::Ask {
                    reason: merged.reason,
                }),
                // `allow` does not pre-approve: approval policy still decides.
                Decision::Allow | Decision::None => next.run().await,
            }
        }
    })?
    .forget();
    Ok(())
}

fn install_post_tool(ctx: &Context, bridge: Arc<Bridge>) -> Result<(), BoxError> {
    ctx.on_waterfall::<PostExecute, _, _>(move |args, next| {
        let bridge = bridge.clone();
        async move {
            let exec = args.exec.clone();
            if bridge
                .hooks
                .matching(HookEvent::PostToolUse, tool_subject(&exec))
                .is_empty()
            {
                return next.run().await;
            }
            let agent = exec.caller().map(|c| c.agent().clone());
            let turn = agent.as_ref().and_then(|a| bridge.turn_of(a));
            // A timed-out body cancelled the call's signal; its hooks still run (bounded by
            // their own timeouts).
            let cancel = if exec.signal().is_cancelled() {
                CancellationToken::new()
            } else {
                exec.signal().clone()
            };
            let point = bridge.point(agent.as_ref(), turn, cancel);
            let cwd = point.cwd.clone();
            let response: String = args
                .result
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let fields_exec = exec.clone();
            let extra = move |dialect: Dialect| {
                let mut map = tool_fields(&fields_exec, dialect, &cwd);
                map.insert("tool_response".into(), Value::String(response.clone()));
                map
            };
            let Some(merged) = bridge
                .hooks
                .fire(HookEvent::PostToolUse, tool_subject(&exec), &point, &extra)
                .await
            else {
                return next.run().await;
            };
            let contexts: Vec<Message> = context_message(&merged).into_iter().collect();
            if merged.stop {
                let reason = bridge.stop_turn(agent.as_ref(), HookEvent::PostToolUse, &merged);
                return Ok(PostExecuteDecision::Block {
                    feedback: reason,
                    additional_contexts: contexts,
                });
            }
            if merged.decision == Decision::Deny {
                return Ok(PostExecuteDecision::Block {
                    feedback: merged
                        .reason
                        .unwrap_or_else(|| POST_TOOL_BLOCKED.to_owned()),
                    additional_contexts: contexts,
                });
            }
            Ok(match next.run().await? {
                PostExecuteDecision::Accept {
                    content,
                    value,
                    additional_contexts,
                } => PostExecuteDecision::Accept {
                    content,
                    value,
                    additional_contexts: contexts.into_iter().chain(additional_contexts).collect(),
                },
                PostExecuteDecision::Block {
                    feedback,
                    additional_contexts,
                } => PostExecuteDecision::Block {
                    feedback,
                    additional_contexts: contexts.into_iter().chain(additional_contexts).collect(),
                },
            })
        }
    })?
    .forget();
    Ok(())
}

fn install_stop(ctx: &Context, bridge: Arc<Bridge>) -> Result<(), BoxError> {
    ctx.on_serial::<TurnStopping, _, _>(move |args| {
        let bridge = bridge.clone();
        async move {
            if !bridge.hooks.has(HookEvent::Stop) {
                return Ok(None);
            }
            let agent = args.agent.clone();
            let key = agent.id().as_str().to_owned();
            let blocks = match lock(&bridge.turns).stop_blocks.get(&key) {
                Some((turn, count)) if *turn == args.turn => *count,
                _ => 0,
            };
            let point = bridge.point(Some(&agent), Some(args.turn), args.signal.child_token());
            let extra = move |dialect: Dialect| {
                let mut map = Map::new();
                map.insert("stop_hook_active".into(), Value::Bool(blocks > 0));
                if dialect == Dialect::Codex {
                    map.insert("last_assistant_message".into(), Value::Null);
                }
                map
            };
            let Some(merged) = bridge
                .hooks
                .fire(HookEvent::Stop, Subject::none(), &point, &extra)
                .await
            else {
                return Ok(None);
            };
            // `continue: false` wins over a block: the turn closes as it was about to.
            if merged.stop || merged.decision != Decision::Deny {
                return Ok(None);
            }
            let cap = bridge.hooks.config().max_stop_blocks;
            if cap > 0 && blocks >= cap {
                tracing::warn!(
                    session = %key,
                    cap,
                    "hooks: Stop hooks blocked this turn too often; letting it end"
                );
                return Ok(None);
            }
            lock(&bridge.turns)
                .stop_blocks
                .insert(key, (args.turn, blocks + 1));
            let text = merged
                .reason
                .clone()
                .unwrap_or_else(|| STOP_BLOCKED.to_owned());
            let plugin = merged.dialect.unwrap_or(Dialect::ClaudeCode).plugin_name();
            let message = Message::new(
                Role::User,
                vec![ContentBlock::text(text)],
                MessageSource::plugin(plugin),
            );
            if let Err(error) = agent.steer(message) {
                tracing::warn!(%error, "hooks: cannot continue the turn for a Stop hook");
            }
            Ok(None)
        }
    })?
    .forget();
    Ok(())
}

fn source_name(source: SessionStartSource) -> &'static str {
    match source {
        SessionStartSource::Startup => "startup",
        SessionStartSource::Resume => "resume",
        SessionStartSource::Clear => "clear",
        SessionStartSource::Compact => "compact",
    }
}

fn install_session_start(ctx: &Context, bridge: Arc<Bridge>) -> Result<(), BoxError> {
    ctx.on::<SessionStart>(move |event| {
        let source = source_name(event.data);
        if bridge
            .hooks
            .matching(HookEvent::SessionStart, Subject::named(source))
            .is_empty()
        {
            return Ok(());
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("hooks: no async runtime; SessionStart hooks skipped");
            return Ok(());
        };
        let agent = event.agent.clone();
        let bridge = bridge.clone();
        // Detached: nothing waits for it, so a slow hook may miss the first request.
        runtime.spawn(async move {
            let point = bridge.point(Some(&agent), None, bridge.detached.child_token());
            let extra = move |_: Dialect| {
                let mut map = Map::new();
                map.insert("source".into(), Value::String(source.to_owned()));
                map
            };
            let fired = bridge
                .hooks
                .fire(
                    HookEvent::SessionStart,
                    Subject::named(source),
                    &point,
                    &extra,
                )
                .await;
            if let Some(message) = fired.as_ref().and_then(context_message) {
                if let Err(error) = agent.inject(message) {
                    tracing::warn!(%error, "hooks: cannot add SessionStart context");
                }
            }
        });
        Ok(())
    })?
    .forget();
    Ok(())
}

/// What every sub-agent hook reports its child as (dsh has one kind of sub-agent).
const AGENT_TYPE: &str = "general-purpose";

/// Runs the `event` hooks for `child` off the announcing task; `inject` adds their context
/// to the child.
fn spawn_subagent_hooks(
    bridge: &Arc<Bridge>,
    child: Arc<dyn Agent>,
    event: HookEvent,
    inject: bool,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("hooks: no async runtime; {} hooks skipped", event.as_str());
        return;
    };
    let bridge = bridge.clone();
    runtime.spawn(async move {
        let point = bridge.point(Some(&child), None, bridge.detached.child_token());
        let id = child.id().as_str().to_owned();
        let extra = move |_: Dialect| {
            let mut map = Map::new();
            map.insert("agent_id".into(), Value::String(id.clone()));
            map.insert("agent_type".into(), Value::String(AGENT_TYPE.to_owned()));
            if event == HookEvent::SubagentStop {
                map.insert("stop_hook_active".into(), Value::Bool(false));
            }
            map
        };
        let fired = bridge
            .hooks
            .fire(event, Subject::named(AGENT_TYPE), &point, &extra)
            .await;
        if !inject {
            return;
        }
        if let Some(message) = fired.as_ref().and_then(context_message) {
            if let Err(error) = child.inject(message) {
                tracing::warn!(%error, "hooks: cannot add SubagentStart context");
            }
        }
    });
}

fn install_subagents(ctx: &Context, bridge: Arc<Bridge>) -> Result<(), BoxError> {
    let registry_ctx = ctx.clone();
    let on_created = bridge.clone();
    ctx.on::<AgentCreated>(move |event| {
        let bridge = &on_created;
        let starts = bridge.hooks.has(HookEvent::SubagentStart);
        if !starts && !bridge.hooks.has(HookEvent::SubagentStop) {
            return Ok(());
        }
        let Some(registry) = registry_ctx.get::<AgentRegistry>() else {
            return Ok(());
        };
        let id = event.agent.id();
        if registry.roots().iter().any(|root| root.id() == id) {
            return Ok(());
        }
        lock(&bridge.turns).children.insert(id.as_str().to_owned());
        if starts {
            spawn_subagent_hooks(bridge, event.agent.clone(), HookEvent::SubagentStart, true);
        }
        Ok(())
    })?
    .forget();
    ctx.on::<AgentDisposed>(move |event| {
        let was_child = lock(&bridge.turns)
            .children
            .remove(event.agent.id().as_str());
        if was_child && bridge.hooks.has(HookEvent::SubagentStop) {
            spawn_subagent_hooks(&bridge, event.agent.clone(), HookEvent::SubagentStop, false);
        }
        Ok(())
    })?
    .forget();
    Ok(())
}
