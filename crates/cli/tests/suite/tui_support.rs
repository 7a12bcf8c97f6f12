//! Shared helpers of the terminal UI tests: a scripted session log, key presses, a fake
//! driver that records what the UI asked for, and screens as plain text.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_cli::tui::interactive::{
    AgentDriver, AgentListing, CurrentModel, DriverError, Effect, Input, InteractiveState,
    LiveView, OpenedHow, OpenedSession, SessionListing,
};
use dsh_cli::tui::ContextFill;
use dsh_protocol::SessionId;
use dsh_session::SessionEvent;
use dsh_tools_builtin::PermissionPreset;
use futures_util::future::BoxFuture;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::text::Line;
use ratatui::Terminal;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

pub const SESSION: &str = "session-1";

/// A log under construction; seqs are assigned in order.
#[derive(Default)]
pub struct Log {
    pub events: Vec<Arc<SessionEvent>>,
}

impl Log {
    pub fn add(&mut self, type_name: &str, data: Value) -> Arc<SessionEvent> {
        let mut raw = json!({"type": type_name, "seq": self.events.len(), "time": 0, "data": data});
        if matches!(
            type_name,
            "user/message" | "assistant/message" | "tool/result"
        ) {
            raw["surfaceOp"] = json!("append");
        }
        let event = Arc::new(SessionEvent::from_value(&raw).unwrap());
        self.events.push(event.clone());
        event
    }

    pub fn user_message(text: &str, id: &str) -> Value {
        json!({"id": id, "role": "user", "content": [{"type": "text", "text": text}],
            "source": {"kind": "user"}})
    }

    /// `agent/inbox/spliced` inserting one typed message.
    pub fn queued(&mut self, target: &str, start: u64, text: &str) -> Arc<SessionEvent> {
        let id = format!("m{}", self.events.len());
        self.add(
            "agent/inbox/spliced",
            json!({"target": target, "start": start, "inserted": [Self::user_message(text, &id)]}),
        )
    }

    /// `agent/inbox/spliced` claiming `count` messages from the front.
    pub fn claimed(&mut self, target: &str, count: u64) -> Arc<SessionEvent> {
        self.add(
            "agent/inbox/spliced",
            json!({"target": target, "start": 0, "removedCount": count, "inserted": []}),
        )
    }

    pub fn turn_start(&mut self, turn: u64) -> Vec<Arc<SessionEvent>> {
        vec![
            self.add("turn/start", json!({"turn": turn})),
            self.add("step/start", json!({"turn": turn, "step": 1})),
        ]
    }

    pub fn user(&mut self, text: &str) -> Arc<SessionEvent> {
        let id = format!("u{}", self.events.len());
        self.add("user/message", Self::user_message(text, &id))
    }

    pub fn chunk(&mut self, chunk: Value) -> Arc<SessionEvent> {
        self.add(
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": chunk}),
        )
    }

