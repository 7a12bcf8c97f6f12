//! `subagent_fork`: the child starts from exactly the parent's completed turns, as the
//! parent's model saw them, and sees nothing of the turn in flight.

use super::*;
use dsh_session::EventData;
use dsh_testkit::harness::msg;
use dsh_testkit::scripted::{text_response, tool_call_response};

#[tokio::test]
async fn a_forked_child_sees_exactly_the_parents_completed_prefix() {
    let t = Tree::build(|req| {
        if for_session(req, "agent-1") {
            return match last(req).as_str() {
                "hello" => text_response("hi there"),
                "fork it" => tool_call_response(&[(
                    "c1",
                    "subagent_fork",
                    r#"{"description":"review","prompt":"review what we said"}"#,
                )]),
                _ => text_response("thanks"),
            };
        }
        text_response("reviewed")
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("hello")).unwrap();
    parent.when_idle().await;
    let turn_one_len = parent.session().len() as usize;
    parent.followup(msg("fork it")).unwrap();
    parent.when_idle().await;

    let child = t.children(&["agent-1"]).remove(0);
    let parent_events = parent.session().events();
    let child_events = child.events();
    // The seed is the parent's log through its first turn/end, event for event.
    assert_eq!(child.header().seed_length, Some(turn_one_len as u64));
    assert!(matches!(
        parent_events[turn_one_len - 1].data,
        EventData::TurnEnd(_)
    ));
    assert_eq!(
        &child_events[..turn_one_len],
        &parent_events[..turn_one_len]
    );
    assert!(matches!(
        child_events[turn_one_len].data,
        EventData::EndSeed
    ));

    // The child's first request starts with the parent's history as the parent's model
    // saw it in turn 2, minus the in-flight prompt, then carries its own task.
    let requests = t.h.adapter().requests();
    let parent_turn_two = requests
        .iter()
        .find(|r| for_session(r, "agent-1") && last(r) == "fork it")
        .unwrap();
    let child_first = requests
        .iter()
        .find(|r| for_session(r, child.id().as_str()))
        .unwrap();
    let inherited = parent_turn_two.messages.len() - 1;
    assert_eq!(
        &child_first.messages[..inherited],
        &parent_turn_two.messages[..inherited]
    );
    assert!(!mentions(child_first, "fork it"));
    assert!(mentions(child_first, "review what we said"));
    assert!(mentions(child_first, "hi there"));
    t.h.finish().await;
}
