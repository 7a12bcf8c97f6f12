//! Spec §12 invariants about turns, steps, requests and the inbox claim (2, 3, 6, 7, 8,
//! 16, 17, 18, 19). Every test ends with `Harness::finish`, which runs the log invariant
//! checkers and the request reconstruction check.

use super::expect::*;
use super::support::{of_types, run, MemorySource};
use dsh_agent::{
    Agent, AgentCancelCause, AgentRequest, CancelOptions, PreStep, PreStepDecision, RequestError,
    RequestErrorAction, ResumeAgentOptions, ResumeSource, TurnStopping,
};
use dsh_session::InboxTarget;
use dsh_testkit::harness::{agent_options, msg, msg_json, Harness, TestTool};
use dsh_testkit::scripted::{
    error_finish, max_tokens_response, text_response, tool_call_response, ScriptEntry,
};
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

fn texts(answers: &[&str]) -> Vec<ScriptEntry> {
    answers.iter().map(|a| text_response(a).into()).collect()
}

/// The five events of a scripted text answer plus its anchored assistant message.
fn answer(turn: u64, step: u64, id: u32, text_: &str, first_seq: u64) -> Vec<Events> {
    vec![
        chunks(turn, step, &text_response(text_)),
        assistant(turn, step, id, text(text_), true, first_seq..first_seq + 5),
    ]
}

