//! The chat-completions adapter: HTTP, streaming and failure mapping.

use crate::config::{EnvLookup, OpenAiConfig, RouteConfig, DEEPSEEK_ROUTE};
use crate::status::http_failure;
use crate::translate::StreamDecoder;
use crate::wire::RequestEncoder;
use bytes::Bytes;
use dsh_kernel::Context;
use dsh_llm::{
    AdapterHandle, ChunkStream, LlmAdapter, LlmError, LlmRequest, LlmRuntime, ModelInfo,
    RequestPurpose,
};
use dsh_protocol::{codes, LlmCallConfig, StreamChunk};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// Code for a route configuration the adapter cannot use (a malformed extra header or user id).
pub const INVALID_CONFIG: &str = "INVALID_CONFIG";

/// The `user-agent` every request carries unless the route configures its own: says which
/// implementation (and version) is calling, for the provider's attribution.
pub const USER_AGENT: &str = concat!("dsh-rs/", env!("CARGO_PKG_VERSION"));

/// The header carrying the anonymous installation id.
const USER_ID_HEADER: &str = "x-deepseek-harness-user-id";
/// The header carrying the session id.
const SESSION_ID_HEADER: &str = "x-deepseek-harness-session-id";
/// The header marking a compaction request on the DeepSeek route (the body is unchanged).
pub const COMPACT_HEADER: &str = "x-deepseek-harness-compact";

/// Largest error body read to find the provider's message.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Serves one route over an OpenAI-compatible `/chat/completions` endpoint.
pub struct OpenAiAdapter {
    route: Arc<RouteConfig>,
    env: Arc<dyn EnvLookup>,
    client: LazyClient,
    extra_headers: HeaderMap,
    /// Sent only on routes that send it ([`RouteConfig::sends_user_id`]).
    user_id: Option<HeaderValue>,
    /// Where image bytes come from: the `dyn ImageStore` service of this context, looked up
    /// per request (the store may be mounted after the adapter).
    services: Option<Context>,
    /// Encodes request bodies, keeping the encoded tool lists this route sends every step.
    encoder: RequestEncoder,
}

impl fmt::Debug for OpenAiAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Deliberately only configuration: the key is looked up per request and never stored.
        f.debug_struct("OpenAiAdapter")
            .field("route", &self.route.route)
            .field("api_key_env", &self.route.api_key_env)
            .field("base_url", &self.route.base_url)
            .finish_non_exhaustive()
    }
}

impl OpenAiAdapter {
    /// An adapter for `route` with its own HTTP client (rustls, system proxy settings),
    /// built on its first request ([`LazyClient`]).
    pub fn new(route: RouteConfig, env: Arc<dyn EnvLookup>) -> Result<Self, LlmError> {
        Self::with_lazy_client(route, env, LazyClient::default())
    }

    /// An adapter using `client`.
    pub fn with_client(
        route: RouteConfig,
        env: Arc<dyn EnvLookup>,
        client: reqwest::Client,
    ) -> Result<Self, LlmError> {
        Self::with_lazy_client(route, env, LazyClient::ready(client))
    }

