//! The application side of the input box's features: `!command` runs through the `bash`
//! tool's body under the session's sandbox, Esc-Esc forks the session from before its last
//! prompt, and the model picker learns each catalogued model's context window.

use super::AppDriver;
use crate::app::Runtime;
use crate::tui::interactive::{DriverError, Input, OpenedHow, OpenedSession};
use dsh_protocol::{MessageSource, SessionId};
use dsh_session::{EventData, SessionEvent, SurfaceOp};
use dsh_tools_builtin::{Bash, BashArgs};
use std::sync::{Arc, PoisonError};
use tokio_util::sync::CancellationToken;

/// Where a rewind forks: the first seq the fork leaves out, and the last prompt a person
/// typed. The cut is the `turn/start` of the turn that took the prompt, or the inbox splice
/// that queued it when that came earlier outside any turn (so the fork does not show the
/// prompt as still queued). `None` when nobody typed a prompt yet.
pub(super) fn rewind_point(events: &[Arc<SessionEvent>]) -> Option<(u64, String)> {
    let (index, message) = events.iter().enumerate().rev().find_map(|(i, event)| {
        let EventData::UserMessage(message) = &event.data else {
            return None;
        };
        let typed = matches!(message.source, MessageSource::User { .. })
            && !matches!(event.surface_op, Some(SurfaceOp::Replace { .. }));
        typed.then_some((i, message))
    })?;
    let start = events[..index]
        .iter()
        .rposition(|e| matches!(e.data, EventData::TurnStart(_)))?;
    let mut open_turn = false;
    let mut cut = events[start].seq;
    for event in &events[..start] {
        match &event.data {
            EventData::TurnStart(_) => open_turn = true,
            EventData::TurnEnd(_) => open_turn = false,
            EventData::InboxSpliced(splice)
                if !open_turn && splice.inserted.iter().any(|m| m.id == message.id) =>
            {
                cut = event.seq;
                break;
            }
            _ => {}
        }
    }
    Some((cut, message.text()))
}

impl AppDriver {
    /// Starts a `!command` (see [`crate::tui::interactive::AgentDriver::shell`]).
    pub(super) fn start_shell(&self, command: &str) -> Result<(), DriverError> {
        let env = self.shell_env()?;
        let token = CancellationToken::new();
        {
            let mut slot = self
                .shell_cancel
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if slot.as_ref().is_some_and(|t| !t.is_cancelled()) {
                return Err(DriverError::Busy);
            }
            *slot = Some(token.clone());
        }
        let inputs = self.inputs.clone();
        let command = command.to_owned();
        tokio::spawn(async move {
            let args = BashArgs {
                command: command.clone(),
                description: String::new(),
                timeout_ms: None,
                workdir: None,
                run_in_background: false,
            };
            let output = Bash
                .run(args, &env, token.clone())
                .await
                .map(|out| out.content)
                .map_err(|error| error.to_string());
            token.cancel();
            let _ = inputs.send(Input::ShellDone { command, output });
        });
        Ok(())
    }