fn flat(parts: Vec<Vec<Events>>) -> Vec<Events> {
    parts.into_iter().flatten().collect()
}

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
    run(&agent, "a").await;
    run(&agent, "b").await;

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
        .script(texts(&["1", "2", "3", "4", "5", "6"]))
        .build();
    let store = Arc::new(MemorySource::default());
    h.ctx()
        .provide::<dyn ResumeSource>(store.clone())
        .unwrap()
        .forget();
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
    run(&agent, "initial").await;
    run(&agent, "unchanged").await;
    hot.store(true, Ordering::SeqCst);
    run(&agent, "temperature").await;
    run(&agent, "still hot").await;
    h.tools()
        .register(agent.ctx(), TestTool::Read.build(h.probe()))
        .unwrap()
        .forget();
    run(&agent, "new tool").await;
    // A new loop instance (resume) logs its first header as `resume`.
    store.save(agent.id(), agent.session().events().to_vec());
    handle.dispose().await;
    let mut options = ResumeAgentOptions::new(agent.id().clone());
    options.agent_options = agent_options();
    let resumed = h.resume_agent(options).await.unwrap().agent().clone();
    run(&resumed, "resumed").await;

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
async fn inv06_one_message_per_followup_turn() {
    let h = Harness::builder()
        .script(texts(&["one", "two", "three"]))
        .build();
    let agent = h.create_agent().await.agent().clone();
    let live = h.record();
    for prompt in ["a", "b", "c"] {
        agent.followup(msg(prompt)).unwrap();
    }
    agent.when_idle().await;

    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            insert("next-turn", 0, &["b"]),
            insert("next-turn", 1, &["c"]),
        ],
        vec![
            step_start(1, 1),
            user("a"),
            header("initial", &[]),
            context(),
        ],
        answer(1, 1, 1, "one", 9),
        vec![step_end(1, 1), turn_end(1, completed())],
        vec![
            turn_start(2),
            claim("next-turn", 0, 1),
            step_start(2, 1),
            user("b"),
        ],
        answer(2, 1, 2, "two", 21),
        vec![step_end(2, 1), turn_end(2, completed())],
        vec![
            turn_start(3),
            claim("next-turn", 0, 1),
            step_start(3, 1),
            user("c"),
        ],
        answer(3, 1, 3, "three", 33),
        vec![step_end(3, 1), turn_end(3, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    // One activity ran all three turns.
    assert_eq!(live.only(&["status"]), ["status running", "status idle"]);
    assert_eq!(
        live.only(&["claimed"]),
        [
            "claimed m-a turn 1",
            "claimed m-b turn 2",
            "claimed m-c turn 3"
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn inv07_synchronous_turn_open() {
    let h = Harness::builder()
        .script(texts(&["one", "two", "three"]))
        .build();
    let agent = h.create_agent().await.agent().clone();
    let live = h.record();

    agent.followup(msg("a")).unwrap();
    // Nothing has been awaited yet: the turn opened and claimed inside followup().
    assert_log(
        &h.log_json(),
        &log(&[
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ]),
    );
    let opened = [
        "session agent/inbox/spliced",
        "inserted m-a",
        "status running",
        "session turn/start",
        "session agent/inbox/spliced",
        "claimed m-a turn 1",
    ];
    assert_eq!(live.take(), opened);
    agent.when_idle().await;
    live.take();

    agent.steer(msg("s")).unwrap();
    let after_steer = h.log_json();
    // The 15 events of turn 1 are placeholders here; the whole log is asserted below.
    assert_eq!(
        after_steer.as_array().unwrap()[15..],
        log(&[
            vec![json!({}); 15],
            insert("next-step", 0, &["s"]),
            turn_start(2),
            claim("next-step", 0, 1),
        ])
        .as_array()
        .unwrap()[15..]
    );
    assert_eq!(
        live.take(),
        opened.map(|l| l.replace("m-a", "m-s").replace("turn 1", "turn 2"))
    );
    agent.when_idle().await;
    live.take();

    // inject() on an idle agent only queues.
    let before = h.session().len();
    agent.inject(msg("i")).unwrap();
    assert_eq!(h.session().len(), before + 1);
    assert_eq!(live.take(), ["session agent/inbox/spliced", "inserted m-i"]);
    assert!(h.agent().inbox().has_pending());
    agent.followup(msg("b")).unwrap();
    agent.when_idle().await;

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
        answer(1, 1, 1, "one", 7),
        vec![step_end(1, 1), turn_end(1, completed())],
        vec![
            insert("next-step", 0, &["s"]),
            turn_start(2),
            claim("next-step", 0, 1),
        ],
        vec![step_start(2, 1), user("s")],
        answer(2, 1, 2, "two", 20),
        vec![step_end(2, 1), turn_end(2, completed())],
        vec![
            insert("next-step", 0, &["i"]),
            insert("next-turn", 0, &["b"]),
        ],
        vec![
            turn_start(3),
            claim("next-step", 0, 1),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(3, 1), user("i"), user("b")],
        answer(3, 1, 3, "three", 36),
        vec![step_end(3, 1), turn_end(3, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    h.finish().await;
}

#[tokio::test]
async fn inv08_claim_semantics() {
    let h = Harness::builder()
        .script(texts(&["r1", "r2", "r3", "r4"]))
        .build();
    let gate = h.gate_requests();
    let agent = h.create_agent().await.agent().clone();
    agent.inject(msg("x1")).unwrap();
    agent.inject(msg("x2")).unwrap();
    agent
        .inbox()
        .append(InboxTarget::NextTurn, msg("p1"))
        .unwrap();
    let live = h.record();
    agent.followup(msg("p2")).unwrap();
    // A turn-boundary claim: every next-step item, then only the first queued prompt;
    // claimed notifications come after both splices.
    assert_eq!(
        live.take(),
        [
            "session agent/inbox/spliced",
            "inserted m-p2",
            "status running",
            "session turn/start",
            "session agent/inbox/spliced",
            "session agent/inbox/spliced",
            "claimed m-x1 turn 1",
            "claimed m-x2 turn 1",
            "claimed m-p1 turn 1",
        ]
    );
    gate.wait_parked(1).await;
    // Mid-step input: a step-boundary claim takes next-step items only.
    agent.steer(msg("s")).unwrap();
    agent.followup(msg("p3")).unwrap();
    gate.release(10);
    agent.when_idle().await;

    let expected = log(&flat(vec![
        vec![
            insert("next-step", 0, &["x1"]),
            insert("next-step", 1, &["x2"]),
            insert("next-turn", 0, &["p1"]),
            insert("next-turn", 1, &["p2"]),
        ],
        vec![
            turn_start(1),
            claim("next-step", 0, 2),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(1, 1), user("x1"), user("x2"), user("p1")],
        vec![header("initial", &[]), context()],
        vec![
            insert("next-step", 0, &["s"]),
            insert("next-turn", 1, &["p3"]),
        ],
        answer(1, 1, 1, "r1", 15),
        vec![
            step_end(1, 1),
            claim("next-step", 0, 1),
            step_start(1, 2),
            user("s"),
        ],
        answer(1, 2, 2, "r2", 25),
        vec![step_end(1, 2), turn_end(1, completed())],
        vec![
            turn_start(2),
            claim("next-turn", 0, 1),
            step_start(2, 1),
            user("p2"),
        ],
        answer(2, 1, 3, "r3", 37),
        vec![step_end(2, 1), turn_end(2, completed())],
        vec![
            turn_start(3),
            claim("next-turn", 0, 1),
            step_start(3, 1),
            user("p3"),
        ],
        answer(3, 1, 4, "r4", 49),
        vec![step_end(3, 1), turn_end(3, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    assert_eq!(
        live.only(&["claimed", "discarded"]),
        [
            "claimed m-s turn 1",
            "claimed m-p2 turn 2",
            "claimed m-p3 turn 3"
        ]
    );
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
    run(&agent, "a").await;
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
    run(&agent, "b").await;
    assert_eq!(h.adapter().calls(), 3);
    run(&agent, "c").await;
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
    run(&agent, "d").await;
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
    run(&agent, "a").await;
    // Turn 2: capped, steered, then a normal completion: still max-tokens.
    run(&agent, "b").await;
    // Turn 3 starts fresh. (Turn-stopping steers it too; the steer gets its own step.)
    h.adapter().push(text_response("more"));
    run(&agent, "c").await;
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

#[tokio::test]
async fn inv18_pre_step_authority() {
    let h = Harness::builder().script(texts(&["r3", "r4"])).build();
    let agent = h.create_agent().await.agent().clone();
    let mode = Arc::new(Mutex::new("reject"));
    let current = mode.clone();
    agent
        .ctx()
        .on_waterfall::<PreStep, _, _>(move |args, next| {
            let mode = *current.lock().unwrap();
            if mode == "reject" {
                // Input inserted after the claim stays pending.
                args.agent.followup(msg("late")).unwrap();
            }
            async move {
                match mode {
                    "reject" => Ok(PreStepDecision::Reject),
                    "empty" => Ok(PreStepDecision::Enter(Vec::new())),
                    _ => next.run().await,
                }
            }
        })
        .unwrap()
        .forget();
    let live = h.record();
    run(&agent, "a").await;
    // Rejected: blocked, no step, no model call, the claimed "a" is gone for good and the
    // driver stopped although "late" is pending.
    assert_eq!(h.adapter().calls(), 0);
    assert_eq!(agent.inbox().next_turn().len(), 1);
    *mode.lock().unwrap() = "empty";
    run(&agent, "b").await;
    // An empty first proposal: a completed no-step turn; the driver stops again.
    assert_eq!(h.adapter().calls(), 0);
    *mode.lock().unwrap() = "pass";
    run(&agent, "c").await;

    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![insert("next-turn", 0, &["late"]), turn_end(1, blocked())],
        vec![
            insert("next-turn", 1, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![turn_end(2, completed())],
        vec![
            insert("next-turn", 1, &["c"]),
            turn_start(3),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(3, 1),
            user("b"),
            header("initial", &[]),
            context(),
        ],
        answer(3, 1, 1, "r3", 16),
        vec![step_end(3, 1), turn_end(3, completed())],
        vec![
            turn_start(4),
            claim("next-turn", 0, 1),
            step_start(4, 1),
            user("c"),
        ],
        answer(4, 1, 2, "r4", 28),
        vec![step_end(4, 1), turn_end(4, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    assert_eq!(live.only(&["discarded"]), Vec::<String>::new());
    assert_eq!(
        live.only(&["status"]),
        [
            "status running",
            "status idle",
            "status running",
            "status idle",
            "status running",
            "status idle"
        ]
    );
    h.finish().await;
}

/// A tool that concludes the turn, optionally deferring a context message.
struct Conclude;

impl dsh_tools::Tool for Conclude {
    fn name(&self) -> &str {
        "conclude"
    }
    fn description(&self) -> String {
        "Ends the turn.".into()
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"note": {"type": "string"}}})
    }
    fn execute<'a>(
        &'a self,
        args: serde_json::Value,
        exec: &'a dsh_tools::ToolExecution,
    ) -> futures_util::future::BoxFuture<'a, Result<serde_json::Value, dsh_tools::ToolFailure>>
    {
        Box::pin(async move {
            if let Some(note) = args.get("note").and_then(|n| n.as_str()) {
                exec.defer_context(msg(note));
            }
            exec.conclude_turn();
            Ok(json!("concluded"))
        })
    }
}

#[tokio::test]
async fn inv19_continuation_rule() {
    let echo = tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]);
    let conclude = tool_call_response(&[("c2", "conclude", "{}")]);
    let conclude_with_note = tool_call_response(&[("c3", "conclude", r#"{"note":"n"}"#)]);
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .custom_tool(Arc::new(Conclude))
        .script([
            echo.clone().into(),
            text_response("r1").into(),
            text_response("r2").into(),
            conclude.clone().into(),
            conclude_with_note.clone().into(),
            text_response("r3").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    // Records (turn, last seq) each time the turn would close; steers once in turn 1.
    let stops: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let seen = stops.clone();
    agent
        .ctx()
        .on_serial::<TurnStopping, _, _>(move |args| {
            let last = args.agent.session().len() - 1;
            let mut stops = seen.lock().unwrap();
            stops.push((args.turn, last));
            if args.turn == 1 && stops.len() == 1 {
                args.agent.steer(msg("more")).unwrap();
            }
            async { Ok(None) }
        })
        .unwrap()
        .forget();
    run(&agent, "a").await;
    run(&agent, "b").await;
    run(&agent, "c").await;

    let conclude_schema = json!({"name": "conclude", "description": "Ends the turn.",
        "parameters": {"type": "object", "properties": {"note": {"type": "string"}}}});
    let mut initial = header("initial", &[TestTool::Echo]);
    // Without a tool order the prompt lists tools by name.
    initial[0]["data"]["header"]["tools"] = json!([conclude_schema, TestTool::Echo.schema_json()]);
    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(1, 1),
            user("a"),
            initial,
            context(),
            chunks(1, 1, &echo),
        ],
        vec![assistant(
            1,
            1,
            1,
            json!([call_block("c1", "echo", r#"{"text":"x"}"#)]),
            true,
            7..12,
        )],
        vec![
            tool_call(1, 1, "c1", "echo", r#"{"text":"x"}"#),
            tool_ok(1, 1, 2, "c1", "x", 13),
        ],
        // Tool calls owe another request: no turn-stopping here.
        vec![step_end(1, 1), step_start(1, 2)],
        answer(1, 2, 3, "r1", 17),
        // Would close: turn-stopping runs and steers, so the turn continues.
        vec![step_end(1, 2), insert("next-step", 0, &["more"])],
        vec![claim("next-step", 0, 1), step_start(1, 3), user("more")],
        answer(1, 3, 4, "r2", 28),
        vec![step_end(1, 3), turn_end(1, completed())],
        // A concluding tool ends the turn after its step.
        vec![
            insert("next-turn", 0, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(2, 1), user("b"), chunks(2, 1, &conclude)],
        vec![assistant(
            2,
            1,
            5,
            json!([call_block("c2", "conclude", "{}")]),
            true,
            41..46,
        )],
        vec![
            tool_call(2, 1, "c2", "conclude", "{}"),
            tool_ok(2, 1, 6, "c2", "concluded", 47),
        ],
        vec![step_end(2, 1), turn_end(2, completed())],
        // ...unless it left next-step input behind: that input gets one more step.
        vec![
            insert("next-turn", 0, &["c"]),
            turn_start(3),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(3, 1),
            user("c"),
            chunks(3, 1, &conclude_with_note),
        ],
        vec![assistant(
            3,
            1,
            7,
            json!([call_block("c3", "conclude", r#"{"note":"n"}"#)]),
            true,
            56..61,
        )],
        vec![
            tool_call(3, 1, "c3", "conclude", r#"{"note":"n"}"#),
            tool_ok(3, 1, 8, "c3", "concluded", 62),
        ],
        vec![insert("next-step", 0, &["n"]), step_end(3, 1)],
        vec![claim("next-step", 0, 1), step_start(3, 2), user("n")],
        answer(3, 2, 9, "r3", 69),
        vec![step_end(3, 2), turn_end(3, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    assert_eq!(*stops.lock().unwrap(), [(1, 23), (1, 34), (2, 49), (3, 75)]);
    h.finish().await;
}
