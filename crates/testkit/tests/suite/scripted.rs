//! The scripted adapter behind the real `LlmRuntime`: entries play in order, failures become
//! terminal finish chunks, hangs end only by cancellation, and progress can be awaited.

use std::sync::Arc;

use dsh_kernel::Context;
use dsh_llm::{LlmError, LlmRequest, LlmRuntime};
use dsh_protocol::{codes, Message, StreamChunk};
use dsh_testkit::scripted::{
    error_finish, text_response, tool_call_response, Response, ScriptEntry, ScriptedAdapter,
    SCRIPT_EXHAUSTED,
};
use futures_util::StreamExt;
use serde_json::{json, Value};

fn setup(entries: Vec<ScriptEntry>) -> (Context, Arc<LlmRuntime>, Arc<ScriptedAdapter>) {
    let ctx = Context::root();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let adapter = Arc::new(ScriptedAdapter::new(entries));
    // Dropping the handle keeps the registration; it lives until `ctx`'s fiber goes.
    drop(adapter.register(&ctx, &runtime, "scripted").unwrap());
    (ctx, runtime, adapter)
}

fn request(text: &str) -> Arc<LlmRequest> {
    Arc::new(LlmRequest::new(
        ScriptedAdapter::config("scripted", "m"),
        vec![Arc::new(Message::user_text(text))],
    ))
}

async fn collect(runtime: &LlmRuntime, request: Arc<LlmRequest>) -> Value {
    let chunks: Vec<StreamChunk> = runtime
        .stream(request)
        .await
        .unwrap()
        .map(|c| c.unwrap())
        .collect()
        .await;
    serde_json::to_value(chunks).unwrap()
}

fn failure_finish(code: &str, message: &str) -> Value {
    json!({"type": "finish", "reason": {"kind": "error", "failure": {"message": message, "code": code}}})
}

#[tokio::test]
async fn entries_play_in_order_and_requests_are_recorded() {
    let (_ctx, runtime, adapter) = setup(vec![
        text_response("one").into(),
        tool_call_response(&[("c1", "read", "{}")]).into(),
    ]);
    let first = request("hello");
    assert_eq!(
        collect(&runtime, first.clone()).await,
        serde_json::to_value(text_response("one")).unwrap()
    );
    assert_eq!(
        collect(&runtime, request("again")).await,
        serde_json::to_value(tool_call_response(&[("c1", "read", "{}")])).unwrap()
    );
    assert_eq!(adapter.calls(), 2);
    assert_eq!(adapter.remaining(), 0);
    let requests = adapter.requests();
    assert_eq!(requests.len(), 2);
    // The very request object the caller built reaches the adapter (no projection applied).
    assert!(Arc::ptr_eq(&requests[0], &first));
    assert_eq!(requests[1].messages[0].text(), "again");

    // A third call finds the script exhausted: a clear, coded terminal failure.
    let exhausted = collect(&runtime, request("more")).await;
    assert_eq!(
        exhausted,
        json!([failure_finish(
            SCRIPT_EXHAUSTED,
            "the scripted adapter has no entry for call 3"
        )])
    );
    assert_eq!(adapter.calls(), 3);
}

#[tokio::test]
async fn respond_entries_see_the_request_and_entries_can_be_pushed_later() {
    let (_ctx, runtime, adapter) = setup(vec![ScriptEntry::respond(|req: &LlmRequest| {
        let echoed: Vec<String> = req.messages.iter().map(|m| m.text()).collect();
        text_response(&echoed.join("|"))
    })]);
    let req = Arc::new(LlmRequest::new(
        ScriptedAdapter::config("scripted", "m"),
        vec![
            Arc::new(Message::user_text("a")),
            Arc::new(Message::user_text("b")),
        ],
    ));
    assert_eq!(
        collect(&runtime, req).await,
        serde_json::to_value(text_response("a|b")).unwrap()
    );
    adapter.push(error_finish("SERVER"));
    assert_eq!(
        collect(&runtime, request("x")).await,
        json!([failure_finish("SERVER", "scripted failure (SERVER)")])
    );
}