    pub fn assistant(&mut self, text: &str) -> Arc<SessionEvent> {
        self.add(
            "assistant/message",
            json!({"turn": 1, "step": 1,
                "usage": {"inputTokens": 8000, "outputTokens": 12, "cacheReadTokens": 2000},
                "message": {"id": format!("a{}", self.events.len()), "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}}}),
        )
    }

    pub fn turn_end(&mut self, turn: u64, reason: Value) -> Vec<Arc<SessionEvent>> {
        vec![
            self.add("step/end", json!({"turn": turn, "step": 1})),
            self.add("turn/end", json!({"turn": turn, "reason": reason})),
        ]
    }
}

/// The session a UI test starts with.
pub fn opened(events: Vec<Arc<SessionEvent>>, how: OpenedHow) -> OpenedSession {
    OpenedSession {
        id: SessionId::new(SESSION),
        how,
        events,
        provider: "deepseek-official".into(),
        model: "deepseek-v4-flash".into(),
        context_window: Some(1_000_000),
    }
}

pub fn session_input(event: &Arc<SessionEvent>) -> Input {
    Input::Session {
        session: SessionId::new(SESSION),
        event: event.clone(),
    }
}

pub fn key(code: KeyCode) -> Input {
    Input::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub fn ctrl(ch: char) -> Input {
    Input::Key(KeyEvent::new(KeyCode::Char(ch), KeyModifiers::CONTROL))
}

/// Types `text` key by key; returns the effects (typing alone has none).
pub fn type_text(state: &mut InteractiveState, text: &str) -> Vec<Effect> {
    text.chars()
        .flat_map(|ch| state.reduce(key(KeyCode::Char(ch))))
        .collect()
}

/// Feeds session events; returns all effects.
pub fn feed(state: &mut InteractiveState, events: &[Arc<SessionEvent>]) -> Vec<Effect> {
    events
        .iter()
        .flat_map(|event| state.reduce(session_input(event)))
        .collect()
}

/// The text of styled lines.
pub fn plain(lines: &[Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

/// All lines the effects print into scrollback, as text.
pub fn scrollback(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Scrollback(lines) => Some(plain(lines)),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The effects other than printing and recording history.
pub fn actions(effects: Vec<Effect>) -> Vec<Effect> {
    effects
        .into_iter()
        .filter(|e| !matches!(e, Effect::Scrollback(_) | Effect::Remember(_)))
        .collect()
}

/// A buffer as text, trailing spaces trimmed.
pub fn buffer_text(buffer: &Buffer) -> String {
    let area = buffer.area;
    let rows: Vec<String> = (area.y..area.bottom())
        .map(|y| {
            let row: String = (area.x..area.right())
                .map(|x| buffer[(x, y)].symbol())
                .collect();
            row.trim_end().to_owned()
        })
        .collect();
    rows.join("\n")
}

/// The live area as a person sees it.
pub fn screen(state: &InteractiveState, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(state.width(), height)).unwrap();
    terminal
        .draw(|frame| frame.render_widget(LiveView::new(state), frame.area()))
        .unwrap();
    buffer_text(terminal.backend().buffer())
}

/// A fresh UI on an empty new session.
pub fn new_state(width: u16) -> InteractiveState {
    let mut state = InteractiveState::new(width);
    state.reduce(Input::Opened(opened(Vec::new(), OpenedHow::New)));
    state
}

/// Records every call; answers from a script.
#[derive(Default)]
pub struct FakeDriver {
    pub calls: Mutex<Vec<String>>,
    pub sessions: Vec<SessionListing>,
    /// What `list_agents` lists.
    pub agents: Vec<AgentListing>,
    /// What `resume`, `fork` and `new_session` open.
    pub opens: Mutex<Vec<OpenedSession>>,
    /// What `context` measures.
    pub context: Mutex<Option<ContextFill>>,
    /// Why `compact` does not start, if it does not.
    pub compact_refusal: Option<String>,
}

impl FakeDriver {
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }

    fn next_open(&self, call: String) -> Result<OpenedSession, DriverError> {
        self.record(call);
        let mut opens = self.opens.lock().unwrap();
        if opens.is_empty() {
            Err(DriverError::Unsupported("nothing scripted".into()))
        } else {
            Ok(opens.remove(0))
        }
    }
}

impl AgentDriver for FakeDriver {
    fn steer(&self, text: &str) -> BoxFuture<'_, Result<(), DriverError>> {
        self.record(format!("steer {text}"));
        Box::pin(async { Ok(()) })
    }

    fn follow_up(&self, text: &str) -> BoxFuture<'_, Result<(), DriverError>> {
        self.record(format!("follow-up {text}"));
        Box::pin(async { Ok(()) })
    }

    fn cancel(&self) -> Result<(), DriverError> {
        self.record("cancel".into());
        Ok(())
    }

    fn send_queued(&self) -> Result<(), DriverError> {
        self.record("send-queued".into());
        Ok(())
    }

    fn model(&self) -> CurrentModel {
        CurrentModel {
            provider: "deepseek-official".into(),
            model: "deepseek-v4-flash".into(),
            catalog: vec!["deepseek-v4-flash".into(), "deepseek-v4-pro".into()],
            windows: vec![Some(1_000_000), None],
        }
    }

    fn set_model(&self, model: &str) -> Result<String, DriverError> {
        self.record(format!("set-model {model}"));
        Ok(format!("model: {model} from the next step"))
    }

    fn permission(&self) -> PermissionPreset {
        PermissionPreset::WorkspaceWrite
    }

    fn set_permission(
        &self,
        preset: PermissionPreset,
    ) -> BoxFuture<'_, Result<String, DriverError>> {
        self.record(format!("set-permission {}", preset.as_str()));
        let note = format!(
            "permission: {} (sandbox {}, approval {})",
            preset.as_str(),
            preset.sandbox_mode().as_str(),
            preset.approval_policy()
        );
        Box::pin(async move { Ok(note) })
    }

    fn list_agents(&self) -> Vec<AgentListing> {
        self.record("list-agents".into());
        self.agents.clone()
    }

    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionListing>, DriverError>> {
        self.record("list-sessions".into());
        Box::pin(async move { Ok(self.sessions.clone()) })
    }

    fn resume(&self, id: &str) -> BoxFuture<'_, Result<OpenedSession, DriverError>> {
        let result = self.next_open(format!("resume {id}"));
        Box::pin(async move { result })
    }

    fn fork(&self) -> BoxFuture<'_, Result<OpenedSession, DriverError>> {
        let result = self.next_open("fork".into());
        Box::pin(async move { result })
    }

    fn new_session(&self) -> BoxFuture<'_, Result<OpenedSession, DriverError>> {
        let result = self.next_open("new-session".into());
        Box::pin(async move { result })
    }

    fn context(&self) -> BoxFuture<'_, Option<ContextFill>> {
        let fill = *self.context.lock().unwrap();
        Box::pin(async move { fill })
    }

    fn compact(&self) -> Result<(), DriverError> {
        self.record("compact".into());
        match &self.compact_refusal {
            Some(why) => Err(DriverError::Failed(why.clone())),
            None => Ok(()),
        }
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        self.record("shutdown".into());
        Box::pin(async {})
    }
}
