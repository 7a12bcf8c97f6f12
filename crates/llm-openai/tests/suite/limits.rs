//! What a peer can make the adapter hold: response heads, silent or trickling peers, and
//! endpoints that cannot be URLs. Every case ends with a typed error, never growth.

use super::server::{http_chunk, sse_head, Reply, Server};
use dsh_llm::{ChunkStream, LlmAdapter, LlmError, LlmRequest};
use dsh_llm_openai::{OpenAiAdapter, RouteConfig, INVALID_CONFIG};
use dsh_protocol::{codes, LlmCallConfig, Message, StreamChunk};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

fn adapter(base_url: &str, route: RouteConfig) -> OpenAiAdapter {
    let env = Arc::new(HashMap::from([
        ("DEEPSEEK_API_KEY".to_string(), "sk-test".to_string()),
        ("DEEPSEEK_BASE_URL".to_string(), base_url.to_string()),
    ]));
    let client = dsh_llm_openai::client_builder().no_proxy().build().unwrap();
    OpenAiAdapter::with_client(route, env, client).unwrap()
}

fn route() -> RouteConfig {
    RouteConfig {
        stream_idle_timeout_ms: 10_000,
        ..RouteConfig::deepseek()
    }
}

fn request() -> Arc<LlmRequest> {
    Arc::new(LlmRequest::new(
        LlmCallConfig {
            provider: "deepseek-official".into(),
            model: "deepseek-v4-flash".into(),
            ..LlmCallConfig::default()
        },
        vec![Arc::new(Message::user_text("hi"))],
    ))
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

/// `head`, then `piece` again and again (pausing `pause` between) until the client leaves.
fn forever(head: &[u8], piece: &[u8], pause: Duration) -> Reply {
    Reply::Forever {
        head: head.to_vec(),
        piece: piece.to_vec(),
        pause,
    }
}

#[tokio::test]
async fn a_response_head_without_end_is_refused_by_the_http_client() {
    // hyper bounds a response head (about 400 KiB, at most 100 headers over HTTP/1.1;
    // 16 KiB of header list over HTTP/2), so headers without end fail the request.
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n";
    let server = Server::start(vec![forever(
        head,
        b"x-pad: 0123456789abcdef\r\n",
        Duration::ZERO,
    )])
    .await;
    let error = adapter(&server.base_url, route())
        .stream(request())
        .await
        .err()
        .unwrap();
    assert_eq!(error.code(), codes::TRANSPORT);
}

#[tokio::test]
async fn a_head_that_trickles_in_forever_times_out() {
    // The idle timeout bounds the whole wait for the head, not each byte of it.
    let head = b"HTTP/1.1 200 OK\r\n";
    let server = Server::start(vec![forever(head, b"x", Duration::from_millis(20))]).await;
    let route = RouteConfig {
        stream_idle_timeout_ms: 300,
        ..route()
    };
    let error = adapter(&server.base_url, route)
        .stream(request())
        .await
        .err()
        .unwrap();
    assert_eq!(error.code(), codes::TIMEOUT);
}

#[tokio::test]
async fn keep_alive_comments_without_end_count_toward_the_response_limit() {
    let route = RouteConfig {
        max_response_bytes: 64 * 1024,
        ..route()
    };
    let server = Server::start(vec![forever(
        &sse_head(),
        &http_chunk(b": keep-alive\n\n"),
        Duration::ZERO,
    )])
    .await;
    let stream = adapter(&server.base_url, route)
        .stream(request())
        .await
        .unwrap();
    let (chunks, error) = drain(stream).await;
    assert!(chunks.is_empty());
    assert_eq!(error.unwrap().code(), codes::RESPONSE_TOO_LARGE);
}

#[tokio::test]
async fn a_response_that_completes_at_exactly_the_limit_is_whole() {
    let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    for (limit, whole) in [(body.len(), true), (body.len() - 1, false)] {
        let route = RouteConfig {
            max_response_bytes: limit as u64,
            ..route()
        };
        let server = Server::start(vec![super::server::sse_reply(body, 5)]).await;
        let stream = adapter(&server.base_url, route)
            .stream(request())
            .await
            .unwrap();
        let (_, error) = drain(stream).await;
        assert_eq!(
            error.map(|e| e.code().to_owned()),
            (!whole).then(|| codes::RESPONSE_TOO_LARGE.to_owned()),
            "limit {limit}"
        );
    }
}

#[tokio::test]
async fn an_endpoint_that_is_no_url_is_a_configuration_error_not_a_transport_one() {
    // Not retried (INVALID_CONFIG is no retryable code), and nothing is sent.
    for base_url in ["http://[::1", "http://host:99999/v1", "not a url"] {
        let error = adapter(base_url, route())
            .stream(request())
            .await
            .err()
            .unwrap();
        assert_eq!(error.code(), INVALID_CONFIG, "{base_url}");
        assert!(
            error.to_string().starts_with(&format!(
                "the base URL {base_url:?} of provider route 'deepseek-official' is not usable: "
            )),
            "{error}"
        );
    }
}
