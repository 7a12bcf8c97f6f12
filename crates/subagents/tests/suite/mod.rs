//! Children on the whole agent core (the testkit harness, a scripted model that answers each
//! request by whose it is and what it holds), asserted on their complete logs as outlines.

mod cancel;
mod continuable;
mod depth;
mod foreground;
mod fork;
mod jobs;
mod recovery;

use dsh_kernel::Context;
use dsh_llm::LlmRequest;
use dsh_protocol::{ContentBlock, Message, StreamChunk};
use dsh_session::{Session, SessionCreated};
use dsh_subagents::{Subagents, SubagentsConfig, SubagentsPlugin};
use dsh_testkit::harness::Harness;
use dsh_testkit::scripted::ScriptEntry;
use dsh_tools::{Tool, ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// The runtime-context text every child reads.
pub const DELEGATION: &str = "You are a subagent: another agent started you to do one task, and no person is watching this conversation. Your sandbox and tools are fixed for you; any request for approval or for more access is refused automatically. When a limit stops you, do not retry: say what you could not do and why in your result, so the agent that started you can decide.";

/// How many model calls a tree test may make at most (each answered by its router).
const CALLS: usize = 40;

/// A harness with the subagents plugin, a `gate` tool, and every session it creates.
pub struct Tree {
    pub h: Harness,
    pub subagents: Arc<Subagents>,
    sessions: Arc<Mutex<Vec<Session>>>,
    pub gates: Arc<Gates>,
}

impl Tree {
    pub fn build(route: impl Fn(&LlmRequest) -> Vec<StreamChunk> + Send + Sync + 'static) -> Self {
        Self::with_config(SubagentsConfig::default(), route)
    }

    pub fn with_config(
        config: SubagentsConfig,
        route: impl Fn(&LlmRequest) -> Vec<StreamChunk> + Send + Sync + 'static,
    ) -> Self {
        let route = Arc::new(route);
        let gates = Arc::new(Gates::default());
        let entries: Vec<ScriptEntry> = (0..CALLS)
            .map(|_| {
                let route = route.clone();
                ScriptEntry::respond(move |req| route(req))
            })
            .collect();
        let h = Harness::builder()
            .script(entries)
            .custom_tool(Arc::new(Gate(gates.clone())))
            .build();
        let sessions = Arc::new(Mutex::new(Vec::new()));
        let seen = sessions.clone();
        h.ctx()
            .on::<SessionCreated>(move |session| {
                seen.lock().unwrap().push(session.clone());
                Ok(())
            })
            .unwrap()
            .forget();
        mount(h.ctx(), config);
        let subagents = h.ctx().require::<Subagents>().unwrap();
        Self {
            h,
            subagents,
            sessions,
            gates,
        }
    }

    /// Every session created so far other than the named ones, in creation order.
    pub fn children(&self, except: &[&str]) -> Vec<Session> {
        self.sessions
            .lock()
            .unwrap()
            .iter()
            .filter(|s| !except.contains(&s.id().as_str()))
            .cloned()
            .collect()
    }

    pub fn session_count(&self) -> usize {
        self.sessions.lock().unwrap().len()
    }
}

fn mount(ctx: &Context, config: SubagentsConfig) {
    dsh_session::register_event_types(dsh_subagents::EVENT_TYPES).unwrap();
    ctx.plugin::<dsh_jobs::JobsPlugin>(dsh_jobs::JobsConfig::default())
        .unwrap();
    ctx.plugin::<SubagentsPlugin>(config).unwrap();
}

/// Every text of a message, tool results' included.
pub fn texts(message: &Message) -> String {
    fn walk(blocks: &[ContentBlock], out: &mut String) {
        for block in blocks {
            match block {
                ContentBlock::Text { text } => out.push_str(text),
                ContentBlock::ToolResult { content, .. } => walk(content, out),
                _ => {}
            }
        }
    }
    let mut out = String::new();
    walk(&message.content, &mut out);
    out
}

/// Whether the request was made for session `id`.
pub fn for_session(req: &LlmRequest, id: &str) -> bool {
    req.session_id.as_ref().is_some_and(|s| s.as_str() == id)
}

/// The text of the request's last message.
pub fn last(req: &LlmRequest) -> String {
    req.messages.last().map(|m| texts(m)).unwrap_or_default()
}

/// Whether any message of the request contains `needle`.
pub fn mentions(req: &LlmRequest, needle: &str) -> bool {
    req.messages.iter().any(|m| texts(m).contains(needle))
}

/// Named latches the `gate` tool waits on; `open` lets one waiter (now or later) through.
#[derive(Default)]
pub struct Gates {
    gates: Mutex<HashMap<String, Arc<Notify>>>,
}

impl Gates {
    fn gate(&self, name: &str) -> Arc<Notify> {
        self.gates
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    pub fn open(&self, name: &str) {
        self.gate(name).notify_one();
    }
}

/// `gate {name}`: waits until the test opens the gate (or the call is cancelled).
struct Gate(Arc<Gates>);

impl Tool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> String {
        "Waits for the test.".into()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    }
    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        true
    }
    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let name = args["name"].as_str().unwrap_or_default().to_owned();
            let gate = self.0.gate(&name);
            tokio::select! {
                () = gate.notified() => Ok(json!(format!("{name} opened"))),
                () = exec.signal().cancelled() => Err(ToolFailure::new(format!("{name} cancelled"))),
            }
        })
    }
}
