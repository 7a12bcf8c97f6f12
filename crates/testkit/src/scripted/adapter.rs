//! The scripted adapter: one script entry per model call, every request recorded.

use dsh_kernel::Context;
use dsh_llm::{
    AdapterHandle, ChunkStream, LlmAdapter, LlmError, LlmRequest, LlmRuntime, ModelInfo,
    ReasoningInfo, ResolvedRetryPolicy,
};
use dsh_protocol::{LlmCallConfig, StreamChunk};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Code of the error a call gets when the script has no entry left for it.
pub const SCRIPT_EXHAUSTED: &str = "SCRIPT_EXHAUSTED";

/// A reply computed from the request (to echo it, or to branch on what the model is shown).
pub type RespondFn = Arc<dyn Fn(&LlmRequest) -> Vec<StreamChunk> + Send + Sync>;

/// What one model call does.
pub enum ScriptEntry {
    /// Yields these chunks, then ends.
    Chunks(Vec<StreamChunk>),
    /// Yields whatever the function returns for the request.
    Respond(RespondFn),
    /// Yields nothing and never ends on its own; once the request is cancelled it ends
    /// without yielding anything more.
    Hang,
    /// Yields the first `n` chunks, then behaves like [`ScriptEntry::Hang`].
    HangAfter(usize, Vec<StreamChunk>),
    /// The adapter's `stream()` itself fails (before any chunk).
    Error(LlmError),
    /// Yields the first `n` chunks, then a mid-stream error item.
    ErrorAfter(usize, Vec<StreamChunk>, LlmError),
}

impl ScriptEntry {
    /// A [`ScriptEntry::Respond`] from a closure.
    pub fn respond(f: impl Fn(&LlmRequest) -> Vec<StreamChunk> + Send + Sync + 'static) -> Self {
        Self::Respond(Arc::new(f))
    }
}

/// A script of plain text answers ([`text_response`](super::text_response)), one per call.
pub fn text_script(answers: &[&str]) -> Vec<ScriptEntry> {
    answers
        .iter()
        .map(|answer| super::text_response(answer).into())
        .collect()
}

impl From<Vec<StreamChunk>> for ScriptEntry {
    fn from(chunks: Vec<StreamChunk>) -> Self {
        Self::Chunks(chunks)
    }
}

impl fmt::Debug for ScriptEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Chunks(c) => write!(f, "Chunks({} chunks)", c.len()),
            Self::Respond(_) => f.write_str("Respond(..)"),
            Self::Hang => f.write_str("Hang"),
            Self::HangAfter(n, c) => write!(f, "HangAfter({n} of {} chunks)", c.len()),
            Self::Error(e) => write!(f, "Error({})", e.failure),
            Self::ErrorAfter(n, c, e) => {
                write!(f, "ErrorAfter({n} of {} chunks, {})", c.len(), e.failure)
            }
        }
    }
}

#[derive(Default)]
struct Script {
    entries: VecDeque<ScriptEntry>,
    requests: Vec<Arc<LlmRequest>>,
}

/// An in-process [`LlmAdapter`] that plays a script: call *n* consumes entry *n*.
///
/// Every request the adapter receives is recorded in order ([`requests`](Self::requests)).
/// Tests synchronize on progress without sleeping: [`wait_for_call`](Self::wait_for_call)
/// resolves once the *n*th call has started, [`wait_for_hang`](Self::wait_for_hang) once the
/// *n*th hanging call has yielded everything it will yield and was polled again (so the
/// consumer has handled those chunks).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use dsh_kernel::Context;
/// use dsh_llm::{LlmRequest, LlmRuntime};
/// use dsh_testkit::scripted::{text_response, ScriptedAdapter};
/// use futures_util::StreamExt;
///
/// let ctx = Context::root();
/// let runtime = LlmRuntime::install(&ctx).unwrap();
/// let adapter = Arc::new(ScriptedAdapter::new([text_response("hi").into()]));
/// adapter.register(&ctx, &runtime, "scripted").unwrap();
/// let request = LlmRequest::new(ScriptedAdapter::config("scripted", "m"), vec![]);
/// let chunks: Vec<_> = runtime.stream(Arc::new(request)).await.unwrap().collect().await;
/// assert_eq!(chunks.len(), 5);
/// assert_eq!(adapter.calls(), 1);
/// # });
/// ```
pub struct ScriptedAdapter {
    script: Mutex<Script>,
    model: Mutex<ModelInfo>,
    calls: watch::Sender<usize>,
    hangs: watch::Sender<usize>,
}

impl fmt::Debug for ScriptedAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let script = self.lock();
        f.debug_struct("ScriptedAdapter")
            .field("calls", &script.requests.len())
            .field("remaining", &script.entries)
            .finish()
    }
}

impl ScriptedAdapter {
    /// An adapter playing `entries`, describing every model with [`ModelInfo::default`]
    /// (text only, no context window, no defaults, no reasoning).
    pub fn new(entries: impl IntoIterator<Item = ScriptEntry>) -> Self {
        Self {
            script: Mutex::new(Script {
                entries: entries.into_iter().collect(),
                requests: Vec::new(),
            }),
            model: Mutex::new(ModelInfo::default()),
            calls: watch::Sender::new(0),
            hangs: watch::Sender::new(0),
        }
    }

    /// A `provider`/`model` call config with nothing else set.
    pub fn config(provider: &str, model: &str) -> LlmCallConfig {
        LlmCallConfig {
            provider: provider.into(),
            model: model.into(),
            ..LlmCallConfig::default()
        }
    }

    /// Describes every model with `info` (what `prepare_call` materializes and validates).
    pub fn with_model(self, info: ModelInfo) -> Self {
        *lock(&self.model) = info;
        self
    }

