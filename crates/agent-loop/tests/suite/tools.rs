//! The tool-call scheduler (spec §7.3).

use super::harness::{Harness, Log, TestTool};
use super::normalize::outline;
use super::scripted::{text, tool_calls};
use super::turns::msg;
use dsh_agent_loop::AgentLoopConfig;

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
    let h = Harness::new();
    let log = Log::default();
    h.register(TestTool::new("echo", &log).arc());
    h.model
        .push(tool_calls(&[("c1", "echo", r#"{"text":"x"}"#)]));
    h.model.push(text("done"));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        tool_lines(outline(agent.session())),
        [
            "turn/start 1",
            "step/start 1.1",
            "user: go",
            "assistant: <call c1 echo> cites [7, 8, 9, 10]",
            "tool/call c1 echo {\"text\":\"x\"}",
            "tool/result echo:x cites [12]",
            "step/end 1.1",
            "step/start 1.2",
            "assistant: done +usage cites [16, 17, 18, 19, 20]",
            "step/end 1.2",
            "turn/end 1 completed",
        ]
    );
    // The second request saw the call and its result; the header lists the tool.
    let second = &h.model.requests()[1];
    assert_eq!(second.messages.len(), 3);
    assert_eq!(
        second.tools.as_ref().map(|t| t[0].name.as_str()),
        Some("echo")
    );
}

#[tokio::test]
async fn parallel_calls_run_together_and_commit_in_model_order() {
    let h = Harness::new();
    let log = Log::default();
    // Finish in reverse order: c3 first, c1 last.
    h.register(TestTool::new("slow", &log).parallel().delay(60).arc());
    h.register(TestTool::new("mid", &log).parallel().delay(30).arc());
    h.register(TestTool::new("fast", &log).parallel().arc());
    h.model.push(tool_calls(&[
        ("c1", "slow", "{}"),
        ("c2", "mid", "{}"),
        ("c3", "fast", "{}"),
    ]));
    h.model.push(text("done"));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let events = log.lock().unwrap().clone();
    assert_eq!(events[..3], ["start c1", "start c2", "start c3"]);
    assert_eq!(events[3..], ["end c3", "end c2", "end c1"]);
    let tools: Vec<String> = outline(agent.session())
        .into_iter()
        .filter(|l| l.starts_with("tool/"))
        .collect();
    assert_eq!(
        tools,
        [
            "tool/call c1 slow {}",
            "tool/call c2 mid {}",
            "tool/call c3 fast {}",
            "tool/result slow: cites [18]",
            "tool/result mid: cites [19]",
            "tool/result fast: cites [20]",
        ]
    );
}

#[tokio::test]
async fn exclusive_calls_are_barriers_and_the_cap_is_live() {
    let h = Harness::with_config(AgentLoopConfig {
        max_parallel_tool_calls: Some(2),
        ..Default::default()
    });
    let log = Log::default();
    h.register(TestTool::new("p", &log).parallel().delay(20).arc());
    h.register(TestTool::new("x", &log).arc());
    h.model.push(tool_calls(&[
        ("p1", "p", "{}"),
        ("p2", "p", "{}"),
        ("p3", "p", "{}"),
        ("x1", "x", "{}"),
        ("p4", "p", "{}"),
    ]));
    h.model.push(text("done"));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let events = log.lock().unwrap().clone();
    // Cap 2: p3 starts only after one of p1/p2 ended; x1 waits for the whole group.
    let pos = |s: &str| events.iter().position(|e| e == s).unwrap();
    assert!(pos("start p2") < pos("end p1"));
    assert!(pos("start p3") > pos("end p1").min(pos("end p2")));
    assert!(pos("start x1") > pos("end p3"));
    assert!(pos("start p4") > pos("end x1"));
    assert_eq!(h.agent_loop.max_parallel_tool_calls(), 2);

    // Live setting: 1 makes the next group serial.
    h.agent_loop.set_max_parallel_tool_calls(1);
    log.lock().unwrap().clear();
    h.model
        .push(tool_calls(&[("q1", "p", "{}"), ("q2", "p", "{}")]));
    h.model.push(text("done"));
    agent.followup(msg("again")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        *log.lock().unwrap(),
        ["start q1", "end q1", "start q2", "end q2"]
    );
}

#[tokio::test]
async fn contexts_go_to_next_step_and_a_concluding_result_ends_the_turn() {
    let h = Harness::new();
    let log = Log::default();
    let mut finisher = TestTool::new("finish", &log);
    finisher.concludes = true;
    finisher.context = Some("remember this");
    h.register(finisher.arc());
    h.model.push(tool_calls(&[("c1", "finish", "{}")]));
    h.model.push(text("after"));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let lines = tool_lines(outline(agent.session()));
    // The result concludes the step, but the pending context still earns a step.
    assert_eq!(
        lines[3..],
        [
            "assistant: <call c1 finish> cites [7, 8, 9, 10]",
            "tool/call c1 finish {}",
            "tool/result finish: cites [12]",
            "splice next-step @0 -0 +[\"remember this\"]",
            "step/end 1.1",
            "splice next-step @0 -1 +[]",
            "step/start 1.2",
            "user: remember this",
            "assistant: after +usage cites [19, 20, 21, 22, 23]",
            "step/end 1.2",
            "turn/end 1 completed",
        ]
    );
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_become_error_results() {
    let h = Harness::new();
    let log = Log::default();
    h.register(TestTool::new("echo", &log).arc());
    h.model.push(tool_calls(&[
        ("c1", "nope", "{}"),
        ("c2", "echo", "not json"),
    ]));
    h.model.push(text("done"));
    let agent = h.agent("s1").await.agent().clone();
    agent.followup(msg("go")).unwrap();
    agent.when_idle().await;
    let results: Vec<String> = outline(agent.session())
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
        outline(agent.session()).last().unwrap(),
        "turn/end 1 completed"
    );
}
