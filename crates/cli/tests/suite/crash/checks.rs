//! What a killed run must leave behind: a log that loads, repairs to a balanced log, and
//! holds everything the process made durable.

use super::super::run_support::Sandbox;
use super::process::Printed;
use dsh_cli::app::openai_config;
use dsh_cli::config::{Overrides, OPENAI_ROUTE};
use dsh_llm::LlmRequest;
use dsh_llm_openai::{wire, RouteConfig};
use dsh_protocol::{SessionId, StreamChunk};
use dsh_session::{
    derive_messages, fold_request_header, interrupted_turn_closers, EventData, SessionEvent,
};
use dsh_store::{read_log, Compression, JsonlBackend, JsonlConfig, SessionPersistence};
use dsh_testkit::checks::{check_all, render};
use dsh_testkit::mock_llm::{MockServer, RecordedRequest};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How the store is configured for one iteration (written to `settings.toml` as a patch of
/// the persistence row, so the binary and the test read the same files).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub compression: Compression,
    pub pack_chunks: bool,
}

impl Layout {
    pub const DEFAULT: Layout = Layout {
        compression: Compression::Zstd,
        pack_chunks: true,
    };

    /// Mostly the default; sometimes plain lines or unpacked chunks.
    pub fn pick(rng: &mut fastrand::Rng) -> Self {
        match rng.u8(0..4) {
            0 => Layout {
                compression: Compression::None,
                pack_chunks: rng.bool(),
            },
            1 => Layout {
                compression: Compression::Zstd,
                pack_chunks: false,
            },
            _ => Layout::DEFAULT,
        }
    }

    /// Configures `sandbox`'s home for this layout.
    pub fn install(&self, sandbox: &Sandbox) {
        if matches!(self.compression, Compression::Zstd) && self.pack_chunks {
            return;
        }
        let compression = match self.compression {
            Compression::Zstd => "zstd",
            Compression::None => "none",
        };
        let settings = format!(
            "[[plugins]]\nid = \"session-persistence-jsonl\"\nconfig = {{ root = {:?}, \
             compression = \"{compression}\", packChunks = {} }}\n",
            sandbox.sessions_root().to_str().unwrap(),
            self.pack_chunks
        );
        std::fs::write(sandbox.home.path().join("settings.toml"), settings).unwrap();
    }

    pub fn store(&self, sandbox: &Sandbox) -> JsonlBackend {
        JsonlBackend::new(JsonlConfig {
            root: sandbox.sessions_root(),
            compression: self.compression,
            pack_chunks: self.pack_chunks,
        })
    }
}

/// What a killed run left, as checked.
pub struct Crashed {
    /// The stored durable prefix (after any simulated tear).
    pub before: Vec<Arc<SessionEvent>>,
    /// What repair appends to close an open turn.
    pub closers: Vec<SessionEvent>,
    /// `before` followed by `closers`: the log a resume starts from.
    pub repaired: Vec<Arc<SessionEvent>>,
    pub torn_tail: bool,
}

/// How to check one crashed log.
pub struct CrashCheck<'a> {
    pub sandbox: &'a Sandbox,
    pub layout: Layout,
    pub id: &'a str,
    /// The requests the killed run's server received, and the route that built them.
    pub requests: &'a [RecordedRequest],
    pub route: &'a RouteConfig,
    pub printed: &'a Printed,
    /// The log the killed run resumed (`None` for a new session): the stored log must
    /// still hold it, repaired or not yet.
    pub earlier: Option<&'a Crashed>,
    /// Repair through `prepare` here, rather than leaving it to the next `dsh run`.
    pub prepare: bool,
    /// Then cut the file as a torn write would: at this fraction of the bytes after the
    /// header, optionally followed by zero fill.
    pub tear: Option<Tear>,
    pub context: &'a str,
}

#[derive(Clone, Copy, Debug)]
pub struct Tear {
    pub at: f64,
    pub zero_fill: usize,
}

