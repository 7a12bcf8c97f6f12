//! The request-reconstruction check, driven by hand: a session in the real store, the real
//! `LlmRuntime` and the scripted adapter.

use std::sync::Arc;

use dsh_kernel::Context;
use dsh_llm::{LlmRequest, LlmRuntime};
use dsh_protocol::{EpochHeader, LlmCallConfig, Message, SessionId, ToolSchema};
use dsh_session::{
    AppendOptions, EventData, HeaderReason, RequestHeader, Session, SessionOptions, SessionStore,
    SessionsPlugin, StepBoundary, TurnStart,
};
use dsh_testkit::checks::{Invariant, Violation};
use dsh_testkit::recon::{
    rebuild_request, RequestReconstructionCheck, RequestReconstructionPlugin,
};
use dsh_testkit::scripted::{text_response, ScriptEntry, ScriptedAdapter};
use futures_util::StreamExt;
use serde_json::json;

struct Rig {
    ctx: Context,
    runtime: Arc<LlmRuntime>,
    store: Arc<SessionStore>,
    check: RequestReconstructionCheck,
    adapter: Arc<ScriptedAdapter>,
}

fn rig() -> Rig {
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(()).unwrap();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let adapter = Arc::new(ScriptedAdapter::new(
        (0..8).map(|_| ScriptEntry::from(text_response("ok"))),
    ));
    drop(adapter.register(&ctx, &runtime, "scripted").unwrap());
    let check = RequestReconstructionCheck::install(&ctx).unwrap();
    let store = ctx.require::<SessionStore>().unwrap();
    Rig {
        ctx,
        runtime,
        store,
        check,
        adapter,
    }
}

fn config() -> LlmCallConfig {
    LlmCallConfig {
        max_tokens: Some(1024),
        ..ScriptedAdapter::config("scripted", "m")
    }
}

fn tools() -> Vec<ToolSchema> {
    vec![ToolSchema {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object"}).into(),
    }]
}

/// A live session inside turn 1, step 1, with a prompt and a header logged.
fn open_step(rig: &Rig, id: &str) -> Session {
    let session = rig
        .store
        .create(
            &rig.ctx,
            Some(SessionId::from(id)),
            SessionOptions::default(),
        )
        .unwrap();
    let log = |data| session.append(data, AppendOptions::log_only()).unwrap();
    log(EventData::TurnStart(TurnStart { turn: 1 }));
    log(EventData::StepStart(StepBoundary { turn: 1, step: 1 }));
    session
        .append(
            EventData::UserMessage(Arc::new(Message::user_text("hello"))),
            AppendOptions::surface_append(),
        )
        .unwrap();
    log(EventData::RequestHeader(Box::new(RequestHeader {
        header: EpochHeader {
            config: config(),
            adapter_defaults: None,
            system: Some("You are terse.".into()),
            tools: Some(tools()),
        },
        reason: HeaderReason::Initial,
    })));
    session
}

/// Sends `request` through the runtime's `llm/stream` chain and drains the reply.
async fn send(rig: &Rig, request: LlmRequest) {
    let stream = rig.runtime.stream(Arc::new(request)).await.unwrap();
    let chunks: Vec<_> = stream.collect().await;
    assert!(!chunks.is_empty());
}

fn violation(n: usize, seq: u64, message: &str) -> Violation {
    Violation {
        invariant: Invariant::ModelVisible,
        seq: Some(seq),
        message: format!("request {n} (session s): {message}"),
    }
}

#[tokio::test]
async fn a_request_rebuilt_from_the_log_passes() {
    let rig = rig();
    let session = open_step(&rig, "s");
    let request = rebuild_request(&session).unwrap();
    assert_eq!(request.system.as_deref(), Some("You are terse."));
    send(&rig, request).await;
    // Requests without a session are not the loop's and are not checked.
    send(&rig, LlmRequest::new(config(), vec![])).await;
    assert_eq!(rig.check.checked(), 1);
    assert_eq!(rig.adapter.calls(), 2);
    assert_eq!(rig.check.violations(), []);
    rig.check.assert_clean();
}

