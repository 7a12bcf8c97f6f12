//! The turn and step machine with a text-only model (spec §4).

use dsh_agent::{
    AgentRequest, PreStep, PreStepDecision, RequestError, RequestErrorAction, TurnStopping,
};
use dsh_protocol::{BlockType, FinishReason, StreamChunk};
use dsh_testkit::harness::{msg, msg_json as user, Harness, ScriptedTool};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{error_finish, text_response, text_script, tool_call_response};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn chunk(seq: u64, chunk: Value) -> Value {
    json!({"type": "assistant/chunk", "seq": seq, "data": {"turn": 1, "step": 1, "chunk": chunk}})
}

/// Text cut off at the output cap mid-way through a tool call: the call's block never
/// closes and there is no usage, so the loop must drop the half-written call.
fn cut_off(text: &str) -> Vec<StreamChunk> {
    vec![
        StreamChunk::BlockStart {
            index: 0,
            block_type: BlockType::Text,
        },
        StreamChunk::TextDelta {
            index: 0,
            text: text.into(),
        },
        StreamChunk::BlockStart {
            index: 1,
            block_type: BlockType::ToolCall,
        },
        StreamChunk::ToolCallDelta {
            index: 1,
            id: "cut".into(),
            name: Some("echo".into()),
            arguments_delta: "{\"te".into(),
        },
        StreamChunk::finish(FinishReason::MaxTokens),
    ]
}

#[tokio::test]
async fn a_simple_turn_follows_the_documented_order() {
    let h = Harness::builder()
        .script([text_response("hello").into()])
        .build();
    let handle = h.create_agent_named("s1").await;
    let agent = handle.agent().clone();
    let live = h.record_with_hooks();

    agent.followup(msg("hi")).unwrap();
    // Everything up to the claim happened before followup() returned.
    assert_eq!(
        live.take(),
        [
            "session agent/inbox/spliced",
            "inserted m-hi",
            "status running",
            "session turn/start",
            "session agent/inbox/spliced",
            "claimed m-hi turn 1",
        ]
    );
    agent.when_idle().await;
    let mut expected: Vec<String> = [
        "hook system-prompt/assemble",
        "hook agent/pre-step",
        "session step/start",
        "session user/message",
        "hook agent/request",
        "session request/header",
        "session request/context",
        "hook llm/stream",
    ]
    .map(String::from)
    .to_vec();
    expected.extend(std::iter::repeat_n(
        "session assistant/chunk".to_string(),
        5,
    ));
    expected.extend(
        [
            "session assistant/message",
            "session step/end",
            "hook agent/turn-stopping",
            "session turn/end",
            "status idle",
        ]
        .map(String::from),
    );
    assert_eq!(live.take(), expected);

    let system = "You are an AI agent powered by DeepSeek Harness.";
    assert_eq!(
        h.log_json(),
        json!([
            {"type": "agent/inbox/spliced", "seq": 0, "data": {"target": "next-turn", "start": 0, "inserted": [user("hi")]}},
            {"type": "turn/start", "seq": 1, "data": {"turn": 1}},
            {"type": "agent/inbox/spliced", "seq": 2, "data": {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}},
            {"type": "step/start", "seq": 3, "data": {"turn": 1, "step": 1}},
            {"type": "user/message", "seq": 4, "data": user("hi"), "surfaceOp": "append"},
            {"type": "request/header", "seq": 5, "data": {"header": {"config": {"provider": "scripted", "model": "scripted-model"}, "system": system}, "reason": "initial"}},
            {"type": "request/context", "seq": 6, "data": {"provider": "scripted", "model": "scripted-model"}},
            chunk(7, json!({"type": "block-start", "index": 0, "blockType": "text"})),
            chunk(8, json!({"type": "text-delta", "index": 0, "text": "hello"})),
            chunk(9, json!({"type": "block-end", "index": 0, "block": {"type": "text", "text": "hello"}})),
            chunk(10, json!({"type": "usage", "usage": {"inputTokens": 100, "outputTokens": 10}})),
            chunk(11, json!({"type": "finish", "reason": {"kind": "stop"}})),
            {"type": "assistant/message", "seq": 12, "data": {"turn": 1, "step": 1,
                "message": {"id": "<id-1>", "role": "assistant", "content": [{"type": "text", "text": "hello"}],
                    "source": {"kind": "model", "provider": "scripted", "model": "scripted-model"}},
                "usage": {"inputTokens": 100, "outputTokens": 10}},
             "sourceEventSeqs": [7, 8, 9, 10, 11], "surfaceOp": "append"},
            {"type": "step/end", "seq": 13, "data": {"turn": 1, "step": 1}},
            {"type": "turn/end", "seq": 14, "data": {"turn": 1, "reason": {"kind": "completed"}}},
        ])
    );
    // Model-visible ⇔ recorded: the request is the derived history plus the header.
    let request = &h.adapter().requests()[0];
    assert_eq!(request.messages, vec![Arc::new(msg("hi"))]);
    assert_eq!(request.system.as_deref(), Some(system));
    assert_eq!(agent.session().derive_messages().len(), 2);
    h.finish().await;
}

