use super::support::{collect, config, reasoning_model, Script, ScriptedAdapter};
use dsh_kernel::{BoxError, Context};
use dsh_llm::{
    boundary::IMAGE_PLACEHOLDER, AdaptersUpdated, LlmError, LlmRequest, LlmRuntime, LlmStream,
    Modality, ModelInfo, ResolvedRetryPolicy, DUPLICATE_ROUTE,
};
use dsh_protocol::{
    codes, AdapterDefaults, ContentBlock, FinishReason, LlmCallConfig, LlmFailure, Message,
    MessageSource, Role, StreamChunk,
};
use futures_util::stream::{self, StreamExt};
use serde_json::json;
use std::sync::{Arc, Mutex};

fn text_chunks() -> Vec<Result<StreamChunk, LlmError>> {
    vec![
        Ok(StreamChunk::TextDelta {
            index: 0,
            text: "hi".into(),
        }),
        Ok(StreamChunk::finish(FinishReason::Stop)),
    ]
}

fn setup(adapter: Arc<ScriptedAdapter>) -> (Context, Arc<LlmRuntime>) {
    let ctx = Context::root();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let _handle = runtime
        .register_adapter(&ctx, ["p"], adapter, ResolvedRetryPolicy::default())
        .unwrap();
    (ctx, runtime)
}

fn request(config: LlmCallConfig) -> Arc<LlmRequest> {
    Arc::new(LlmRequest::new(
        config,
        vec![Arc::new(Message::user_text("hello"))],
    ))
}

#[tokio::test]
async fn prepare_without_adapter_is_no_adapter() {
    let (_ctx, runtime) = setup(ScriptedAdapter::new(reasoning_model(), vec![]));
    let err = runtime
        .prepare_call(config("missing", "m"), &Default::default())
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), codes::NO_ADAPTER);
}

#[tokio::test]
async fn prepare_materializes_defaults_with_markers() {
    let (_ctx, runtime) = setup(ScriptedAdapter::new(reasoning_model(), vec![]));
    let prepared = runtime
        .prepare_call(config("p", "m"), &Default::default())
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(prepared.config()).unwrap(),
        json!({"provider":"p","model":"m","reasoningEffort":"high","maxTokens":256000})
    );
    assert_eq!(
        prepared.adapter_defaults(),
        AdapterDefaults {
            reasoning_effort: true,
            max_tokens: true
        }
    );
    assert_eq!(prepared.context_window(), Some(1_000_000));
    assert_eq!(prepared.input_modalities(), &[Modality::Text]);
    assert_eq!(prepared.retry_policy(), &ResolvedRetryPolicy::default());

    let explicit = LlmCallConfig {
        reasoning_effort: Some("off".into()),
        max_tokens: Some(100),
        ..config("p", "m")
    };
    let prepared = runtime
        .prepare_call(explicit.clone(), &Default::default())
        .await
        .unwrap();
    assert_eq!(prepared.config(), &explicit);
    assert!(prepared.adapter_defaults().is_empty());
}

#[tokio::test]
async fn unsupported_or_unknown_effort_is_refused() {
    let (_ctx, runtime) = setup(ScriptedAdapter::new(reasoning_model(), vec![]));
    let ultra = LlmCallConfig {
        reasoning_effort: Some("ultra".into()),
        ..config("p", "m")
    };
    let err = runtime
        .prepare_call(ultra.clone(), &Default::default())
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), codes::UNSUPPORTED_REASONING_EFFORT);

    let (_ctx, plain) = setup(ScriptedAdapter::new(ModelInfo::default(), vec![]));
    let high = LlmCallConfig {
        reasoning_effort: Some("high".into()),
        ..config("p", "m")
    };
    let err = plain
        .prepare_call(high, &Default::default())
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), codes::UNSUPPORTED_REASONING_EFFORT);
    // No reasoning metadata and no effort asked for: nothing is filled in.
    let prepared = plain
        .prepare_call(config("p", "m"), &Default::default())
        .await
        .unwrap();
    assert_eq!(prepared.config(), &config("p", "m"));
}

