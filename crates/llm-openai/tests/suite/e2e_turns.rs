//! Successful turns end to end: text, reasoning, parallel tool calls split over many
//! argument deltas, and the reasoning replay on the following request.

use super::e2e_harness::*;
use dsh_testkit::mock_llm::{Reply, Script, UsageSpec};
use serde_json::{json, Value};

pub fn usage_spec(prompt: u64, completion: u64) -> UsageSpec {
    UsageSpec {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(completion),
        ..UsageSpec::default()
    }
}

fn system() -> Value {
    json!({"role": "system", "content": SYSTEM})
}

fn wire_tools() -> Value {
    let tool = |name: &str| {
        let schema = EchoTool::schema_json(name);
        json!({"type": "function", "function": schema})
    };
    json!([tool("echo"), tool("shout")])
}

/// The request body for `messages` with the route's defaults.
fn body(messages: Vec<Value>, tools: bool) -> Value {
    let mut body = json!({
        "model": MODEL, "messages": messages, "stream": true,
        "stream_options": {"include_usage": true},
        "thinking": {"type": "enabled"}, "reasoning_effort": "high", "max_tokens": 256000,
    });
    if tools {
        body["tools"] = wire_tools();
    }
    body
}

#[tokio::test]
async fn a_text_answer_streams_into_one_cited_message() {
    let script = Script::new().respond(
        Reply::text("Hello there.")
            .chunks(2)
            .usage(usage_spec(20, 3)),
    );
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "text")),
        s.chunk(1, 1, text_delta(0, "Hello ")),
        s.chunk(1, 1, text_delta(0, "there.")),
        s.chunk(
            1,
            1,
            block_end(0, json!({"type": "text", "text": "Hello there."})),
        ),
        s.chunk(1, 1, usage(20, 3, 0)),
        s.chunk(1, 1, finish("stop")),
        assistant(
            &mut s,
            (1, 1),
            "<id-1>",
            json!([{"type": "text", "text": "Hello there."}]),
            Some(usage_json(20, 3, 0)),
            7..13,
        ),
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ]);
    assert_log_eq(&e2e.log(), &log);
    let requests = e2e.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].body,
        body(
            vec![system(), json!({"role": "user", "content": "hi"})],
            false
        )
    );
    e2e.verify();
}

#[tokio::test]
async fn reasoning_and_text_become_two_blocks_and_reasoning_is_replayed_next_turn() {
    let script = Script::new()
        .respond(
            Reply::text("Yes, I am here.")
                .with_reasoning("Simple question.")
                .chunks(3)
                .usage(usage_spec(20, 9)),
        )
        .respond(Reply::text("Still here.").usage(usage_spec(40, 3)));
    let e2e = E2e::start(script, Setup::default()).await;
    e2e.run("hi").await;
    e2e.run("again").await;
    let reasoning = json!({"type": "reasoning", "text": "Simple question."});
    let text = json!({"type": "text", "text": "Yes, I am here."});
    let mut log = turn_opening("hi", false);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "reasoning")),
        s.chunk(1, 1, reasoning_delta(0, "Simple")),
        s.chunk(1, 1, reasoning_delta(0, " ques")),
        s.chunk(1, 1, reasoning_delta(0, "tion.")),
        s.chunk(1, 1, block_start(1, "text")),
        s.chunk(1, 1, text_delta(1, "Yes, ")),
        s.chunk(1, 1, text_delta(1, "I am ")),
        s.chunk(1, 1, text_delta(1, "here.")),
        s.chunk(1, 1, block_end(0, reasoning.clone())),
        s.chunk(1, 1, block_end(1, text.clone())),
        s.chunk(1, 1, usage(20, 9, 4)),
        s.chunk(1, 1, finish("stop")),
        assistant(
            &mut s,
            (1, 1),
            "<id-1>",
            json!([reasoning, text]),
            Some(usage_json(20, 9, 4)),
            7..19,
        ),
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event("turn/end", json!({"turn": 1, "reason": {"kind": "completed"}})),
        // Turn 2: same loop instance, same header: no request/header or request/context.
        s.event("agent/inbox/spliced", json!({"target": "next-turn", "start": 0, "inserted": [user_json("again")]})),
        s.event("turn/start", json!({"turn": 2})),
        s.event("agent/inbox/spliced", json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []})),
        s.event("step/start", json!({"turn": 2, "step": 1})),
        json!({"type": "user/message", "seq": s.next(), "data": user_json("again"), "surfaceOp": "append"}),
        s.chunk(2, 1, block_start(0, "text")),
        s.chunk(2, 1, text_delta(0, "Still here.")),
        s.chunk(2, 1, block_end(0, json!({"type": "text", "text": "Still here."}))),
        s.chunk(2, 1, usage(40, 3, 0)),
        s.chunk(2, 1, finish("stop")),
        assistant(
            &mut s,
            (2, 1),
            "<id-2>",
            json!([{"type": "text", "text": "Still here."}]),
            Some(usage_json(40, 3, 0)),
            27..32,
        ),
        s.event("step/end", json!({"turn": 2, "step": 1})),
        s.event("turn/end", json!({"turn": 2, "reason": {"kind": "completed"}})),
    ]);
    assert_log_eq(&e2e.log(), &log);
    // DeepSeek replays reasoning on every assistant message, tool calls or not.
    let requests = e2e.server.requests();
    assert_eq!(
        requests[1].body,
        body(
            vec![
                system(),
                json!({"role": "user", "content": "hi"}),
                json!({"role": "assistant", "content": "Yes, I am here.", "reasoning_content": "Simple question."}),
                json!({"role": "user", "content": "again"}),
            ],
            false
        )
    );
    e2e.verify();
}

