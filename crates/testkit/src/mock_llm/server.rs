//! The server: accept loop, routing, request recording, and the plan interpreter that
//! writes responses (and faults) to the socket.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::error::MockError;
use super::faults::{plan_reply, Plan, StreamStep};
use super::http::{Connection, HttpRequest, ReadError};
use super::script::Script;
use super::select::{Cursor, Served};
use super::sse::{self, RenderContext};

/// Model ids listed by `GET /models` when the script names none.
pub const DEFAULT_MODELS: [&str; 3] = [
    "deepseek-v4-flash",
    "deepseek-v4-pro",
    "deepseek-v4-flash-vision-exp",
];

/// One request as the server saw it, for assertions and `--record` files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// Arrival order across all connections, from 0.
    pub number: u64,
    pub method: String,
    /// The path without any query string.
    pub path: String,
    /// Header names lower-cased; repeated headers joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// The parsed JSON body; `null` when there was no body or it was not JSON.
    pub body: Value,
    /// The body text when it was present but not JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_body: Option<String>,
    /// How the request was answered.
    pub served: Served,
}

impl RecordedRequest {
    /// A header value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// Where and how to listen.
#[derive(Debug, Clone, Default)]
pub struct MockOptions {
    /// Port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Also sends every recorded request here, as it arrives.
    pub record_sink: Option<UnboundedSender<RecordedRequest>>,
    /// Forget requests once answered (and sent to the sink): [`MockServer::requests`] and
    /// its kin then see none. For a long-running server process that only records to a
    /// file, whose memory would otherwise grow with every request.
    pub forget_requests: bool,
}

impl MockOptions {
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    pub fn record_sink(mut self, sink: UnboundedSender<RecordedRequest>) -> Self {
        self.record_sink = Some(sink);
        self
    }

    pub fn forget_requests(mut self) -> Self {
        self.forget_requests = true;
        self
    }
}

/// A running mock server on 127.0.0.1. Dropping it stops the server too; [`shutdown`]
/// additionally waits until every connection is closed.
///
/// [`shutdown`]: MockServer::shutdown
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

struct Shared {
    script: Script,
    state: Mutex<State>,
    sink: Option<UnboundedSender<RecordedRequest>>,
    forget_requests: bool,
    /// Woken after every recorded request.
    arrived: Notify,
}

#[derive(Default)]
struct State {
    cursor: Cursor,
    /// Requests other than title side requests seen so far, kept or not: the next
    /// request's number (a title request shares the number of the request after it).
    numbered: u64,
    requests: Vec<RecordedRequest>,
    /// Session-title side requests the built-in rule answered ([`Served::Title`]).
    titles: Vec<RecordedRequest>,
}

impl Shared {
    /// The state lock; a panic elsewhere cannot leave it half-updated, so poison is ignored.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MockServer {
    /// Validates `script` and starts serving it on a free port.
    pub async fn start(script: Script) -> Result<MockServer, MockError> {
        Self::start_with(script, MockOptions::default()).await
    }