    /// An adapter using `client`, which routes may share (one client, built once, on the
    /// first request of any of them).
    pub fn with_lazy_client(
        route: RouteConfig,
        env: Arc<dyn EnvLookup>,
        client: LazyClient,
    ) -> Result<Self, LlmError> {
        let mut extra_headers = HeaderMap::new();
        for (name, value) in &route.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                LlmError::new(INVALID_CONFIG, format!("invalid header name '{name}'"))
            })?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                LlmError::new(INVALID_CONFIG, format!("invalid value for header '{name}'"))
            })?;
            extra_headers.insert(name, value);
        }
        Ok(Self {
            route: Arc::new(route),
            env,
            client,
            extra_headers,
            user_id: None,
            services: None,
            encoder: RequestEncoder::default(),
        })
    }

    /// Reads images from the `dyn ImageStore` that `ctx` provides, at each request.
    pub fn with_services(mut self, ctx: &Context) -> Self {
        self.services = Some(ctx.clone());
        self
    }

    /// Sends `user_id` as `x-deepseek-harness-user-id` on routes that send it
    /// ([`RouteConfig::sends_user_id`]); other routes ignore it.
    pub fn with_user_id(mut self, user_id: &str) -> Result<Self, LlmError> {
        let value = HeaderValue::from_str(user_id.trim()).map_err(|_| {
            LlmError::new(
                INVALID_CONFIG,
                "the user id contains characters an HTTP header cannot carry",
            )
        })?;
        self.user_id = Some(value);
        Ok(self)
    }

    /// The route this adapter serves.
    pub fn route(&self) -> &RouteConfig {
        &self.route
    }

    /// The bearer value for this request, or `None` when the route may go without a key.
    fn authorization(&self) -> Result<Option<HeaderValue>, LlmError> {
        let name = &self.route.api_key_env;
        let key = self
            .env
            .get(name)
            .map(|key| key.trim().to_string())
            .filter(|key| !key.is_empty());
        let Some(key) = key else {
            if self.route.api_key_required {
                return Err(LlmError::new(
                    codes::INVALID_CREDENTIAL,
                    format!(
                        "no API key: set {name} for provider route '{}'",
                        self.route.route
                    ),
                ));
            }
            return Ok(None);
        };
        // The message names the variable, never the value.
        let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            LlmError::new(
                codes::INVALID_CREDENTIAL,
                format!("the API key in {name} contains characters an HTTP header cannot carry"),
            )
        })?;
        value.set_sensitive(true);
        Ok(Some(value))
    }

    fn headers(&self, request: &LlmRequest) -> Result<HeaderMap, LlmError> {
        let mut headers = self.extra_headers.clone();
        if let Some(auth) = self.authorization()? {
            headers.insert(reqwest::header::AUTHORIZATION, auth);
        }
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        headers
            .entry(reqwest::header::USER_AGENT)
            .or_insert(HeaderValue::from_static(USER_AGENT));
        if let Some(user_id) = self.user_id.as_ref().filter(|_| self.route.sends_user_id()) {
            headers.insert(USER_ID_HEADER, user_id.clone());
        }
        if let Some(session) = &request.session_id {
            if let Ok(value) = HeaderValue::from_str(session.as_str()) {
                headers.insert(SESSION_ID_HEADER, value);
            }
        }
        if request.purpose == RequestPurpose::Compaction && self.route.route == DEEPSEEK_ROUTE {
            headers.insert(COMPACT_HEADER, HeaderValue::from_static("1"));
        }
        Ok(headers)
    }

    async fn start(&self, request: Arc<LlmRequest>) -> Result<ChunkStream, LlmError> {
        let store = self
            .services
            .as_ref()
            .and_then(|ctx| ctx.get::<dyn dsh_attachments::ImageStore>());
        let images = crate::images::resolve(&request, store).await;
        let body = self.encoder.encode(&request, &self.route, &images)?;
        let headers = self.headers(&request)?;
        let base_url = self.route.resolve_base_url(self.env.as_ref());
        // A URL that cannot be one fails here, as configuration, not as a transport failure
        // that the retry policy would try again.
        let url = crate::config::check_base_url(&base_url)
            .and_then(|()| {
                reqwest::Url::parse(&format!("{base_url}/chat/completions"))
                    .map_err(|error| error.to_string())
            })
            .map_err(|reason| {
                LlmError::new(
                    INVALID_CONFIG,
                    format!(
                        "the base URL {base_url:?} of provider route '{}' is not usable: {reason}",
                        self.route.route
                    ),
                )
            })?;
        let idle = Duration::from_millis(self.route.stream_idle_timeout_ms.max(1));
        let cancel = request.cancel.clone();
        let send = self
            .client
            .get()?
            .post(url)
            .headers(headers)
            .body(body)
            .send();
        let response = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(aborted()),
            sent = tokio::time::timeout(idle, send) => match sent {
                Err(_) => return Err(idle_timeout(idle)),
                Ok(Err(error)) => return Err(send_failed(&base_url, error)),
                Ok(Ok(response)) => response,
            },
        };
        let status = response.status();
        if !status.is_success() {
            return Err(read_error(response, idle, &cancel).await);
        }
        if status == reqwest::StatusCode::NO_CONTENT || response.content_length() == Some(0) {
            return Err(LlmError::new(
                codes::EMPTY_RESPONSE,
                "the model API returned no response body",
            ));
        }
        let request_id = response_request_id(response.headers());
        let limits = BodyLimits::of(&self.route);
        let decoder = StreamDecoder::with_limits(limits.max_line, limits.line_setting.clone())
            .with_request_id(request_id);
        Ok(chunk_stream(
            response.bytes_stream().boxed(),
            decoder,
            limits,
            idle,
            cancel,
        ))
    }
}

impl LlmAdapter for OpenAiAdapter {
    fn stream(&self, request: Arc<LlmRequest>) -> BoxFuture<'_, Result<ChunkStream, LlmError>> {
        Box::pin(self.start(request))
    }

    fn resolve_model<'a>(
        &'a self,
        config: &'a LlmCallConfig,
    ) -> BoxFuture<'a, Result<ModelInfo, LlmError>> {
        let info = self.route.resolve_model(&config.model).ok_or_else(|| {
            LlmError::new(
                codes::INVALID_MODEL_ID,
                format!(
                    "model '{}' is not in the catalog of provider route '{}'",
                    config.model, self.route.route
                ),
            )
        });
        Box::pin(async move { info })
    }
}