#[tokio::test]
async fn synchronous_followups_become_one_turn_each() {
    let h = Harness::builder()
        .script(text_script(&["one", "two", "three"]))
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    let live = h.record();
    for prompt in ["a", "b", "c"] {
        agent.followup(msg(prompt)).unwrap();
    }
    agent.when_idle().await;
    let lines = outline(&agent.session().events());
    let turns: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("turn/") || l.starts_with("user:"))
        .collect();
    assert_eq!(
        turns,
        [
            "turn/start 1",
            "user: a",
            "turn/end 1 completed",
            "turn/start 2",
            "user: b",
            "turn/end 2 completed",
            "turn/start 3",
            "user: c",
            "turn/end 3 completed",
        ]
    );
    assert_eq!(live.only(&["status"]), ["status running", "status idle"]);
    h.finish().await;
}

#[tokio::test]
async fn inject_on_idle_waits_for_a_wake_and_enters_before_the_prompt() {
    let h = Harness::builder().script(text_script(&["ok"])).build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.inject(msg("context")).unwrap();
    assert_eq!(
        outline(&agent.session().events()),
        ["splice next-step @0 -0 +[\"context\"]"]
    );
    assert!(agent.inbox().has_pending());
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events())[..8],
        [
            "splice next-step @0 -0 +[\"context\"]",
            "splice next-turn @0 -0 +[\"go\"]",
            "turn/start 1",
            "splice next-step @0 -1 +[]",
            "splice next-turn @0 -1 +[]",
            "step/start 1.1",
            "user: context",
            "user: go",
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn steering_while_running_adds_a_step_to_the_same_turn() {
    let h = Harness::builder()
        .script(text_script(&["first", "second"]))
        .build();
    let gate = h.gate_requests();
    let agent = h.create_agent_named("s1").await.agent().clone();
    let live = h.record_with_hooks();
    agent.followup(msg("a")).unwrap();
    // Steer while the first request waits for the model.
    gate.wait_parked(1).await;
    agent.steer(msg("b")).unwrap();
    gate.release(2);
    agent.when_idle().await;
    let lines: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| !l.starts_with("chunk") && !l.starts_with("request/"))
        .collect();
    assert_eq!(
        lines,
        [
            "splice next-turn @0 -0 +[\"a\"]",
            "turn/start 1",
            "splice next-turn @0 -1 +[]",
            "step/start 1.1",
            "user: a",
            "splice next-step @0 -0 +[\"b\"]",
            "assistant: first +usage cites [8, 9, 10, 11, 12]",
            "step/end 1.1",
            "splice next-step @0 -1 +[]",
            "step/start 1.2",
            "user: b",
            "assistant: second +usage cites [18, 19, 20, 21, 22]",
            "step/end 1.2",
            "turn/end 1 completed",
        ]
    );
    assert_eq!(
        live.only(&["hook agent/turn-stopping"]).len(),
        1,
        "turn-stopping runs only when the turn would close"
    );
    h.finish().await;
}