    /// Validates `script` and starts serving it with `options`.
    pub async fn start_with(script: Script, options: MockOptions) -> Result<MockServer, MockError> {
        script.validate()?;
        for warning in script.warnings() {
            tracing::warn!(%warning, "mock script field not understood");
        }
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, options.port));
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| MockError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| MockError::Bind { addr, source })?;
        let shared = Arc::new(Shared {
            script,
            state: Mutex::new(State::default()),
            sink: options.record_sink,
            forget_requests: options.forget_requests,
            arrived: Notify::new(),
        });
        let cancel = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, shared.clone(), cancel.clone()));
        Ok(MockServer {
            addr,
            shared,
            cancel,
            task: Some(task),
        })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`, usable as an OpenAI-compatible base URL (both
    /// `/chat/completions` and `/v1/chat/completions` are served).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.state().requests.clone()
    }

    /// The session-title side requests answered by the built-in title reply, in arrival
    /// order (they are not in [`requests`](Self::requests)).
    pub fn title_requests(&self) -> Vec<RecordedRequest> {
        self.shared.state().titles.clone()
    }

    /// Waits until at least `count` requests have arrived, then returns all of them.
    /// (Wrap it in a timeout; it waits forever if they never come.)
    pub async fn wait_for_requests(&self, count: usize) -> Vec<RecordedRequest> {
        loop {
            let arrived = self.shared.arrived.notified();
            tokio::pin!(arrived);
            // Register before checking, so a request landing in between is not missed.
            arrived.as_mut().enable();
            {
                let state = self.shared.state();
                if state.requests.len() >= count {
                    return state.requests.clone();
                }
            }
            arrived.await;
        }
    }

    /// Stops accepting, closes every connection (stalled ones included) and waits for that.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, cancel: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, shared.clone()));
                }
                Err(error) => {
                    // Usually descriptor exhaustion; back off instead of spinning.
                    tracing::warn!(%error, "mock server accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

/// What the connection does after a response.
enum After {
    KeepAlive,
    Close,
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let mut conn = Connection::new(stream);
    loop {
        let request = match conn.read_request().await {
            Ok(Some(request)) => request,
            Ok(None) | Err(ReadError::Io(_)) | Err(ReadError::Truncated) => return,
            Err(ReadError::Malformed(reason)) => {
                let body = sse::error_body(&reason, "invalid_request_error", None);
                let _ = run_plan(&mut conn, Plan::json(400, &body, Vec::new()), true).await;
                return;
            }
        };
        let close = request.wants_close();
        let (plan, delay) = respond(&shared, &request);
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        match run_plan(&mut conn, plan, close).await {
            Ok(After::KeepAlive) => {}
            Ok(After::Close) | Err(_) => return,
        }
    }
}

/// Routes a request, records it, and returns the plan plus the head delay.
fn respond(shared: &Shared, request: &HttpRequest) -> (Plan, Option<Duration>) {
    let path = request.path();
    let route = path.strip_prefix("/v1").unwrap_or(path);
    // Parse the bytes as they came; only a body that is not valid UTF-8 JSON pays for the
    // lossy copy (kept in the record, and parsed again in case the repair made it JSON).
    let (body, body_text): (Option<Value>, Option<String>) = if request.body.is_empty() {
        (None, None)
    } else {
        match serde_json::from_slice(&request.body) {
            Ok(body) => (Some(body), None),
            Err(_) => {
                let text = String::from_utf8_lossy(&request.body).into_owned();
                (serde_json::from_str(&text).ok(), Some(text))
            }
        }
    };
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &request.headers {
        headers
            .entry(name.clone())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(value);
            })
            .or_insert_with(|| value.clone());
    }
    let mut state = shared.state();
    let number = state.numbered;
    let (served, plan, delay) = match (route, request.method.as_str()) {
        ("/chat/completions", "POST") => match body.as_ref().filter(|b| b.is_object()) {
            None => {
                let error = sse::error_body(
                    "request body must be a JSON object",
                    "invalid_request_error",
                    None,
                );
                (
                    Served::BadRequest,
                    Plan::json(400, &error, Vec::new()),
                    None,
                )
            }
            Some(chat) => {
                let selection = state.cursor.select(&shared.script, chat, &headers);
                let entry = match selection.served {
                    Served::Rule { index } | Served::Response { index } => index,
                    _ => 0,
                };
                let plan = match &selection.reply {
                    Some(reply) => {
                        let ctx = RenderContext::from_request(chat, number, entry);
                        let stream = chat.get("stream").and_then(Value::as_bool) == Some(true);
                        plan_reply(reply, &ctx, stream)
                    }
                    None => exhausted_plan(&selection.served, shared.script.responses.len()),
                };
                let delay = selection
                    .reply
                    .and_then(|r| r.head_delay_ms)
                    .filter(|ms| *ms > 0)
                    .map(Duration::from_millis);
                (selection.served, plan, delay)
            }
        },
        ("/models", "GET") => {
            let ids: Vec<String> = match &shared.script.models {
                Some(ids) => ids.clone(),
                None => DEFAULT_MODELS.iter().map(|s| s.to_string()).collect(),
            };
            let data: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id": id, "object": "model", "owned_by": "dsh-mock"}))
                .collect();
            let list = json!({"object": "list", "data": data});
            (Served::Models, Plan::json(200, &list, Vec::new()), None)
        }
        ("/chat/completions", _) | ("/models", _) => {
            let error = sse::error_body(
                &format!("method {} not allowed on {path}", request.method),
                "invalid_request_error",
                None,
            );
            let allow = if route == "/models" { "GET" } else { "POST" };
            let headers = vec![("allow".to_string(), allow.to_string())];
            (
                Served::MethodNotAllowed,
                Plan::json(405, &error, headers),
                None,
            )
        }
        _ => {
            let error = sse::error_body(
                &format!("no mock route for {path}"),
                "invalid_request_error",
                None,
            );
            (Served::NotFound, Plan::json(404, &error, Vec::new()), None)
        }
    };
    let recorded = RecordedRequest {
        number,
        method: request.method.clone(),
        path: path.to_string(),
        headers,
        raw_body: if body.is_none() { body_text } else { None },
        body: body.unwrap_or(Value::Null),
        served,
    };
    let title = recorded.served == Served::Title;
    if !title {
        state.numbered += 1;
    }
    let kept = match &shared.sink {
        Some(sink) if shared.forget_requests => {
            let _ = sink.send(recorded);
            None
        }
        Some(sink) => {
            let _ = sink.send(recorded.clone());
            Some(recorded)
        }
        None if shared.forget_requests => None,
        None => Some(recorded),
    };
    if let Some(recorded) = kept {
        if title {
            state.titles.push(recorded);
        } else {
            state.requests.push(recorded);
        }
    }
    drop(state);
    shared.arrived.notify_waiters();
    (plan, delay)
}

fn exhausted_plan(served: &Served, available: usize) -> Plan {
    let index = match served {
        Served::Exhausted { index } => *index,
        _ => available,
    };
    let message = format!(
        "mock script exhausted: this request needs responses[{index}] but the script has {available} response(s)"
    );
    let body = sse::error_body(&message, "mock_script_exhausted", Some("script_exhausted"));
    Plan::json(500, &body, Vec::new())
}

/// Writes a plan to the connection.
async fn run_plan(conn: &mut Connection, plan: Plan, close: bool) -> std::io::Result<After> {
    match plan {
        Plan::Reset => {
            reset(conn);
            Ok(After::Close)
        }
        Plan::Stall => {
            hold_open(conn).await;
            Ok(After::Close)
        }
        Plan::Full {
            status,
            headers,
            body,
            cut_at,
        } => {
            let close = close || cut_at.is_some();
            conn.queue_head(status, &headers, Some(body.len()), close);
            let sent = cut_at.map_or(body.as_slice(), |n| &body[..n.min(body.len())]);
            conn.queue(sent);
            finish(conn, close).await
        }
        Plan::Stream { headers, steps } => {
            conn.queue_head(200, &headers, None, close);
            for step in steps {
                match step {
                    StreamStep::Event(payload) => {
                        conn.queue_chunk(&[b"data: ", payload.as_bytes(), b"\n\n"]);
                    }
                    StreamStep::Raw(bytes) => conn.queue_chunk(&[&bytes]),
                    StreamStep::Forever(bytes) => loop {
                        // Ends with the write error of a peer that went away.
                        conn.queue_chunk(&[&bytes]);
                        conn.send().await?;
                    },
                    StreamStep::Sleep(delay) => {
                        conn.send().await?;
                        tokio::time::sleep(delay).await;
                    }
                    StreamStep::Reset => {
                        conn.send().await?;
                        reset(conn);
                        return Ok(After::Close);
                    }
                    StreamStep::Stall => {
                        conn.send().await?;
                        hold_open(conn).await;
                        return Ok(After::Close);
                    }
                    StreamStep::End => conn.queue_last_chunk(),
                }
            }
            finish(conn, close).await
        }
    }
}

async fn finish(conn: &mut Connection, close: bool) -> std::io::Result<After> {
    conn.send().await?;
    conn.stream.flush().await?;
    if close {
        let _ = conn.stream.shutdown().await;
        Ok(After::Close)
    } else {
        Ok(After::KeepAlive)
    }
}

/// Arms an abortive close: dropping the socket now sends RST instead of FIN.
fn reset(conn: &mut Connection) {
    if let Err(error) = conn.stream.set_zero_linger() {
        tracing::warn!(%error, "cannot arm connection reset; closing normally");
    }
}

/// Keeps the connection open without sending, until the peer closes it (or the server
/// shuts down and aborts this task).
async fn hold_open(conn: &mut Connection) {
    let mut scratch = [0u8; 1024];
    loop {
        match conn.stream.read(&mut scratch).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}
