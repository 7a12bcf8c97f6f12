use super::server::{http_chunk, plain_reply, sse_head, sse_reply, Captured, Reply, Seen, Server};
use dsh_kernel::Context;
use dsh_llm::{error_chain, ChunkStream, LlmAdapter, LlmError, LlmRequest, LlmRuntime};
use dsh_llm_openai::{register_routes, wire, OpenAiAdapter, OpenAiConfig, RouteConfig};
use dsh_protocol::{
    codes, FinishReason, LlmCallConfig, LlmFailure, Message, SessionId, StreamChunk,
};
use futures_util::StreamExt;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

const KEY: &str = "sk-test-SECRET-9f8e7d";

fn env(base_url: &str) -> Arc<HashMap<String, String>> {
    Arc::new(HashMap::from([
        ("DEEPSEEK_API_KEY".to_string(), KEY.to_string()),
        ("DEEPSEEK_BASE_URL".to_string(), base_url.to_string()),
    ]))
}

fn adapter_with(base_url: &str, idle_ms: u64) -> OpenAiAdapter {
    let route = RouteConfig {
        stream_idle_timeout_ms: idle_ms,
        ..RouteConfig::deepseek()
    };
    let client = dsh_llm_openai::client_builder().no_proxy().build().unwrap();
    OpenAiAdapter::with_client(route, env(base_url), client).unwrap()
}

fn adapter(base_url: &str) -> OpenAiAdapter {
    adapter_with(base_url, 10_000)
}

fn request() -> LlmRequest {
    let mut request = LlmRequest::new(
        LlmCallConfig {
            provider: "deepseek-official".into(),
            model: "deepseek-v4-flash".into(),
            reasoning_effort: Some("high".into()),
            max_tokens: Some(256_000),
            ..LlmCallConfig::default()
        },
        vec![Arc::new(Message::user_text("Are you there?"))],
    );
    request.system = Some("sys".into());
    request.session_id = Some(SessionId::from("session-1"));
    request
}

