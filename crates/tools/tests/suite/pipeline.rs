//! The per-call pipeline: arguments, outcomes, cancellation, timeouts and the result shape.

use super::{setup, TestTool};
use dsh_kernel::ScopeKey;
use dsh_protocol::{CallId, ContentBlock, Message};
use dsh_tools::{
    codes, Extensions, InvocationResult, Prepared, ToolExecution, ToolFailure, ToolInvocation,
    ToolResultEvent, Typed, TypedTool,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn call(name: &str, args: &str) -> ToolInvocation {
    ToolInvocation::new(CallId::from("call-1"), name, args)
}

fn error_json(message: &str, name: &str, code: &str) -> Value {
    json!({"isError": true,
           "error": {"message": message, "info": {"name": name, "code": code}},
           "content": [{"type": "text", "text": format!("Error: {message}")}]})
}

fn path_params() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}},
           "required": ["path"]})
}

#[tokio::test]
async fn success_renders_content_and_builds_the_message() {
    let (ctx, tools) = setup();
    tools
        .register(&ctx, TestTool::echo("echo").arc())
        .unwrap()
        .forget();
    let result = tools.execute(call("echo", r#"{"a": [1, 2]}"#)).await;
    assert_eq!(
        result.to_json(),
        json!({"isError": false, "value": {"a": [1, 2]},
               "content": [{"type": "text", "text": "{\"a\":[1,2]}"}]})
    );
    assert_eq!(result.call_id, CallId::from("call-1"));
    assert_eq!(result.name, "echo");
    let message = result.to_message();
    assert_eq!(
        serde_json::to_value(&message.content).unwrap(),
        json!([{"type": "tool-result", "toolCallId": "call-1",
                "content": [{"type": "text", "text": "{\"a\":[1,2]}"}], "isError": false}])
    );
}

#[tokio::test]
async fn empty_argument_text_is_an_empty_object() {
    let (ctx, tools) = setup();
    tools
        .register(&ctx, TestTool::echo("echo").arc())
        .unwrap()
        .forget();
    let result = tools.execute(call("echo", "")).await;
    assert_eq!(result.value(), Some(&json!({})));
}

#[tokio::test]
async fn invalid_arguments_tell_the_model_what_was_wrong() {
    let (ctx, tools) = setup();
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    tools
        .register(
            &ctx,
            TestTool::echo("read")
                .parameters(path_params())
                .body(move |args, _| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    Box::pin(async move { Ok(args) })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    let cases = [
        ("{\"path\":", "the arguments must be a JSON object, got the string \"{\\\"path\\\":\" (the argument text is not valid JSON: EOF while parsing a value at line 1 column 8)"),
        ("[1]", "the arguments must be a JSON object, got an array"),
        ("\"x\"", "the arguments must be a JSON object, got the string \"x\""),
        ("{}", "missing required property \"path\""),
        (r#"{"path": "p", "n": "3"}"#, "property \"n\" must be an integer, got the string \"3\""),
        (r#"{"path": "p", "n": -0.0}"#, "value at /n is not lossless JSON: negative zero"),
    ];
    for (raw, problem) in cases {
        let result = tools.execute(call("read", raw)).await;
        let message = format!("Invalid arguments for tool \"read\": {problem}");
        assert_eq!(
            result.to_json(),
            error_json(
                &message,
                "InvalidToolArgumentsError",
                codes::INVALID_TOOL_ARGUMENTS
            ),
            "{raw}"
        );
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[derive(Deserialize)]
struct CountArgs {
    word: String,
    times: u8,
}

#[derive(Serialize)]
struct CountOutput {
    text: String,
}

struct Repeat;

impl TypedTool for Repeat {
    type Args = CountArgs;
    type Output = CountOutput;
    fn name(&self) -> &str {
        "repeat"
    }
    fn description(&self) -> String {
        "repeats a word".into()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"word": {"type": "string"}, "times": {"type": "integer"}},
               "required": ["word", "times"]})
    }
    fn is_concurrency_safe(&self, args: &Value) -> bool {
        args["times"].as_u64().is_some_and(|times| times < 3)
    }
    async fn execute(
        &self,
        args: CountArgs,
        _exec: &ToolExecution,
    ) -> Result<CountOutput, ToolFailure> {
        Ok(CountOutput {
            text: args.word.repeat(args.times.into()),
        })
    }
    fn render(&self, args: &Value, value: &Value) -> Vec<ContentBlock> {
        vec![ContentBlock::text(format!(
            "{} x{}: {}",
            args["word"].as_str().unwrap_or_default(),
            args["times"],
            value["text"].as_str().unwrap_or_default()
        ))]
    }
    fn presentation_meta(&self, args: &Value, _value: &Value) -> Option<Value> {
        Some(json!({"times": args["times"]}))
    }
}

#[tokio::test]
async fn typed_tools_deserialize_render_and_check_arguments() {
    let (ctx, tools) = setup();
    tools.register(&ctx, Typed::arc(Repeat)).unwrap().forget();
    let result = tools
        .execute(call("repeat", r#"{"word": "ab", "times": 2}"#))
        .await;
    assert_eq!(
        result.to_json(),
        json!({"isError": false, "value": {"text": "abab"},
               "content": [{"type": "text", "text": "ab x2: abab"}], "meta": {"times": 2}})
    );
    // the schema says integer; serde says u8: the serde message reaches the model
    let result = tools
        .execute(call("repeat", r#"{"word": "ab", "times": 300}"#))
        .await;
    assert_eq!(
        result.error_info().unwrap().code,
        codes::INVALID_TOOL_ARGUMENTS
    );
    assert!(
        result
            .error()
            .unwrap()
            .message
            .contains("invalid value: integer `300`"),
        "{:?}",
        result.error()
    );
    let mode = |args: &str| tools.execution_mode(&call("repeat", args));
    assert_eq!(
        mode(r#"{"word": "a", "times": 1}"#),
        dsh_tools::ExecutionMode::Parallel
    );
    assert_eq!(
        mode(r#"{"word": "a", "times": 5}"#),
        dsh_tools::ExecutionMode::Exclusive
    );
}

#[tokio::test]
async fn unknown_tool_is_a_result() {
    let (_ctx, tools) = setup();
    let result = tools.execute(call("nope", "not even json")).await;
    assert_eq!(
        result.to_json(),
        error_json(
            "unknown tool \"nope\"",
            "ToolNotFoundError",
            codes::UNKNOWN_TOOL
        )
    );
}

#[tokio::test]
async fn tools_hidden_from_the_scope_are_unknown() {
    let (ctx, tools) = setup();
    let scope = ctx.create_scope(ScopeKey::new("s"), None).unwrap();
    tools
        .register(&scope, TestTool::echo("mine").arc())
        .unwrap()
        .forget();
    let result = tools.execute(call("mine", "{}")).await;
    assert_eq!(result.error_info().unwrap().code, codes::UNKNOWN_TOOL);
    let result = tools
        .execute(call("mine", "{}").scope(scope.scope().unwrap().clone()))
        .await;
    assert!(!result.is_error());
}

#[tokio::test]
async fn body_errors_keep_their_code() {
    let (ctx, tools) = setup();
    tools
        .register(
            &ctx,
            TestTool::echo("coded")
                .body(|_, _| {
                    Box::pin(async {
                        Err(ToolFailure::coded(
                            "FileNotFound",
                            "ENOENT",
                            "no such file: a.txt",
                        ))
                    })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    tools
        .register(
            &ctx,
            TestTool::echo("plain")
                .body(|_, _| Box::pin(async { Err(ToolFailure::new("it broke")) }))
                .arc(),
        )
        .unwrap()
        .forget();
    let result = tools.execute(call("coded", "{}")).await;
    assert_eq!(
        result.to_json(),
        error_json("no such file: a.txt", "FileNotFound", "ENOENT")
    );
    let result = tools.execute(call("plain", "{}")).await;
    assert_eq!(
        result.to_json(),
        json!({"isError": true, "error": {"message": "it broke"},
               "content": [{"type": "text", "text": "Error: it broke"}]})
    );
    assert_eq!(result.error_info(), None);
}

#[tokio::test]
async fn panicking_bodies_and_invalid_output_are_results() {
    let (ctx, tools) = setup();
    tools
        .register(
            &ctx,
            TestTool::echo("panics")
                .body(|_, _| Box::pin(async { panic!("bug in tool") }))
                .arc(),
        )
        .unwrap()
        .forget();
    tools
        .register(
            &ctx,
            TestTool::echo("negzero")
                .body(|_, _| Box::pin(async { Ok(json!({"x": -0.0})) }))
                .arc(),
        )
        .unwrap()
        .forget();
    let result = tools.execute(call("panics", "{}")).await;
    assert_eq!(
        result.to_json(),
        error_json(
            "tool panicked: bug in tool",
            "PanicError",
            codes::TOOL_PANICKED
        )
    );
    let result = tools.execute(call("negzero", "{}")).await;
    assert_eq!(
        result.to_json(),
        error_json(
            "the tool returned an invalid value: value at /x is not lossless JSON: negative zero",
            "InvalidToolOutputError",
            codes::INVALID_TOOL_OUTPUT
        )
    );
}

#[tokio::test(start_paused = true)]
async fn timeouts_cancel_the_body_and_report_tool_timeout() {
    let (ctx, tools) = setup();
    let signal_seen: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
    let slot = signal_seen.clone();
    tools
        .register(
            &ctx,
            TestTool::echo("slow")
                .timeout(Duration::from_millis(1500))
                .body(move |_, exec| {
                    *slot.lock().unwrap() = Some(exec.signal().clone());
                    Box::pin(async {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        Ok(json!("late"))
                    })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    let caller = CancellationToken::new();
    let result = tools
        .execute(call("slow", "{}").signal(caller.clone()))
        .await;
    assert_eq!(
        result.to_json(),
        error_json(
            "tool \"slow\" timed out after 1500ms",
            "ToolTimeoutError",
            codes::TOOL_TIMEOUT
        )
    );
    assert!(signal_seen.lock().unwrap().as_ref().unwrap().is_cancelled());
    assert!(!caller.is_cancelled());
}

/// A tool that waits for its signal and then reports success anyway.
fn patient() -> TestTool {
    TestTool::echo("patient").body(|_, exec| {
        let signal = exec.signal().clone();
        Box::pin(async move {
            signal.cancelled().await;
            Ok(json!("finished anyway"))
        })
    })
}

#[tokio::test]
async fn cancellation_during_the_body_turns_success_into_aborted() {
    let (ctx, tools) = setup();
    tools.register(&ctx, patient().arc()).unwrap().forget();
    let caller = CancellationToken::new();
    let prepared = tools
        .prepare(call("patient", "{}").signal(caller.clone()))
        .await;
    let Prepared::Ready(ready) = prepared else {
        panic!("not ready")
    };
    let dispatch = tools.dispatch(ready);
    let cancel = async {
        tokio::task::yield_now().await;
        caller.cancel();
    };
    let (done, ()) = tokio::join!(dispatch, cancel);
    let result = tools.finalize(done).await;
    assert_eq!(
        result.to_json(),
        error_json("tool call aborted", "AbortError", codes::ABORTED)
    );
}

#[tokio::test(start_paused = true)]
async fn bodies_ignoring_cancellation_are_abandoned() {
    let (ctx, tools) = setup();
    tools
        .register(
            &ctx,
            TestTool::echo("stubborn")
                .body(|_, _| Box::pin(std::future::pending()))
                .arc(),
        )
        .unwrap()
        .forget();
    let caller = CancellationToken::new();
    let Prepared::Ready(ready) = tools
        .prepare(call("stubborn", "{}").signal(caller.clone()))
        .await
    else {
        panic!("not ready")
    };
    let cancel = async {
        tokio::task::yield_now().await;
        caller.cancel();
    };
    let (done, ()) = tokio::join!(tools.dispatch(ready), cancel);
    assert_eq!(done.result().error_info().unwrap().code, codes::ABORTED);
}

#[tokio::test]
async fn an_already_cancelled_caller_never_dispatches() {
    let (ctx, tools) = setup();
    let post_runs = Arc::new(AtomicUsize::new(0));
    let counter = post_runs.clone();
    ctx.on_waterfall::<dsh_tools::PostExecute, _, _>(move |_, next| {
        counter.fetch_add(1, Ordering::SeqCst);
        next.run()
    })
    .unwrap()
    .forget();
    tools.register(&ctx, patient().arc()).unwrap().forget();
    let caller = CancellationToken::new();
    caller.cancel();
    let result = tools.execute(call("patient", "{}").signal(caller)).await;
    assert_eq!(
        result.to_json(),
        error_json(
            "tool call aborted before dispatch",
            "AbortError",
            codes::ABORTED_BEFORE_DISPATCH
        )
    );
    assert_eq!(
        post_runs.load(Ordering::SeqCst),
        0,
        "final outcomes skip post-execute"
    );
    assert_eq!(
        InvocationResult::aborted_before_dispatch(CallId::from("call-1"), "patient"),
        result
    );
}

#[tokio::test]
async fn deferred_contexts_and_concluding_the_turn() {
    let (ctx, tools) = setup();
    let note = Message::user_text("remember this");
    let deferred = note.clone();
    tools
        .register(
            &ctx,
            TestTool::echo("finish")
                .body(move |_, exec| {
                    exec.defer_context(deferred.clone());
                    exec.conclude_turn();
                    Box::pin(async { Ok(json!("done")) })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    let result = tools.execute(call("finish", "{}")).await;
    assert_eq!(result.additional_contexts, vec![note]);
    assert!(result.concludes_turn);
    assert_eq!(result.content, vec![ContentBlock::text("done")]);
}

#[tokio::test]
async fn failures_never_conclude_the_turn() {
    let (ctx, tools) = setup();
    tools
        .register(
            &ctx,
            TestTool::echo("half")
                .body(|_, exec| {
                    exec.conclude_turn();
                    Box::pin(async { Err(ToolFailure::new("nope")) })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    let result = tools.execute(call("half", "{}")).await;
    assert!(result.is_error());
    assert!(!result.concludes_turn);
}

#[tokio::test]
async fn executions_carry_scope_caller_parent_and_extensions() {
    #[derive(Debug, PartialEq)]
    struct Cwd(String);

    let (ctx, tools) = setup();
    let agent = super::agent(&ctx, "agent-1");
    let seen = Arc::new(AtomicBool::new(false));
    let flag = seen.clone();
    tools
        .register(
            &ctx,
            TestTool::echo("inspect")
                .body(move |_, exec| {
                    assert_eq!(exec.extensions().get::<Cwd>(), Some(&Cwd("/w".into())));
                    let caller = exec.caller().expect("the call carries its agent");
                    assert_eq!(caller.id().as_str(), "agent-1");
                    assert_eq!(
                        exec.scope().map(|s| s.name().to_owned()),
                        Some("agent".into())
                    );
                    assert_eq!(exec.root_call_id().as_str(), "outer");
                    assert_eq!(exec.raw_arguments(), "");
                    assert_eq!(exec.arguments(), &json!({}));
                    flag.store(true, Ordering::SeqCst);
                    Box::pin(async { Ok(Value::Null) })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    let Prepared::Ready(outer) = tools
        .prepare(ToolInvocation::new(CallId::from("outer"), "nope", "{}"))
        .await
    else {
        // unknown tools still pass policy; they fail at dispatch
        panic!("unknown tools are dispatched")
    };
    let call = ToolInvocation::new(CallId::from("inner"), "inspect", "")
        .scope(ScopeKey::new("agent"))
        .caller(agent)
        .parent(outer.execution().clone())
        .extensions(Extensions::new().with(Cwd("/w".into())));
    let result = tools.execute(call).await;
    assert!(!result.is_error(), "{result:?}");
    assert!(seen.load(Ordering::SeqCst));
}

#[tokio::test]
async fn results_are_announced_to_listeners_of_the_calling_scope() {
    let (ctx, tools) = setup();
    tools
        .register(&ctx, TestTool::echo("echo").arc())
        .unwrap()
        .forget();
    let parent = ScopeKey::new("parent");
    let agent = ScopeKey::new("agent");
    agent.bind_parent(&parent).unwrap();
    let other = ScopeKey::new("other");

    let heard: Arc<Mutex<Vec<String>>> = Arc::default();
    for (label, scope) in [
        ("parent", Some(&parent)),
        ("other", Some(&other)),
        ("unscoped", None),
    ] {
        let sink = heard.clone();
        let listen_ctx = match scope {
            Some(key) => ctx.with_scope(key.clone()),
            None => ctx.clone(),
        };
        listen_ctx
            .on::<ToolResultEvent>(move |notice| {
                sink.lock().unwrap().push(format!(
                    "{label}:{}:{}",
                    notice.exec.call_id(),
                    notice.result.is_error()
                ));
                Ok(())
            })
            .unwrap()
            .forget();
    }
    // a failing observer never affects the call or the other observers
    ctx.on::<ToolResultEvent>(|_| Err("observer broke".into()))
        .unwrap()
        .forget();

    let result = tools.execute(call("echo", "{}").scope(agent.clone())).await;
    assert!(!result.is_error());
    assert_eq!(
        *heard.lock().unwrap(),
        vec!["parent:call-1:false", "unscoped:call-1:false"]
    );
}

#[test]
fn pipeline_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let (_ctx, tools) = setup();
    let prepare = tools.prepare(call("x", "{}"));
    assert_send(&prepare);
    let execute = tools.execute(call("x", "{}"));
    assert_send(&execute);
    let runtime = tools.clone();
    let spawned = async move {
        if let Prepared::Ready(ready) = runtime.prepare(call("x", "{}")).await {
            let done = runtime.dispatch(ready).await;
            runtime.finalize(done).await;
        }
    };
    assert_send(&spawned);
}

#[tokio::test]
async fn tools_panicking_before_their_future_starts_are_contained() {
    struct Eager;
    impl dsh_tools::Tool for Eager {
        fn name(&self) -> &str {
            "eager"
        }
        fn description(&self) -> String {
            String::new()
        }
        fn parameters(&self) -> Value {
            json!({"type": "object"})
        }
        fn execute<'a>(
            &'a self,
            _args: Value,
            _exec: &'a ToolExecution,
        ) -> futures_util::future::BoxFuture<'a, Result<Value, ToolFailure>> {
            panic!("eager panic")
        }
    }
    let (ctx, tools) = setup();
    tools.register(&ctx, Arc::new(Eager)).unwrap().forget();
    let result = tools.execute(call("eager", "{}")).await;
    assert_eq!(
        result.to_json(),
        error_json(
            "tool panicked: eager panic",
            "PanicError",
            codes::TOOL_PANICKED
        )
    );
}