#[tokio::test]
async fn adapter_failures_become_terminal_finish_chunks() {
    let chunks = Response::new().text("partial answer").split(2).chunks();
    let (_ctx, runtime, _adapter) = setup(vec![
        ScriptEntry::Error(LlmError::new(codes::RATE_LIMIT, "slow down")),
        ScriptEntry::ErrorAfter(2, chunks.clone(), LlmError::new(codes::TRANSPORT, "reset")),
    ]);
    assert_eq!(
        collect(&runtime, request("x")).await,
        json!([failure_finish("RATE_LIMIT", "slow down")])
    );
    let mut expected = serde_json::to_value(&chunks[..2]).unwrap();
    expected
        .as_array_mut()
        .unwrap()
        .push(failure_finish("TRANSPORT", "reset"));
    assert_eq!(collect(&runtime, request("y")).await, expected);
}

#[tokio::test]
async fn a_hang_ends_only_by_cancellation() {
    let chunks = Response::new().text("streaming text").split(3).chunks();
    let (_ctx, runtime, adapter) = setup(vec![
        ScriptEntry::Hang,
        ScriptEntry::HangAfter(2, chunks.clone()),
    ]);

    let first = request("x");
    let stream = runtime.stream(first.clone()).await.unwrap();
    let consumer = tokio::spawn(stream.collect::<Vec<_>>());
    adapter.wait_for_call(1).await;
    adapter.wait_for_hang(1).await;
    assert!(!consumer.is_finished());
    first.cancel.cancel();
    let got: Vec<StreamChunk> = consumer
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.unwrap())
        .collect();
    assert_eq!(got.len(), 1);
    assert!(matches!(
        &got[0],
        StreamChunk::Finish { reason, .. } if reason.failure().map(|f| f.code.as_str()) == Some(codes::ABORTED)
    ));

    // HangAfter: exactly the first two chunks arrive before the hang point is reached.
    let second = request("y");
    let mut stream = runtime.stream(second.clone()).await.unwrap();
    let a = stream.next().await.unwrap().unwrap();
    let b = stream.next().await.unwrap().unwrap();
    assert_eq!([a, b], [chunks[0].clone(), chunks[1].clone()]);
    let pending = tokio::spawn(async move { stream.next().await.map(|c| c.unwrap()) });
    adapter.wait_for_hang(2).await;
    second.cancel.cancel();
    let last = pending.await.unwrap().unwrap();
    assert!(matches!(last, StreamChunk::Finish { .. }));
}

#[tokio::test]
async fn a_hang_used_directly_yields_nothing_after_cancellation() {
    use dsh_llm::LlmAdapter;
    let adapter = ScriptedAdapter::new([ScriptEntry::HangAfter(1, text_response("t"))]);
    let req = request("x");
    let mut stream = adapter.stream(req.clone()).await.unwrap();
    assert!(matches!(
        stream.next().await,
        Some(Ok(StreamChunk::BlockStart { .. }))
    ));
    req.cancel.cancel();
    assert!(stream.next().await.is_none());
    assert_eq!(adapter.calls(), 1);
}

#[tokio::test]
async fn wait_for_call_synchronizes_with_a_spawned_caller() {
    let (_ctx, runtime, adapter) = setup(vec![text_response("ok").into()]);
    let waiter = {
        let adapter = adapter.clone();
        tokio::spawn(async move {
            adapter.wait_for_call(1).await;
            adapter.requests().len()
        })
    };
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    collect(&runtime, request("x")).await;
    assert_eq!(waiter.await.unwrap(), 1);
    // Already reached: resolves at once.
    adapter.wait_for_call(1).await;
}

#[tokio::test]
async fn model_info_drives_call_preparation() {
    let ctx = Context::root();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let adapter = Arc::new(
        ScriptedAdapter::new([])
            .context_window(64_000)
            .default_max_tokens(4_096)
            .efforts(&["low", "high"], Some("high")),
    );
    let _handle = adapter.register(&ctx, &runtime, "scripted").unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let prepared = runtime
        .prepare_call(ScriptedAdapter::config("scripted", "m"), &cancel)
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(prepared.config()).unwrap(),
        json!({"provider": "scripted", "model": "m", "reasoningEffort": "high", "maxTokens": 4096})
    );
    assert_eq!(prepared.context_window(), Some(64_000));
    let mut bad = ScriptedAdapter::config("scripted", "m");
    bad.reasoning_effort = Some("max".into());
    let err = runtime.prepare_call(bad, &cancel).await.err().unwrap();
    assert_eq!(err.code(), codes::UNSUPPORTED_REASONING_EFFORT);
}