#[tokio::test]
async fn parallel_tool_calls_over_many_argument_deltas_then_an_answer() {
    let script = Script::new()
        .respond(
            Reply::default()
                .with_reasoning("Use both tools.")
                .with_tool_call("echo", json!({"text": "one two"}))
                .with_tool_call("shout", json!({"text": "three"}))
                .arg_chunks(4)
                .usage(usage_spec(50, 20)),
        )
        .respond(
            Reply::text("Done: one two, THREE.")
                .chunks(2)
                .usage(usage_spec(80, 6)),
        );
    let e2e = E2e::start(script, Setup::default().with_tools()).await;
    e2e.run("go").await;
    let (echo, shout) = ("call_0_0_97b336f8", "call_0_1_89f3cb73");
    let echo_args = r#"{"text": "one two"}"#;
    let shout_args = r#"{"text": "three"}"#;
    let call = |index: u32, id: &str, name: &str, delta: &str| json!({"type": "tool-call-delta", "index": index, "id": id, "name": name, "argumentsDelta": delta});
    let call_block = |id: &str, name: &str, args: &str| json!({"type": "tool-call", "id": id, "name": name, "arguments": args});
    let reasoning = json!({"type": "reasoning", "text": "Use both tools."});
    let result = |s: &mut Seq, id: &str, call_seq: u64, msg_id: &str, text: &str| {
        json!({"type": "tool/result", "seq": s.next(), "surfaceOp": "append",
            "data": {"turn": 1, "step": 1, "message": {"id": msg_id, "role": "user",
                "content": [{"type": "tool-result", "toolCallId": id,
                    "content": [{"type": "text", "text": text}], "isError": false}],
                "source": {"kind": "tool", "callId": id}}},
            "sourceEventSeqs": [call_seq]})
    };
    let mut log = turn_opening("go", true);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "reasoning")),
        s.chunk(1, 1, reasoning_delta(0, "Use both tools.")),
        s.chunk(1, 1, block_start(1, "tool-call")),
        s.chunk(1, 1, call(1, echo, "echo", "{\"tex")),
        s.chunk(1, 1, call(1, echo, "echo", "t\": \"")),
        s.chunk(1, 1, call(1, echo, "echo", "one t")),
        s.chunk(1, 1, call(1, echo, "echo", "wo\"}")),
        s.chunk(1, 1, block_start(2, "tool-call")),
        s.chunk(1, 1, call(2, shout, "shout", "{\"tex")),
        s.chunk(1, 1, call(2, shout, "shout", "t\": ")),
        s.chunk(1, 1, call(2, shout, "shout", "\"thr")),
        s.chunk(1, 1, call(2, shout, "shout", "ee\"}")),
        s.chunk(1, 1, block_end(0, reasoning.clone())),
        s.chunk(1, 1, block_end(1, call_block(echo, "echo", echo_args))),
        s.chunk(1, 1, block_end(2, call_block(shout, "shout", shout_args))),
        s.chunk(1, 1, usage(50, 20, 3)),
        s.chunk(1, 1, finish("tool-calls")),
        assistant(
            &mut s,
            (1, 1),
            "<id-1>",
            json!([
                reasoning,
                call_block(echo, "echo", echo_args),
                call_block(shout, "shout", shout_args)
            ]),
            Some(usage_json(50, 20, 3)),
            7..24,
        ),
        s.event("tool/call", json!({"turn": 1, "step": 1, "callId": echo, "name": "echo", "arguments": echo_args})),
        s.event("tool/call", json!({"turn": 1, "step": 1, "callId": shout, "name": "shout", "arguments": shout_args})),
        result(&mut s, echo, 25, "<id-2>", "one two"),
        result(&mut s, shout, 26, "<id-3>", "THREE"),
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event("step/start", json!({"turn": 1, "step": 2})),
        s.chunk(1, 2, block_start(0, "text")),
        s.chunk(1, 2, text_delta(0, "Done: one t")),
        s.chunk(1, 2, text_delta(0, "wo, THREE.")),
        s.chunk(1, 2, block_end(0, json!({"type": "text", "text": "Done: one two, THREE."}))),
        s.chunk(1, 2, usage(80, 6, 0)),
        s.chunk(1, 2, finish("stop")),
        assistant(
            &mut s,
            (1, 2),
            "<id-4>",
            json!([{"type": "text", "text": "Done: one two, THREE."}]),
            Some(usage_json(80, 6, 0)),
            31..37,
        ),
        s.event("step/end", json!({"turn": 1, "step": 2})),
        s.event("turn/end", json!({"turn": 1, "reason": {"kind": "completed"}})),
    ]);
    assert_log_eq(&e2e.log(), &log);
    // The follow-up request replays the reasoning with the tool calls, then one `tool`
    // message per result, in model order.
    let requests = e2e.server.requests();
    assert_eq!(requests.len(), 2);
    let wire_call = |id: &str, name: &str, args: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
    assert_eq!(
        requests[1].body,
        body(
            vec![
                system(),
                json!({"role": "user", "content": "go"}),
                json!({"role": "assistant", "content": "", "reasoning_content": "Use both tools.",
                    "tool_calls": [wire_call(echo, "echo", echo_args), wire_call(shout, "shout", shout_args)]}),
                json!({"role": "tool", "tool_call_id": echo, "content": "one two"}),
                json!({"role": "tool", "tool_call_id": shout, "content": "THREE"}),
            ],
            true
        )
    );
    e2e.verify();
}