impl CrashCheck<'_> {
    pub fn run(&self) -> Crashed {
        let context = self.context;
        let path = log_path(self.sandbox, self.layout, self.id);
        let session = SessionId::new(self.id);
        let store = self.layout.store(self.sandbox);

        // 1. It loads, and the typed fast path agrees with the value reader.
        let (before, torn) = load(&path, self.layout, &store, &session, context);

        // 2. Everything the process made durable is there, as it printed it.
        let from = match self.earlier {
            None => 0,
            Some(earlier) => {
                let kept_as_is = before == earlier.before;
                let repaired_first = before.len() >= earlier.repaired.len()
                    && before[..earlier.repaired.len()] == earlier.repaired[..];
                assert!(
                    kept_as_is || repaired_first,
                    "{context}: the resumed run lost part of the log it resumed"
                );
                earlier.before.len()
            }
        };
        let durable = requests_durable(
            &before,
            from,
            self.requests,
            self.printed,
            self.route,
            self.id,
        );
        if let Err(problem) = durable {
            panic!("{context}: {problem}");
        }
        self.printed.assert_agrees_with(&before);

        // 3. A torn write after the durable prefix (simulated: SIGKILL never tears one).
        let (before, torn) = match self.tear {
            None => (before, torn),
            Some(tear) => {
                tear_file(&path, self.layout, tear);
                let context = format!("{context}, then torn by {tear:?}");
                let (torn_events, torn) = load(&path, self.layout, &store, &session, &context);
                assert!(
                    torn_events.len() <= before.len()
                        && torn_events[..] == before[..torn_events.len()],
                    "{context}: the torn log is not a prefix of the log"
                );
                (torn_events, torn)
            }
        };

        // 4. Repair closes exactly the open turn, and the result passes every checker.
        let closers = interrupted_turn_closers(&before);
        if let Some(last) = closers.last() {
            assert_eq!(
                (last.type_name(), last.data.to_value()["reason"].clone()),
                ("turn/end", serde_json::json!({"kind": "interrupted"})),
                "{context}: repair must end the open turn `interrupted`"
            );
        }
        let inspection = store.inspect(&session).unwrap();
        assert_eq!(inspection.pending_closers, closers, "{context}");
        assert_eq!(inspection.torn_tail.is_some(), torn, "{context}");
        let repaired: Vec<Arc<SessionEvent>> = before
            .iter()
            .cloned()
            .chain(closers.iter().cloned().map(Arc::new))
            .collect();
        assert_checks_pass(&repaired, &format!("{context}: the repaired log"));
        if self.prepare {
            let preparation = store
                .prepare(&session)
                .unwrap_or_else(|e| panic!("{context}: prepare failed: {e} ({e:?})"));
            assert_eq!(preparation.closers, closers, "{context}");
            store.release(&session);
            let after = self.layout.store(self.sandbox).load(&session).unwrap();
            assert_eq!(after.torn_tail, None, "{context}: prepare left a torn tail");
            assert_eq!(
                after.events, repaired,
                "{context}: prepare stored another log"
            );
        }
        Crashed {
            before,
            closers,
            repaired,
            torn_tail: torn,
        }
    }
}

/// Reads a crashed log with the value reader and the typed store; both must succeed and
/// agree. Returns the durable events and whether a torn tail was found.
fn load(
    path: &Path,
    layout: Layout,
    store: &JsonlBackend,
    session: &SessionId,
    context: &str,
) -> (Vec<Arc<SessionEvent>>, bool) {
    let raw = read_log(path, layout.compression, Some(session.as_str()))
        .unwrap_or_else(|e| panic!("{context}: the crashed log does not load: {e} ({e:?})"));
    let stored = store
        .load(session)
        .unwrap_or_else(|e| panic!("{context}: typed load failed: {e} ({e:?})"));
    assert_eq!(stored.torn_tail, raw.torn_tail, "{context}");
    let typed: Vec<Value> = stored
        .events
        .iter()
        .map(|e| serde_json::to_value(&**e).unwrap())
        .collect();
    assert_eq!(
        typed, raw.events,
        "{context}: typed and value readers differ"
    );
    (stored.events, raw.torn_tail.is_some())
}

