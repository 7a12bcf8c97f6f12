//! Throughput figures (ignored by default; run with
//! `cargo test -p dsh-llm-openai --release --test all bench -- --ignored --nocapture`).

use super::server::{http_chunk, last_chunk, sse_head, Reply, Server};
use dsh_llm::{LlmAdapter, LlmRequest};
use dsh_llm_openai::translate::StreamDecoder;
use dsh_llm_openai::{OpenAiAdapter, RouteConfig};
use dsh_protocol::{LlmCallConfig, Message};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

const CHUNKS: usize = 10_000;

fn body() -> Vec<u8> {
    let mut body = String::new();
    for i in 0..CHUNKS {
        let payload = if i % 3 == 0 {
            format!(
                r#"{{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"reasoning_content":"thought {i} "}},"finish_reason":null}}]}}"#
            )
        } else {
            format!(
                r#"{{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":"word{i} "}},"finish_reason":null}}]}}"#
            )
        };
        body.push_str("data: ");
        body.push_str(&payload);
        body.push_str("\n\n");
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n");
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

#[test]
#[ignore = "prints throughput figures; run explicitly in release mode"]
fn decoder_throughput() {
    let body = body();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        let mut decoder = StreamDecoder::new();
        let mut out = Vec::with_capacity(CHUNKS + 8);
        // Network-sized pieces.
        for piece in body.chunks(1400) {
            decoder.push(piece, &mut out).unwrap();
        }
        decoder.end(&mut out).unwrap();
        assert!(out.len() >= CHUNKS);
        best = best.min(started.elapsed().as_secs_f64());
    }
    println!(
        "decoder: {CHUNKS} wire chunks in {:.2} ms = {:.0} chunks/s",
        best * 1000.0,
        CHUNKS as f64 / best
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "prints throughput figures; run explicitly in release mode"]
async fn adapter_http_throughput() {
    let body = body();
    let replies = (0..5)
        .map(|_| {
            let mut pieces = vec![sse_head()];
            pieces.extend(body.chunks(16 * 1024).map(http_chunk));
            pieces.push(last_chunk());
            Reply::Burst(pieces)
        })
        .collect();
    let server = Server::start(replies).await;
    let env: HashMap<String, String> = HashMap::from([
        ("DEEPSEEK_API_KEY".into(), "k".into()),
        ("DEEPSEEK_BASE_URL".into(), server.base_url.clone()),
    ]);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let adapter =
        OpenAiAdapter::with_client(RouteConfig::deepseek(), Arc::new(env), client).unwrap();
    let mut best = f64::MAX;
    for _ in 0..5 {
        let request = Arc::new(LlmRequest::new(
            LlmCallConfig {
                provider: "deepseek-official".into(),
                model: "deepseek-v4-flash".into(),
                ..LlmCallConfig::default()
            },
            vec![Arc::new(Message::user_text("go"))],
        ));
        let started = Instant::now();
        let mut stream = adapter.stream(request).await.unwrap();
        let mut count = 0usize;
        while let Some(item) = stream.next().await {
            item.unwrap();
            count += 1;
        }
        assert!(count >= CHUNKS);
        best = best.min(started.elapsed().as_secs_f64());
    }
    println!(
        "adapter over HTTP: {CHUNKS} wire chunks in {:.2} ms = {:.0} chunks/s",
        best * 1000.0,
        CHUNKS as f64 / best
    );
}
