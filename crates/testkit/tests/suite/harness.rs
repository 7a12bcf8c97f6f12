//! The harness's own guarantees: `finish` checks every agent's log, including agents it was
//! never told about, and `outline` renders a whole turn line by line.

use dsh_agent::CreateAgentOptions;
use dsh_protocol::SessionId;
use dsh_session::{AppendOptions, EventData, StepBoundary};
use dsh_testkit::harness::{agent_options, msg, Harness, ScriptedTool};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response};

#[tokio::test]
#[should_panic(expected = "session log breaks invariants")]
async fn finish_checks_agents_only_the_registry_knows() {
    let h = Harness::builder().build();
    // Created behind the harness's back (as a listener or the loop's config would).
    let stray = h
        .registry()
        .create(
            h.ctx(),
            CreateAgentOptions {
                session_id: Some(SessionId::from("stray")),
                agent_options: agent_options(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    stray
        .agent()
        .session()
        .append(
            EventData::StepEnd(StepBoundary { turn: 1, step: 1 }),
            AppendOptions::log_only(),
        )
        .unwrap();
    h.finish().await;
}

#[tokio::test]
async fn a_held_tool_turn_outlines_line_by_line() {
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("note").held().defers_context("noted")])
        .script([
            tool_call_response(&[("c1", "note", r#"{"text":"x"}"#)]).into(),
            text_response("done").into(),
        ])
        .build();
    let agent = h.create_agent_named("a").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    h.probe().wait_for("start c1").await;
    assert_eq!(h.probe().journal(), ["start c1"], "held until released");
    h.probe().release("c1");
    agent.when_idle().await;
    assert_eq!(
        outline(&agent.session().events()),
        [
            "splice next-turn @0 -0 +[\"go\"]",
            "turn/start 1",
            "splice next-turn @0 -1 +[]",
            "step/start 1.1",
            "user: go",
            "request/header initial",
            "request/context scripted/scripted-model",
            "chunk block-start",
            "chunk tool-call-delta",
            "chunk block-end",
            "chunk usage",
            "chunk finish",
            "assistant: <call c1 note> +usage cites [7, 8, 9, 10, 11]",
            "tool/call c1 note {\"text\":\"x\"}",
            "tool/result note:x cites [13]",
            "splice next-step @0 -0 +[\"noted\"]",
            "step/end 1.1",
            "splice next-step @0 -1 +[]",
            "step/start 1.2",
            "user: noted",
            "chunk block-start",
            "chunk text-delta",
            "chunk block-end",
            "chunk usage",
            "chunk finish",
            "assistant: done +usage cites [20, 21, 22, 23, 24]",
            "step/end 1.2",
            "turn/end 1 completed",
        ]
    );
    assert_eq!(h.probe().journal(), ["start c1", "end c1"]);
    h.finish().await;
}
