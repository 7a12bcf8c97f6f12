//! A foreground child: the parent's call waits for the child's whole run and reads its
//! closing message; the child is a session of its own, linked to the parent.

use super::*;
use dsh_testkit::harness::msg;
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response};

pub(super) fn route(req: &LlmRequest) -> Vec<StreamChunk> {
    if for_session(req, "agent-1") {
        if last(req) == "go" {
            let args = r#"{"description":"find callers","prompt":"find every caller of parse()","run_in_background":false}"#;
            return tool_call_response(&[("c1", "subagent", args)]);
        }
        return text_response(&format!("parent read: {}", last(req)));
    }
    text_response("parse() is called from main.rs and cli.rs")
}

#[tokio::test]
async fn a_foreground_child_runs_to_its_end_and_its_answer_is_the_result() {
    let t = Tree::build(route);
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;

    let children = t.children(&["agent-1"]);
    assert_eq!(children.len(), 1);
    let child = &children[0];
    let call = r#"{"description":"find callers","prompt":"find every caller of parse()","run_in_background":false}"#;
    let answer = "parse() is called from main.rs and cli.rs";
    let answer_chunks = [
        "chunk block-start",
        "chunk text-delta",
        "chunk block-end",
        "chunk usage",
        "chunk finish",
    ];
    let mut expected: Vec<String> = vec![
        r#"splice next-turn @0 -0 +["go"]"#.into(),
        "turn/start 1".into(),
        "splice next-turn @0 -1 +[]".into(),
        "step/start 1.1".into(),
        "user: go".into(),
        "request/header initial".into(),
        "request/context scripted/scripted-model".into(),
        "chunk block-start".into(),
        "chunk tool-call-delta".into(),
        "chunk block-end".into(),
        "chunk usage".into(),
        "chunk finish".into(),
        "assistant: <call c1 subagent> +usage cites [7, 8, 9, 10, 11]".into(),
        format!("tool/call c1 subagent {call}"),
        format!("tool/result {answer} cites [13]"),
        "step/end 1.1".into(),
        "step/start 1.2".into(),
    ];
    expected.extend(answer_chunks.iter().map(|s| s.to_string()));
    expected.extend([
        format!("assistant: parent read: {answer} +usage cites [17, 18, 19, 20, 21]"),
        "step/end 1.2".into(),
        "turn/end 1 completed".into(),
    ]);
    assert_eq!(outline(&parent.session().events()), expected);

    let mut expected: Vec<String> = vec![
        r#"splice next-turn @0 -0 +["find every caller of parse()"]"#.into(),
        "turn/start 1".into(),
        "splice next-turn @0 -1 +[]".into(),
        // Inside the first turn, before its first step.
        "subagent/descriptor".into(),
        "step/start 1.1".into(),
        "user: find every caller of parse()".into(),
        format!("user: Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n{DELEGATION}"),
        "request/header initial".into(),
        "request/context scripted/scripted-model".into(),
    ];
    expected.extend(answer_chunks.iter().map(|s| s.to_string()));
    expected.extend([
        format!("assistant: {answer} +usage cites [9, 10, 11, 12, 13]"),
        "step/end 1.1".into(),
        "turn/end 1 completed".into(),
    ]);
    assert_eq!(outline(&child.events()), expected);
    let descriptor = child.events()[3].data.to_value();
    assert_eq!(
        descriptor,
        json!({"version": 2, "mode": "one-shot", "provider": "spawn", "label": "find callers"})
    );
    // The child's task is a person's message, as on every path.
    assert_eq!(
        child.events()[5].message().unwrap().source,
        dsh_protocol::MessageSource::user()
    );
    let header = serde_json::to_value(child.header()).unwrap();
    assert_eq!(header["parentSession"], "agent-1");
    assert_eq!(header["origin"], "subagent");
    assert_eq!(header["delegationDepth"], 1);
    assert!(header.get("seedLength").is_none());
    // The parent works for a person; the child does not.
    assert!(!dsh_subagents::is_delegated(
        parent.as_ref(),
        Some(t.h.registry())
    ));
    // A one-shot child is gone once its result is in.
    assert!(t.h.registry().get(child.id()).is_none());
    t.h.finish().await;
}

#[tokio::test]
async fn the_configured_persona_and_tool_filter_shape_every_child_but_not_the_parent() {
    let config = SubagentsConfig {
        persona: Some("You are a meticulous reviewer.".into()),
        tool_filter: Some(dsh_subagents::ToolFilter {
            allow: None,
            deny: Some(vec!["list_agents".into()]),
        }),
        ..SubagentsConfig::default()
    };
    let t = Tree::with_config(config, |req| {
        if for_session(req, "agent-1") {
            if last(req) == "go" {
                return tool_call_response(&[
                    (
                        "c1",
                        "subagent",
                        r#"{"description":"fg","prompt":"foreground task","run_in_background":false}"#,
                    ),
                    (
                        "c2",
                        "subagent",
                        r#"{"description":"bg","prompt":"background task"}"#,
                    ),
                ]);
            }
            return text_response("ok");
        }
        if mentions(req, "foreground task") {
            // The filtered tool is refused even if the model calls it.
            if req
                .messages
                .iter()
                .any(|m| m.role == dsh_protocol::Role::Assistant)
            {
                return text_response("could not list");
            }
            return tool_call_response(&[("l1", "list_agents", "{}")]);
        }
        text_response("done")
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    let background = t
        .subagents
        .children(&"agent-1".into())
        .into_iter()
        .find(|c| c.label == "bg")
        .unwrap();
    dsh_testkit::harness::until(|| t.subagents.get(&background.id).is_some_and(|c| !c.working))
        .await;
    parent.when_idle().await;

    let requests = t.h.adapter().requests();
    let tool_names = |r: &LlmRequest| -> Vec<String> {
        r.tools.iter().flatten().map(|s| s.name.clone()).collect()
    };
    let parent_first = requests.iter().find(|r| for_session(r, "agent-1")).unwrap();
    assert!(tool_names(parent_first).contains(&"list_agents".to_owned()));
    assert!(!parent_first
        .system
        .as_deref()
        .unwrap_or_default()
        .contains("meticulous reviewer"));
    assert!(!tool_names(parent_first).contains(&"report".to_owned()));
    for task in ["foreground task", "background task"] {
        let child = requests
            .iter()
            .find(|r| !for_session(r, "agent-1") && mentions(r, task))
            .unwrap();
        let names = tool_names(child);
        assert!(
            !names.contains(&"list_agents".to_owned()),
            "{task}: {names:?}"
        );
        assert!(child
            .system
            .as_deref()
            .unwrap_or_default()
            .contains("You are a meticulous reviewer."));
        // Only the continuable child reports.
        assert_eq!(
            names.contains(&"report".to_owned()),
            task == "background task",
            "{names:?}"
        );
    }
    let fg = t
        .children(&["agent-1"])
        .into_iter()
        .find(|s| {
            outline(&s.events())
                .iter()
                .any(|l| l.contains("foreground task"))
        })
        .unwrap();
    let refused = outline(&fg.events())
        .into_iter()
        .find(|l| l.starts_with("tool/result"))
        .unwrap();
    assert!(refused.starts_with("tool/result ERR "), "{refused}");
    t.h.finish().await;
}
