//! Cancellation flows down the tree: a cancelled parent stops its foreground child, and the
//! child's cancelled turn stops its own background child, each with cause `parent`.

use super::*;
use dsh_agent::{AgentCancelCause, CancelOptions};
use dsh_testkit::harness::{msg, until};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response};

fn turn_ends(session: &Session) -> Vec<String> {
    outline(&session.events())
        .into_iter()
        .filter(|l| l.starts_with("turn/end"))
        .collect()
}

#[tokio::test]
async fn a_cancelled_parent_stops_its_child_and_grandchild_with_cause_parent() {
    let t = Tree::build(|req| {
        if for_session(req, "agent-1") {
            if last(req) == "go" {
                return tool_call_response(&[(
                    "c1",
                    "subagent",
                    r#"{"description":"mid","prompt":"mid task","run_in_background":false}"#,
                )]);
            }
            return text_response("parent done");
        }
        if mentions(req, "leaf task") {
            return tool_call_response(&[("g1", "gate", r#"{"name":"leaf"}"#)]);
        }
        if last(req).starts_with("started subagent") {
            return tool_call_response(&[("g2", "gate", r#"{"name":"mid"}"#)]);
        }
        tool_call_response(&[(
            "c2",
            "subagent",
            r#"{"description":"leaf","prompt":"leaf task"}"#,
        )])
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    let parked = |t: &Tree| {
        let calls: Vec<String> = t
            .children(&["agent-1"])
            .iter()
            .flat_map(|s| outline(&s.events()))
            .filter(|l| l.starts_with("tool/call g"))
            .collect();
        calls.len() == 2
    };
    until(|| parked(&t)).await;
    parent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    parent.when_idle().await;
    let children = t.children(&["agent-1"]);
    assert_eq!(children.len(), 2);
    let (mid, leaf) = (&children[0], &children[1]);
    assert_eq!(leaf.header().parent_session.as_ref(), Some(mid.id()));
    assert_eq!(leaf.header().delegation_depth, Some(2));
    until(|| !turn_ends(leaf).is_empty()).await;
    assert_eq!(
        turn_ends(&parent.session().clone()),
        ["turn/end 1 aborted user"]
    );
    assert_eq!(
        turn_ends(mid).first().map(String::as_str),
        Some("turn/end 1 aborted parent")
    );
    assert_eq!(
        turn_ends(leaf).first().map(String::as_str),
        Some("turn/end 1 aborted parent")
    );
    t.h.finish().await;
}
