//! "Model-visible ⇔ recorded" (spec §5.4, invariant 2), checked on every model request.
//!
//! [`RequestReconstructionCheck`] sits first in the `llm/stream` chain and, for each request
//! that names a session, rebuilds what the model is about to see from that session's log:
//! the messages must serialize exactly like `session.derive_messages()`, the call config,
//! system prompt and tools must equal the latest `request/header`, and the request must be
//! issued inside an open step. Problems are recorded, never thrown or panicked inside the
//! listener (that would change the behaviour under test); a test ends with
//! [`assert_clean`](RequestReconstructionCheck::assert_clean).
//!
//! Every step request (`purpose` [`RequestPurpose::Step`]) carrying a `session_id` is treated
//! as loop-built. Requests made on a session's behalf for something else (titles, compaction
//! summaries) say so in their purpose and are not checked; other exclusions go through
//! [`RequestReconstructionCheck::install_filtered`].

use crate::checks::{render, Invariant, Violation};
use dsh_kernel::{BoxError, Context, KernelError, ListenOptions, Plugin};
use dsh_llm::{LlmRequest, LlmStream, RequestPurpose};
use dsh_protocol::{EpochHeader, LlmCallConfig, Message, ToolSchema};
use dsh_session::{canonical_header, EventData, Session, SessionStore};
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Decides which session-carrying requests are checked.
pub type RequestFilter = Arc<dyn Fn(&LlmRequest) -> bool + Send + Sync>;

/// The recorded outcome of checking every model request against its session log.
///
/// Install it with [`install`](Self::install) (the listener is owned by the context's
/// fiber) or mount [`RequestReconstructionPlugin`] and fetch the check as a service.
#[derive(Clone, Default)]
pub struct RequestReconstructionCheck {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    violations: Mutex<Vec<Violation>>,
    checked: AtomicUsize,
}

impl std::fmt::Debug for RequestReconstructionCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestReconstructionCheck")
            .field("checked", &self.checked())
            .field("violations", &self.violations().len())
            .finish()
    }
}

impl RequestReconstructionCheck {
    /// Checks every request that carries a session id. Sessions are looked up in the
    /// [`SessionStore`] service of `ctx` at dispatch time.
    pub fn install(ctx: &Context) -> Result<Self, KernelError> {
        Self::install_filtered(ctx, Arc::new(|_: &LlmRequest| true))
    }

    /// Like [`install`](Self::install), checking only requests `filter` accepts.
    pub fn install_filtered(ctx: &Context, filter: RequestFilter) -> Result<Self, KernelError> {
        let check = Self::default();
        let listener = check.clone();
        let lookup = ctx.clone();
        let options = ListenOptions {
            prepend: true,
            global: true,
        };
        ctx.on_waterfall_with::<LlmStream, _, _>(options, move |request, next| {
            if request.session_id.is_some()
                && request.purpose == RequestPurpose::Step
                && filter(&request)
            {
                listener.check(&lookup, &request);
            }
            next.run()
        })?
        .forget();
        Ok(check)
    }

    /// Every violation recorded so far, in request order.
    pub fn violations(&self) -> Vec<Violation> {
        self.lock().clone()
    }

    /// How many requests were checked (so a test can tell a clean run from no run).
    pub fn checked(&self) -> usize {
        self.inner.checked.load(Ordering::SeqCst)
    }

