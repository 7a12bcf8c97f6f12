//! Continuable children: started in the background, they settle into their parent — waking
//! it when it is idle, joining its current turn when it is busy — under the wake budget.

use super::*;
use dsh_agent::Agent;
use dsh_protocol::SessionId;
use dsh_testkit::harness::{msg, until};
use dsh_testkit::normalize::outline;
use dsh_testkit::scripted::{text_response, tool_call_response};

const SETTLED: &str = "finished and will do no further work";

/// The child's answers: wait at its gate, optionally report, then close.
fn child_route(
    req: &LlmRequest,
    gate: &str,
    report: Option<&str>,
    closing: &str,
) -> Vec<StreamChunk> {
    let last = last(req);
    if last.contains("report accepted") {
        return text_response(closing);
    }
    if last == format!("{gate} opened") {
        return match report {
            Some(output) => tool_call_response(&[(
                "r1",
                "report",
                &serde_json::to_string(&json!({"output": output})).unwrap(),
            )]),
            None => text_response(closing),
        };
    }
    tool_call_response(&[("g1", "gate", &format!(r#"{{"name":"{gate}"}}"#))])
}

fn only_child(t: &Tree) -> SessionId {
    let children = t.subagents.children(&SessionId::from("agent-1"));
    assert_eq!(children.len(), 1);
    children[0].id.clone()
}

/// `lines` with the child's id replaced by `<child>`.
fn anonymize(lines: Vec<String>, id: &SessionId) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| l.replace(id.as_str(), "<child>"))
        .collect()
}

async fn until_settled(t: &Tree, id: &SessionId) {
    until(|| t.subagents.get(id).is_some_and(|c| !c.working)).await;
}

#[tokio::test]
async fn a_settling_child_wakes_its_idle_parent_with_one_notice() {
    let t = Tree::build(|req| {
        if for_session(req, "agent-1") {
            let last = last(req);
            if last == "go" {
                return tool_call_response(&[(
                    "c1",
                    "subagent",
                    r#"{"description":"scan","prompt":"scan the repo"}"#,
                )]);
            }
            if last.contains(SETTLED) {
                return text_response("noted");
            }
            return text_response("started; waiting");
        }
        child_route(req, "child", None, "all done: 3 files")
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    let id = only_child(&t);
    // The gated child works: surfaces count it, and its settlement ticks their subscription.
    assert_eq!(t.subagents.working_count(), 1);
    let changes = t.subagents.subscribe();
    t.gates.open("child");
    until_settled(&t, &id).await;
    assert!(changes.has_changed().unwrap());
    assert_eq!(t.subagents.working_count(), 0);
    parent.when_idle().await;
    let answer = |text: &str, first: u64| -> Vec<String> {
        let mut lines: Vec<String> = ["block-start", "text-delta", "block-end", "usage", "finish"]
            .iter()
            .map(|c| format!("chunk {c}"))
            .collect();
        let cites: Vec<String> = (first..first + 5).map(|n| n.to_string()).collect();
        lines.push(format!(
            "assistant: {text} +usage cites [{}]",
            cites.join(", ")
        ));
        lines
    };
    let notice =
        "Background subagent <child> finished and will do no further work unless you send it more.";
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
        r#"tool/call c1 subagent {"description":"scan","prompt":"scan the repo"}"#.into(),
        // The call returns at once, before the child's first turn.
        "tool/result started subagent <child> cites [13]".into(),
        "step/end 1.1".into(),
        "step/start 1.2".into(),
    ];
    expected.extend(answer("started; waiting", 17));
    expected.extend([
        "step/end 1.2".into(),
        "turn/end 1 completed".into(),
        // The settlement opens a turn of the idle parent: one notice.
        format!(r#"splice next-turn @0 -0 +["{notice}Its closing message:all done: 3 files"]"#),
        "turn/start 2".into(),
        "splice next-turn @0 -1 +[]".into(),
        "step/start 2.1".into(),
        format!("user: {notice} Its closing message: all done: 3 files"),
    ]);
    expected.extend(answer("noted", 30));
    expected.extend(["step/end 2.1".into(), "turn/end 2 completed".into()]);
    assert_eq!(
        anonymize(outline(&parent.session().events()), &id),
        expected
    );

    let child = t.children(&["agent-1"]).remove(0);
    let mut expected: Vec<String> = vec![
        // The descriptor is the last seed event.
        "subagent/descriptor".into(),
        "session/end-seed".into(),
        r#"splice next-turn @0 -0 +["scan the repo"]"#.into(),
        "turn/start 1".into(),
        "splice next-turn @0 -1 +[]".into(),
        "step/start 1.1".into(),
        "user: scan the repo".into(),
        format!("user: Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n{DELEGATION}"),
        "request/header initial".into(),
        "request/context scripted/scripted-model".into(),
        "chunk block-start".into(),
        "chunk tool-call-delta".into(),
        "chunk block-end".into(),
        "chunk usage".into(),
        "chunk finish".into(),
        "assistant: <call g1 gate> +usage cites [10, 11, 12, 13, 14]".into(),
        r#"tool/call g1 gate {"name":"child"}"#.into(),
        "tool/result child opened cites [16]".into(),
        "step/end 1.1".into(),
        "step/start 1.2".into(),
    ];
    expected.extend(answer("all done: 3 files", 20));
    expected.extend(["step/end 1.2".into(), "turn/end 1 completed".into()]);
    assert_eq!(outline(&child.events()), expected);
    assert_eq!(
        child.events()[0].data.to_value(),
        json!({"version": 2, "mode": "continuable", "provider": "spawn", "label": "scan",
               "agentProvider": "scripted", "agentModel": "scripted-model"})
    );
    let last_notice = parent
        .session()
        .events()
        .iter()
        .rev()
        .find_map(|e| e.message().filter(|m| texts(m).contains(SETTLED)).cloned())
        .unwrap();
    assert_eq!(
        serde_json::to_value(&last_notice.source).unwrap(),
        json!({"kind": "subagent-settled", "form": "notice",
               "summary": format!("Background subagent {id} finished and will do no further work unless you send it more."),
               "senderSessionId": id.as_str()})
    );
    // A continuable child is owned by its parent: no delegated-caller guard takes it for a
    // person (spec §9 A5).
    let live = t.h.registry().get(&id).unwrap();
    assert!(t.h.registry().is_owned_by(&id, parent.id()));
    assert!(dsh_subagents::is_delegated(
        live.as_ref(),
        Some(t.h.registry())
    ));
    // Still loaded, between turns, and continuable.
    let snapshot = t.subagents.get(&id).unwrap();
    assert_eq!(
        (snapshot.status, snapshot.last_output.as_deref()),
        ("idle", Some("all done: 3 files"))
    );
    t.h.finish().await;
}

#[tokio::test]
async fn a_report_and_a_settlement_join_a_busy_parents_turn_at_its_next_step() {
    let t = Tree::build(|req| {
        if for_session(req, "agent-1") {
            let last = last(req);
            if last == "go" {
                return tool_call_response(&[(
                    "c1",
                    "subagent",
                    r#"{"description":"scan","prompt":"scan the repo"}"#,
                )]);
            }
            if last.starts_with("started subagent") {
                return tool_call_response(&[("p1", "gate", r#"{"name":"parent"}"#)]);
            }
            return text_response("both read");
        }
        child_route(req, "child", Some("found 3 files"), "all done")
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    // The parent is parked in its own tool call while the child reports and settles.
    until(|| {
        outline(&parent.session().events())
            .iter()
            .any(|l| l.starts_with("tool/call p1"))
    })
    .await;
    let id = only_child(&t);
    t.gates.open("child");
    until_settled(&t, &id).await;
    t.gates.open("parent");
    parent.when_idle().await;

    let lines = anonymize(outline(&parent.session().events()), &id);
    let tail: Vec<&str> = lines.iter().skip(23).map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            r#"tool/call p1 gate {"name":"parent"}"#,
            // Injected while the parent works: no wake, no turn of their own.
            r#"splice next-step @0 -0 +["Background subagent <child> reported:found 3 files"]"#,
            r#"splice next-step @1 -0 +["Background subagent <child> finished and will do no further work unless you send it more.Its closing message:all done"]"#,
            "tool/result parent opened cites [23]",
            "step/end 1.2",
            "splice next-step @0 -2 +[]",
            "step/start 1.3",
            "user: Background subagent <child> reported: found 3 files",
            "user: Background subagent <child> finished and will do no further work unless you send it more. Its closing message: all done",
            "chunk block-start",
            "chunk text-delta",
            "chunk block-end",
            "chunk usage",
            "chunk finish",
            "assistant: both read +usage cites [32, 33, 34, 35, 36]",
            "step/end 1.3",
            "turn/end 1 completed",
        ]
    );
    let report = parent
        .session()
        .events()
        .iter()
        .find_map(|e| {
            e.message()
                .filter(|m| texts(m).contains("reported:"))
                .cloned()
        })
        .unwrap();
    assert_eq!(
        serde_json::to_value(&report.source).unwrap(),
        json!({"kind": "subagent-report", "form": "relay", "senderSessionId": id.as_str()})
    );
    // The child read its acceptance.
    let child = t.children(&["agent-1"]).remove(0);
    assert!(outline(&child.events())
        .iter()
        .any(|l| l
            .starts_with("tool/result report accepted by the agent that started you as message ")));
    assert_eq!(
        t.subagents.get(&id).unwrap().last_report.as_deref(),
        Some("found 3 files")
    );
    t.h.finish().await;
}

#[tokio::test]
async fn an_idle_parent_is_woken_three_times_in_a_row_then_a_person_refills_the_budget() {
    let t = Tree::build(|req| {
        if for_session(req, "agent-1") {
            let last = last(req);
            if last == "go" {
                let calls: Vec<(String, String)> = (1..=5)
                    .map(|k| {
                        (
                            format!("c{k}"),
                            format!(r#"{{"description":"task {k}","prompt":"task {k}"}}"#),
                        )
                    })
                    .collect();
                let calls: Vec<(&str, &str, &str)> = calls
                    .iter()
                    .map(|(id, args)| (id.as_str(), "subagent", args.as_str()))
                    .collect();
                return tool_call_response(&calls);
            }
            if last.contains(SETTLED) {
                return text_response("noted");
            }
            return text_response("ok");
        }
        let k = (1..=5)
            .find(|k| mentions(req, &format!("task {k}")))
            .unwrap();
        child_route(req, &format!("g{k}"), None, &format!("done {k}"))
    });
    let parent = t.h.create_agent_named("agent-1").await.agent().clone();
    parent.followup(msg("go")).unwrap();
    parent.when_idle().await;
    let ids: Vec<SessionId> = (1..=5)
        .map(|k| {
            t.subagents
                .children(&SessionId::from("agent-1"))
                .into_iter()
                .find(|c| c.label == format!("task {k}"))
                .unwrap()
                .id
        })
        .collect();
    let turns = |parent: &Arc<dyn Agent>| {
        outline(&parent.session().events())
            .iter()
            .filter(|l| l.starts_with("turn/start"))
            .count()
    };
    for k in 1..=4 {
        t.gates.open(&format!("g{k}"));
        until_settled(&t, &ids[k - 1]).await;
        parent.when_idle().await;
    }
    // Three wakes opened turns 2–4; the fourth notice waits, parked, for the next turn.
    assert_eq!(turns(&parent), 4);
    let last_line = anonymize(outline(&parent.session().events()), &ids[3])
        .pop()
        .unwrap();
    assert_eq!(
        last_line,
        r#"splice next-step @0 -0 +["Background subagent <child> finished and will do no further work unless you send it more.Its closing message:done 4"]"#
    );
    // A person's message claims it along with their own and refills the budget.
    parent.followup(msg("status?")).unwrap();
    parent.when_idle().await;
    assert_eq!(turns(&parent), 5);
    t.gates.open("g5");
    until_settled(&t, &ids[4]).await;
    parent.when_idle().await;
    assert_eq!(turns(&parent), 6);
    t.h.finish().await;
}
