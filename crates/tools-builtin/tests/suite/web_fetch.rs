//! web_fetch against a tiny HTTP server on 127.0.0.1 (loopback explicitly allowed).

use dsh_tools::TypedTool;
use dsh_tools_builtin::{Limits, ToolError, ToolOutput, WebFetch, WebFetchArgs, WebFetchConfig};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::support::{fast_limits, Fixture};

/// Serves canned responses by path until the test ends.
async fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, headers, body): (&str, &str, Vec<u8>) = match path.as_str() {
                    "/page" => ("200 OK", "Content-Type: text/html; charset=utf-8\r\n",
                        b"<html><head><title>Hi</title><script>x()</script></head><body><p>Hello &amp; welcome</p></body></html>".to_vec()),
                    "/data.json" => ("200 OK", "Content-Type: application/json\r\n", br#"{"a": 1}"#.to_vec()),
                    "/redirect" => ("302 Found", "Location: /page\r\n", Vec::new()),
                    "/missing" => ("404 Not Found", "Content-Type: text/plain\r\n", b"nope".to_vec()),
                    "/binary" => ("200 OK", "Content-Type: application/octet-stream\r\n", vec![0, 1, 2, 3]),
                    _ => ("200 OK", "Content-Type: text/plain\r\n", "x".repeat(50).into_bytes()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    format!("http://{addr}")
}

fn loopback_fixture() -> Fixture {
    Fixture::with(|b| {
        b.web_fetch(WebFetchConfig {
            enabled: true,
            allow_private_addresses: true,
        })
        .limits(Limits {
            web_fetch_max_chars: 30,
            ..fast_limits()
        })
    })
}

async fn fetch(fx: &Fixture, url: &str) -> Result<ToolOutput, ToolError> {
    WebFetch::default()
        .run(
            WebFetchArgs { url: url.into() },
            &fx.env,
            CancellationToken::new(),
        )
        .await
}

#[tokio::test]
async fn fetches_html_as_text_and_follows_redirects() {
    let base = serve().await;
    let fx = loopback_fixture();
    let out = fetch(&fx, &format!("{base}/redirect")).await.unwrap();
    assert_eq!(out.content, "Hi\n\nHello & welcome");
    assert_eq!(
        out.metadata,
        json!({"url": format!("{base}/redirect"), "finalUrl": format!("{base}/page"), "status": 200,
               "contentType": "text/html; charset=utf-8", "chars": 19, "truncated": false})
    );
    assert_eq!(
        fetch(&fx, &format!("{base}/data.json"))
            .await
            .unwrap()
            .content,
        r#"{"a": 1}"#
    );
}

#[tokio::test]
async fn caps_long_content() {
    let base = serve().await;
    let fx = loopback_fixture();
    let out = fetch(&fx, &format!("{base}/long")).await.unwrap();
    assert_eq!(
        out.content,
        format!(
            "{}\n\n[content truncated: showing the first 30 of 50 characters]",
            "x".repeat(30)
        )
    );
    assert_eq!(out.metadata["truncated"], true);
}

#[tokio::test]
async fn reports_http_errors_and_binary_content() {
    let base = serve().await;
    let fx = loopback_fixture();
    let err = fetch(&fx, &format!("{base}/missing")).await.unwrap_err();
    assert_eq!(err.code(), "HTTP_STATUS");
    assert!(err
        .to_string()
        .ends_with("answered HTTP 404. The page does not exist; check the URL."));
    assert_eq!(
        fetch(&fx, &format!("{base}/binary"))
            .await
            .unwrap_err()
            .code(),
        "UNSUPPORTED_CONTENT"
    );
    assert_eq!(
        fetch(&fx, "file:///etc/passwd").await.unwrap_err().code(),
        "INVALID_URL"
    );
}

#[tokio::test]
async fn private_addresses_are_refused_by_default() {
    let base = serve().await;
    let fx = Fixture::with(|b| {
        b.web_fetch(WebFetchConfig {
            enabled: true,
            allow_private_addresses: false,
        })
    });
    let err = fetch(&fx, &format!("{base}/page")).await.unwrap_err();
    assert_eq!(err.code(), "ADDRESS_BLOCKED");
    // names are resolved first: localhost is refused the same way
    let port = base.rsplit(':').next().unwrap();
    let err = fetch(&fx, &format!("http://localhost:{port}/page"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "ADDRESS_BLOCKED");
}

#[tokio::test]
async fn disabled_by_default() {
    let fx = Fixture::new();
    let err = fetch(&fx, "https://example.org").await.unwrap_err();
    assert_eq!(err.code(), "WEB_FETCH_DISABLED");
    assert!(WebFetch::default().is_concurrency_safe(&json!({})));
}