    /// Sets the context window the model reports.
    pub fn context_window(self, tokens: u64) -> Self {
        lock(&self.model).context_window = Some(tokens);
        self
    }

    /// Sets the output cap used when a request names none.
    pub fn default_max_tokens(self, tokens: u64) -> Self {
        lock(&self.model).default_max_tokens = Some(tokens);
        self
    }

    /// Gives the model reasoning controls: the accepted efforts and the default one.
    pub fn efforts(self, efforts: &[&str], default: Option<&str>) -> Self {
        lock(&self.model).reasoning = Some(ReasoningInfo {
            efforts: efforts.iter().map(|e| e.to_string()).collect(),
            default_effort: default.map(Into::into),
        });
        self
    }

    /// Appends an entry to the script (also while calls are running).
    pub fn push(&self, entry: impl Into<ScriptEntry>) {
        self.lock().entries.push_back(entry.into());
    }

    /// Every request received so far, in call order.
    pub fn requests(&self) -> Vec<Arc<LlmRequest>> {
        self.lock().requests.clone()
    }

    /// How many calls have started (including ones that found the script exhausted).
    pub fn calls(&self) -> usize {
        *self.calls.borrow()
    }

    /// Entries not consumed yet.
    pub fn remaining(&self) -> usize {
        self.lock().entries.len()
    }

    /// Resolves once at least `n` calls have started (immediately if they have).
    pub async fn wait_for_call(&self, n: usize) {
        let mut rx = self.calls.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = rx.wait_for(|calls| *calls >= n).await;
    }

    /// Resolves once at least `n` calls have reached their hang point.
    pub async fn wait_for_hang(&self, n: usize) {
        let mut rx = self.hangs.subscribe();
        let _ = rx.wait_for(|hangs| *hangs >= n).await;
    }

    /// Registers this adapter on `runtime` for `provider`, owned by `owner`'s fiber, with
    /// the default retry policy.
    pub fn register(
        self: &Arc<Self>,
        owner: &Context,
        runtime: &LlmRuntime,
        provider: &str,
    ) -> Result<AdapterHandle, LlmError> {
        self.register_with_policy(owner, runtime, provider, ResolvedRetryPolicy::default())
    }

    /// Like [`register`](Self::register) with an explicit retry policy.
    pub fn register_with_policy(
        self: &Arc<Self>,
        owner: &Context,
        runtime: &LlmRuntime,
        provider: &str,
        policy: ResolvedRetryPolicy,
    ) -> Result<AdapterHandle, LlmError> {
        runtime.register_adapter(owner, [provider], self.clone(), policy)
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        lock(&self.script)
    }

    /// Records the request and takes the entry for this call.
    fn start_call(&self, request: Arc<LlmRequest>) -> (usize, Option<ScriptEntry>) {
        let (call, entry) = {
            let mut script = self.lock();
            script.requests.push(request);
            (script.requests.len(), script.entries.pop_front())
        };
        self.calls.send_modify(|calls| *calls += 1);
        (call, entry)
    }

    fn play(
        &self,
        call: usize,
        entry: Option<ScriptEntry>,
        request: &LlmRequest,
    ) -> Result<ChunkStream, LlmError> {
        let Some(entry) = entry else {
            return Err(LlmError::new(
                SCRIPT_EXHAUSTED,
                format!("the scripted adapter has no entry for call {call}"),
            ));
        };
        let (chunks, tail) = match entry {
            ScriptEntry::Chunks(chunks) => (chunks, Tail::End),
            ScriptEntry::Respond(f) => (f(request), Tail::End),
            ScriptEntry::Hang => (Vec::new(), Tail::Hang),
            ScriptEntry::HangAfter(n, chunks) => (truncate(chunks, n), Tail::Hang),
            ScriptEntry::Error(error) => return Err(error),
            ScriptEntry::ErrorAfter(n, chunks, error) => (truncate(chunks, n), Tail::Fail(error)),
        };
        Ok(play_stream(
            chunks,
            tail,
            request.cancel.clone(),
            self.hangs.clone(),
        ))
    }
}

use dsh_kernel::sync::lock;

fn truncate(mut chunks: Vec<StreamChunk>, n: usize) -> Vec<StreamChunk> {
    chunks.truncate(n);
    chunks
}

/// What a stream does after its chunks.
enum Tail {
    End,
    Hang,
    Fail(LlmError),
}

fn play_stream(
    chunks: Vec<StreamChunk>,
    tail: Tail,
    cancel: CancellationToken,
    hangs: watch::Sender<usize>,
) -> ChunkStream {
    let head = stream::iter(chunks.into_iter().map(Ok));
    let tail = stream::once(async move {
        match tail {
            Tail::End => None,
            Tail::Fail(error) => Some(Err(error)),
            Tail::Hang => {
                hangs.send_modify(|n| *n += 1);
                cancel.cancelled().await;
                None
            }
        }
    })
    .filter_map(std::future::ready);
    head.chain(tail).boxed()
}

impl LlmAdapter for ScriptedAdapter {
    fn stream(&self, request: Arc<LlmRequest>) -> BoxFuture<'_, Result<ChunkStream, LlmError>> {
        Box::pin(async move {
            let (call, entry) = self.start_call(request.clone());
            self.play(call, entry, &request)
        })
    }

    fn resolve_model<'a>(
        &'a self,
        _config: &'a LlmCallConfig,
    ) -> BoxFuture<'a, Result<ModelInfo, LlmError>> {
        let info = lock(&self.model).clone();
        Box::pin(async move { Ok(info) })
    }
}