fn aborted() -> LlmError {
    LlmError::new(codes::ABORTED, "the model request was cancelled")
}

fn idle_timeout(idle: Duration) -> LlmError {
    LlmError::new(
        codes::TIMEOUT,
        format!("the model API sent nothing for {} ms", idle.as_millis()),
    )
}

/// The provider's id for this response, when it sends one.
fn response_request_id(headers: &HeaderMap) -> Option<String> {
    ["x-request-id", "x-deepseek-request-id"]
        .iter()
        .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .map(str::to_string)
}

/// Reads (a bounded prefix of) an error response and classifies it.
async fn read_error(
    response: reqwest::Response,
    idle: Duration,
    cancel: &CancellationToken,
) -> LlmError {
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let retry_after = header("retry-after");
    let request_id = response_request_id(response.headers());
    let mut body = Vec::new();
    let mut bytes = response.bytes_stream();
    while body.len() < MAX_ERROR_BODY {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return aborted(),
            next = tokio::time::timeout(idle, bytes.next()) => next,
        };
        match next {
            Ok(Some(Ok(part))) => body.extend_from_slice(&part),
            // A broken error body still leaves the status to classify by.
            _ => break,
        }
    }
    http_failure(
        status,
        &body,
        retry_after.as_deref(),
        request_id.as_deref(),
        SystemTime::now(),
    )
}

/// How much of a response body the adapter reads, and the settings that say so (for the
/// error a peer over the limit gets).
struct BodyLimits {
    max_line: usize,
    max_response: u64,
    line_setting: String,
    response_setting: String,
}

impl BodyLimits {
    fn of(route: &RouteConfig) -> Self {
        let setting = |name: &str| format!("{name} of provider route '{}'", route.route);
        Self {
            max_line: usize::try_from(route.max_sse_line_bytes).unwrap_or(usize::MAX),
            max_response: route.max_response_bytes.max(1),
            line_setting: setting("max_sse_line_bytes"),
            response_setting: setting("max_response_bytes"),
        }
    }

    fn too_large(&self) -> LlmError {
        LlmError::new(
            codes::RESPONSE_TOO_LARGE,
            format!(
                "the model API response exceeded {} bytes ({}); the rest was not read",
                self.max_response, self.response_setting
            ),
        )
    }
}

struct BodyState {
    bytes: Option<BoxStream<'static, reqwest::Result<Bytes>>>,
    decoder: StreamDecoder,
    pending: VecDeque<StreamChunk>,
    scratch: Vec<StreamChunk>,
    error: Option<LlmError>,
    limits: BodyLimits,
    /// Body bytes decoded so far.
    received: u64,
    idle: Duration,
    cancel: CancellationToken,
}

/// Reads the body, translating as bytes arrive. Each read is bounded by the idle timeout and
/// raced against cancellation, and the body as a whole by the route's size limits; the body
/// (and with it the connection) is dropped as soon as the stream ends, fails, goes over a
/// limit or is cancelled.
fn chunk_stream(
    bytes: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: StreamDecoder,
    limits: BodyLimits,
    idle: Duration,
    cancel: CancellationToken,
) -> ChunkStream {
    let state = BodyState {
        bytes: Some(bytes),
        decoder,
        pending: VecDeque::new(),
        scratch: Vec::new(),
        error: None,
        limits,
        received: 0,
        idle,
        cancel,
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if let Some(chunk) = st.pending.pop_front() {
                return Some((Ok(chunk), st));
            }
            if let Some(error) = st.error.take() {
                st.bytes = None;
                return Some((Err(error), st));
            }
            let bytes = st.bytes.as_mut()?;
            let next = tokio::select! {
                biased;
                () = st.cancel.cancelled() => Err(None),
                next = tokio::time::timeout(st.idle, bytes.next()) => next.map_err(|_| Some(st.idle)),
            };
            let result = match next {
                Err(None) => Err(aborted()),
                Err(Some(idle)) => Err(idle_timeout(idle)),
                Ok(Some(Ok(part))) => {
                    // Exactly the first `max_response` bytes are read, however the reads
                    // fall: a response that completes within them is whole.
                    let room = st.limits.max_response.saturating_sub(st.received);
                    let take = usize::try_from(room).map_or(part.len(), |room| room.min(part.len()));
                    st.received = st.received.saturating_add(take as u64);
                    let decoded = st.decoder.push(&part[..take], &mut st.scratch);
                    match decoded {
                        Ok(()) if take < part.len() && !st.decoder.is_done() => {
                            Err(st.limits.too_large())
                        }
                        other => other,
                    }
                }
                Ok(Some(Err(error))) => Err(LlmError::new(
                    codes::TRANSPORT,
                    "reading the model API response failed",
                )
                .with_source(error.without_url())),
                Ok(None) => {
                    st.bytes = None;
                    st.decoder.end(&mut st.scratch)
                }
            };
            st.pending.extend(st.scratch.drain(..));
            if let Err(error) = result {
                st.error = Some(error);
                st.bytes = None;
            } else if st.decoder.is_done() {
                st.bytes = None;
            }
        }
    })
    .boxed()
}

