//! Continuable children: started in the background, settled each time they come to rest
//! (one notice to the parent per epoch), continued with `send_message`, resumed from the
//! store when this process no longer holds them.

use crate::child::{self, ChildPlan, Provider};
use crate::descriptor::{fold_descriptor, SubagentMode};
use crate::error::SubagentError;
use crate::outcome::{blocks_text, fold_outcome, settlement_summary};
use crate::run::task_message;
use crate::service::{ChildLifecycle, ChildRecord, Inner, Lane, SubagentEnd, SubagentStart};
use dsh_agent::{Agent, AgentHandle, AgentStatus, ResumeAgentOptions};
use dsh_protocol::{ContentBlock, Message, MessageId, MessageSource, Role, SessionId};
use dsh_tools::ToolCaller;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Weak};

/// Longest summary a notice's source carries.
const SUMMARY_MAX_CHARS: usize = 120;

fn other_source(fields: Value) -> MessageSource {
    match fields {
        Value::Object(map) => MessageSource::Other(map),
        _ => MessageSource::Other(Map::new()),
    }
}

/// Starts a continuable child; resolves once its task is queued.
pub(crate) async fn start(
    inner: &Arc<Inner>,
    caller: &ToolCaller,
    plan: ChildPlan,
    prompt: &str,
) -> Result<SessionId, SubagentError> {
    let options = child::create_options(inner, &plan)?;
    let handle = caller.create_child(options).await?;
    let child = handle.agent().clone();
    let id = plan.id.clone();
    let run_id = uuid::Uuid::new_v4().to_string();
    {
        let mut state = inner.state();
        let order = state.next_order;
        state.next_order += 1;
        state.children.push(ChildRecord {
            id: id.clone(),
            parent: caller.id().clone(),
            depth: plan.depth,
            descriptor: plan.descriptor.clone(),
            order,
            handle: Some(handle.clone()),
            working: true,
            epoch_start: child.session().len(),
            run_id: run_id.clone(),
            last_report: None,
            last_output: None,
            last_stop: None,
        });
    }
    inner.bump();
    inner
        .ctx
        .emit::<SubagentStart>(None, &lifecycle(inner, &id, None));
    if let Err(error) = child.followup(task_message(prompt)) {
        // Roll back: no id was given out, so no notice.
        inner.state().children.retain(|c| c.id != id);
        inner.bump();
        handle.dispose().await;
        return Err(error.into());
    }
    spawn_watcher(inner, child);
    Ok(id)
}

fn lifecycle(
    inner: &Inner,
    id: &SessionId,
    end: Option<(crate::outcome::StopReason, Option<String>)>,
) -> ChildLifecycle {
    let state = inner.state();
    let record = state.children.iter().find(|c| &c.id == id);
    ChildLifecycle {
        run_id: record.map(|r| r.run_id.clone()).unwrap_or_default(),
        provider: record
            .map(|r| r.descriptor.provider.clone())
            .unwrap_or_default(),
        id: id.clone(),
        parent: record
            .map(|r| r.parent.clone())
            .unwrap_or_else(|| SessionId::new("")),
        mode: SubagentMode::Continuable,
        label: record
            .and_then(|r| r.descriptor.label.clone())
            .unwrap_or_default(),
        stop: end.as_ref().map(|(stop, _)| *stop),
        last_message: end.and_then(|(_, message)| message),
    }
}

fn spawn_watcher(inner: &Arc<Inner>, child: Arc<dyn Agent>) {
    let weak = Arc::downgrade(inner);
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(watch(weak, child));
}

/// Waits for the child's epoch to come to rest (idle, nothing queued, no working child of
/// its own), then settles it.
async fn watch(inner: Weak<Inner>, child: Arc<dyn Agent>) {
    let mut changes = match inner.upgrade() {
        Some(inner) => inner.changed.subscribe(),
        None => return,
    };
    loop {
        child.when_idle().await;
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let waiting = Inner::tree_working(&strong.state(), child.id());
        drop(strong);
        if waiting {
            if changes.changed().await.is_err() {
                return;
            }
            continue;
        }
        if child.status() == AgentStatus::Running || child.inbox().has_pending() {
            continue;
        }
        break;
    }
    if let Some(inner) = inner.upgrade() {
        settle(&inner, &child);
    }
}