/// Cuts the log somewhere after its header (the header is written atomically with the
/// first batch, so it is never torn) and maybe appends zeros, like a write cut short.
fn tear_file(path: &Path, layout: Layout, tear: Tear) {
    let mut data = std::fs::read(path).unwrap();
    let header_end = match layout.compression {
        Compression::Zstd => zstd::zstd_safe::find_frame_compressed_size(&data).unwrap(),
        Compression::None => data.iter().position(|&b| b == b'\n').unwrap() + 1,
    };
    let body = data.len() - header_end;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let cut = header_end + ((body as f64 * tear.at) as usize).min(body);
    data.truncate(cut);
    data.resize(cut + tear.zero_fill, 0);
    std::fs::write(path, data).unwrap();
}

/// Whether `request` asks for a compaction summary (it ends with the summariser's
/// instruction) rather than for a step of the turn.
pub fn is_summary_request(request: &RecordedRequest) -> bool {
    request.body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .is_some_and(|last| {
            last.to_string()
                .contains("Your job now is to compact the conversation")
        })
}

/// The requests that were steps of a turn (not compaction summaries).
pub fn step_requests(requests: &[RecordedRequest]) -> Vec<RecordedRequest> {
    requests
        .iter()
        // A title side request a catch-all rule answered is not a step either.
        .filter(|r| !is_summary_request(r) && !dsh_testkit::mock_llm::is_title_request(&r.body))
        .cloned()
        .collect()
}

/// "Nothing flushed is lost", seen from the model server: for each request it received
/// (from the attempts logged at or after `from`), the stored log holds a prefix that
/// rebuilds exactly that request body, issued inside an open step. Attempt `k` is the
/// `k`-th run of chunks; the last request may have no chunk on disk yet (the kill came
/// before the next flush), in which case the whole stored log must rebuild it.
pub fn requests_durable(
    events: &[Arc<SessionEvent>],
    from: usize,
    requests: &[RecordedRequest],
    printed: &Printed,
    route: &RouteConfig,
    id: &str,
) -> Result<(), String> {
    // A summary request leaves only after its `compaction/start` is durable (the bracket
    // opens, and is flushed, before the model is called).
    let summaries = requests.iter().filter(|r| is_summary_request(r)).count();
    let starts_stored = events[from.min(events.len())..]
        .iter()
        .filter(|e| e.type_name() == "compaction/start")
        .count();
    if summaries > starts_stored {
        return Err(format!(
            "{summaries} summary requests were served but only {starts_stored}              compaction/start events are stored"
        ));
    }
    let requests = &step_requests(requests)[..];
    let starts: Vec<usize> = attempt_starts(events)
        .into_iter()
        .filter(|&at| at >= from)
        .collect();
    // Where the process printed each attempt's first chunk: everything it appended before
    // that (events the request body does not show, such as `request/context`, included)
    // was flushed before the request left.
    // Session titles are the exception: their records are appended beside the request by
    // the title task, so the flush before the request need not cover them (they are never
    // part of what the model is asked).
    let is_title = |e: &SessionEvent| e.type_name().starts_with("session/title");
    let printed_events = printed.events();
    let printed_starts: Vec<usize> = attempt_starts(&printed_events)
        .into_iter()
        .filter(|&i| usize::try_from(printed_events[i].seq).unwrap() >= from)
        .map(|i| {
            // One past the last event before the chunk that must be durable.
            printed_events[..i]
                .iter()
                .rev()
                .find(|e| !is_title(e))
                .map_or(0, |e| usize::try_from(e.seq).unwrap() + 1)
        })
        .collect();
    if requests.len() > starts.len() + 1 {
        return Err(format!(
            "{} requests were served but the log holds only {} attempts: the chunks of a \
             request answered before a later flush are missing",
            requests.len(),
            starts.len()
        ));
    }
    for (k, request) in requests.iter().enumerate() {
        if request.header("x-deepseek-harness-session-id") != Some(id) {
            return Err(format!("request {k} names another session"));
        }
        if let Some(&appended) = printed_starts.get(k) {
            if events.len() < appended {
                return Err(format!(
                    "request {k} was served after the process had appended {appended} events \
                     (titles aside), but only {} are stored",
                    events.len()
                ));
            }
        }
        let at = starts.get(k).copied().unwrap_or(events.len());
        let prefix = &events[..at];
        if !step_is_open(prefix) {
            return Err(format!(
                "request {k} was served, but the stored log has no open step before seq {at}"
            ));
        }
        let rebuilt = rebuild_body(prefix, route, id);
        if request.body != rebuilt {
            return Err(format!(
                "request {k} was served, but the stored log up to seq {at} does not rebuild \
                 it:\nsent    {}\nrebuilt {rebuilt}",
                request.body
            ));
        }
    }
    Ok(())
}

