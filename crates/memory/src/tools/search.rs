//! `session_search` and `session_event_search`.

use super::*;

/// `session_search`.
pub struct SessionSearchTool {
    memory: Arc<Memory>,
}

impl SessionSearchTool {
    pub fn new(memory: Arc<Memory>) -> Self {
        Self { memory }
    }
}

#[derive(Debug, Deserialize)]
pub struct SessionSearchArgs {
    pub query: String,
    pub session_ids: Option<Vec<String>>,
    pub created_at_from: Option<String>,
    pub created_at_to: Option<String>,
    pub parent_session_ids: Option<Vec<String>>,
    pub include_root_sessions: Option<bool>,
    pub availability: Option<Vec<String>>,
    pub event_seq_from: Option<u64>,
    pub event_seq_to: Option<u64>,
    pub event_time_from: Option<String>,
    pub event_time_to: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub event_surfaces: Option<Vec<String>>,
}

impl TypedTool for SessionSearchTool {
    type Args = SessionSearchArgs;
    type Output = String;

    fn name(&self) -> &str {
        SESSION_SEARCH
    }

    fn description(&self) -> String {
        "Search prior sessions in the caller workspace and return the strongest matching event \
         from each session."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Literal full-text query over prior session history."},
                "session_ids": string_list("Optional session ids to include."),
                "created_at_from": {"type": "string", "description": "Inclusive timezone-qualified ISO 8601 creation-time lower bound."},
                "created_at_to": {"type": "string", "description": "Inclusive timezone-qualified ISO 8601 creation-time upper bound."},
                "parent_session_ids": string_list("Optional direct parent session ids."),
                "include_root_sessions": {"type": "boolean", "description": "Include sessions with no parent in the parent filter."},
                "availability": {"type": "array", "description": "Require at least one selected source availability.",
                                 "items": {"type": "string", "enum": ["live", "persisted"]}},
                "event_seq_from": {"type": "integer", "description": "Inclusive event sequence lower bound."},
                "event_seq_to": {"type": "integer", "description": "Inclusive event sequence upper bound."},
                "event_time_from": {"type": "string", "description": "Inclusive timezone-qualified ISO 8601 event-time lower bound."},
                "event_time_to": {"type": "string", "description": "Inclusive timezone-qualified ISO 8601 event-time upper bound."},
                "event_types": string_list("Event types to include."),
                "event_surfaces": surfaces_property("Event surfaces to include.")
            },
            "required": ["query"]
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: SessionSearchArgs,
        exec: &ToolExecution,
    ) -> Result<String, ToolFailure> {
        let caller = caller_of(exec)?;
        let memory = self.memory.clone();
        blocking(move || session_search(&memory, &caller, &args)).await
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        render_text(value)
    }
}

fn session_search(
    memory: &Memory,
    caller: &Caller,
    args: &SessionSearchArgs,
) -> Result<String, MemoryError> {
    memory.sync()?;
    let parents = match (&args.parent_session_ids, args.include_root_sessions) {
        (None, None | Some(false)) => None,
        (ids, roots) => {
            let mut parents: Vec<Option<String>> = ids
                .iter()
                .flatten()
                .filter(|id| memory.authorize(&caller.workspace, id).is_ok())
                .map(|id| Some(id.clone()))
                .collect();
            if roots == Some(true) {
                parents.push(None);
            }
            if parents.is_empty() {
                return Ok(frame(SESSION_SEARCH, "No prior session matches found."));
            }
            Some(parents)
        }
    };
    // Every stored session is persisted; "live" alone means none of them is wanted.
    if args
        .availability
        .as_ref()
        .is_some_and(|a| !a.iter().any(|x| x == "persisted"))
    {
        return Ok(frame(
            SESSION_SEARCH,
            "No prior session matches found. (Only stored sessions are searched; every one is \
             persisted.)",
        ));
    }
    let filter = SessionFilter {
        cwd: Some(caller.workspace.clone()),
        ids: args.session_ids.clone(),
        exclude: Some(caller.id.clone()),
        created_from: time_arg(args.created_at_from.as_ref())?,
        created_to: time_arg(args.created_at_to.as_ref())?,
        parents,
    };
    let events = EventFilter {
        seq_from: args.event_seq_from,
        seq_to: args.event_seq_to,
        time_from: time_arg(args.event_time_from.as_ref())?,
        time_to: time_arg(args.event_time_to.as_ref())?,
        types: args.event_types.clone(),
        surfaces: args.event_surfaces.clone(),
    };
    let hits = memory
        .index()
        .search(&args.query, &filter, &events, MAX_SEARCH_RESULTS + 1)?;
    if hits.is_empty() {
        return Ok(frame(SESSION_SEARCH, "No prior session matches found."));
    }
    let capped = hits.len() > MAX_SEARCH_RESULTS;
    let shown = &hits[..hits.len().min(MAX_SEARCH_RESULTS)];
    let mut lines = vec![format!("Session search results ({}):", shown.len())];
    for (i, hit) in shown.iter().enumerate() {
        let parent = match &hit.session.parent_session {
            None => "root".to_owned(),
            Some(p) if memory.authorize(&caller.workspace, p).is_ok() => p.clone(),
            Some(_) => "[outside workspace]".to_owned(),
        };
        lines.push(String::new());
        lines.push(format!(
            "{}. Session {} — {}",
            i + 1,
            hit.session.id,
            title_text(Some(&hit.session))
        ));
        lines.push(format!(
            "   Created: {}",
            format_iso8601(hit.session.created_at)
        ));
        lines.push(format!("   Parent: {parent}"));
        lines.push("   Availability: persisted".to_owned());
        lines.push(format!(
            "   Best match: seq {} | {} | {} | turn {} | {}",
            hit.event.seq,
            hit.event.event_type,
            hit.event.surface,
            hit.event.turn,
            format_iso8601(hit.event.time)
        ));
        lines.push(format!("   Snippet: {}", marked(&hit.event.snippet)));
    }
    if capped {
        lines.push(String::new());
        lines.push(
            "Result cap reached. Narrow the query or add filters to find additional matches."
                .into(),
        );
    }
    Ok(frame(SESSION_SEARCH, &lines.join("\n")))
}