#[tokio::test]
async fn smuggled_messages_and_changed_prompts_are_flagged() {
    let rig = rig();
    let session = open_step(&rig, "s");

    let mut extra = rebuild_request(&session).unwrap();
    extra
        .messages
        .push(Arc::new(Message::user_text("not in the log")));
    send(&rig, extra).await;

    let mut system = rebuild_request(&session).unwrap();
    system.system = Some("You are verbose.".into());
    send(&rig, system).await;

    let mut capped = rebuild_request(&session).unwrap();
    capped.config.max_tokens = Some(8);
    capped.tools = None;
    send(&rig, capped).await;

    let found = rig.check.violations();
    let first = &found[0].message;
    assert!(
        first.starts_with(
            "request 1 (session s): messages differ from derive_messages() (2 sent, 1 derived); \
             first difference at index 1: sent {\"id\":"
        ),
        "{first}"
    );
    assert!(first.ends_with("log derives nothing"), "{first}");
    assert_eq!(
        found[1..],
        [
            violation(
                2,
                4,
                "system prompt \"You are verbose.\" differs from the logged \"You are terse.\""
            ),
            violation(
                3,
                4,
                "call config differs from the logged request/header in maxTokens: sent \
                 {\"provider\":\"scripted\",\"model\":\"m\",\"maxTokens\":8}, logged \
                 {\"provider\":\"scripted\",\"model\":\"m\",\"maxTokens\":1024}"
            ),
            violation(3, 4, "tools [] differ from the logged [\"read\"]"),
        ]
    );
    assert_eq!(rig.check.checked(), 3);
    let panicked = std::panic::catch_unwind(|| rig.check.assert_clean());
    assert!(panicked.is_err());
}

#[tokio::test]
async fn requests_outside_a_step_or_before_a_header_are_flagged() {
    let rig = rig();
    let session = open_step(&rig, "s");
    let request = rebuild_request(&session).unwrap();
    session
        .append(
            EventData::StepEnd(StepBoundary { turn: 1, step: 1 }),
            AppendOptions::log_only(),
        )
        .unwrap();
    send(&rig, request).await;

    // A fresh session with a step open but no header yet.
    let bare = rig
        .store
        .create(
            &rig.ctx,
            Some(SessionId::from("bare")),
            SessionOptions::default(),
        )
        .unwrap();
    for data in [
        EventData::TurnStart(TurnStart { turn: 1 }),
        EventData::StepStart(StepBoundary { turn: 1, step: 1 }),
    ] {
        bare.append(data, AppendOptions::log_only()).unwrap();
    }
    assert!(rebuild_request(&bare).is_none());
    let mut request = LlmRequest::new(config(), vec![]);
    request.session_id = Some(SessionId::from("bare"));
    send(&rig, request.clone()).await;
    // And one naming a session the store does not know.
    request.session_id = Some(SessionId::from("ghost"));
    send(&rig, request).await;

    let messages: Vec<(Option<u64>, String)> = rig
        .check
        .violations()
        .into_iter()
        .map(|v| (v.seq, v.message))
        .collect();
    assert_eq!(
        messages,
        [
            (
                Some(5),
                "request 1 (session s): issued outside an open step (no step/start since the last step/end)".to_owned()
            ),
            (
                Some(2),
                "request 2 (session bare): the log has no request/header".to_owned()
            ),
            (
                None,
                "request 3 (session ghost): session ghost is not live in the store".to_owned()
            ),
        ]
    );
}

#[tokio::test]
async fn the_plugin_provides_the_check_as_a_service() {
    let ctx = Context::root();
    ctx.plugin::<SessionsPlugin>(()).unwrap();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let adapter = Arc::new(ScriptedAdapter::new([text_response("ok").into()]));
    drop(adapter.register(&ctx, &runtime, "scripted").unwrap());
    let fiber = ctx.plugin::<RequestReconstructionPlugin>(()).unwrap();
    let check = ctx.require::<RequestReconstructionCheck>().unwrap();
    let mut request = LlmRequest::new(config(), vec![]);
    request.session_id = Some(SessionId::from("nobody"));
    let chunks: Vec<_> = runtime
        .stream(Arc::new(request.clone()))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(chunks.len(), 5);
    assert_eq!(check.checked(), 1);
    // Unloading the plugin removes the listener.
    fiber.dispose();
    let _ = runtime.stream(Arc::new(request)).await.unwrap();
    assert_eq!(check.checked(), 1);
}