#[tokio::test]
async fn a_length_finish_drops_tool_calls_and_ends_the_turn_max_tokens() {
    let script = Script::new().respond(
        Reply::text("Let me")
            .with_tool_call("echo", json!({"text": "x"}))
            .finish_reason("length")
            .usage(usage_spec(40, 5)),
    );
    let e2e = E2e::start(script, Setup::default().with_tools()).await;
    e2e.run("hi").await;
    let (id, args) = ("call_0_0_6d61fe32", r#"{"text": "x"}"#);
    let text = json!({"type": "text", "text": "Let me"});
    let mut log = turn_opening("hi", true);
    let mut s = Seq(7);
    log.extend([
        s.chunk(1, 1, block_start(0, "text")),
        s.chunk(1, 1, text_delta(0, "Let me")),
        s.chunk(1, 1, block_start(1, "tool-call")),
        s.chunk(
            1,
            1,
            json!({"type": "tool-call-delta", "index": 1, "id": id, "name": "echo", "argumentsDelta": args}),
        ),
        s.chunk(1, 1, block_end(0, text.clone())),
        s.chunk(
            1,
            1,
            block_end(
                1,
                json!({"type": "tool-call", "id": id, "name": "echo", "arguments": args}),
            ),
        ),
        s.chunk(1, 1, usage(40, 5, 0)),
        s.chunk(1, 1, finish("max-tokens")),
        // The capped message keeps its text and drops the call; no tool runs.
        assistant(
            &mut s,
            (1, 1),
            "<id-1>",
            json!([text]),
            Some(usage_json(40, 5, 0)),
            7..15,
        ),
        s.event("step/end", json!({"turn": 1, "step": 1})),
        s.event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "max-tokens"}}),
        ),
    ]);
    assert_log_eq(&e2e.log(), &log);
    e2e.verify();
}
