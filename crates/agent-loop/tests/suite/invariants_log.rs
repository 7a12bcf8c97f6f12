//! Spec §12 invariants about the log itself (1, 4, 5, 13, 14, 15, 21, 22, 23): numbering,
//! enclosure, tool pairing, completion anchors, failed and interrupted attempts, append
//! validation, surface replaces and crash repair.

use dsh_agent::{
    AgentCancelCause, CancelOptions, CreateAgentOptions, RequestError, RequestErrorAction,
    ResumeAgentOptions, SessionMeta,
};
use dsh_protocol::{LlmFailure, SessionId, StreamChunk};
use dsh_session::{
    interrupted_turn_closers, AppendOptions, EventData, SessionEvent, SessionEventPublished,
    SessionHeader,
};
use dsh_store::{Compression, JsonlBackend, JsonlConfig, SessionPersistence};
use dsh_testkit::checks::check_seqs;
use dsh_testkit::expect::*;
use dsh_testkit::harness::{agent_options, msg, run_followup, Harness, TestTool, TEST_TOOL_FAILED};
use dsh_testkit::normalize::{log_json, Normalizer};
use dsh_testkit::scripted::{
    error_finish, error_finish_with, text_response, tool_call_response, Response, ScriptEntry,
};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

fn seqs(events: &[Arc<SessionEvent>]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn inv01_contiguous_seqs() {
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script([
            tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]).into(),
            text_response("one").into(),
            text_response("forked").into(),
            ScriptEntry::Hang,
            text_response("resumed").into(),
        ])
        .build();
    let store = h.mount_memory_source();
    let parent = h.create_agent().await.agent().clone();
    run_followup(&parent, "a").await;
    let parent_log = parent.session().events();
    assert_eq!(
        seqs(&parent_log),
        (0..parent_log.len() as u64).collect::<Vec<_>>()
    );

    // A fork seeds the child with the parent's log; numbering continues after the marker.
    let child = h
        .create_agent_with(CreateAgentOptions {
            session_id: Some(SessionId::from("child")),
            seed: Some(parent_log.to_vec()),
            meta: SessionMeta {
                parent_session: Some(parent.id().clone()),
                seed_length: Some(parent_log.len() as u64),
                ..Default::default()
            },
            agent_options: agent_options(),
            ..Default::default()
        })
        .await
        .unwrap()
        .agent()
        .clone();
    run_followup(&child, "b").await;
    let n = parent_log.len() as u64;
    let mut expected = log_json(&parent_log).as_array().unwrap().clone();
    let tail = log(&flat(vec![
        vec![vec![json!({}); n as usize]],
        vec![one_event("session/end-seed", json!({}))],
        vec![
            insert("next-turn", 0, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        // The seed already holds a header, so this loop's first one is a `resume`.
        vec![
            step_start(2, 1),
            user("b"),
            header("resume", &[TestTool::Echo]),
        ],
        answer(2, 1, 4, "forked", n + 7),
        vec![step_end(2, 1), turn_end(2, completed())],
    ]));
    expected.extend(tail.as_array().unwrap()[n as usize..].iter().cloned());
    assert_log(
        &log_json(&child.session().events()),
        &Value::Array(expected),
    );

    // A crash mid-stream, then a resume: the repair closers and the marker continue the
    // numbering, and so does the resumed agent.
    let crasher = h.create_agent_named("crasher").await.agent().clone();
    crasher.followup(msg("c")).unwrap();
    h.adapter().wait_for_hang(1).await;
    let crashed = crasher.session().events().to_vec();
    crasher
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    crasher.when_idle().await;
    let crashed_len = crashed.len() as u64;
    // Stored under another id so it can be resumed next to the live agent.
    store.save(&SessionId::from("restored"), crashed.clone());
    let mut options = ResumeAgentOptions::new(SessionId::from("restored"));
    options.agent_options = agent_options();
    let resumed = h.resume_agent(options).await.unwrap().agent().clone();
    run_followup(&resumed, "d").await;
    let resumed_log = resumed.session().events();
    assert_eq!(check_seqs(&resumed_log), Ok(()));
    let types: Vec<String> = resumed_log[crashed_len as usize..]
        .iter()
        .map(|e| format!("{} {}", e.seq, e.type_name()))
        .collect();
    let s = crashed_len;
    assert_eq!(
        types[..6],
        [
            format!("{s} step/end"),
            format!("{} turn/end", s + 1),
            format!("{} session/end-seed", s + 2),
            format!("{} agent/inbox/spliced", s + 3),
            format!("{} turn/start", s + 4),
            format!("{} agent/inbox/spliced", s + 5),
        ]
    );

    // The store refuses an append that does not continue its log exactly.
    let root = tempfile::tempdir().unwrap();
    let backend = JsonlBackend::new(JsonlConfig {
        root: root.path().into(),
        compression: Compression::None,
        pack_chunks: false,
    });
    let id = SessionId::from("stored");
    backend.create(&SessionHeader::new(id.clone(), 1)).unwrap();
    backend.append(&id, &parent_log[..3]).unwrap();
    let gap = backend.append(&id, &parent_log[4..6]).unwrap_err();
    assert_eq!(gap.code(), "SESSION_SEQ_MISMATCH");
    let repeat = backend.append(&id, &parent_log[2..4]).unwrap_err();
    assert_eq!(repeat.code(), "SESSION_SEQ_MISMATCH");
    assert_eq!(backend.next_seq(&id).unwrap(), 3);
    backend.append(&id, &parent_log[3..]).unwrap();
    let stored = backend.load(&id).unwrap();
    assert_eq!(log_json(&stored.events), log_json(&parent_log));
    h.finish().await;
}

fn one_event(type_: &str, data: Value) -> Events {
    vec![json!({"type": type_, "data": data})]
}

#[tokio::test]
async fn inv04_balanced_enclosure() {
    let call = tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]);
    let partial = Response::new().text("partial").chunks();
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script([
            call.clone().into(),
            text_response("one").into(),
            ScriptEntry::HangAfter(2, partial.clone()),
            text_response("three").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    run_followup(&agent, "a").await;
    agent.followup(msg("b")).unwrap();
    h.adapter().wait_for_hang(1).await;
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    agent.when_idle().await;
    run_followup(&agent, "c").await;

    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(1, 1),
            user("a"),
            header("initial", &[TestTool::Echo]),
            context(),
        ],
        vec![chunks(1, 1, &call)],
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
        vec![step_end(1, 1), step_start(1, 2)],
        answer(1, 2, 3, "one", 17),
        vec![step_end(1, 2), turn_end(1, completed())],
        vec![
            insert("next-turn", 0, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(2, 1), user("b"), chunks(2, 1, &partial[..2])],
        vec![interrupted_assistant(2, 1, 4, text("partial"), [30, 31])],
        vec![step_end(2, 1), turn_end(2, aborted("user"))],
        vec![
            insert("next-turn", 0, &["c"]),
            turn_start(3),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(3, 1), user("c")],
        answer(3, 1, 5, "three", 40),
        vec![step_end(3, 1), turn_end(3, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    h.finish().await;
}

#[tokio::test]
async fn inv05_tool_pairing_in_model_order() {
    let calls = tool_call_response(&[
        ("r1", "read", r#"{"path":"1"}"#),
        ("r2", "read", r#"{"path":"2"}"#),
        ("r3", "read", r#"{"path":"3"}"#),
        ("e4", "echo", r#"{"text":"4"}"#),
        ("f5", "fail", "{}"),
    ]);
    let tools = [TestTool::Read, TestTool::Echo, TestTool::Fail];
    let h = Harness::builder()
        .tools(tools)
        .script([calls.clone().into(), text_response("done").into()])
        .build();
    h.probe().hold_reads();
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("a")).unwrap();
    // The three reads form one parallel group; they finish in reverse order.
    for id in ["r1", "r2", "r3"] {
        h.probe().wait_for(&format!("start {id}")).await;
    }
    for id in ["r3", "r2", "r1"] {
        h.probe().release(id);
        h.probe().wait_for(&format!("end {id}")).await;
    }
    agent.when_idle().await;
    assert_eq!(
        h.probe().journal(),
        [
            "start r1", "start r2", "start r3", "end r3", "end r2", "end r1", "start e4", "end e4",
            "start f5", "end f5"
        ]
    );
    assert_eq!(h.probe().max_in_flight(), 3);

    let blocks = json!([
        call_block("r1", "read", r#"{"path":"1"}"#),
        call_block("r2", "read", r#"{"path":"2"}"#),
        call_block("r3", "read", r#"{"path":"3"}"#),
        call_block("e4", "echo", r#"{"text":"4"}"#),
        call_block("f5", "fail", "{}"),
    ]);
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
        vec![chunks(1, 1, &calls)],
        vec![assistant(1, 1, 1, blocks, true, 7..24)],
        // Calls start in model order; results commit in model order.
        vec![
            tool_call(1, 1, "r1", "read", r#"{"path":"1"}"#),
            tool_call(1, 1, "r2", "read", r#"{"path":"2"}"#),
            tool_call(1, 1, "r3", "read", r#"{"path":"3"}"#),
            tool_ok(1, 1, 2, "r1", "read:1", 25),
            tool_ok(1, 1, 3, "r2", "read:2", 26),
            tool_ok(1, 1, 4, "r3", "read:3", 27),
        ],
        vec![
            tool_call(1, 1, "e4", "echo", r#"{"text":"4"}"#),
            tool_ok(1, 1, 5, "e4", "4", 31),
        ],
        vec![
            tool_call(1, 1, "f5", "fail", "{}"),
            tool_result(
                1,
                1,
                6,
                "f5",
                "Error: the fail tool always fails",
                Some(("TestToolError", TEST_TOOL_FAILED)),
                33,
            ),
        ],
        vec![step_end(1, 1), step_start(1, 2)],
        answer(1, 2, 7, "done", 37),
        vec![step_end(1, 2), turn_end(1, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    h.finish().await;
}

#[tokio::test]
async fn inv13_interrupted_prefix_cites_exactly_its_attempt() {
    let streamed = Response::new()
        .reasoning("think hard")
        .text("visible answer")
        .tool_call("c9", "echo", "{}")
        .split(2)
        .chunks();
    let blank = Response::new().reasoning(" \n").text("   ").chunks();
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script([
            error_finish("SERVER").into(),
            ScriptEntry::HangAfter(8, streamed.clone()),
            ScriptEntry::HangAfter(4, blank.clone()),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    agent
        .ctx()
        .on_waterfall::<RequestError, _, _>(|_, _| async { Ok(Some(RequestErrorAction::Retry)) })
        .unwrap()
        .forget();
    // Attempt 1 fails in-band and is retried; attempt 2 is cut mid-tool-call.
    agent.followup(msg("a")).unwrap();
    h.adapter().wait_for_hang(1).await;
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    agent.when_idle().await;
    // Only whitespace streamed: nothing to keep.
    agent.followup(msg("b")).unwrap();
    h.adapter().wait_for_hang(2).await;
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    agent.when_idle().await;
    assert!(h.probe().journal().is_empty());

    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(1, 1),
            user("a"),
            header("initial", &[TestTool::Echo]),
            context(),
        ],
        vec![chunks(1, 1, &error_finish("SERVER"))],
        vec![chunks(1, 1, &streamed[..8])],
        // Reasoning and text only (the half-streamed call is dropped), citing seqs 8..=15
        // of the second attempt and not the failed attempt's chunk at 7.
        vec![interrupted_assistant(
            1,
            1,
            1,
            json!([{"type": "reasoning", "text": "think hard"}, {"type": "text", "text": "visible answer"}]),
            8..16,
        )],
        vec![step_end(1, 1), turn_end(1, aborted("user"))],
        vec![
            insert("next-turn", 0, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(2, 1), user("b"), chunks(2, 1, &blank[..4])],
        vec![step_end(2, 1), turn_end(2, aborted("user"))],
    ]));
    assert_log(&h.log_json(), &expected);
    h.finish().await;
}

#[tokio::test]
async fn inv14_completion_anchor() {
    let bare = Response::new().text("no usage").usage(None).chunks();
    let h = Harness::builder()
        .script([
            ScriptEntry::Chunks(Vec::new()),
            bare.clone().into(),
            text_response("with usage").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    run_followup(&agent, "a").await;
    run_followup(&agent, "b").await;
    run_followup(&agent, "c").await;

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
        // An empty stream still completes with one anchor citing nothing.
        vec![assistant(1, 1, 1, json!([]), false, [])],
        vec![step_end(1, 1), turn_end(1, completed())],
        vec![
            insert("next-turn", 0, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(2, 1), user("b"), chunks(2, 1, &bare)],
        vec![assistant(2, 1, 2, text("no usage"), false, 15..19)],
        vec![step_end(2, 1), turn_end(2, completed())],
        vec![
            insert("next-turn", 0, &["c"]),
            turn_start(3),
            claim("next-turn", 0, 1),
        ],
        vec![step_start(3, 1), user("c")],
        answer(3, 1, 3, "with usage", 27),
        vec![step_end(3, 1), turn_end(3, completed())],
    ]));
    assert_log(&h.log_json(), &expected);
    // The empty message never reaches the model.
    let mut normalizer = Normalizer::new();
    let _ = normalizer.events(&agent.session().events());
    let requests: Vec<Value> = h
        .adapter()
        .requests()
        .iter()
        .map(|r| normalizer.request(r)["messages"].clone())
        .collect();
    let model = json!({"kind": "model", "provider": "scripted", "model": "scripted-model"});
    assert_eq!(
        requests[2],
        json!([
            dsh_testkit::harness::msg_json("a"),
            dsh_testkit::harness::msg_json("b"),
            {"id": "<id-2>", "role": "assistant", "content": text("no usage"), "source": model},
            dsh_testkit::harness::msg_json("c"),
        ])
    );
    h.finish().await;
}

#[tokio::test]
async fn inv15_failed_attempts_leave_no_message() {
    let mut failed = Response::new()
        .text("partial")
        .tool_call("c1", "echo", r#"{"text":"never"}"#)
        .usage(None)
        .chunks();
    failed.truncate(4);
    failed.extend(error_finish("SERVER"));
    let facts = LlmFailure {
        status: Some(429),
        provider_retry_after_ms: Some(1500),
        request_id: Some("req-1".into()),
        ..LlmFailure::new("RATE_LIMIT", "slow down")
    };
    let h = Harness::builder()
        .tools([TestTool::Echo])
        .script([
            failed.clone().into(),
            text_response("ok").into(),
            error_finish_with(facts.clone()).into(),
            ScriptEntry::Error(dsh_llm::LlmError::new("NETWORK", "connection reset")),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    agent
        .ctx()
        .on_waterfall::<RequestError, _, _>(|args, _| {
            let retry = args.turn == 1;
            async move { Ok(retry.then_some(RequestErrorAction::Retry)) }
        })
        .unwrap()
        .forget();
    run_followup(&agent, "a").await;
    run_followup(&agent, "b").await;
    run_followup(&agent, "c").await;
    // The failed attempt's tool call was never executed.
    assert!(h.probe().journal().is_empty());

    let network = [StreamChunk::error(LlmFailure::new(
        "NETWORK",
        "connection reset",
    ))];
    let expected = log(&flat(vec![
        vec![
            insert("next-turn", 0, &["a"]),
            turn_start(1),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(1, 1),
            user("a"),
            header("initial", &[TestTool::Echo]),
            context(),
        ],
        // Attempt 1: log-only chunks, no message, no tool; the retry stays in step 1.
        vec![chunks(1, 1, &failed)],
        answer(1, 1, 1, "ok", 12),
        vec![step_end(1, 1), turn_end(1, completed())],
        vec![
            insert("next-turn", 0, &["b"]),
            turn_start(2),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(2, 1),
            user("b"),
            chunks(2, 1, &error_finish_with(facts)),
        ],
        vec![step_end(2, 1)],
        vec![turn_end(
            2,
            json!({"kind": "error", "error": {"message": "slow down",
            "code": "RATE_LIMIT", "status": 429, "providerRetryAfterMs": 1500,
            "requestId": "req-1"}}),
        )],
        // An adapter that fails to start the stream is an in-band failure too.
        vec![
            insert("next-turn", 0, &["c"]),
            turn_start(3),
            claim("next-turn", 0, 1),
        ],
        vec![
            step_start(3, 1),
            user("c"),
            chunks(3, 1, &network),
            step_end(3, 1),
        ],
        vec![turn_end(3, error("NETWORK", "connection reset"))],
    ]));
    assert_log(&h.log_json(), &expected);
    h.finish().await;
}

#[tokio::test]
async fn inv21_append_atomicity() {
    let h = Harness::builder()
        .script([text_response("one").into()])
        .build();
    let agent = h.create_agent().await.agent().clone();
    run_followup(&agent, "a").await;
    let session = agent.session().clone();
    let before = h.log_json();
    let note = |data: Value| EventData::other("test/note", data);
    let refused =
        |data: EventData, opts: AppendOptions| session.append(data, opts).unwrap_err().code();

    assert_eq!(
        refused(
            note(json!({"x": -0.0})),
            AppendOptions::log_only().ignorable()
        ),
        "INVALID_EVENT_DATA"
    );
    assert_eq!(
        refused(note(json!({})), AppendOptions::surface_append().ignorable()),
        "INVALID_SURFACE"
    );
    assert_eq!(
        refused(
            EventData::TurnStart(dsh_session::TurnStart { turn: 9 }),
            AppendOptions::log_only().sources(vec![1])
        ),
        "INVALID_SURFACE"
    );
    assert_eq!(
        refused(
            EventData::UserMessage(Arc::new(msg("x"))),
            AppendOptions::log_only()
        ),
        "INVALID_SURFACE"
    );
    let forward = session.len() + 3;
    assert_eq!(
        refused(
            EventData::UserMessage(Arc::new(msg("x"))),
            AppendOptions::surface_append().sources(vec![forward])
        ),
        "INVALID_SURFACE"
    );
    assert_eq!(
        refused(
            EventData::UserMessage(Arc::new(msg("x"))),
            AppendOptions::surface_append().sources(vec![4, 4])
        ),
        "INVALID_SURFACE"
    );
    assert_eq!(
        h.log_json(),
        before,
        "refused appends leave the log unchanged"
    );

    // Reentrant appends are refused; a failing observer does not undo the append.
    let reentry: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = reentry.clone();
    h.ctx()
        .on::<SessionEventPublished>(move |published| {
            let again = published.session.append(
                note(json!({"nested": true})),
                AppendOptions::log_only().ignorable(),
            );
            seen.lock().unwrap().push(
                again
                    .map(|_| "appended".to_owned())
                    .unwrap_or_else(|e| e.code().to_owned()),
            );
            Err("observer failed".into())
        })
        .unwrap()
        .forget();
    let event = session
        .append(
            note(json!({"kept": true})),
            AppendOptions::log_only().ignorable(),
        )
        .unwrap();
    assert_eq!(*reentry.lock().unwrap(), ["APPEND_REENTERED"]);
    let mut expected = before.as_array().unwrap().clone();
    expected.push(
        json!({"type": "test/note", "seq": event.seq, "ignorable": true, "data": {"kept": true}}),
    );
    assert_eq!(h.log_json(), Value::Array(expected));
    h.finish().await;
}

#[tokio::test]
async fn inv22_surface_replace() {
    let h = Harness::builder()
        .script([
            text_response("one").into(),
            text_response("two").into(),
            text_response("three").into(),
        ])
        .build();
    let agent = h.create_agent().await.agent().clone();
    run_followup(&agent, "a").await;
    run_followup(&agent, "b").await;
    let session = agent.session().clone();
    // Surface: user a (4), assistant one (12), user b (19), assistant two (25).
    assert_eq!(session.surface().nodes, [4, 12, 19, 25]);
    let summary = || EventData::UserMessage(Arc::new(msg("summary of a")));
    let before = h.log_json();
    // A replace must cite every node it shadows.
    let err = session
        .append(
            summary(),
            AppendOptions::surface_replace(4, 12).sources(vec![4]),
        )
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_SURFACE");
    assert_eq!(h.log_json(), before);
    let replaced = session
        .append(
            summary(),
            AppendOptions::surface_replace(4, 12).sources(vec![4, 12]),
        )
        .unwrap();
    assert_eq!(replaced.seq, 28);
    let surface = session.surface();
    assert_eq!(
        (surface.nodes, surface.replace_generation),
        (vec![28, 19, 25], 1)
    );
    // The shadowed events stay in the log...
    let mut expected = before.as_array().unwrap().clone();
    expected.push(json!({"type": "user/message", "seq": 28,
        "surfaceOp": {"op": "replace", "start": 4, "end": 12}, "sourceEventSeqs": [4, 12],
        "data": dsh_testkit::harness::msg_json("summary of a")}));
    assert_eq!(h.log_json(), Value::Array(expected));
    // ...but the next request sees the summary in their place.
    run_followup(&agent, "c").await;
    let mut normalizer = Normalizer::new();
    let _ = normalizer.events(&session.events());
    let last = normalizer.request(&h.adapter().requests()[2]);
    let model = json!({"kind": "model", "provider": "scripted", "model": "scripted-model"});
    assert_eq!(
        last["messages"],
        json!([
            dsh_testkit::harness::msg_json("summary of a"),
            dsh_testkit::harness::msg_json("b"),
            {"id": "<id-2>", "role": "assistant", "content": text("two"), "source": model},
            dsh_testkit::harness::msg_json("c"),
        ])
    );
    h.finish().await;
}

#[tokio::test]
async fn inv23_crash_repair() {
    let calls = tool_call_response(&[("w1", "wait", "{}"), ("e2", "echo", r#"{"text":"x"}"#)]);
    let h = Harness::builder()
        .tools([TestTool::Wait, TestTool::Echo])
        .script([calls.into()])
        .build();
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("a")).unwrap();
    h.probe().wait_for("start w1").await;
    // The process "dies" here: w1 is logged as started, e2 never started, step 1 is open.
    let crashed: Vec<Arc<SessionEvent>> = agent.session().events().to_vec();
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    agent.when_idle().await;
    assert_eq!(crashed.last().unwrap().type_name(), "tool/call");
    let n = crashed.len() as u64;
    let call_seq = n - 1; // the crash came right after w1's tool/call

    let closers = interrupted_turn_closers(&crashed);
    let unknown = dsh_session::TOOL_OUTCOME_UNKNOWN_TEXT;
    let not_started = dsh_session::TOOL_NOT_STARTED_TEXT;
    let closer_result = |seq: u64, call_id: &str, text_: &str, name: &str, code: &str| {
        json!({"type": "tool/result", "seq": seq, "surfaceOp": "append",
            "data": {"turn": 1, "step": 1, "message": {
                "id": format!("interrupted-tool-result-{call_id}-{seq}"), "role": "user",
                "content": [{"type": "tool-result", "toolCallId": call_id,
                    "content": [{"type": "text", "text": text_}], "isError": true}],
                "source": {"kind": "tool", "callId": call_id}},
                "error": {"name": name, "code": code}}})
    };
    let mut first = closer_result(
        n,
        "w1",
        unknown,
        "ToolOutcomeUnknownError",
        "TOOL_OUTCOME_UNKNOWN",
    );
    first["sourceEventSeqs"] = json!([call_seq]);
    let expected_closers = json!([
        first,
        closer_result(n + 1, "e2", not_started, "ToolNotStartedError", "TOOL_NOT_STARTED"),
        {"type": "step/end", "seq": n + 2, "data": {"turn": 1, "step": 1}},
        {"type": "turn/end", "seq": n + 3, "data": {"turn": 1, "reason": interrupted()}},
    ]);
    assert_eq!(log_json(&closers), expected_closers);
    // A balanced log needs nothing.
    assert!(interrupted_turn_closers(&agent.session().events()).is_empty());

    // Through the store: the repair is committed on load, a torn trailing record is dropped,
    // and damage before the last turn/end is corruption.
    let root = tempfile::tempdir().unwrap();
    let backend = JsonlBackend::new(JsonlConfig {
        root: root.path().into(),
        compression: Compression::None,
        pack_chunks: false,
    });
    let id = agent.id().clone();
    backend.create(&SessionHeader::new(id.clone(), 1)).unwrap();
    backend.append(&id, &crashed).unwrap();
    let path = backend.locate(&id).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"type":"assistant/chu"#);
    std::fs::write(&path, &bytes).unwrap();
    let prepared = backend.prepare(&id).unwrap();
    assert!(prepared.torn_tail.is_some());
    assert_eq!(log_json(&prepared.closers), expected_closers);
    let mut repaired = log_json(&crashed).as_array().unwrap().clone();
    repaired.extend(expected_closers.as_array().unwrap().iter().cloned());
    repaired.push(json!({"type": "session/end-seed", "seq": n + 4, "data": {}}));
    assert_eq!(log_json(&prepared.session.events()), Value::Array(repaired));
    // The repair is durable: loading again finds a balanced log and repairs nothing.
    let again = backend.load(&id).unwrap();
    assert_eq!(again.events.len() as u64, n + 4);
    assert!(again.torn_tail.is_none());

    let balanced = SessionId::from("balanced");
    backend
        .create(&SessionHeader::new(balanced.clone(), 1))
        .unwrap();
    let log_events = agent.session().events();
    backend.append(&balanced, &log_events).unwrap();
    let untouched = backend.prepare(&balanced).unwrap();
    assert!(untouched.closers.is_empty() && untouched.torn_tail.is_none());
    let path = backend.locate(&balanced).unwrap();
    let text_ = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text_.lines().collect();
    lines[3] = "{not json";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = backend.prepare(&balanced).unwrap_err();
    assert_eq!(err.code(), "SESSION_PERSISTENCE_CORRUPTION");
    h.finish().await;
}