    /// Panics with every recorded violation, if there are any.
    #[allow(clippy::panic)] // an assertion helper: failing loudly is its job
    #[track_caller]
    pub fn assert_clean(&self) {
        let violations = self.violations();
        if !violations.is_empty() {
            panic!(
                "model requests that cannot be rebuilt from their session logs:\n{}",
                render(&violations)
            );
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Violation>> {
        self.inner
            .violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn check(&self, ctx: &Context, request: &LlmRequest) {
        let number = self.inner.checked.fetch_add(1, Ordering::SeqCst) + 1;
        let Some(id) = &request.session_id else {
            return;
        };
        let session = ctx.get::<SessionStore>().map(|store| store.get(id));
        // Located at the next seq: the request happens after everything logged so far.
        let seq = session.as_ref().and_then(|s| s.as_ref()).map(Session::len);
        let found = match session {
            None => vec![format!("no SessionStore service to look up session {id}")],
            Some(None) => vec![format!("session {id} is not live in the store")],
            Some(Some(session)) => reconstruct(&session, request),
        };
        self.lock()
            .extend(found.into_iter().map(|message| Violation {
                invariant: Invariant::ModelVisible,
                seq,
                message: format!("request {number} (session {id}): {message}"),
            }));
    }
}

/// The request a loop would build from `session`'s log right now: the latest header's
/// config, system prompt and tools, the derived messages and the session id. `None` before
/// the first `request/header`.
pub fn rebuild_request(session: &Session) -> Option<LlmRequest> {
    let header = canonical_header(&*session.request_header()?);
    let mut request = LlmRequest::new(header.config, session.derive_messages());
    request.system = header.system;
    request.tools = header.tools;
    request.session_id = Some(session.id().clone());
    Some(request)
}

/// Everything about `request` that the log of `session` does not account for.
fn reconstruct(session: &Session, request: &LlmRequest) -> Vec<String> {
    let mut found = Vec::new();
    if !step_is_open(session) {
        found.push("issued outside an open step (no step/start since the last step/end)".into());
    }
    if let Some(diff) = diff_messages(&request.messages, &session.derive_messages()) {
        found.push(diff);
    }
    match session.request_header() {
        None => found.push("the log has no request/header".into()),
        Some(header) => found.extend(diff_header(&header, request)),
    }
    found
}

fn step_is_open(session: &Session) -> bool {
    let events = session.events();
    events
        .iter()
        .rev()
        .find_map(|event| match event.data {
            EventData::StepStart(_) => Some(true),
            EventData::StepEnd(_) | EventData::TurnEnd(_) => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

fn json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<unserializable: {e}>"))
}

fn clip(text: &str) -> String {
    const MAX: usize = 160;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

fn diff_messages(sent: &[Arc<Message>], derived: &[Arc<Message>]) -> Option<String> {
    if json(sent) == json(derived) {
        return None;
    }
    let first = (0..sent.len().max(derived.len()))
        .find(|&i| sent.get(i).map(json) != derived.get(i).map(json));
    let show = |m: Option<&Arc<Message>>| m.map_or("nothing".into(), |m| clip(&json(m)));
    Some(match first {
        Some(i) => format!(
            "messages differ from derive_messages() ({} sent, {} derived); first difference at \
             index {i}: sent {}, log derives {}",
            sent.len(),
            derived.len(),
            show(sent.get(i)),
            show(derived.get(i)),
        ),
        None => "messages differ from derive_messages() in their serialization".into(),
    })
}

fn diff_header(header: &EpochHeader, request: &LlmRequest) -> Vec<String> {
    let header = canonical_header(header);
    let system = request.system.clone().filter(|s| !s.is_empty());
    let tools: Option<Vec<ToolSchema>> = request.tools.clone().filter(|t| !t.is_empty());
    let mut found = Vec::new();
    if request.config != header.config {
        found.push(format!(
            "call config differs from the logged request/header in {}: sent {}, logged {}",
            config_fields(&request.config, &header.config),
            json(&request.config),
            json(&header.config)
        ));
    }
    if system != header.system {
        found.push(format!(
            "system prompt {} differs from the logged {}",
            clip(&json(&system)),
            clip(&json(&header.system))
        ));
    }
    if json(&tools) != json(&header.tools) {
        let names = |t: &Option<Vec<ToolSchema>>| -> Vec<String> {
            t.iter().flatten().map(|s| s.name.clone()).collect()
        };
        found.push(format!(
            "tools {:?} differ from the logged {:?}",
            names(&tools),
            names(&header.tools)
        ));
    }
    found
}

/// Names the differing config fields, so a failure says `maxTokens` rather than "config".
fn config_fields(sent: &LlmCallConfig, logged: &LlmCallConfig) -> String {
    let mut fields = Vec::new();
    let mut diff = |name: &str, differs: bool| {
        if differs {
            fields.push(name.to_owned());
        }
    };
    diff("provider", sent.provider != logged.provider);
    diff("model", sent.model != logged.model);
    diff(
        "reasoningEffort",
        sent.reasoning_effort != logged.reasoning_effort,
    );
    diff("temperature", sent.temperature != logged.temperature);
    diff("maxTokens", sent.max_tokens != logged.max_tokens);
    diff("stop", sent.stop != logged.stop);
    fields.join(", ")
}

/// Mounts a [`RequestReconstructionCheck`] and provides it as a service, so a composition
/// can include the check: `ctx.require::<RequestReconstructionCheck>()?.assert_clean()`.
#[derive(Debug)]
pub struct RequestReconstructionPlugin;

impl Plugin for RequestReconstructionPlugin {
    const NAME: &'static str = "testkit/request-reconstruction";
    type Config = ();

    fn apply(ctx: &Context, _config: ()) -> Result<(), BoxError> {
        let check = RequestReconstructionCheck::install(ctx)?;
        ctx.provide(Arc::new(check))?.forget();
        Ok(())
    }
}
