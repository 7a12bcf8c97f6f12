//! The depth cap and unknown ids: typed refusals the model can act on, and nothing created.

use super::*;
use dsh_agent::{CreateAgentOptions, SessionMeta};
use dsh_testkit::harness::{agent_options, msg};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response};

fn tool_lines(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .filter(|l| l.starts_with("tool/") || l.starts_with("turn/"))
        .collect()
}

#[tokio::test]
async fn a_delegation_past_depth_three_is_refused_and_creates_no_session() {
    let t = Tree::build(|req| {
        if last(req) == "go" {
            return tool_call_response(&[(
                "c1",
                "subagent",
                r#"{"description":"deeper","prompt":"go deeper","run_in_background":false}"#,
            )]);
        }
        text_response("ok")
    });
    let options = CreateAgentOptions {
        session_id: Some("agent-1".into()),
        agent_options: agent_options(),
        meta: SessionMeta {
            delegation_depth: Some(3),
            ..SessionMeta::default()
        },
        ..Default::default()
    };
    let parent =
        t.h.create_agent_with(options)
            .await
            .unwrap()
            .agent()
            .clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    assert_eq!(
        tool_lines(outline(&parent.session().events())),
        [
            "turn/start 1",
            r#"tool/call c1 subagent {"description":"deeper","prompt":"go deeper","run_in_background":false}"#,
            "tool/result ERR Error: subagent depth 4 exceeds maxDepth 3; do the work yourself instead of delegating it further [SUBAGENT_DEPTH] cites [13]",
            "turn/end 1 completed",
        ]
    );
    // Only the parent's own session exists.
    assert_eq!(t.session_count(), 1);
    t.h.finish().await;
}

#[tokio::test]
async fn a_child_at_depth_two_may_still_delegate_to_depth_three() {
    let t = Tree::build(|req| {
        if last(req) == "go" {
            return tool_call_response(&[(
                "c1",
                "subagent",
                r#"{"description":"last level","prompt":"work","run_in_background":false}"#,
            )]);
        }
        text_response("ok")
    });
    let options = CreateAgentOptions {
        session_id: Some("agent-1".into()),
        agent_options: agent_options(),
        meta: SessionMeta {
            delegation_depth: Some(2),
            ..SessionMeta::default()
        },
        ..Default::default()
    };
    let parent =
        t.h.create_agent_with(options)
            .await
            .unwrap()
            .agent()
            .clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    let children = t.children(&["agent-1"]);
    assert_eq!(children.len(), 1);
    assert_eq!(children[0].header().delegation_depth, Some(3));
    t.h.finish().await;
}

#[tokio::test]
async fn unknown_agent_ids_are_refused_with_a_hint() {
    let t = Tree::build(|req| {
        if last(req) == "go" {
            return tool_call_response(&[
                (
                    "c1",
                    "send_message",
                    r#"{"subagent_id":"bash-1","message":"more"}"#,
                ),
                ("c2", "interrupt_agent", r#"{"agent_id":"nope"}"#),
                ("c3", "list_agents", "{}"),
            ]);
        }
        text_response("ok")
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    let results: Vec<String> = outline(&parent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("tool/result"))
        .collect();
    assert_eq!(
        results,
        [
            "tool/result ERR Error: unknown subagent bash-1: use an id returned by subagent (list_agents shows them); a background job id (bash-N, subagent-N) is read with job_output instead [UNKNOWN_SUBAGENT] cites [19]",
            "tool/result ERR Error: unknown subagent nope: use an id returned by subagent (list_agents shows them); a background job id (bash-N, subagent-N) is read with job_output instead [UNKNOWN_SUBAGENT] cites [20]",
            "tool/result (no subagents) cites [21]",
        ]
    );
    t.h.finish().await;
}