#[tokio::test]
async fn max_tokens_is_sticky_for_the_rest_of_the_turn() {
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("echo")])
        .script([
            cut_off("cut off").into(),
            tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]).into(),
            text_response("fresh").into(),
        ])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    // After the capped step, steer once from turn-stopping so the turn continues.
    let steered = Arc::new(AtomicBool::new(false));
    let once = steered.clone();
    agent
        .ctx()
        .on_serial::<TurnStopping, _, _>(move |args| {
            if !once.swap(true, Ordering::SeqCst) {
                args.agent.steer(msg("go on")).unwrap();
            }
            async { Ok(None) }
        })
        .unwrap()
        .forget();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    let lines: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| {
            l.starts_with("turn/")
                || l.starts_with("step/")
                || l.starts_with("assistant")
                || l.starts_with("tool/")
        })
        .collect();
    assert_eq!(
        lines,
        [
            "turn/start 1",
            "step/start 1.1",
            "assistant: cut off cites [7, 8, 9, 10, 11]",
            "step/end 1.1",
            "step/start 1.2",
            "assistant: <call c1 echo> +usage cites [18, 19, 20, 21, 22]",
            "tool/call c1 echo {\"text\":\"x\"}",
            "tool/result echo:x cites [24]",
            "step/end 1.2",
            "turn/end 1 max-tokens",
        ]
    );
    // A later turn starts fresh and sees the tool result in its history.
    agent.followup(msg("b")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events()).last().unwrap(),
        "turn/end 2 completed"
    );
    let last = h.adapter().requests().last().unwrap().clone();
    assert!(last
        .messages
        .iter()
        .any(|m| m.text().is_empty() && m.role == dsh_protocol::Role::User));
    h.finish().await;
}

#[tokio::test]
async fn a_rejecting_pre_step_blocks_the_turn_and_stops_the_driver() {
    let h = Harness::builder().build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent
        .ctx()
        .on_waterfall::<PreStep, _, _>(|_, _next| async { Ok(PreStepDecision::Reject) })
        .unwrap()
        .forget();
    agent.followup(msg("a")).unwrap();
    agent.followup(msg("b")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events()),
        [
            "splice next-turn @0 -0 +[\"a\"]",
            "turn/start 1",
            "splice next-turn @0 -1 +[]",
            "splice next-turn @0 -0 +[\"b\"]",
            "turn/end 1 blocked",
        ]
    );
    assert!(h.adapter().requests().is_empty());
    assert_eq!(
        agent.inbox().next_turn().len(),
        1,
        "later input stays pending"
    );
    h.finish().await;
}

#[tokio::test]
async fn a_wake_whose_message_vanished_is_a_balanced_no_step_turn() {
    let h = Harness::builder().build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    let weak = Arc::downgrade(&agent);
    agent
        .ctx()
        .on::<dsh_agent::InboxInserted>(move |e| {
            if let Some(agent) = weak.upgrade() {
                agent.inbox().remove(&e.data.id)?;
            }
            Ok(())
        })
        .unwrap()
        .forget();
    let live = h.record();
    agent.steer(msg("gone")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events()),
        [
            "splice next-step @0 -0 +[\"gone\"]",
            "splice next-step @0 -1 +[] canceled",
            "turn/start 1",
            "turn/end 1 completed",
        ]
    );
    assert_eq!(live.only(&["status"]), ["status running", "status idle"]);
    h.finish().await;
}

