//! `session_trace` and `session_event_trace`.

use super::*;

/// `session_trace`.
pub struct SessionTraceTool {
    memory: Arc<Memory>,
}

impl SessionTraceTool {
    pub fn new(memory: Arc<Memory>) -> Self {
        Self { memory }
    }
}

#[derive(Debug, Deserialize)]
pub struct SessionTargetArgs {
    pub session_id: Option<String>,
}

impl TypedTool for SessionTraceTool {
    type Args = SessionTargetArgs;
    type Output = String;

    fn name(&self) -> &str {
        SESSION_TRACE
    }

    fn description(&self) -> String {
        "Read the authorized session lineage around one session, including complete visible \
         ancestor and descendant relationships."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"session_id": session_id_property()}})
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: SessionTargetArgs,
        exec: &ToolExecution,
    ) -> Result<String, ToolFailure> {
        let caller = caller_of(exec)?;
        let memory = self.memory.clone();
        blocking(move || session_trace(&memory, &caller, args.session_id.as_deref())).await
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        render_text(value)
    }
}

fn session_trace(
    memory: &Memory,
    caller: &Caller,
    id: Option<&str>,
) -> Result<String, MemoryError> {
    memory.sync()?;
    let id = target(memory, caller, id)?;
    let row = memory.index().session(&id)?;
    let created = row
        .as_ref()
        .map_or_else(|| caller.session.header().created_at, |r| r.created_at);
    let mut lines = vec![
        format!("Session {id} — {}", title_text(row.as_ref())),
        format!("Created: {}", format_iso8601(created)),
        format!(
            "Availability: {}",
            if row.is_some() { "persisted" } else { "live" }
        ),
        String::new(),
        "Ancestors (nearest first):".into(),
    ];
    let mut parent = match &row {
        Some(r) => r.parent_session.clone(),
        None => caller
            .session
            .header()
            .parent_session
            .as_ref()
            .map(|p| p.as_str().to_owned()),
    };
    if parent.is_none() {
        lines.push("- none (target is a root session)".into());
    }
    let mut seen: HashSet<String> = HashSet::from([id.clone()]);
    while let Some(p) = parent.take() {
        if !seen.insert(p.clone()) {
            break;
        }
        match memory.authorize(&caller.workspace, &p) {
            Ok(ancestor) => {
                lines.push(format!("- {}", row_line(&ancestor)));
                parent = ancestor.parent_session.clone();
            }
            Err(_) => lines.push("- [outside workspace boundary]".into()),
        }
    }
    lines.push(String::new());
    lines.push("Descendants:".into());
    let mut stack: Vec<(usize, SessionRow)> = memory
        .index()
        .children(&id)?
        .into_iter()
        .rev()
        .map(|r| (0, r))
        .collect();
    let mut shown = 0;
    if stack.is_empty() {
        lines.push("- none".into());
    }
    while let Some((depth, child)) = stack.pop() {
        let indent = "  ".repeat(depth);
        if child.cwd.as_deref() != Some(caller.workspace.as_str()) {
            lines.push(format!("{indent}- [outside workspace subtree]"));
            continue;
        }
        if !seen.insert(child.id.clone()) {
            continue;
        }
        shown += 1;
        if shown > DESCENDANT_NODES {
            lines.push(format!("{indent}- … (more descendants not shown)"));
            break;
        }
        lines.push(format!("{indent}- {}", row_line(&child)));
        for grandchild in memory.index().children(&child.id)?.into_iter().rev() {
            stack.push((depth + 1, grandchild));
        }
    }
    Ok(frame(SESSION_TRACE, &lines.join("\n")))
}

/// `session_event_trace`.
pub struct EventTraceTool {
    memory: Arc<Memory>,
}

impl EventTraceTool {
    pub fn new(memory: Arc<Memory>) -> Self {
        Self { memory }
    }
}

#[derive(Debug, Deserialize)]
pub struct EventTargetArgs {
    pub session_id: Option<String>,
    pub seq: u64,
}

impl TypedTool for EventTraceTool {
    type Args = EventTargetArgs;
    type Output = String;

    fn name(&self) -> &str {
        SESSION_EVENT_TRACE
    }

    fn description(&self) -> String {
        "Read every direct replacement and relationship to a cited source event for one event \
         in an authorized session."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"session_id": session_id_property(), "seq": seq_property()},
            "required": ["seq"]
        })
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: EventTargetArgs,
        exec: &ToolExecution,
    ) -> Result<String, ToolFailure> {
        let caller = caller_of(exec)?;
        let memory = self.memory.clone();
        blocking(move || event_trace(&memory, &caller, &args)).await
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        render_text(value)
    }
}

fn seq_list(values: &[u64]) -> String {
    if values.is_empty() {
        "none".into()
    } else {
        values
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Seqs a compaction summary event shadows (takes off the surface).
fn shadowed_by(event: &SessionEvent) -> Vec<u64> {
    match &event.data {
        EventData::Other { type_name, data } if type_name == "compaction/summary" => data
            .get("shadowedSeqs")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

fn event_trace(
    memory: &Memory,
    caller: &Caller,
    args: &EventTargetArgs,
) -> Result<String, MemoryError> {
    let id = target(memory, caller, args.session_id.as_deref())?;
    let events = target_events(memory, caller, &id)?;
    let target_event = event_at(&events, args.seq)?;
    let replaced_by: Vec<u64> = events
        .iter()
        .filter(|e| shadowed_by(e).contains(&args.seq))
        .map(|e| e.seq)
        .collect();
    let sources = target_event.source_event_seqs.clone().unwrap_or_default();
    let derived: Vec<u64> = events
        .iter()
        .filter(|e| {
            e.source_event_seqs
                .as_ref()
                .is_some_and(|s| s.contains(&args.seq))
        })
        .map(|e| e.seq)
        .collect();
    let title = memory.index().session(&id)?;
    let surface = if !target_event.data.is_surface() {
        "log-only"
    } else if replaced_by.is_empty() {
        "current"
    } else {
        "shadowed"
    };
    let lines = [
        format!("Session {id} — {}", title_text(title.as_ref())),
        format!("Target: {} | {surface}", event_line(target_event)),
        format!(
            "Replaced by: {}",
            replaced_by
                .first()
                .map_or_else(|| "none".into(), |s| format!("seq {s}"))
        ),
        format!(
            "Events replaced by target: {}",
            seq_list(&shadowed_by(target_event))
        ),
        format!("Events cited directly as sources: {}", seq_list(&sources)),
        format!("Direct derived events: {}", seq_list(&derived)),
    ];
    Ok(frame(SESSION_EVENT_TRACE, &lines.join("\n")))
}