/// `session_event_search`.
pub struct EventSearchTool {
    memory: Arc<Memory>,
}

impl EventSearchTool {
    pub fn new(memory: Arc<Memory>) -> Self {
        Self { memory }
    }
}

#[derive(Debug, Deserialize)]
pub struct EventSearchArgs {
    pub session_id: Option<String>,
    pub query: String,
    pub seq_from: Option<u64>,
    pub seq_to: Option<u64>,
    pub time_from: Option<String>,
    pub time_to: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub surfaces: Option<Vec<String>>,
}

impl TypedTool for EventSearchTool {
    type Args = EventSearchArgs;
    type Output = String;

    fn name(&self) -> &str {
        SESSION_EVENT_SEARCH
    }

    fn description(&self) -> String {
        "Search prior events in one authorized session; the current session excludes the step \
         performing this call."
            .into()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "session_id": session_id_property(),
                "query": {"type": "string", "description": "Literal full-text query over the target session."},
                "seq_from": {"type": "integer", "description": "Inclusive event sequence lower bound."},
                "seq_to": {"type": "integer", "description": "Inclusive event sequence upper bound."},
                "time_from": {"type": "string", "description": "Inclusive timezone-qualified ISO 8601 event-time lower bound."},
                "time_to": {"type": "string", "description": "Inclusive timezone-qualified ISO 8601 event-time upper bound."},
                "event_types": string_list("Event types to include."),
                "surfaces": surfaces_property("Event surfaces to include.")
            },
            "required": ["query"]
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(30))
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }

    async fn execute(
        &self,
        args: EventSearchArgs,
        exec: &ToolExecution,
    ) -> Result<String, ToolFailure> {
        let caller = caller_of(exec)?;
        let memory = self.memory.clone();
        blocking(move || event_search(&memory, &caller, &args)).await
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        render_text(value)
    }
}

fn event_search(
    memory: &Memory,
    caller: &Caller,
    args: &EventSearchArgs,
) -> Result<String, MemoryError> {
    memory.sync()?;
    let id = target(memory, caller, args.session_id.as_deref())?;
    let mut seq_to = args.seq_to;
    if id == caller.id {
        let events = caller.session.events();
        let step = events
            .iter()
            .rev()
            .find(|e| matches!(e.data, EventData::StepStart(_)))
            .ok_or_else(|| {
                MemoryError::InvalidInput(
                    "current-session search requires an active step boundary".into(),
                )
            })?;
        let before_step = step.seq.saturating_sub(1);
        seq_to = Some(seq_to.map_or(before_step, |to| to.min(before_step)));
    }
    let title = memory.index().session(&id)?;
    let mut lines = vec![format!("Session {id} — {}", title_text(title.as_ref()))];
    let filter = EventFilter {
        seq_from: args.seq_from,
        seq_to,
        time_from: time_arg(args.time_from.as_ref())?,
        time_to: time_arg(args.time_to.as_ref())?,
        types: args.event_types.clone(),
        surfaces: args.surfaces.clone(),
    };
    let hits = memory
        .index()
        .search_events(&id, &args.query, &filter, MAX_SEARCH_RESULTS + 1)?;
    if hits.is_empty() {
        lines.push(String::new());
        lines.push("No prior event matches found.".into());
        return Ok(frame(SESSION_EVENT_SEARCH, &lines.join("\n")));
    }
    let capped = hits.len() > MAX_SEARCH_RESULTS;
    let shown = &hits[..hits.len().min(MAX_SEARCH_RESULTS)];
    lines.push(String::new());
    lines.push(format!("Event search results ({}):", shown.len()));
    for (i, hit) in shown.iter().enumerate() {
        lines.push(format!(
            "{}. seq {} | {} | {} | turn {} | {}",
            i + 1,
            hit.seq,
            hit.event_type,
            hit.surface,
            hit.turn,
            format_iso8601(hit.time)
        ));
        lines.push(format!("   Snippet: {}", marked(&hit.snippet)));
    }
    if capped {
        lines.push(String::new());
        lines.push(
            "Result cap reached. Narrow the query or add filters to find additional matches."
                .into(),
        );
    }
    Ok(frame(SESSION_EVENT_SEARCH, &lines.join("\n")))
}