#[tokio::test]
async fn invalid_model_and_max_tokens_are_refused() {
    let (_ctx, runtime) = setup(ScriptedAdapter::new(reasoning_model(), vec![]));
    let empty = runtime
        .prepare_call(config("p", ""), &Default::default())
        .await
        .err()
        .unwrap();
    assert_eq!(empty.code(), codes::INVALID_MODEL_ID);
    for max in [0, 384_001] {
        let too_big = LlmCallConfig {
            max_tokens: Some(max),
            ..config("p", "m")
        };
        let err = runtime
            .prepare_call(too_big, &Default::default())
            .await
            .err()
            .unwrap();
        assert_eq!(err.code(), codes::INVALID_MODEL_MAX_TOKENS);
    }
    let adapter = ScriptedAdapter::new(reasoning_model(), vec![]);
    *adapter.info.lock().unwrap() = Some(Err(("INVALID_MODEL_ID".into(), "unknown model".into())));
    let (_ctx, runtime) = setup(adapter);
    let err = runtime
        .prepare_call(config("p", "nope"), &Default::default())
        .await
        .err()
        .unwrap();
    assert_eq!(
        err.failure,
        LlmFailure::new("INVALID_MODEL_ID", "unknown model")
    );
}

#[tokio::test]
async fn prepared_call_is_one_shot_and_config_bound() {
    let adapter = ScriptedAdapter::new(reasoning_model(), vec![Script::Items(text_chunks())]);
    let (_ctx, runtime) = setup(adapter.clone());
    let prepared = runtime
        .prepare_call(config("p", "m"), &Default::default())
        .await
        .unwrap();
    let wrong = prepared
        .stream(request(config("p", "m")))
        .await
        .err()
        .unwrap();
    assert_eq!(wrong.code(), codes::INVALID_PREPARED_CALL);

    let good = request(prepared.config().clone());
    let chunks = collect(prepared.stream(good.clone()).await.unwrap()).await;
    assert_eq!(chunks.len(), 2);
    let again = prepared.stream(good).await.err().unwrap();
    assert_eq!(again.code(), codes::INVALID_PREPARED_CALL);
    assert_eq!(adapter.received().len(), 1);
}

#[tokio::test]
async fn adapter_failures_become_one_terminal_finish_chunk() {
    let adapter = ScriptedAdapter::new(
        reasoning_model(),
        vec![
            Script::Fail(LlmError::from_failure(LlmFailure {
                status: Some(500),
                ..LlmFailure::new(codes::SERVER, "down")
            })),
            Script::Items(vec![
                Ok(StreamChunk::TextDelta {
                    index: 0,
                    text: "par".into(),
                }),
                Err(LlmError::new(codes::STREAM_CLOSED, "closed")),
            ]),
        ],
    );
    let (_ctx, runtime) = setup(adapter);
    let chunks = collect(runtime.stream(request(config("p", "m"))).await.unwrap()).await;
    assert_eq!(
        chunks,
        vec![StreamChunk::error(LlmFailure {
            status: Some(500),
            ..LlmFailure::new(codes::SERVER, "down")
        })]
    );
    let chunks = collect(runtime.stream(request(config("p", "m"))).await.unwrap()).await;
    assert_eq!(
        chunks,
        vec![
            StreamChunk::TextDelta {
                index: 0,
                text: "par".into()
            },
            StreamChunk::error(LlmFailure::new(codes::STREAM_CLOSED, "closed")),
        ]
    );
    // Selection failure: no adapter for the route at the boundary.
    let chunks = collect(runtime.stream(request(config("other", "m"))).await.unwrap()).await;
    assert!(matches!(
        &chunks[..],
        [StreamChunk::Finish { reason: FinishReason::Error { failure }, .. }] if failure.code == codes::NO_ADAPTER
    ));
}

