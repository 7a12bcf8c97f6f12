//! `session_event_read`.

use super::*;

/// `session_event_read`.
pub struct EventReadTool {
    memory: Arc<Memory>,
}

impl EventReadTool {
    pub fn new(memory: Arc<Memory>) -> Self {
        Self { memory }
    }
}

#[derive(Debug, Deserialize)]
pub struct EventReadArgs {
    pub session_id: Option<String>,
    pub seq: u64,
    pub before: Option<u64>,
    pub after: Option<u64>,
}

impl TypedTool for EventReadTool {
    type Args = EventReadArgs;
    type Output = String;

    fn name(&self) -> &str {
        SESSION_EVENT_READ
    }

    fn description(&self) -> String {
        "Read one full unabridged event and optional neighboring raw-event summaries from an \
         authorized session."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "session_id": session_id_property(),
                "seq": seq_property(),
                "before": {"type": "integer", "description": "Number of preceding raw events to summarize. Omit for none."},
                "after": {"type": "integer", "description": "Number of following raw events to summarize. Omit for none."}
            },
            "required": ["seq"]
        })
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: EventReadArgs,
        exec: &ToolExecution,
    ) -> Result<String, ToolFailure> {
        let caller = caller_of(exec)?;
        let memory = self.memory.clone();
        blocking(move || event_read(&memory, &caller, &args)).await
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        render_text(value)
    }
}

/// The lines of one event and its neighbours (also `dsh sessions show --at`).
pub fn event_window(
    events: &[Arc<SessionEvent>],
    seq: u64,
    before: u64,
    after: u64,
) -> Result<(String, Vec<String>, Vec<String>), MemoryError> {
    let target = event_at(events, seq)?;
    let json = serde_json::to_string_pretty(target.as_ref()).unwrap_or_default();
    let neighbour = |e: &Arc<SessionEvent>| match event_text(e) {
        Some(text) => format!(
            "- {}\n  {}",
            event_line(e),
            clip(&one_line(&text), NEIGHBOUR_CHARS)
        ),
        None => format!("- {} | (no semantic text)", event_line(e)),
    };
    let before_lines = events
        .iter()
        .filter(|e| e.seq < seq && e.seq + before.min(MAX_NEIGHBOURS) >= seq)
        .map(neighbour)
        .collect();
    let after_lines = events
        .iter()
        .filter(|e| e.seq > seq && e.seq <= seq + after.min(MAX_NEIGHBOURS))
        .map(neighbour)
        .collect();
    Ok((json, before_lines, after_lines))
}

fn event_read(
    memory: &Memory,
    caller: &Caller,
    args: &EventReadArgs,
) -> Result<String, MemoryError> {
    let id = target(memory, caller, args.session_id.as_deref())?;
    let events = target_events(memory, caller, &id)?;
    let (json, before, after) = event_window(
        &events,
        args.seq,
        args.before.unwrap_or(0),
        args.after.unwrap_or(0),
    )?;
    let title = memory.index().session(&id)?;
    let mut lines = vec![
        format!("Session {id} — {}", title_text(title.as_ref())),
        format!("Target event seq {}:", args.seq),
        "```json".into(),
        clip(&json, MAX_OUTPUT_CHARS / 2),
        "```".into(),
    ];
    if !before.is_empty() {
        lines.push(String::new());
        lines.push("Before:".into());
        lines.extend(before);
    }
    if !after.is_empty() {
        lines.push(String::new());
        lines.push("After:".into());
        lines.extend(after);
    }
    Ok(frame(SESSION_EVENT_READ, &lines.join("\n")))
}