/// Seqs where a model attempt's chunks begin: a chunk after a non-chunk event or after a
/// `finish` chunk.
pub fn attempt_starts(events: &[Arc<SessionEvent>]) -> Vec<usize> {
    let chunk = |e: &SessionEvent| match &e.data {
        EventData::AssistantChunk(c) => Some(matches!(c.chunk, StreamChunk::Finish { .. })),
        _ => None,
    };
    // Log-only plugin records (a session title finishing beside the stream) may land
    // between two chunks of one attempt; they do not start a new one.
    let previous_chunk = |i: usize| {
        events[..i]
            .iter()
            .rev()
            .find(|e| !matches!(e.data, EventData::Other { .. }))
            .and_then(|e| chunk(e))
    };
    (0..events.len())
        .filter(|&i| chunk(&events[i]).is_some() && previous_chunk(i) != Some(false))
        .collect()
}

fn step_is_open(events: &[Arc<SessionEvent>]) -> bool {
    events
        .iter()
        .rev()
        .find_map(|e| match e.data {
            EventData::StepStart(_) => Some(true),
            EventData::StepEnd(_) | EventData::TurnEnd(_) => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

/// The body the adapter sends for a request made right after `prefix`.
pub fn rebuild_body(prefix: &[Arc<SessionEvent>], route: &RouteConfig, id: &str) -> Value {
    let Some(header) = fold_request_header(prefix, None) else {
        return Value::Null;
    };
    let mut request = LlmRequest::new(header.config, derive_messages(prefix).unwrap());
    request.system = header.system;
    request.tools = header.tools;
    request.session_id = Some(SessionId::new(id));
    wire::request_body(&request, route).unwrap()
}

/// The route the binary builds for `--provider openai-compatible --base-url <server>`.
pub fn route(sandbox: &Sandbox, server: &MockServer) -> RouteConfig {
    let env: BTreeMap<String, String> = [(
        "DSH_HOME".to_owned(),
        sandbox.home.path().to_string_lossy().into_owned(),
    )]
    .into();
    let flags = Overrides {
        provider: Some(OPENAI_ROUTE.to_owned()),
        base_url: Some(server.base_url()),
        ..Overrides::default()
    };
    let settings = dsh_cli::config::load(&env, &flags).unwrap();
    openai_config(&settings)
        .routes
        .into_iter()
        .find(|route| route.route == OPENAI_ROUTE)
        .unwrap()
}

#[track_caller]
pub fn assert_checks_pass(events: &[Arc<SessionEvent>], what: &str) {
    if let Err(violations) = check_all(events) {
        panic!(
            "{what} breaks invariants:\n{}\nlog:\n{}",
            render(&violations),
            events
                .iter()
                .map(|e| serde_json::to_string(&**e).unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// The log of session `id`.
fn log_path(sandbox: &Sandbox, layout: Layout, id: &str) -> PathBuf {
    let file = layout.compression.file_name();
    let logs = find_logs(&sandbox.sessions_root());
    logs.into_iter()
        .find(|p| p.ends_with(Path::new(id).join(file)))
        .unwrap_or_else(|| panic!("no log of {id}"))
}

/// Every log file under `root`.
pub fn find_logs(root: &Path) -> Vec<PathBuf> {
    let mut logs = Vec::new();
    collect_logs(root, &mut logs);
    logs
}

fn collect_logs(dir: &Path, logs: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_logs(&path, logs);
        } else if path
            .file_name()
            .is_some_and(|name| name == "session.jsonl.zstd" || name == "session.jsonl")
        {
            logs.push(path);
        }
    }
}
