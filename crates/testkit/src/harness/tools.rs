//! Small tools for loop tests, all reporting to one [`ToolProbe`].
//!
//! - `echo` returns its `text` argument;
//! - `wait` runs until its call is cancelled (the "tool in flight" of cancel tests);
//! - `fail` always fails with code [`TEST_TOOL_FAILED`];
//! - `read` is concurrency-safe and returns `read:<path>`; while the probe holds reads it
//!   waits until the test releases its call id, so a test decides the order calls finish;
//! - a [`ScriptedTool`] has the name and behaviour a test composes (concurrency safety, held
//!   until released, deaf to cancellation, concluding the turn, deferring context).

use dsh_protocol::Message;
use dsh_tools::{Tool, ToolExecution, ToolFailure};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// Code of the failure the `fail` tool reports.
pub const TEST_TOOL_FAILED: &str = "TEST_TOOL_FAILED";

/// The test tools a harness can register, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestTool {
    /// `echo {text}` → `text`.
    Echo,
    /// `wait {}` → runs until cancelled.
    Wait,
    /// `fail {}` → always fails.
    Fail,
    /// `read {path}` → `read:<path>`; concurrency-safe.
    Read,
}

impl TestTool {
    /// The tool's registered name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Echo => "echo",
            Self::Wait => "wait",
            Self::Fail => "fail",
            Self::Read => "read",
        }
    }

    /// The tool's description (part of the schema the model sees).
    pub fn description(self) -> &'static str {
        match self {
            Self::Echo => "Echoes its text.",
            Self::Wait => "Waits until the call is cancelled.",
            Self::Fail => "Always fails.",
            Self::Read => "Reads a path; safe to run in parallel.",
        }
    }

    /// The tool's parameter schema.
    pub fn parameters(self) -> Value {
        match self {
            Self::Echo => json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            Self::Read => json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            Self::Wait | Self::Fail => json!({"type": "object"}),
        }
    }

    /// The schema as it appears in a logged `request/header` (`{name, description,
    /// parameters}`), for whole-log assertions.
    pub fn schema_json(self) -> Value {
        json!({"name": self.name(), "description": self.description(), "parameters": self.parameters()})
    }

    /// The tool, reporting to `probe`.
    pub fn build(self, probe: &ToolProbe) -> Arc<dyn Tool> {
        Arc::new(ProbedTool {
            kind: self,
            probe: probe.clone(),
        })
    }
}

/// What the test tools did, shared between a test and its tools.
#[derive(Clone, Debug)]
pub struct ToolProbe {
    inner: Arc<ProbeInner>,
}

#[derive(Debug)]
struct ProbeInner {
    /// `start <call id>` / `end <call id>` in the order they happened.
    journal: watch::Sender<Vec<String>>,
    released: watch::Sender<HashSet<String>>,
    holding: AtomicBool,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

impl Default for ToolProbe {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolProbe {
    pub fn new() -> Self {
        Self {
            inner: Arc::new(ProbeInner {
                journal: watch::Sender::new(Vec::new()),
                released: watch::Sender::new(HashSet::new()),
                holding: AtomicBool::new(false),
                in_flight: AtomicUsize::new(0),
                max_in_flight: AtomicUsize::new(0),
            }),
        }
    }

    /// `start <id>` / `end <id>` entries so far, in order.
    pub fn journal(&self) -> Vec<String> {
        self.inner.journal.borrow().clone()
    }

    /// Resolves once the journal holds `entry` (e.g. `start c1`, `end c1`).
    pub async fn wait_for(&self, entry: &str) {
        let mut rx = self.inner.journal.subscribe();
        // The sender lives in the probe, so the channel cannot close while we wait.
        let _ = rx
            .wait_for(|journal| journal.iter().any(|e| e == entry))
            .await;
    }

    /// The most bodies that ran at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.inner.max_in_flight.load(Ordering::SeqCst)
    }

    /// From now on `read` bodies wait for [`release`](Self::release) of their call id.
    pub fn hold_reads(&self) {
        self.inner.holding.store(true, Ordering::SeqCst);
    }

    /// Lets the held call `call_id` (a `read` while reads are held, or a held
    /// [`ScriptedTool`]) finish; also before it started.
    pub fn release(&self, call_id: &str) {
        self.inner.released.send_modify(|set| {
            set.insert(call_id.to_owned());
        });
    }

    fn note(&self, entry: String) {
        self.inner
            .journal
            .send_modify(|journal| journal.push(entry));
    }

    fn enter(&self, call_id: &str) {
        let now = self.inner.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.inner.max_in_flight.fetch_max(now, Ordering::SeqCst);
        self.note(format!("start {call_id}"));
    }