/// Registers one adapter per route of `config` on `runtime`, owned by `owner`'s fiber.
/// All or nothing: if one route cannot be registered, those already registered are removed.
pub fn register_routes(
    owner: &Context,
    runtime: &LlmRuntime,
    config: &OpenAiConfig,
    env: Arc<dyn EnvLookup>,
) -> Result<Vec<AdapterHandle>, LlmError> {
    let mut handles: Vec<AdapterHandle> = Vec::new();
    let client = LazyClient::default();
    for route in &config.routes {
        let adapter = OpenAiAdapter::with_lazy_client(route.clone(), env.clone(), client.clone())
            .map(|adapter| adapter.with_services(owner));
        let adapter = match &config.user_id {
            Some(user_id) => adapter.and_then(|adapter| adapter.with_user_id(user_id)),
            None => adapter,
        };
        let registered = adapter.and_then(|adapter| {
            runtime.register_adapter(
                owner,
                [route.route.clone()],
                Arc::new(adapter),
                route.retry_policy.clone(),
            )
        });
        match registered {
            Ok(handle) => handles.push(handle),
            Err(error) => {
                for handle in &handles {
                    handle.dispose();
                }
                return Err(error);
            }
        }
    }
    Ok(handles)
}

/// A request that got no response. A refused TLS certificate is named in the message: it is
/// the one transport failure a person has to act on, and the reason would otherwise stay in
/// the error's source chain, which neither the log nor the terminal shows. It gets its own
/// code, which the default retry policy does not retry: every attempt would meet the same
/// certificate, and five retries with backoff only delayed the message by seconds.
fn send_failed(base_url: &str, error: reqwest::Error) -> LlmError {
    let (code, message) = match refused_certificate(&error) {
        Some(reason) => (
            codes::TLS_CERTIFICATE,
            format!(
                "model API request to {base_url} failed: the server's TLS certificate was \
                 refused ({reason}); if a private CA signed it, add that CA to the system's \
                 certificates or point SSL_CERT_FILE at a bundle that holds it"
            ),
        ),
        None => (
            codes::TRANSPORT,
            format!("model API request to {base_url} failed"),
        ),
    };
    LlmError::new(code, message).with_source(error.without_url())
}

/// rustls's verdict on the server's certificate, wherever it sits in `error`'s chain. An I/O
/// error holds the error it wraps (here an I/O error around an I/O error around rustls's)
/// without naming it as its source, so those are opened rather than followed.
fn refused_certificate(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(refusal @ rustls::Error::InvalidCertificate(_)) =
            error.downcast_ref::<rustls::Error>()
        {
            return Some(refusal.to_string());
        }
        next = match error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    None
}

/// An HTTP client built on first use and shared by its clones.
///
/// Building a client sets up its connection pool, resolver and TLS configuration, so no
/// surface pays for it before its first model request: `dsh acp`'s `session/new`,
/// `dsh sessions ...` and a resume never do. (The system's root certificates, the costly
/// part, wait for the first TLS handshake: `dsh_http_client`.)
#[derive(Clone, Default)]
pub struct LazyClient(Arc<OnceLock<reqwest::Client>>);

impl LazyClient {
    /// A client that is already built.
    pub fn ready(client: reqwest::Client) -> Self {
        Self(Arc::new(OnceLock::from(client)))
    }

    /// Whether the client has been built (by a request or [`LazyClient::ready`]).
    pub fn is_built(&self) -> bool {
        self.0.get().is_some()
    }

    /// The client, built now if no request has built it yet. Two first requests racing may
    /// both build one; the first stored is kept.
    pub fn get(&self) -> Result<&reqwest::Client, LlmError> {
        if let Some(client) = self.0.get() {
            return Ok(client);
        }
        let built = client_builder().build().map_err(|error| {
            LlmError::new(INVALID_CONFIG, "could not build the HTTP client").with_source(error)
        })?;
        Ok(self.0.get_or_init(|| built))
    }
}

impl fmt::Debug for LazyClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyClient")
            .field("built", &self.is_built())
            .finish()
    }
}

/// The model client's builder: [`dsh_http_client::builder`] (ring as rustls's provider, the
/// system roots read on the first TLS handshake rather than on every start).
pub fn client_builder() -> reqwest::ClientBuilder {
    dsh_http_client::builder()
}