#[tokio::test]
async fn cancelled_requests_finish_as_aborted() {
    let adapter = ScriptedAdapter::new(reasoning_model(), vec![Script::Hang]);
    let (_ctx, runtime) = setup(adapter);
    let req = request(config("p", "m"));
    let mut stream = runtime.stream(req.clone()).await.unwrap();
    req.cancel.cancel();
    let chunk = stream.next().await.unwrap().unwrap();
    assert!(matches!(
        chunk,
        StreamChunk::Finish { reason: FinishReason::Aborted { ref failure }, .. } if failure.code == codes::ABORTED
    ));
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn middleware_can_wrap_veto_or_fail() {
    let adapter = ScriptedAdapter::new(
        reasoning_model(),
        vec![Script::Items(text_chunks()), Script::Items(text_chunks())],
    );
    let (ctx, runtime) = setup(adapter.clone());
    // Wrap: upper-case every text delta.
    let wrap = ctx
        .on_waterfall::<LlmStream, _, _>(|_request, next| async move {
            let inner = next.run().await?;
            Ok(inner
                .map(|item| {
                    item.map(|chunk| match chunk {
                        StreamChunk::TextDelta { index, text } => StreamChunk::TextDelta {
                            index,
                            text: text.to_uppercase(),
                        },
                        other => other,
                    })
                })
                .boxed())
        })
        .unwrap();
    let chunks = collect(runtime.stream(request(config("p", "m"))).await.unwrap()).await;
    assert_eq!(
        chunks[0],
        StreamChunk::TextDelta {
            index: 0,
            text: "HI".into()
        }
    );
    wrap.dispose();

    // Veto: answer without calling next; the adapter never sees the request.
    let veto = ctx
        .on_waterfall::<LlmStream, _, _>(|_request, _next| async move {
            Ok(stream::iter([Ok(StreamChunk::finish(FinishReason::Stop))]).boxed())
        })
        .unwrap();
    let chunks = collect(runtime.stream(request(config("p", "m"))).await.unwrap()).await;
    assert_eq!(chunks, vec![StreamChunk::finish(FinishReason::Stop)]);
    assert_eq!(adapter.received().len(), 1);
    veto.dispose();

    // Fail: middleware errors stay errors (not finish chunks), keeping an LlmError's code.
    let fail = ctx
        .on_waterfall::<LlmStream, _, _>(|_request, _next| async move {
            Err::<dsh_llm::ChunkStream, BoxError>(Box::new(LlmError::new("VETOED", "policy")))
        })
        .unwrap();
    let err = runtime
        .stream(request(config("p", "m")))
        .await
        .err()
        .unwrap();
    assert_eq!(err.failure, LlmFailure::new("VETOED", "policy"));
    fail.dispose();
}

#[tokio::test]
async fn boundary_strips_foreign_replay_state_and_images_for_text_models() {
    let adapter = ScriptedAdapter::new(reasoning_model(), vec![Script::Items(text_chunks())]);
    let (ctx, runtime) = setup(adapter.clone());
    let other = ScriptedAdapter::new(reasoning_model(), vec![]);
    let _other = runtime
        .register_adapter(&ctx, ["q"], other, ResolvedRetryPolicy::default())
        .unwrap();
    let replay = |provider: &str| {
        Arc::new(Message::assistant(
            vec![ContentBlock::text("a")],
            MessageSource::Model {
                provider: provider.into(),
                model: "m".into(),
                replay_state: Some(json!({"response":"opaque"})),
            },
        ))
    };
    let image = Arc::new(Message::new(
        Role::User,
        vec![ContentBlock::Image {
            attachment: json!({"sha256":"x"}),
        }],
        MessageSource::user(),
    ));
    let prepared = runtime
        .prepare_call(config("p", "m"), &Default::default())
        .await
        .unwrap();
    let mut req = LlmRequest::new(
        prepared.config().clone(),
        vec![replay("p"), replay("q"), image],
    );
    req.system = Some("sys".into());
    collect(prepared.stream(Arc::new(req)).await.unwrap()).await;
    let seen = adapter.received();
    let messages: Vec<_> = seen[0]
        .messages
        .iter()
        .map(|m| json!({"source": m.source, "content": m.content}))
        .collect();
    assert_eq!(
        json!(messages),
        json!([
            {"source":{"kind":"model","provider":"p","model":"m","replayState":{"response":"opaque"}},
             "content":[{"type":"text","text":"a"}]},
            {"source":{"kind":"model","provider":"q","model":"m"},
             "content":[{"type":"text","text":"a"}]},
            {"source":{"kind":"user"},"content":[{"type":"text","text":IMAGE_PLACEHOLDER}]},
        ])
    );
    assert_eq!(seen[0].system.as_deref(), Some("sys"));
}

#[tokio::test]
async fn registry_rejects_duplicates_replaces_atomically_and_notifies() {
    let ctx = Context::root();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let updates = Arc::new(Mutex::new(Vec::new()));
    let seen = updates.clone();
    ctx.on::<AdaptersUpdated>(move |payload| {
        seen.lock().unwrap().push(payload.routes.clone());
        Ok(())
    })
    .unwrap()
    .forget();
    let owner = ctx.child("adapter-plugin").unwrap();
    let a = ScriptedAdapter::new(ModelInfo::default(), vec![]);
    let first = runtime
        .register_adapter(
            &owner,
            ["a", "b"],
            a.clone(),
            ResolvedRetryPolicy::default(),
        )
        .unwrap();
    let dup = runtime
        .register_adapter(&ctx, ["c", "b"], a.clone(), ResolvedRetryPolicy::default())
        .err()
        .unwrap();
    assert_eq!(dup.code(), DUPLICATE_ROUTE);
    assert_eq!(runtime.routes(), vec!["a", "b"]);

    let second = runtime
        .register_adapter(&ctx, ["c"], a, ResolvedRetryPolicy::default())
        .unwrap();
    // Replacing onto a route someone else owns changes nothing.
    assert_eq!(
        first.replace(["a", "c"]).err().unwrap().code(),
        DUPLICATE_ROUTE
    );
    assert_eq!(first.routes(), vec!["a", "b"]);
    first.replace(["x"]).unwrap();
    assert_eq!(runtime.routes(), vec!["c", "x"]);

    // The owner's fiber unloading removes its registration.
    owner.fiber().dispose();
    assert_eq!(runtime.routes(), vec!["c"]);
    assert_eq!(
        first.replace(["y"]).err().unwrap().code(),
        codes::REGISTRATION_DISPOSED
    );
    second.dispose();
    second.dispose();
    assert!(runtime.routes().is_empty());
    assert_eq!(
        *updates.lock().unwrap(),
        vec![
            vec!["a", "b"],
            vec!["a", "b", "c"],
            vec!["c", "x"],
            vec!["c"],
            Vec::<&str>::new(),
        ]
    );
}

#[tokio::test]
async fn prepared_call_on_a_disposed_registration_finishes_with_an_error() {
    let ctx = Context::root();
    let runtime = LlmRuntime::install(&ctx).unwrap();
    let adapter = ScriptedAdapter::new(reasoning_model(), vec![]);
    let handle = runtime
        .register_adapter(&ctx, ["p"], adapter.clone(), ResolvedRetryPolicy::default())
        .unwrap();
    let prepared = runtime
        .prepare_call(config("p", "m"), &Default::default())
        .await
        .unwrap();
    handle.dispose();
    let chunks = collect(
        prepared
            .stream(request(prepared.config().clone()))
            .await
            .unwrap(),
    )
    .await;
    assert!(matches!(
        &chunks[..],
        [StreamChunk::Finish { reason: FinishReason::Error { failure }, .. }]
            if failure.code == codes::REGISTRATION_DISPOSED
    ));
    assert!(adapter.received().is_empty());
}

#[tokio::test]
async fn cancelled_preparation_is_aborted() {
    let (_ctx, runtime) = setup(ScriptedAdapter::new(reasoning_model(), vec![]));
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    let err = runtime
        .prepare_call(config("p", "m"), &cancel)
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), codes::ABORTED);
}
