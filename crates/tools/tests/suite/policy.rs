//! Hooks around the pipeline: pre-execute decisions, approval, guards, execute wrappers and
//! post-execute decisions.

use super::{setup, TestTool};
use dsh_kernel::ScopeKey;
use dsh_protocol::{CallId, ContentBlock, Message};
use dsh_tools::{
    codes, Approval, ApprovalOutcome, ApprovalRequest, ApprovalService, Execute, GuardDecision,
    PostExecute, PostExecuteDecision, PreExecute, PreExecuteDecision, ToolFailure, ToolInvocation,
};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

fn call(name: &str) -> ToolInvocation {
    ToolInvocation::new(CallId::from("c1"), name, "{}")
}

fn denied(message: &str) -> Value {
    json!({"isError": true,
           "error": {"message": message, "info": {"name": "ToolDeniedError", "code": codes::TOOL_DENIED}},
           "content": [{"type": "text", "text": format!("Error: {message}")}]})
}

/// A tool that counts how often its body ran.
fn counted(name: &str) -> (TestTool, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let tool = TestTool::echo(name).body(move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(json!("ran")) })
    });
    (tool, runs)
}

fn decide(ctx: &dsh_kernel::Context, decision: PreExecuteDecision) {
    ctx.on_waterfall::<PreExecute, _, _>(move |_, _next| {
        let decision = decision.clone();
        async move { Ok(decision) }
    })
    .unwrap()
    .forget();
}