fn sse_body() -> Vec<u8> {
    let mut body = String::new();
    for payload in [
        json!({"choices":[{"delta":{"reasoning_content":"Simple."}}]}),
        json!({"choices":[{"delta":{"content":"Yes, "}}]}),
        json!({"choices":[{"delta":{"content":"I am."},"finish_reason":"stop"}]}),
        json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_cache_hit_tokens":0}}),
    ] {
        body.push_str(&format!("data: {payload}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

async fn drain(stream: ChunkStream) -> (Vec<StreamChunk>, Option<LlmError>) {
    let mut chunks = Vec::new();
    let mut stream = stream;
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(error) => return (chunks, Some(error)),
        }
    }
    (chunks, None)
}

/// Asserts the secret appears nowhere a person or log could see it.
fn assert_no_key(error: &LlmError) {
    for rendered in [format!("{error:?}"), error.to_string(), error_chain(error)] {
        assert!(!rendered.contains(KEY), "key leaked: {rendered}");
    }
}

#[tokio::test]
async fn streams_a_reply_and_sends_the_mapped_request() {
    let mut server = Server::start(vec![sse_reply(&sse_body(), 7)]).await;
    let adapter = adapter(&server.base_url);
    let req = Arc::new(request());
    let (chunks, error) = drain(adapter.stream(req.clone()).await.unwrap()).await;
    assert!(error.is_none());
    assert_eq!(
        serde_json::to_value(&chunks).unwrap(),
        json!([
            {"type":"block-start","index":0,"blockType":"reasoning"},
            {"type":"reasoning-delta","index":0,"text":"Simple."},
            {"type":"block-start","index":1,"blockType":"text"},
            {"type":"text-delta","index":1,"text":"Yes, "},
            {"type":"text-delta","index":1,"text":"I am."},
            {"type":"block-end","index":0,"block":{"type":"reasoning","text":"Simple."}},
            {"type":"block-end","index":1,"block":{"type":"text","text":"Yes, I am."}},
            {"type":"usage","usage":{"inputTokens":10,"outputTokens":3,"cacheReadTokens":0}},
            {"type":"finish","reason":{"kind":"stop"}},
        ])
    );
    let seen: Captured = server.request().await;
    assert!(seen.head.starts_with("POST /chat/completions HTTP/1.1"));
    assert_eq!(seen.header("authorization"), Some(format!("Bearer {KEY}")));
    assert_eq!(
        seen.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(seen.header("accept").as_deref(), Some("text/event-stream"));
    assert_eq!(
        seen.header("x-deepseek-harness-session-id").as_deref(),
        Some("session-1")
    );
    let expected = wire::request_body(&req, adapter.route()).unwrap();
    assert_eq!(seen.json(), expected);
}

async fn failure_for(reply: Reply) -> LlmError {
    let server = Server::start(vec![reply]).await;
    let adapter = adapter(&server.base_url);
    let error = adapter.stream(Arc::new(request())).await.err().unwrap();
    assert_no_key(&error);
    error
}

#[tokio::test]
async fn http_errors_map_to_codes_and_facts() {
    let auth = failure_for(plain_reply(
        "401 Unauthorized",
        &[],
        r#"{"error":{"message":"Authentication Fails (no such user)","type":"authentication_error"}}"#,
    ))
    .await;
    assert_eq!(
        auth.failure,
        LlmFailure {
            status: Some(401),
            ..LlmFailure::new(codes::AUTH, "Authentication Fails (no such user)")
        }
    );

    let limited = failure_for(plain_reply(
        "429 Too Many Requests",
        &[("retry-after", "3"), ("x-request-id", "req-42")],
        r#"{"error":{"message":"Rate limit reached"}}"#,
    ))
    .await;
    assert_eq!(
        limited.failure,
        LlmFailure {
            message: "Rate limit reached".into(),
            code: codes::RATE_LIMIT.into(),
            status: Some(429),
            provider_retry_after_ms: Some(3000),
            request_id: Some("req-42".into()),
        }
    );

    let overflow = failure_for(plain_reply(
        "400 Bad Request",
        &[("x-deepseek-request-id", "ds-1")],
        r#"{"error":{"message":"This model's maximum context length is 1000000 tokens","code":"invalid_request_error"}}"#,
    ))
    .await;
    assert_eq!(overflow.code(), codes::CONTEXT_WINDOW_EXCEEDED);
    assert_eq!(overflow.failure.request_id.as_deref(), Some("ds-1"));

    let server = failure_for(plain_reply("503 Service Unavailable", &[], "busy")).await;
    assert_eq!(
        server.failure,
        LlmFailure {
            status: Some(503),
            ..LlmFailure::new(codes::SERVER, "model API error (HTTP 503)")
        }
    );

    let empty = failure_for(plain_reply("204 No Content", &[], "")).await;
    assert_eq!(empty.code(), codes::EMPTY_RESPONSE);
}

#[tokio::test]
async fn retry_after_as_http_date() {
    let when =
        httpdate::fmt_http_date(std::time::SystemTime::now() + std::time::Duration::from_secs(30));
    let error = failure_for(plain_reply(
        "429 Too Many Requests",
        &[("retry-after", &when)],
        "{}",
    ))
    .await;
    let ms = error.failure.provider_retry_after_ms.unwrap();
    assert!((1..=30_000).contains(&ms), "{ms}");
}

#[tokio::test]
async fn eof_without_done_is_stream_closed() {
    let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"partial\"}}]}\n\n";
    let server = Server::start(vec![sse_reply(body, 5)]).await;
    let adapter = adapter(&server.base_url);
    let (chunks, error) = drain(adapter.stream(Arc::new(request())).await.unwrap()).await;
    assert_eq!(chunks.len(), 2, "block-start and the delta arrive first");
    assert_eq!(error.unwrap().code(), codes::STREAM_CLOSED);
}

#[tokio::test]
async fn stalled_stream_times_out() {
    let first = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
    let mut server = Server::start(vec![Reply::Stall(vec![sse_head(), http_chunk(first)])]).await;
    let adapter = adapter_with(&server.base_url, 200);
    let (chunks, error) = drain(adapter.stream(Arc::new(request())).await.unwrap()).await;
    assert_eq!(chunks.len(), 2);
    let error = error.unwrap();
    assert_eq!(error.code(), codes::TIMEOUT);
    assert_no_key(&error);
    server.request().await;
    // The timed-out stream let go of its connection.
    assert!(matches!(server.next().await, Seen::ClientClosed));
}

#[tokio::test]
async fn silent_server_times_out_before_headers() {
    let server = Server::start(vec![Reply::Stall(vec![])]).await;
    let adapter = adapter_with(&server.base_url, 200);
    let error = adapter.stream(Arc::new(request())).await.err().unwrap();
    assert_eq!(error.code(), codes::TIMEOUT);
}

#[tokio::test]
async fn cancel_aborts_and_drops_the_connection() {
    let first = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
    let mut server = Server::start(vec![Reply::Stall(vec![sse_head(), http_chunk(first)])]).await;
    let adapter = adapter(&server.base_url);
    let req = Arc::new(request());
    let mut stream = adapter.stream(req.clone()).await.unwrap();
    assert!(matches!(
        stream.next().await,
        Some(Ok(StreamChunk::BlockStart { .. }))
    ));
    assert!(matches!(
        stream.next().await,
        Some(Ok(StreamChunk::TextDelta { .. }))
    ));
    server.request().await;
    req.cancel.cancel();
    let error = stream.next().await.unwrap().err().unwrap();
    assert_eq!(error.code(), codes::ABORTED);
    assert!(stream.next().await.is_none());
    assert!(matches!(server.next().await, Seen::ClientClosed));
}

#[tokio::test]
async fn connection_refused_is_transport() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let error = transport_failure(&base_url).await;
    assert!(error.to_string().contains(&base_url));
}

/// The failure of a request to `base_url` that gets no response: a transport failure that
/// does not show the key.
async fn transport_failure(base_url: &str) -> LlmError {
    let error = adapter(base_url)
        .stream(Arc::new(request()))
        .await
        .err()
        .unwrap();
    assert_eq!(error.code(), codes::TRANSPORT);
    assert_no_key(&error);
    error
}

#[tokio::test]
async fn missing_key_is_an_invalid_credential_and_debug_hides_the_key() {
    let route = RouteConfig::deepseek();
    let no_key = OpenAiAdapter::with_client(
        route,
        Arc::new(HashMap::<String, String>::new()),
        dsh_llm_openai::client_builder().build().unwrap(),
    )
    .unwrap();
    let error = no_key.stream(Arc::new(request())).await.err().unwrap();
    assert_eq!(error.code(), codes::INVALID_CREDENTIAL);
    assert!(error.to_string().contains("DEEPSEEK_API_KEY"));

    let with_key = adapter("http://127.0.0.1:9");
    assert!(!format!("{with_key:?}").contains(KEY));
    // A key no header can carry is refused without echoing it.
    let bad_key = OpenAiAdapter::with_client(
        RouteConfig::deepseek(),
        Arc::new(HashMap::from([(
            "DEEPSEEK_API_KEY".to_string(),
            format!("{KEY}\nx"),
        )])),
        dsh_llm_openai::client_builder().build().unwrap(),
    )
    .unwrap();
    let error = bad_key.stream(Arc::new(request())).await.err().unwrap();
    assert_eq!(error.code(), codes::INVALID_CREDENTIAL);
    assert_no_key(&error);
}

#[tokio::test]
async fn end_to_end_through_the_runtime() {
    let mut server = Server::start(vec![
        plain_reply(
            "500 Internal Server Error",
            &[],
            r#"{"error":{"message":"Internal server error (mock)","type":"server_error","code":"internal_error"}}"#,
        ),
        sse_reply(&sse_body(), 3),
    ])
    .await;
    let ctx = Context::root();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let handles = register_routes(
        &ctx,
        &runtime,
        &OpenAiConfig::default(),
        env(&server.base_url),
    )
    .unwrap();
    assert_eq!(handles.len(), 2);
    assert_eq!(
        runtime.routes(),
        vec!["deepseek-official", "openai-compatible"]
    );

    let config = LlmCallConfig {
        provider: "deepseek-official".into(),
        model: "deepseek-v4-flash".into(),
        ..LlmCallConfig::default()
    };
    // First attempt: the HTTP failure arrives as the terminal finish chunk.
    let prepared = runtime
        .prepare_call(config.clone(), &Default::default())
        .await
        .unwrap();
    assert_eq!(prepared.config().max_tokens, Some(256_000));
    assert_eq!(prepared.config().reasoning_effort.as_deref(), Some("high"));
    let mut req = request();
    req.config = prepared.config().clone();
    let (chunks, error) = drain(prepared.stream(Arc::new(req.clone())).await.unwrap()).await;
    assert!(error.is_none());
    assert_eq!(
        chunks,
        vec![StreamChunk::error(LlmFailure {
            status: Some(500),
            ..LlmFailure::new(codes::SERVER, "Internal server error (mock)")
        })]
    );
    // Second attempt (a retry re-prepares): the reply streams through.
    let prepared = runtime
        .prepare_call(config, &Default::default())
        .await
        .unwrap();
    let (chunks, _) = drain(prepared.stream(Arc::new(req)).await.unwrap()).await;
    assert_eq!(
        chunks.last(),
        Some(&StreamChunk::finish(FinishReason::Stop))
    );
    let first = server.request().await;
    assert_eq!(first.json()["max_tokens"], json!(256_000));
    server.request().await;
}

#[tokio::test]
async fn plugin_registers_routes_from_composition_config_and_unwinds() {
    use dsh_llm::LlmPlugin;
    use dsh_llm_openai::{EnvSource, OpenAiPlugin};
    let root = Context::root();
    root.provide(Arc::new(EnvSource(env("http://127.0.0.1:9"))))
        .unwrap()
        .forget();
    let adapters = root
        .plugin::<OpenAiPlugin>(serde_json::from_value(json!({})).unwrap())
        .unwrap();
    // Deferred until the runtime exists.
    let llm = root.plugin::<LlmPlugin>(Default::default()).unwrap();
    let runtime = root.get::<LlmRuntime>().unwrap();
    assert_eq!(
        runtime.routes(),
        vec!["deepseek-official", "openai-compatible"]
    );
    adapters.dispose();
    assert!(runtime.routes().is_empty());
    llm.dispose();
}

/// The attribution and correlation headers one request carried.
fn identity_headers(seen: &Captured) -> [Option<String>; 3] {
    [
        seen.header("user-agent"),
        seen.header("x-deepseek-harness-user-id"),
        seen.header("x-deepseek-harness-session-id"),
    ]
}

async fn headers_sent_by(route: RouteConfig, user_id: Option<&str>) -> [Option<String>; 3] {
    let mut server = Server::start(vec![sse_reply(&sse_body(), 64)]).await;
    let env = Arc::new(HashMap::from([
        ("DEEPSEEK_API_KEY".to_string(), KEY.to_string()),
        ("DEEPSEEK_BASE_URL".to_string(), server.base_url.clone()),
        ("OPENAI_BASE_URL".to_string(), server.base_url.clone()),
    ]));
    let client = dsh_llm_openai::client_builder().no_proxy().build().unwrap();
    let mut adapter = OpenAiAdapter::with_client(route, env, client).unwrap();
    if let Some(user_id) = user_id {
        adapter = adapter.with_user_id(user_id).unwrap();
    }
    let (_, error) = drain(adapter.stream(Arc::new(request())).await.unwrap()).await;
    assert!(error.is_none());
    identity_headers(&server.request().await)
}

const USER: &str = "0b9a4f4e-6f58-4c2e-9d7e-3f1f2a9c8b7d";

#[tokio::test]
async fn deepseek_route_sends_attribution_and_harness_ids() {
    let agent = format!("dsh-rs/{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(dsh_llm_openai::USER_AGENT, agent);
    assert_eq!(
        headers_sent_by(RouteConfig::deepseek(), Some(USER)).await,
        [
            Some(agent.clone()),
            Some(USER.into()),
            Some("session-1".into())
        ]
    );
    // Without an id the header is simply absent.
    assert_eq!(
        headers_sent_by(RouteConfig::deepseek(), None).await,
        [Some(agent.clone()), None, Some("session-1".into())]
    );
    // Switched off on purpose: no installation id.
    let quiet = RouteConfig {
        send_user_id: Some(false),
        ..RouteConfig::deepseek()
    };
    assert_eq!(
        headers_sent_by(quiet, Some(USER)).await,
        [Some(agent), None, Some("session-1".into())]
    );
}

#[tokio::test]
async fn openai_compatible_route_sends_no_user_id_unless_configured() {
    let agent = format!("dsh-rs/{}", env!("CARGO_PKG_VERSION"));
    // The session id still goes out: it names one session, not the installation.
    assert_eq!(
        headers_sent_by(RouteConfig::openai_compatible(), Some(USER)).await,
        [Some(agent.clone()), None, Some("session-1".into())]
    );
    let opted_in = RouteConfig {
        send_user_id: Some(true),
        ..RouteConfig::openai_compatible()
    };
    assert_eq!(
        headers_sent_by(opted_in, Some(USER)).await,
        [Some(agent), Some(USER.into()), Some("session-1".into())]
    );
    // A gateway that wants its own user-agent gets it.
    let branded = RouteConfig {
        headers: [("User-Agent".to_string(), "my-gateway/1".to_string())].into(),
        ..RouteConfig::openai_compatible()
    };
    assert_eq!(
        headers_sent_by(branded, None).await,
        [Some("my-gateway/1".into()), None, Some("session-1".into())]
    );
}

#[tokio::test]
async fn registered_routes_carry_the_configured_user_id() {
    let mut server = Server::start(vec![sse_reply(&sse_body(), 64)]).await;
    let ctx = Context::root();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let config = OpenAiConfig {
        routes: vec![RouteConfig {
            base_url: Some(server.base_url.clone()),
            ..RouteConfig::deepseek()
        }],
        user_id: Some(USER.into()),
    };
    let handles = register_routes(&ctx, &runtime, &config, env(&server.base_url)).unwrap();
    assert_eq!(handles.len(), 1);
    let mut req = request();
    let prepared = runtime
        .prepare_call(req.config.clone(), &Default::default())
        .await
        .unwrap();
    req.config = prepared.config().clone();
    let (_, error) = drain(prepared.stream(Arc::new(req)).await.unwrap()).await;
    assert!(error.is_none());
    let seen = server.request().await;
    assert_eq!(
        seen.header("x-deepseek-harness-user-id").as_deref(),
        Some(USER)
    );
}

#[test]
fn an_id_no_header_can_carry_is_a_config_error() {
    let client = dsh_llm_openai::client_builder().no_proxy().build().unwrap();
    let adapter =
        OpenAiAdapter::with_client(RouteConfig::deepseek(), env("http://127.0.0.1:9"), client)
            .unwrap();
    let error = adapter.with_user_id("bad\nid").err().unwrap();
    assert_eq!(error.failure.code, dsh_llm_openai::INVALID_CONFIG);
}

/// The compaction marker header of one request sent with `purpose` over `route`.
async fn compact_header_sent(
    route: RouteConfig,
    purpose: dsh_llm::RequestPurpose,
) -> Option<String> {
    let mut server = Server::start(vec![sse_reply(&sse_body(), 64)]).await;
    let env = Arc::new(HashMap::from([
        ("DEEPSEEK_API_KEY".to_string(), KEY.to_string()),
        ("DEEPSEEK_BASE_URL".to_string(), server.base_url.clone()),
        ("OPENAI_BASE_URL".to_string(), server.base_url.clone()),
    ]));
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let adapter = OpenAiAdapter::with_client(route, env, client).unwrap();
    let mut request = request();
    request.purpose = purpose;
    let (_, error) = drain(adapter.stream(Arc::new(request)).await.unwrap()).await;
    assert!(error.is_none());
    let seen = server.request().await;
    seen.header(dsh_llm_openai::COMPACT_HEADER)
}

#[tokio::test]
async fn a_compaction_request_on_the_deepseek_route_says_so_in_a_header() {
    use dsh_llm::RequestPurpose;
    assert_eq!(dsh_llm_openai::COMPACT_HEADER, "x-deepseek-harness-compact");
    assert_eq!(
        compact_header_sent(RouteConfig::deepseek(), RequestPurpose::Compaction).await,
        Some("1".into())
    );
    // Steps and titles carry no marker; nor does another provider's route.
    for purpose in [RequestPurpose::Step, RequestPurpose::Title] {
        assert_eq!(
            compact_header_sent(RouteConfig::deepseek(), purpose).await,
            None
        );
    }
    assert_eq!(
        compact_header_sent(RouteConfig::openai_compatible(), RequestPurpose::Compaction).await,
        None
    );
    assert_eq!(RequestPurpose::default(), RequestPurpose::Step);
    assert_eq!(RequestPurpose::WORDS, ["step", "title", "compaction"]);
}

/// Boot never parses the system's root certificates: routes share one client, built by the
/// first request of any of them.
#[tokio::test]
async fn routes_share_one_client_built_by_the_first_request() {
    let mut server = Server::start(vec![sse_reply(&sse_body(), 7)]).await;
    let client = dsh_llm_openai::LazyClient::default();
    let deepseek = OpenAiAdapter::with_lazy_client(
        RouteConfig::deepseek(),
        env(&server.base_url),
        client.clone(),
    )
    .unwrap();
    let other = OpenAiAdapter::with_lazy_client(
        RouteConfig::deepseek(),
        env(&server.base_url),
        client.clone(),
    )
    .unwrap();
    assert!(!client.is_built(), "building an adapter built its client");
    // The outcome depends on the machine's proxy settings; building is what is asserted.
    if let Ok(stream) = deepseek.stream(Arc::new(request())).await {
        drain(stream).await;
        let _ = server.request().await;
    }
    assert!(
        client.is_built(),
        "the first request did not build the client"
    );
    let first = client.get().unwrap() as *const reqwest::Client;
    drop(other);
    assert_eq!(first, client.get().unwrap() as *const reqwest::Client);
}

/// A TLS server whose certificate the system's roots do not vouch for (signed by the test CA
/// of `crates/http-client/testdata`): the failure names the refusal and what to do.
#[tokio::test]
async fn a_refused_tls_certificate_is_named_in_the_failure() {
    const CERT: &[u8] = include_bytes!("../../../http-client/testdata/server.der");
    const KEY_DER: &[u8] = include_bytes!("../../../http-client/testdata/server-key.der");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls::pki_types::CertificateDer::from(CERT.to_vec())],
            rustls::pki_types::PrivateKeyDer::Pkcs8(KEY_DER.to_vec().into()),
        )
        .unwrap();
    let config = Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("https://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        // Every attempt's handshake, until the test ends.
        for tcp in listener.incoming() {
            let Ok(mut tcp) = tcp else { return };
            let Ok(mut conn) = rustls::ServerConnection::new(config.clone()) else {
                return;
            };
            while conn.is_handshaking() {
                if conn.complete_io(&mut tcp).is_err() {
                    break;
                }
            }
        }
    });
    let error = adapter(&base_url)
        .stream(Arc::new(request()))
        .await
        .err()
        .unwrap();
    assert_no_key(&error);
    // Its own code, which the default policy does not retry: every retry would meet the
    // same certificate.
    assert_eq!(error.code(), codes::TLS_CERTIFICATE);
    assert!(!dsh_llm::ResolvedRetryPolicy::default().is_retryable(error.code()));
    assert_eq!(
        error.to_string(),
        format!(
            "model API request to {base_url} failed: the server's TLS certificate was refused \
             (invalid peer certificate: UnknownIssuer); if a private CA signed it, add that CA \
             to the system's certificates or point SSL_CERT_FILE at a bundle that holds it"
        )
    );
}