    /// Stops a running `!command`, if any.
    pub(super) fn stop_shell(&self) {
        if let Some(token) = self
            .shell_cancel
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            token.cancel();
        }
    }

    /// The tool environment a `!command` runs in: the live agent's (so a `/permission`
    /// switch applies), else the one the session will get, under its preset's sandbox.
    fn shell_env(&self) -> Result<dsh_tools_builtin::ToolEnv, DriverError> {
        let unsupported = || {
            DriverError::Unsupported(
                "the built-in tools are not mounted, so !commands cannot run".into(),
            )
        };
        if let Some(agent) = self.live_agent() {
            return self
                .runtime
                .tool_env(agent.as_ref())
                .ok_or_else(unsupported);
        }
        let preset = {
            let current = self.current();
            current.preset
        }
        .unwrap_or_else(|| super::default_preset(self.runtime.settings()));
        let mode = self.pinned_sandbox().unwrap_or(preset.sandbox_mode());
        let id = self.current().id.clone();
        self.runtime
            .session_tool_env(&id, mode)
            .map_err(DriverError::failed)?
            .ok_or_else(unsupported)
    }

    /// Esc-Esc (see [`crate::tui::interactive::AgentDriver::rewind`]).
    pub(super) async fn rewind_session(&self) -> Result<(OpenedSession, String), DriverError> {
        self.ensure_idle()?;
        let Some(agent) = self.live_agent() else {
            return Err(DriverError::Failed(
                "nothing to edit yet: this session has no prompt".into(),
            ));
        };
        let parent = agent.id().clone();
        self.runtime
            .sessions()
            .flush(agent.session())
            .await
            .map_err(DriverError::failed)?;
        let events = agent.session().events().to_vec();
        drop(agent);
        let Some((cut, text)) = rewind_point(&events) else {
            return Err(DriverError::Failed(
                "nothing to edit yet: this session has no prompt".into(),
            ));
        };
        let how = OpenedHow::Rewound {
            parent: parent.clone(),
        };
        let Some(boundary) = cut.checked_sub(1) else {
            // The prompt opened the log: the fork is an empty session.
            let id = Runtime::new_session_id();
            self.switch(id.clone(), None).await;
            return Ok((self.opened(id, how, Vec::new()), text));
        };
        let persistence = self.persistence()?;
        let child: SessionId = Runtime::new_session_id();
        dsh_store::fork_stored(&*persistence, &parent, Some(boundary), child.clone())
            .map_err(DriverError::failed)?;
        Ok((self.reopen(child, how).await?, text))
    }

    /// The context window of each model in `catalog` on `provider`, where known.
    pub(super) fn catalog_windows(&self, provider: &str, catalog: &[String]) -> Vec<Option<u64>> {
        catalog
            .iter()
            .map(|model| {
                crate::app::model_info(self.runtime.settings(), provider, model)
                    .and_then(|info| info.context_window)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn event(seq: u64, kind: &str, data: serde_json::Value) -> Arc<SessionEvent> {
        Arc::new(
            SessionEvent::from_value(&json!({"type": kind, "seq": seq, "time": 0, "data": data}))
                .unwrap(),
        )
    }

    fn user(seq: u64, text: &str, kind: &str) -> Arc<SessionEvent> {
        event(
            seq,
            "user/message",
            json!({"id": format!("m{seq}"), "role": "user", "source": {"kind": kind},
                   "content": [{"type": "text", "text": text}]}),
        )
    }

    fn queued(seq: u64, id: &str) -> Arc<SessionEvent> {
        event(
            seq,
            "agent/inbox/spliced",
            json!({"target": "next-turn", "start": 0, "inserted": [
                {"id": id, "role": "user", "source": {"kind": "user"},
                 "content": [{"type": "text", "text": "queued"}]}]}),
        )
    }

    #[test]
    fn the_rewind_point_is_before_the_splice_that_queued_the_last_prompt() {
        let events = vec![
            event(0, "permission/preset", json!({"preset": "workspace-write"})),
            queued(1, "m3"),
            event(2, "turn/start", json!({"turn": 1})),
            user(3, "first", "user"),
            event(
                4,
                "turn/end",
                json!({"turn": 1, "reason": {"kind": "completed"}}),
            ),
            // Queued while turn 2 ran: cutting there would cut inside the turn.
            event(5, "turn/start", json!({"turn": 2})),
            queued(6, "m9"),
            event(
                7,
                "turn/end",
                json!({"turn": 2, "reason": {"kind": "completed"}}),
            ),
            event(8, "turn/start", json!({"turn": 3})),
            user(9, "follow-up", "user"),
        ];
        assert_eq!(rewind_point(&events[..4]), Some((1, "first".into())));
        assert_eq!(rewind_point(&events), Some((8, "follow-up".into())));
    }

    #[test]
    fn the_rewind_point_is_the_turn_of_the_last_typed_prompt() {
        let events = vec![
            event(0, "permission/preset", json!({"preset": "workspace-write"})),
            event(1, "turn/start", json!({"turn": 1})),
            user(2, "first", "user"),
            event(
                3,
                "turn/end",
                json!({"turn": 1, "reason": {"kind": "completed"}}),
            ),
            event(4, "turn/start", json!({"turn": 2})),
            user(5, "second\nline", "user"),
            user(6, "runtime context", "runtime"),
            event(
                7,
                "turn/end",
                json!({"turn": 2, "reason": {"kind": "completed"}}),
            ),
        ];
        assert_eq!(rewind_point(&events), Some((4, "second\nline".into())));
        assert_eq!(rewind_point(&events[..4]), Some((1, "first".into())));
        assert_eq!(rewind_point(&events[..1]), None);
    }
}