#[tokio::test]
async fn deny_is_an_error_result_that_still_reaches_post_execute() {
    let (ctx, tools) = setup();
    let (tool, runs) = counted("rm");
    tools.register(&ctx, tool.arc()).unwrap().forget();
    decide(
        &ctx,
        PreExecuteDecision::Deny {
            reason: "rm is not allowed here".into(),
        },
    );
    let post_saw: Arc<Mutex<Option<Value>>> = Arc::default();
    let sink = post_saw.clone();
    ctx.on_waterfall::<PostExecute, _, _>(move |args, next| {
        *sink.lock().unwrap() = Some(args.result.to_json());
        next.run()
    })
    .unwrap()
    .forget();
    let result = tools.execute(call("rm")).await;
    assert_eq!(result.to_json(), denied("rm is not allowed here"));
    assert_eq!(
        *post_saw.lock().unwrap(),
        Some(denied("rm is not allowed here"))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn ask_without_an_answerer_fails_closed() {
    let (ctx, tools) = setup();
    let (tool, runs) = counted("bash");
    tools.register(&ctx, tool.arc()).unwrap().forget();
    decide(
        &ctx,
        PreExecuteDecision::Ask {
            reason: Some("escalation".into()),
        },
    );
    let result = tools.execute(call("bash")).await;
    assert_eq!(
        result.to_json(),
        denied("no approval answerer is available")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

type Asked = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// Answers with a fixed outcome and records what it was asked.
struct Scripted {
    outcome: ApprovalOutcome,
    asked: Asked,
}

impl ApprovalService for Scripted {
    fn request(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalOutcome> {
        self.asked
            .lock()
            .unwrap()
            .push((request.exec.name().to_owned(), request.reason.clone()));
        let outcome = self.outcome.clone();
        Box::pin(async move { outcome })
    }
}

#[tokio::test]
async fn ask_goes_to_the_approval_service() {
    let cases = [
        (ApprovalOutcome::AllowedOnce, None),
        (
            ApprovalOutcome::Rejected { reason: None },
            Some("the user rejected this tool call"),
        ),
        (
            ApprovalOutcome::Rejected {
                reason: Some("too risky".into()),
            },
            Some("the user rejected this tool call: too risky"),
        ),
        (
            ApprovalOutcome::Cancelled,
            Some("the approval request was cancelled"),
        ),
        (
            ApprovalOutcome::Unavailable,
            Some("no approval answerer is available"),
        ),
    ];
    for (outcome, denial) in cases {
        let (ctx, tools) = setup();
        let (tool, runs) = counted("bash");
        tools.register(&ctx, tool.arc()).unwrap().forget();
        decide(
            &ctx,
            PreExecuteDecision::Ask {
                reason: Some("writes outside".into()),
            },
        );
        let asked: Asked = Arc::default();
        ctx.provide(Arc::new(Approval::new(Scripted {
            outcome: outcome.clone(),
            asked: asked.clone(),
        })))
        .unwrap()
        .forget();
        let result = tools.execute(call("bash")).await;
        assert_eq!(
            *asked.lock().unwrap(),
            vec![("bash".to_owned(), Some("writes outside".to_owned()))]
        );
        match denial {
            None => {
                assert_eq!(result.value(), Some(&json!("ran")), "{outcome:?}");
                assert_eq!(runs.load(Ordering::SeqCst), 1);
            }
            Some(message) => {
                assert_eq!(result.to_json(), denied(message), "{outcome:?}");
                assert_eq!(runs.load(Ordering::SeqCst), 0);
            }
        }
    }
}

#[tokio::test]
async fn guards_deny_after_policy_and_follow_scopes() {
    let (ctx, tools) = setup();
    let (tool, runs) = counted("edit");
    tools.register(&ctx, tool.arc()).unwrap().forget();
    let parent = ctx.create_scope(ScopeKey::new("parent"), None).unwrap();
    let child = ScopeKey::new("child");
    child.bind_parent(parent.scope().unwrap()).unwrap();
    let order: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let (o1, o2) = (order.clone(), order.clone());
    tools
        .guard(&ctx, move |_| {
            o1.lock().unwrap().push("global");
            GuardDecision::Pass
        })
        .unwrap()
        .forget();
    let scoped = tools
        .guard(&parent, move |exec| {
            o2.lock().unwrap().push("parent");
            GuardDecision::Deny(format!("plan mode forbids {}", exec.name()))
        })
        .unwrap();

    // outside the guarded scope the call runs
    assert!(!tools.execute(call("edit")).await.is_error());
    assert_eq!(*order.lock().unwrap(), vec!["global"]);
    // in a descendant of the guarded scope it is denied, global guard first
    order.lock().unwrap().clear();
    let result = tools.execute(call("edit").scope(child.clone())).await;
    assert_eq!(result.to_json(), denied("plan mode forbids edit"));
    assert_eq!(*order.lock().unwrap(), vec!["global", "parent"]);
    // an explicit allow from pre-execute does not bypass guards
    decide(&ctx, PreExecuteDecision::Allow);
    assert!(tools
        .execute(call("edit").scope(child.clone()))
        .await
        .is_error());
    scoped.dispose();
    assert!(!tools.execute(call("edit").scope(child)).await.is_error());
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn pre_execute_listeners_chain_and_can_veto() {
    let (ctx, tools) = setup();
    let (tool, runs) = counted("t");
    tools.register(&ctx, tool.arc()).unwrap().forget();
    let trace: Arc<Mutex<Vec<String>>> = Arc::default();
    let outer = trace.clone();
    ctx.on_waterfall::<PreExecute, _, _>(move |args, next| {
        let trace = outer.clone();
        async move {
            trace
                .lock()
                .unwrap()
                .push(format!("outer sees {}", args.exec.name()));
            let inner = next.run().await?;
            trace.lock().unwrap().push(format!("inner said {inner:?}"));
            Ok(inner)
        }
    })
    .unwrap()
    .forget();
    let vetoing = ctx
        .on_waterfall::<PreExecute, _, _>(|_, _next| async {
            Ok(PreExecuteDecision::Deny {
                reason: "vetoed".into(),
            })
        })
        .unwrap();
    let result = tools.execute(call("t")).await;
    assert_eq!(result.to_json(), denied("vetoed"));
    vetoing.dispose();
    assert!(!tools.execute(call("t")).await.is_error());
    assert_eq!(
        *trace.lock().unwrap(),
        vec![
            "outer sees t",
            "inner said Deny { reason: \"vetoed\" }",
            "outer sees t",
            "inner said Allow"
        ]
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn hook_failures_become_results() {
    let (ctx, tools) = setup();
    let (tool, runs) = counted("t");
    tools.register(&ctx, tool.arc()).unwrap().forget();
    let broken = ctx
        .on_waterfall::<PreExecute, _, _>(|_, _next| async { Err("policy file unreadable".into()) })
        .unwrap();
    let result = tools.execute(call("t")).await;
    assert_eq!(
        result.to_json(),
        json!({"isError": true,
               "error": {"message": "tools/pre-execute hook failed: policy file unreadable",
                         "info": {"name": "HookError", "code": codes::HOOK_FAILED}},
               "content": [{"type": "text", "text": "Error: tools/pre-execute hook failed: policy file unreadable"}]})
    );
    broken.dispose();
    ctx.on_waterfall::<Execute, _, _>(|_, _next| async { panic!("wrapper bug") })
        .unwrap()
        .forget();
    let result = tools.execute(call("t")).await;
    assert_eq!(
        result.error().unwrap().message,
        "tools/execute hook failed: listener for `tools/execute` panicked: wrapper bug"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn execute_wrappers_can_transform_or_replace_the_body() {
    let (ctx, tools) = setup();
    let (tool, runs) = counted("t");
    tools.register(&ctx, tool.arc()).unwrap().forget();
    let wrap = ctx
        .on_waterfall::<Execute, _, _>(|_, next| async move {
            let inner = next.run().await?;
            Ok(inner.map(|value| json!({"wrapped": value})))
        })
        .unwrap();
    let result = tools.execute(call("t")).await;
    assert_eq!(result.value(), Some(&json!({"wrapped": "ran"})));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    wrap.dispose();
    ctx.on_waterfall::<Execute, _, _>(|args, _next| async move {
        Ok(Err(ToolFailure::new(format!(
            "{} is served from cache",
            args.execution().name()
        ))))
    })
    .unwrap()
    .forget();
    let result = tools.execute(call("t")).await;
    assert_eq!(result.error().unwrap().message, "t is served from cache");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the vetoing wrapper skipped the body"
    );
}

#[tokio::test]
async fn a_wrapper_signal_cancels_the_body_and_the_caller_signal_stays_fused() {
    let (ctx, tools) = setup();
    tools
        .register(
            &ctx,
            TestTool::echo("wait")
                .body(|_, exec| {
                    let signal = exec.signal().clone();
                    Box::pin(async move {
                        signal.cancelled().await;
                        Ok(json!("stopped"))
                    })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    // the wrapper installs an already-cancelled budget signal
    let wrapper = ctx
        .on_waterfall::<Execute, _, _>(|args, next| async move {
            let budget = CancellationToken::new();
            budget.cancel();
            args.replace_signal(budget);
            next.run().await
        })
        .unwrap();
    let caller = CancellationToken::new();
    let result = tools.execute(call("wait").signal(caller.clone())).await;
    assert_eq!(result.error_info().unwrap().code, codes::ABORTED);
    assert!(!caller.is_cancelled());
    wrapper.dispose();
    // a wrapper that swaps in a fresh signal cannot shield the body from the caller
    ctx.on_waterfall::<Execute, _, _>(|args, next| async move {
        args.replace_signal(CancellationToken::new());
        next.run().await
    })
    .unwrap()
    .forget();
    let caller = CancellationToken::new();
    let run = tools.execute(call("wait").signal(caller.clone()));
    let cancel = async {
        tokio::task::yield_now().await;
        caller.cancel();
    };
    let (result, ()) = tokio::join!(run, cancel);
    assert_eq!(result.error_info().unwrap().code, codes::ABORTED);
}

#[tokio::test]
async fn post_execute_accept_can_replace_value_content_and_add_contexts() {
    let (ctx, tools) = setup();
    let deferred = Message::user_text("from the tool");
    let hook_context = Message::user_text("from the hook");
    let note = deferred.clone();
    tools
        .register(
            &ctx,
            TestTool::echo("t")
                .body(move |_, exec| {
                    exec.defer_context(note.clone());
                    Box::pin(async { Ok(json!("raw")) })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    let extra = hook_context.clone();
    let hook = ctx
        .on_waterfall::<PostExecute, _, _>(move |args, _next| {
            let extra = extra.clone();
            let before = args.result.value().cloned();
            async move {
                Ok(PostExecuteDecision::Accept {
                    content: None,
                    value: Some(json!({"spilled": before})),
                    additional_contexts: vec![extra],
                })
            }
        })
        .unwrap();
    let result = tools.execute(call("t")).await;
    assert_eq!(
        result.to_json(),
        json!({"isError": false, "value": {"spilled": "raw"},
               "content": [{"type": "text", "text": "{\"spilled\":\"raw\"}"}],
               "additionalContexts": [deferred, hook_context]})
    );
    hook.dispose();
    ctx.on_waterfall::<PostExecute, _, _>(|_, _next| async {
        Ok(PostExecuteDecision::Accept {
            content: Some(vec![ContentBlock::text("summarised")]),
            value: None,
            additional_contexts: vec![],
        })
    })
    .unwrap()
    .forget();
    let result = tools.execute(call("t")).await;
    assert_eq!(result.content, vec![ContentBlock::text("summarised")]);
    assert_eq!(result.value(), Some(&json!("raw")));
}

#[tokio::test]
async fn post_execute_block_replaces_the_result_and_drops_deferred_contexts() {
    let (ctx, tools) = setup();
    let hook_context = Message::user_text("hook says: rerun the tests");
    tools
        .register(
            &ctx,
            TestTool::echo("t")
                .body(|_, exec| {
                    exec.defer_context(Message::user_text("tool note"));
                    exec.conclude_turn();
                    Box::pin(async { Ok(json!("ok")) })
                })
                .arc(),
        )
        .unwrap()
        .forget();
    let extra = hook_context.clone();
    ctx.on_waterfall::<PostExecute, _, _>(move |_, _next| {
        let extra = extra.clone();
        async move {
            Ok(PostExecuteDecision::Block {
                feedback: "lint failed".into(),
                additional_contexts: vec![extra],
            })
        }
    })
    .unwrap()
    .forget();
    let result = tools.execute(call("t")).await;
    assert_eq!(
        result.to_json(),
        json!({"isError": true,
               "error": {"message": "lint failed", "info": {"name": "ToolBlockedError", "code": codes::TOOL_BLOCKED}},
               "content": [{"type": "text", "text": "Error: lint failed"}],
               "additionalContexts": [hook_context]})
    );
    assert!(!result.concludes_turn);
}

#[tokio::test]
async fn scoped_hooks_only_see_their_scope() {
    let (ctx, tools) = setup();
    let (tool, _runs) = counted("t");
    tools.register(&ctx, tool.arc()).unwrap().forget();
    let agent = ctx.create_scope(ScopeKey::new("agent"), None).unwrap();
    agent
        .on_waterfall::<PreExecute, _, _>(|_, _next| async {
            Ok(PreExecuteDecision::Deny {
                reason: "agent policy".into(),
            })
        })
        .unwrap()
        .forget();
    assert!(!tools.execute(call("t")).await.is_error());
    let scoped = call("t").scope(agent.scope().unwrap().clone());
    assert_eq!(
        tools.execute(scoped).await.to_json(),
        denied("agent policy")
    );
    let key = agent.scope().unwrap().clone();
    agent.fiber().dispose();
    assert!(!tools.execute(call("t").scope(key)).await.is_error());
}

/// Never answers.
struct Silent;

impl ApprovalService for Silent {
    fn request(&self, _request: ApprovalRequest) -> BoxFuture<'_, ApprovalOutcome> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn cancelling_while_waiting_for_approval_never_dispatches() {
    let (ctx, tools) = setup();
    let (tool, runs) = counted("bash");
    tools.register(&ctx, tool.arc()).unwrap().forget();
    decide(&ctx, PreExecuteDecision::Ask { reason: None });
    ctx.provide(Arc::new(Approval::new(Silent)))
        .unwrap()
        .forget();
    let caller = CancellationToken::new();
    let run = tools.execute(call("bash").signal(caller.clone()));
    let cancel = async {
        tokio::task::yield_now().await;
        caller.cancel();
    };
    let (result, ()) = tokio::join!(run, cancel);
    assert_eq!(
        result.error_info().unwrap().code,
        codes::ABORTED_BEFORE_DISPATCH
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
