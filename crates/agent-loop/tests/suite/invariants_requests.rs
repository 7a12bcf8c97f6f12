//! Spec §12 invariants about what each model request carries (2, 3, 16, 17): the request
//! equals what the log makes model-visible, headers are logged when the request context
//! changes, retries happen only when a listener opts in, and `max_tokens` stays raised for
//! the rest of a turn. Every test ends with `Harness::finish`, which runs the log invariant
//! checkers and the request reconstruction check.

use dsh_agent::{
    Agent, AgentCancelCause, AgentRequest, CancelOptions, RequestError, RequestErrorAction,
    ResumeAgentOptions, TurnStopping,
};
use dsh_testkit::expect::*;
use dsh_testkit::harness::{agent_options, msg, msg_json, run_followup, Harness, TestTool};
use dsh_testkit::scripted::{
    error_finish, max_tokens_response, text_response, text_script, tool_call_response,
};
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[tokio::test]
async fn inv02_model_visible_equals_logged() {
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script([
            tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]).into(),
            error_finish("SERVER").into(),
            text_response("done").into(),
            text_response("again").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    agent
        .ctx()
        .on_waterfall::<RequestError, _, _>(|_, _| async { Ok(Some(RequestErrorAction::Retry)) })
        .unwrap()
        .forget();
    run_followup(&agent, "a").await;
    run_followup(&agent, "b").await;

    // Every request was checked against the log at dispatch time...
    assert_eq!(h.recon().checked(), 4);
    assert_eq!(h.recon().violations(), []);
    // ...and what the model saw is exactly the derived history of the log.
    let requests = h.adapter().requests();
    let tool_result = json!({"id": "<id-2>", "role": "user", "content": [{"type": "tool-result",
        "toolCallId": "c1", "content": [{"type": "text", "text": "x"}], "isError": false}],
        "source": {"kind": "tool", "callId": "c1"}});
    let model = json!({"kind": "model", "provider": "scripted", "model": "scripted-model"});
    let call = json!({"id": "<id-1>", "role": "assistant",
        "content": [call_block("c1", "echo", r#"{"text":"x"}"#)], "source": model});
    let expected = |messages: serde_json::Value| {
        json!({"config": config(), "messages": messages, "system": SYSTEM,
            "tools": [TestTool::Echo.schema_json()], "sessionId": "agent-1"})
    };
    let mut normalizer = dsh_testkit::normalize::Normalizer::new();
    let rendered: Vec<_> = requests.iter().map(|r| normalizer.request(r)).collect();
    assert_eq!(rendered[0], expected(json!([msg_json("a")])));
    // The retry re-derives the same history; the failed attempt left nothing visible.
    assert_eq!(
        rendered[1],
        expected(json!([msg_json("a"), call, tool_result]))
    );
    assert_eq!(rendered[2], rendered[1]);
    let done =
        json!({"id": "<id-3>", "role": "assistant", "content": text("done"), "source": model});
    assert_eq!(
        rendered[3],
        expected(json!([
            msg_json("a"),
            call,
            tool_result,
            done,
            msg_json("b")
        ]))
    );
    h.finish().await;
}

#[tokio::test]
async fn inv03_header_logging() {
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script(text_script(&["1", "2", "3", "4", "5", "6"]))
        .build();
    let store = h.mount_memory_source();
    let handle = h.create_agent().await;
    let agent = handle.agent().clone();
    let hot = Arc::new(AtomicBool::new(false));
    let flag = hot.clone();
    agent
        .ctx()
        .on_waterfall::<AgentRequest, _, _>(move |_, next| {
            let hot = flag.load(Ordering::SeqCst);
            async move {
                let mut config = next.run().await?;
                if hot {
                    config.temperature = Some(0.5);
                }
                Ok(config)
            }
        })
        .unwrap()
        .forget();
    run_followup(&agent, "initial").await;
    run_followup(&agent, "unchanged").await;
    hot.store(true, Ordering::SeqCst);
    run_followup(&agent, "temperature").await;
    run_followup(&agent, "still hot").await;
    h.tools()
        .register(agent.ctx(), TestTool::Read.build(h.probe()))
        .unwrap()
        .forget();
    run_followup(&agent, "new tool").await;
    // A new loop instance (resume) logs its first header as `resume`.
    store.save(agent.id(), agent.session().events().to_vec());
    handle.dispose().await;
    let mut options = ResumeAgentOptions::new(agent.id().clone());
    options.agent_options = agent_options();
    let resumed = h.resume_agent(options).await.unwrap().agent().clone();
    run_followup(&resumed, "resumed").await;

    let hot_config = json!({"provider": "scripted", "model": "scripted-model", "temperature": 0.5});
    let expected: Vec<_> = [
        header("initial", &[TestTool::Echo]),
        header_with("change", hot_config.clone(), &[TestTool::Echo]),
        header_with("change", hot_config, &[TestTool::Echo, TestTool::Read]),
        header("resume", &[TestTool::Echo]),
    ]
    .concat();
    let logged: Vec<_> = of_types(
        &dsh_testkit::normalize::log_json(&resumed.session().events()),
        &["request/header"],
    )
    .into_iter()
    .map(|mut e| {
        e.as_object_mut().unwrap().remove("seq");
        e
    })
    .collect();
    assert_eq!(logged, expected);
    // Six requests, four headers: the turns "unchanged" and "still hot" logged none.
    assert_eq!(h.adapter().calls(), 6);
    h.finish().await;
}

#[tokio::test]
async fn inv16_retry_is_opt_in() {
    let h = Harness::builder()
        .script([
            error_finish("SERVER").into(),
            error_finish("SERVER").into(),
            text_response("ok").into(),
            error_finish("SERVER").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    let live = h.record();

    // No listener: terminal.
    run_followup(&agent, "a").await;
    assert_eq!(h.adapter().calls(), 1);

    // A retrying listener: exactly one new request per retry, in the same step.
    let offers: Arc<Mutex<Vec<u64>>> = Arc::default();
    let seen = offers.clone();
    agent
        .ctx()
        .on_waterfall::<RequestError, _, _>(move |args, _next| {
            seen.lock().unwrap().push(args.turn);
            if args.turn == 3 {
                // Cancellation during the listener beats its retry.
                args.agent
                    .cancel(AgentCancelCause::User, CancelOptions::default())
                    .unwrap();
            }
            async { Ok(Some(RequestErrorAction::Retry)) }
        })
        .unwrap()
        .forget();
    run_followup(&agent, "b").await;
    assert_eq!(h.adapter().calls(), 3);
    run_followup(&agent, "c").await;
    assert_eq!(h.adapter().calls(), 4);

    // Middleware failures are never offered.
    agent
        .ctx()
        .on_waterfall::<AgentRequest, _, _>(|args, next| {
            let fail = args.turn == 4;
            async move {
                if fail {
                    return Err("boom".into());
                }
                next.run().await
            }
        })
        .unwrap()
        .forget();
    run_followup(&agent, "d").await;
    assert_eq!(h.adapter().calls(), 4);
    assert_eq!(*offers.lock().unwrap(), [2, 3]);

    let failed = |turn, step| chunks(turn, step, &error_finish("SERVER"));
    let server = error("SERVER", "scripted failure (SERVER)");
    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(1, 1),
            user("a"),
            header("initial", &[]),
            context(),
        ],
        vec![failed(1, 1), step_end(1, 1), turn_end(1, server)],
        vec![
            insert("next-turn", 0, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(2, 1), user("b"), failed(2, 1)],
        answer(2, 1, 1, "ok", 16),
        vec![step_end(2, 1), turn_end(2, completed())],
        vec![
            insert("next-turn", 0, &["c"]),
            turn_start(3),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(3, 1), user("c"), failed(3, 1), step_end(3, 1)],
        vec![turn_end(3, aborted("user"))],
        vec![
            insert("next-turn", 0, &["d"]),
            turn_start(4),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(4, 1), user("d"), step_end(4, 1)],
        vec![turn_end(4, error("UNKNOWN", "boom"))],
    ]));
    assert_log(&h.log_json(), &expected);
    assert_eq!(
        live.only(&["agent/error"]),
        ["agent/error SERVER", "agent/error UNKNOWN"]
    );
    h.finish().await;
}

/// Steers once per turn from `agent/turn-stopping`, the first time the turn would close.
fn steer_once_per_turn(agent: &Arc<dyn Agent>) {
    let steered: Arc<Mutex<HashSet<u64>>> = Arc::default();
    agent
        .ctx()
        .on_serial::<TurnStopping, _, _>(move |args| {
            if steered.lock().unwrap().insert(args.turn) {
                args.agent
                    .steer(msg(&format!("continue {}", args.turn)))
                    .unwrap();
            }
            async { Ok(None) }
        })
        .unwrap()
        .forget();
}

#[tokio::test]
async fn inv17_max_tokens_is_sticky_within_a_turn() {
    let capped = max_tokens_response("cut", &[("c0", "echo", r#"{"text":"dropped"}"#)]);
    let call = tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]);
    let capped_again = max_tokens_response("cut again", &[]);
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script([
            capped.clone().into(),
            call.clone().into(),
            capped_again.clone().into(),
            text_response("fine").into(),
            text_response("fresh").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    steer_once_per_turn(&agent);
    // Turn 1: capped (tool call dropped), steered, then a tool step: still max-tokens, and
    // the turn closes right after the tool step.
    run_followup(&agent, "a").await;
    // Turn 2: capped, steered, then a normal completion: still max-tokens.
    run_followup(&agent, "b").await;
    // Turn 3 starts fresh. (Turn-stopping steers it too; the steer gets its own step.)
    h.adapter().push(text_response("more"));
    run_followup(&agent, "c").await;
    // Only the uncapped call ran a tool.
    assert_eq!(h.probe().journal(), ["start c1", "end c1"]);

    let tools = [TestTool::Echo];
    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(1, 1),
            user("a"),
            header("initial", &tools),
            context(),
        ],
        vec![
            chunks(1, 1, &capped),
            assistant(1, 1, 1, text("cut"), true, 7..15),
        ],
        vec![step_end(1, 1), insert("next-step", 0, &["continue 1"])],
        vec![
            claim("next-step", 0, 1),
            step_start(1, 2),
            user("continue 1"),
        ],
        vec![chunks(1, 2, &call)],
        vec![assistant(
            1,
            2,
            2,
            json!([call_block("c1", "echo", r#"{"text":"x"}"#)]),
            true,
            21..26,
        )],
        vec![
            tool_call(1, 2, "c1", "echo", r#"{"text":"x"}"#),
            tool_ok(1, 2, 3, "c1", "x", 27),
        ],
        vec![step_end(1, 2), turn_end(1, max_tokens())],
        vec![
            insert("next-turn", 0, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(2, 1), user("b")],
        vec![
            chunks(2, 1, &capped_again),
            assistant(2, 1, 4, text("cut again"), true, 36..41),
        ],
        vec![step_end(2, 1), insert("next-step", 0, &["continue 2"])],
        vec![
            claim("next-step", 0, 1),
            step_start(2, 2),
            user("continue 2"),
        ],
        answer(2, 2, 5, "fine", 47),
        vec![step_end(2, 2), turn_end(2, max_tokens())],
        vec![
            insert("next-turn", 0, &["c"]),
            turn_start(3),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(3, 1), user("c")],
        answer(3, 1, 6, "fresh", 60),
        vec![step_end(3, 1), insert("next-step", 0, &["continue 3"])],
        vec![
            claim("next-step", 0, 1),
            step_start(3, 2),
            user("continue 3"),
        ],
        answer(3, 2, 7, "more", 71),
        vec![step_end(3, 2), turn_end(3, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    h.finish().await;
}