    fn leave(&self, call_id: &str) {
        self.inner.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.note(format!("end {call_id}"));
    }

    async fn released(&self, call_id: &str) {
        let mut rx = self.inner.released.subscribe();
        let _ = rx.wait_for(|set| set.contains(call_id)).await;
    }
}

struct ProbedTool {
    kind: TestTool,
    probe: ToolProbe,
}

fn text_arg(args: &Value, key: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Tool for ProbedTool {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn description(&self) -> String {
        self.kind.description().to_owned()
    }

    fn parameters(&self) -> Value {
        self.kind.parameters()
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        self.kind == TestTool::Read
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let id = exec.call_id().to_string();
            self.probe.enter(&id);
            let outcome = match self.kind {
                TestTool::Echo => Ok(Value::String(text_arg(&args, "text"))),
                TestTool::Wait => {
                    exec.signal().cancelled().await;
                    Ok(Value::String("cancelled".into()))
                }
                TestTool::Fail => Err(ToolFailure::coded(
                    "TestToolError",
                    TEST_TOOL_FAILED,
                    "the fail tool always fails",
                )),
                TestTool::Read => {
                    if self.probe.inner.holding.load(Ordering::SeqCst) {
                        tokio::select! {
                            () = self.probe.released(&id) => {}
                            () = exec.signal().cancelled() => {}
                        }
                    }
                    Ok(Value::String(format!("read:{}", text_arg(&args, "path"))))
                }
            };
            self.probe.leave(&id);
            outcome
        })
    }
}

/// A test tool whose name and behaviour the test composes; it journals `start <call id>` /
/// `end <call id>` to the [`ToolProbe`] it is built with and returns `<name>:<text>` (its
/// `text` argument, empty when absent).
///
/// ```
/// use dsh_testkit::harness::{ScriptedTool, ToolProbe};
/// let probe = ToolProbe::new();
/// let tool = ScriptedTool::new("slow").parallel().held().build(&probe);
/// assert_eq!(tool.name(), "slow");
/// ```
#[derive(Clone, Debug)]
pub struct ScriptedTool {
    name: String,
    parallel: bool,
    hold: Hold,
    concludes: bool,
    context: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hold {
    No,
    /// Until the probe releases the call id, or the call is cancelled.
    UntilReleased,
    /// Until the probe releases the call id, whatever happens to the call meanwhile.
    IgnoringCancel,
}

impl ScriptedTool {
    /// An exclusive tool that finishes at once.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            parallel: false,
            hold: Hold::No,
            concludes: false,
            context: None,
        }
    }

    /// Concurrency-safe: the scheduler may run it beside other such calls.
    pub fn parallel(mut self) -> Self {
        self.parallel = true;
        self
    }

    /// Each call waits for [`ToolProbe::release`] of its call id (or its cancellation).
    pub fn held(mut self) -> Self {
        self.hold = Hold::UntilReleased;
        self
    }

    /// Each call waits for [`ToolProbe::release`] of its call id and ignores cancellation
    /// meanwhile (a body that drains slowly after an abort).
    pub fn stubborn(mut self) -> Self {
        self.hold = Hold::IgnoringCancel;
        self
    }

    /// Each call asks to conclude the turn after its step.
    pub fn concludes(mut self) -> Self {
        self.concludes = true;
        self
    }

    /// Each call defers `text` as a user message into the next step.
    pub fn defers_context(mut self, text: impl Into<String>) -> Self {
        self.context = Some(text.into());
        self
    }

    /// The tool, journaling to `probe` (which also releases held calls).
    pub fn build(self, probe: &ToolProbe) -> Arc<dyn Tool> {
        Arc::new(Scripted {
            spec: self,
            probe: probe.clone(),
        })
    }
}

struct Scripted {
    spec: ScriptedTool,
    probe: ToolProbe,
}

impl Tool for Scripted {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> String {
        format!("the {} test tool", self.spec.name)
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        self.spec.parallel
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        exec: &'a ToolExecution,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let id = exec.call_id().to_string();
            self.probe.enter(&id);
            match self.spec.hold {
                Hold::No => {}
                Hold::UntilReleased => {
                    tokio::select! {
                        () = self.probe.released(&id) => {}
                        () = exec.signal().cancelled() => {}
                    }
                }
                Hold::IgnoringCancel => self.probe.released(&id).await,
            }
            if self.spec.concludes {
                exec.conclude_turn();
            }
            if let Some(context) = &self.spec.context {
                exec.defer_context(Message::user_text(context.as_str()));
            }
            self.probe.leave(&id);
            Ok(Value::String(format!(
                "{}:{}",
                self.spec.name,
                text_arg(&args, "text")
            )))
        })
    }
}
