//! `adapter-ingest`: how fast the chat-completions adapter turns a streamed body into
//! harness chunks.
//!
//! A 10,000-event `text/event-stream` body (a third reasoning deltas, the rest text deltas,
//! then finish, usage and `[DONE]`) is served over HTTP on 127.0.0.1 by a minimal server that
//! writes the prebuilt response in one go, so the figure is the adapter's: HTTP body reads,
//! SSE framing, JSON decoding and translation, up to the last chunk handed to the caller.
//! A second figure decodes the same bytes in memory (no HTTP), in 1,400-byte pieces.
//! Budget: ≥ 200,000 wire chunks/s over HTTP.

use crate::stats::{report_rate, summarize};
use dsh_llm::{LlmAdapter, LlmRequest};
use dsh_llm_openai::translate::StreamDecoder;
use dsh_llm_openai::{OpenAiAdapter, RouteConfig};
use dsh_protocol::{LlmCallConfig, Message};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const BENCH: &str = "adapter-ingest";
const CHUNKS: u64 = 10_000;
const RUNS: usize = 30;
const BUDGET_PER_SECOND: f64 = 200_000.0;

fn err(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{error}")
}

/// The SSE body: `CHUNKS` delta events, a finish event with usage, `[DONE]`.
fn body() -> Vec<u8> {
    let mut body = String::new();
    for i in 0..CHUNKS {
        let delta = if i % 3 == 0 {
            format!(r#"{{"reasoning_content":"thought {i} "}}"#)
        } else {
            format!(r#"{{"content":"word{i} "}}"#)
        };
        body.push_str(&format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// Reads one request (head plus `content-length` body); `false` at end of connection.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let total = end + 4 + length;
            while buf.len() < total {
                if !read_more(stream, buf).await? {
                    return Ok(false);
                }
            }
            buf.drain(..total);
            return Ok(true);
        }
        if !read_more(stream, buf).await? {
            return Ok(false);
        }
    }
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut scratch = [0u8; 8192];
    let n = stream.read(&mut scratch).await?;
    buf.extend_from_slice(&scratch[..n]);
    Ok(n > 0)
}

/// Serves `response` to every request on every connection.
async fn serve(listener: TcpListener, response: Arc<Vec<u8>>) {
    while let Ok((mut stream, _)) = listener.accept().await {
        let response = response.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let mut buf = Vec::new();
            while let Ok(true) = read_request(&mut stream, &mut buf).await {
                if stream.write_all(&response).await.is_err() {
                    return;
                }
            }
        });
    }
}

async fn over_http(body: &[u8]) -> anyhow::Result<Vec<Duration>> {
    let mut response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(body);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let base_url = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(serve(listener, Arc::new(response)));
    let env: HashMap<String, String> = HashMap::from([
        ("DEEPSEEK_API_KEY".into(), "sk-bench".into()),
        ("DEEPSEEK_BASE_URL".into(), base_url),
    ]);
    let client = dsh_llm_openai::client_builder()
        .no_proxy()
        .build()
        .map_err(err)?;
    let adapter =
        OpenAiAdapter::with_client(RouteConfig::deepseek(), Arc::new(env), client).map_err(err)?;
    let mut samples = Vec::with_capacity(RUNS);
    // One warm-up run opens the kept-alive connection.
    for run in 0..=RUNS {
        let request = Arc::new(LlmRequest::new(
            LlmCallConfig {
                provider: "deepseek-official".into(),
                model: "deepseek-v4-flash".into(),
                ..LlmCallConfig::default()
            },
            vec![Arc::new(Message::user_text("go"))],
        ));
        let started = Instant::now();
        let mut stream = adapter.stream(request).await.map_err(err)?;
        let mut produced = 0u64;
        while let Some(chunk) = stream.next().await {
            chunk.map_err(err)?;
            produced += 1;
        }
        let elapsed = started.elapsed();
        anyhow::ensure!(
            produced > CHUNKS,
            "the stream ended early ({produced} chunks)"
        );
        if run > 0 {
            samples.push(elapsed);
        }
    }
    server.abort();
    Ok(samples)
}

fn in_memory(body: &[u8]) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let mut decoder = StreamDecoder::new();
        let mut out = Vec::with_capacity(CHUNKS as usize + 8);
        for piece in body.chunks(1400) {
            decoder.push(piece, &mut out).map_err(err)?;
        }
        decoder.end(&mut out).map_err(err)?;
        samples.push(started.elapsed());
        anyhow::ensure!(out.len() as u64 > CHUNKS, "decoding lost chunks");
    }
    Ok(samples)
}

pub fn run() -> anyhow::Result<()> {
    let body = body();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let http = summarize(runtime.block_on(over_http(&body))?);
    report_rate(BENCH, "adapter over HTTP: 10k wire chunks", CHUNKS, &http);
    let memory = summarize(in_memory(&body)?);
    report_rate(
        BENCH,
        "decoder only (in memory): 10k wire chunks",
        CHUNKS,
        &memory,
    );
    let rate = CHUNKS as f64 / http.median.as_secs_f64().max(f64::MIN_POSITIVE);
    let verdict = if rate >= BUDGET_PER_SECOND {
        "within"
    } else {
        "UNDER"
    };
    println!("    {verdict} the 200,000 chunks/s budget over HTTP at median");
    Ok(())
}
