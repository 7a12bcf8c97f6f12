//! The tool-call scheduler (spec §7.3).

use dsh_testkit::harness::{msg, Harness, ScriptedTool};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response};

fn tool_lines(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .filter(|l| {
            [
                "turn/",
                "step/",
                "tool/",
                "assistant",
                "user:",
                "splice next-step",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .collect()
}

#[tokio::test]
async fn a_tool_loop_takes_two_steps_and_feeds_results_back() {
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("echo")])
        .script([
            tool_call_response(&[("c1", "echo", r#"{"text":"x"}"#)]).into(),
            text_response("done").into(),
        ])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        tool_lines(outline(&agent.session().events())),
        [
            "turn/start 1",
            "step/start 1.1",
            "user: go",
            "assistant: <call c1 echo> +usage cites [7, 8, 9, 10, 11]",
            "tool/call c1 echo {\"text\":\"x\"}",
            "tool/result echo:x cites [13]",
            "step/end 1.1",
            "step/start 1.2",
            "assistant: done +usage cites [17, 18, 19, 20, 21]",
            "step/end 1.2",
            "turn/end 1 completed",
        ]
    );
    // The second request saw the call and its result; the header lists the tool.
    let second = &h.adapter().requests()[1];
    assert_eq!(second.messages.len(), 3);
    assert_eq!(
        second.tools.as_ref().map(|t| t[0].name.as_str()),
        Some("echo")
    );
    h.finish().await;
}

#[tokio::test]
async fn parallel_calls_run_together_and_commit_in_model_order() {
    let h = Harness::builder()
        .scripted_tools([
            ScriptedTool::new("slow").parallel().held(),
            ScriptedTool::new("mid").parallel().held(),
            ScriptedTool::new("fast").parallel().held(),
        ])
        .script([
            tool_call_response(&[
                ("c1", "slow", "{}"),
                ("c2", "mid", "{}"),
                ("c3", "fast", "{}"),
            ])
            .into(),
            text_response("done").into(),
        ])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    let probe = h.probe();
    // All three run at once; they finish in reverse order: c3 first, c1 last.
    for id in ["c1", "c2", "c3"] {
        probe.wait_for(&format!("start {id}")).await;
    }
    for id in ["c3", "c2", "c1"] {
        probe.release(id);
        probe.wait_for(&format!("end {id}")).await;
    }
    agent.when_idle().await;
    assert_eq!(
        probe.journal(),
        ["start c1", "start c2", "start c3", "end c3", "end c2", "end c1"]
    );
    let tools: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("tool/"))
        .collect();
    assert_eq!(
        tools,
        [
            "tool/call c1 slow {}",
            "tool/call c2 mid {}",
            "tool/call c3 fast {}",
            "tool/result slow: cites [19]",
            "tool/result mid: cites [20]",
            "tool/result fast: cites [21]",
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn exclusive_calls_are_barriers_and_the_cap_is_live() {
    let h = Harness::builder()
        .max_parallel(2)
        .scripted_tools([
            ScriptedTool::new("p").parallel().held(),
            ScriptedTool::new("x"),
        ])
        .script([
            tool_call_response(&[
                ("p1", "p", "{}"),
                ("p2", "p", "{}"),
                ("p3", "p", "{}"),
                ("x1", "x", "{}"),
                ("p4", "p", "{}"),
            ])
            .into(),
            text_response("done").into(),
        ])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    let probe = h.probe();
    agent.followup(msg("go")).unwrap();
    // Cap 2: p3 starts only after one of p1/p2 ended; x1 waits for the whole group, and p4
    // for x1.
    probe.wait_for("start p2").await;
    assert_eq!(probe.journal(), ["start p1", "start p2"]);
    probe.release("p1");
    probe.wait_for("start p3").await;
    probe.release("p2");
    probe.wait_for("end p2").await;
    probe.release("p3");
    probe.wait_for("start p4").await;
    probe.release("p4");
    agent.when_idle().await;
    assert_eq!(
        probe.journal(),
        [
            "start p1", "start p2", "end p1", "start p3", "end p2", "end p3", "start x1", "end x1",
            "start p4", "end p4",
        ]
    );
    assert_eq!(h.agent_loop().max_parallel_tool_calls(), 2);

    // Live setting: 1 makes the next group serial.
    h.agent_loop().set_max_parallel_tool_calls(1);
    let before = probe.journal().len();
    h.adapter()
        .push(tool_call_response(&[("q1", "p", "{}"), ("q2", "p", "{}")]));
    h.adapter().push(text_response("done"));
    agent.followup(msg("again")).unwrap();
    probe.wait_for("start q1").await;
    probe.release("q1");
    probe.wait_for("start q2").await;
    probe.release("q2");
    agent.when_idle().await;
    assert_eq!(
        probe.journal()[before..],
        ["start q1", "end q1", "start q2", "end q2"]
    );
    h.finish().await;
}

#[tokio::test]
async fn contexts_go_to_next_step_and_a_concluding_result_ends_the_turn() {
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("finish")
            .concludes()
            .defers_context("remember this")])
        .script([
            tool_call_response(&[("c1", "finish", "{}")]).into(),
            text_response("after").into(),
        ])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let lines = tool_lines(outline(&agent.session().events()));
    // The result concludes the step, but the pending context still earns a step.
    assert_eq!(
        lines[3..],
        [
            "assistant: <call c1 finish> +usage cites [7, 8, 9, 10, 11]",
            "tool/call c1 finish {}",
            "tool/result finish: cites [13]",
            "splice next-step @0 -0 +[\"remember this\"]",
            "step/end 1.1",
            "splice next-step @0 -1 +[]",
            "step/start 1.2",
            "user: remember this",
            "assistant: after +usage cites [20, 21, 22, 23, 24]",
            "step/end 1.2",
            "turn/end 1 completed",
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_become_error_results() {
    let h = Harness::builder()
        .scripted_tools([ScriptedTool::new("echo")])
        .script([
            tool_call_response(&[("c1", "nope", "{}"), ("c2", "echo", "not json")]).into(),
            text_response("done").into(),
        ])
        .build();
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let results: Vec<String> = outline(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("tool/result"))
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results[0].contains("[UNKNOWN_TOOL]"), "{results:?}");
    assert!(
        results[1].contains("[INVALID_TOOL_ARGUMENTS]"),
        "{results:?}"
    );
    assert_eq!(
        outline(&agent.session().events()).last().unwrap(),
        "turn/end 1 completed"
    );
    h.finish().await;
}