/// Ends one epoch: its outcome, the notice to the parent, `subagent/end`.
fn settle(inner: &Arc<Inner>, child: &Arc<dyn Agent>) {
    let id = child.id().clone();
    let Some((parent_id, epoch_start)) = inner
        .state()
        .children
        .iter()
        .find(|c| c.id == id)
        .map(|c| (c.parent.clone(), c.epoch_start))
    else {
        return;
    };
    let events = child.session().events_from(epoch_start);
    let outcome = fold_outcome(&events, true, false);
    let text = outcome.text();
    // The notice goes out before the epoch counts as settled, so a tree wait that sees the
    // child at rest also sees the parent woken.
    let parent = inner.registry().and_then(|r| r.get(&parent_id));
    if let Some(parent) = parent {
        let summary = settlement_summary(&id, outcome.stop);
        let mut content = vec![ContentBlock::text(summary.clone())];
        if outcome.output.is_empty() {
            content.push(ContentBlock::text("It left no closing message."));
        } else {
            content.push(ContentBlock::text("Its closing message:"));
            content.extend(outcome.output.iter().cloned());
        }
        let source = other_source(json!({
            "kind": "subagent-settled", "form": "notice",
            "summary": truncate(&summary, SUMMARY_MAX_CHARS),
            "senderSessionId": id.as_str(),
        }));
        let notice = Message::new(Role::User, content, source);
        if let Err(error) = inner.deliver(&parent, notice, Lane::NextTurn) {
            tracing::debug!(child = %id, %error, "the settlement notice was not delivered");
        }
    }
    {
        let mut state = inner.state();
        if let Some(record) = state.children.iter_mut().find(|c| c.id == id) {
            record.working = false;
            record.last_stop = Some(outcome.stop);
            record.last_output = (!text.is_empty()).then(|| text.clone());
        }
    }
    inner.bump();
    inner.ctx.emit::<SubagentEnd>(
        None,
        &lifecycle(
            inner,
            &id,
            Some((outcome.stop, (!text.is_empty()).then_some(text))),
        ),
    );
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A child's `report`: relayed to its direct parent's next step.
pub(crate) fn report(
    inner: &Arc<Inner>,
    sender: &Arc<dyn Agent>,
    output: &str,
) -> Result<MessageId, SubagentError> {
    let id = sender.id().clone();
    let parent_id = {
        let state = inner.state();
        let record = state
            .children
            .iter()
            .find(|c| c.id == id && c.handle.is_some())
            .ok_or_else(|| SubagentError::Unauthorized { id: id.clone() })?;
        record.parent.clone()
    };
    let parent = inner
        .registry()
        .and_then(|r| r.get(&parent_id))
        .ok_or(SubagentError::ParentUnavailable)?;
    let source = other_source(json!({
        "kind": "subagent-report", "form": "relay", "senderSessionId": id.as_str(),
    }));
    let message = Message::new(
        Role::User,
        vec![
            ContentBlock::text(format!("Background subagent {id} reported:")),
            ContentBlock::text(output),
        ],
        source,
    );
    let message_id = message.id.clone();
    inner.deliver(&parent, message, Lane::NextStep)?;
    if let Some(record) = inner.state().children.iter_mut().find(|c| c.id == id) {
        record.last_report = Some(output.to_owned());
    }
    Ok(message_id)
}

/// `send_message`: the message becomes the child's next turn (resuming it from the store
/// when this process does not hold it).
pub(crate) async fn send(
    inner: &Arc<Inner>,
    caller: &ToolCaller,
    target: &SessionId,
    text: &str,
) -> Result<MessageId, SubagentError> {
    let known = inner
        .state()
        .children
        .iter()
        .find(|c| &c.id == target)
        .map(|c| (c.parent.clone(), c.handle.clone()));
    let handle = match known {
        Some((parent, _)) if &parent != caller.id() => {
            return Err(SubagentError::Unauthorized { id: target.clone() })
        }
        Some((_, Some(handle))) => handle,
        _ => cold_resume(inner, caller, target).await?,
    };
    let source = other_source(json!({
        "kind": "coordinator", "form": "relay", "senderSessionId": caller.id().as_str(),
    }));
    let message = Message::new(Role::User, vec![ContentBlock::text(text)], source);
    let message_id = message.id.clone();
    let child = handle.agent().clone();
    let restart = {
        let mut state = inner.state();
        let record = state.children.iter_mut().find(|c| &c.id == target);
        match record {
            Some(record) if !record.working => {
                record.working = true;
                record.epoch_start = child.session().len();
                record.run_id = uuid::Uuid::new_v4().to_string();
                true
            }
            _ => false,
        }
    };
    if let Err(error) = child.followup(message) {
        if restart {
            if let Some(record) = inner.state().children.iter_mut().find(|c| &c.id == target) {
                record.working = false;
            }
        }
        return Err(error.into());
    }
    if restart {
        inner.bump();
        inner
            .ctx
            .emit::<SubagentStart>(None, &lifecycle(inner, target, None));
        spawn_watcher(inner, child);
    }
    Ok(message_id)
}

/// Loads a stored continuable child of `caller` back into this process.
async fn cold_resume(
    inner: &Arc<Inner>,
    caller: &ToolCaller,
    target: &SessionId,
) -> Result<AgentHandle, SubagentError> {
    let registry = caller.registry().ok_or(SubagentError::Unavailable {
        what: "the agent registry",
        hint: "mount the agents plugin",
    })?;
    if registry.get(target).is_some() {
        // Live, but not a child this service started: not the caller's to message.
        return Err(SubagentError::Unauthorized { id: target.clone() });
    }
    let parent = caller.agent().clone();
    // The child's setup is decided from its log once it is loaded; the plan below only
    // carries what the setup needs from the parent.
    let plan = ChildPlan {
        id: target.clone(),
        provider: Provider::Spawn,
        depth: child::depth_of(parent.as_ref()) + 1,
        descriptor: crate::descriptor::SubagentDescriptor {
            version: crate::descriptor::SUBAGENT_DESCRIPTOR_VERSION,
            mode: SubagentMode::Continuable,
            provider: Provider::Spawn.name().to_owned(),
            label: None,
            agent_provider: None,
            agent_model: None,
            persona: None,
            tool_filter: None,
        },
        prefix: Vec::new(),
        sandbox: None,
        parent: parent.clone(),
    };
    let mut options = ResumeAgentOptions::new(target.clone());
    options.agent_options = parent.options().clone();
    options.setup = Some(child::setup(inner.clone(), &plan, false));
    let handle = registry
        .resume(caller.ctx(), options)
        .await
        .map_err(|error| resume_refusal(target, error))?;
    let child = handle.agent().clone();
    let header = child.session().header().clone();
    let events = child.session().events();
    let seed_length = header.seed_length.unwrap_or(0) as usize;
    let descriptor = match fold_descriptor(events.get(seed_length..).unwrap_or_default()) {
        Some(Ok(d)) if d.mode == SubagentMode::Continuable => Some(d),
        _ => None,
    };
    let refusal = if header.parent_session.as_ref() != Some(caller.id()) {
        Some(SubagentError::Unauthorized { id: target.clone() })
    } else {
        descriptor.is_none().then(|| SubagentError::NotResumable {
            id: target.clone(),
            reason: "it is not a continuable subagent".into(),
        })
    };
    if let Some(refusal) = refusal {
        handle.dispose().await;
        return Err(refusal);
    }
    let Some(descriptor) = descriptor else {
        handle.dispose().await;
        return Err(SubagentError::NotResumable {
            id: target.clone(),
            reason: "no descriptor".into(),
        });
    };
    let last_output = blocks_text(&fold_outcome(&events, true, false).output);
    {
        let mut state = inner.state();
        let order = state.next_order;
        state.next_order += 1;
        state.children.push(ChildRecord {
            id: target.clone(),
            parent: caller.id().clone(),
            depth: header.delegation_depth.unwrap_or(plan.depth),
            descriptor,
            order,
            handle: Some(handle.clone()),
            working: false,
            epoch_start: child.session().len(),
            run_id: String::new(),
            last_report: None,
            last_output: (!last_output.is_empty()).then_some(last_output),
            last_stop: None,
        });
    }
    Ok(handle)
}

/// Why a cold resume failed, as the model should read it: an id nothing stores is unknown.
fn resume_refusal(target: &SessionId, error: dsh_agent::AgentError) -> SubagentError {
    let not_stored = match &error {
        dsh_agent::AgentError::NoPersistence => true,
        dsh_agent::AgentError::Other {
            source: Some(source),
            ..
        } => matches!(
            source.downcast_ref::<dsh_agent::ResumeError>(),
            Some(dsh_agent::ResumeError::NotFound { .. })
        ),
        _ => false,
    };
    if not_stored {
        SubagentError::Unknown {
            id: target.to_string(),
        }
    } else {
        SubagentError::NotResumable {
            id: target.clone(),
            reason: error.to_string(),
        }
    }
}

/// `interrupt_agent`: cancels the target's current turn (its queue stays) when the caller
/// is one of its ancestors.
pub(crate) fn interrupt(
    inner: &Arc<Inner>,
    caller: &ToolCaller,
    target: &SessionId,
) -> Result<(), SubagentError> {
    if target == caller.id() {
        return Err(SubagentError::Unauthorized { id: target.clone() });
    }
    let state = inner.state();
    let Some(record) = state.children.iter().find(|c| &c.id == target) else {
        return Err(SubagentError::Unknown {
            id: target.to_string(),
        });
    };
    // Walk up from the target's parent; the caller must be on the way.
    let mut cursor = Some(record.parent.clone());
    let mut authorized = false;
    while let Some(id) = cursor {
        if &id == caller.id() {
            authorized = true;
            break;
        }
        cursor = state
            .children
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.parent.clone());
    }
    if !authorized {
        return Err(SubagentError::Unauthorized { id: target.clone() });
    }
    let agent = record.handle.as_ref().map(|h| h.agent().clone());
    drop(state);
    if let Some(agent) = agent {
        agent.cancel(
            dsh_agent::AgentCancelCause::Parent,
            dsh_agent::CancelOptions { keep_inbox: true },
        )?;
    }
    Ok(())
}