#[tokio::test]
async fn a_retry_reissues_the_request_within_the_same_step() {
    let h = Harness::builder()
        .script([error_finish("SERVER").into(), text_response("ok").into()])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent
        .ctx()
        .on_waterfall::<RequestError, _, _>(|args, _next| {
            assert_eq!(args.data.failure.code, "SERVER");
            assert!(args.data.retry_policy.is_some());
            async { Ok(Some(RequestErrorAction::Retry)) }
        })
        .unwrap()
        .forget();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events())[3..],
        [
            "step/start 1.1",
            "user: a",
            "request/header initial",
            "request/context scripted/scripted-model",
            "chunk finish",
            "chunk block-start",
            "chunk text-delta",
            "chunk block-end",
            "chunk usage",
            "chunk finish",
            "assistant: ok +usage cites [8, 9, 10, 11, 12]",
            "step/end 1.1",
            "turn/end 1 completed",
        ]
    );
    assert_eq!(h.adapter().requests().len(), 2);
    h.finish().await;
}

#[tokio::test]
async fn an_unretried_provider_failure_ends_the_turn_with_its_facts() {
    let h = Harness::builder()
        .script([error_finish("RATE_LIMIT").into()])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    let live = h.record();
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    let lines = outline(&agent.session().events());
    assert_eq!(
        lines[lines.len() - 3..],
        [
            "chunk finish",
            "step/end 1.1",
            "turn/end 1 error RATE_LIMIT"
        ]
    );
    assert!(live.lines().contains(&"agent/error RATE_LIMIT".to_string()));
    h.finish().await;
}

#[tokio::test]
async fn headers_are_logged_first_then_only_when_they_change() {
    let h = Harness::builder()
        .script(text_script(&["one", "two", "three"]))
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    let hotter = Arc::new(AtomicBool::new(false));
    let flag = hotter.clone();
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
    agent.followup(msg("a")).unwrap();
    agent.when_idle().await;
    agent.followup(msg("b")).unwrap();
    agent.when_idle().await;
    hotter.store(true, Ordering::SeqCst);
    agent.followup(msg("c")).unwrap();
    agent.when_idle().await;
    let headers: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("request/"))
        .collect();
    assert_eq!(
        headers,
        [
            "request/header initial",
            "request/context scripted/scripted-model",
            "request/header change"
        ]
    );
    assert_eq!(h.adapter().requests()[2].config.temperature, Some(0.5));
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_on_a_multi_threaded_runtime_stay_one_turn_per_followup() {
    let h = Harness::builder().build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    for round in 0..5 {
        for i in 0..4 {
            h.adapter().push(text_response("ok"));
            agent.followup(msg(&format!("r{round}-{i}"))).unwrap();
        }
        if round % 2 == 1 {
            h.adapter().push(text_response("ok"));
            agent.steer(msg(&format!("steer{round}"))).unwrap();
        }
        agent.when_idle().await;
    }
    let lines = outline(&agent.session().events());
    let starts = lines.iter().filter(|l| l.starts_with("turn/start")).count();
    let ends: Vec<&String> = lines.iter().filter(|l| l.starts_with("turn/end")).collect();
    // A steer lands in the running turn, or opens its own turn if the driver already idled.
    assert!((20..=22).contains(&starts), "{starts}");
    assert_eq!(ends.len(), starts);
    assert!(ends.iter().all(|l| l.ends_with("completed")), "{ends:?}");
    let prompts: Vec<&String> = lines.iter().filter(|l| l.starts_with("user: r")).collect();
    let expected: Vec<String> = (0..5)
        .flat_map(|r| (0..4).map(move |i| format!("user: r{r}-{i}")))
        .collect();
    assert_eq!(prompts, expected.iter().collect::<Vec<_>>());
    for (i, line) in lines
        .iter()
        .filter(|l| l.starts_with("turn/start"))
        .enumerate()
    {
        assert_eq!(*line, format!("turn/start {}", i + 1));
    }
    h.finish().await;
}
