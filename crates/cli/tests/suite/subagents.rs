//! The real binary with delegation: a parent starts two background children, keeps
//! working, is woken by their reports and notices, and the headless run exits once the
//! whole tree is at rest. The mock answers each agent by what its conversation holds.

use super::run_support::{serve, text, Sandbox};
use dsh_protocol::MessageSource;
use dsh_session::EventData;
use dsh_store::SessionPersistence;
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use serde_json::{json, Value};

fn child_rules(script: Script, name: &str) -> Script {
    let task = format!("CHILD-{name} task");
    script
        .rule(
            RuleMatch::any().contains(&task).contains("report accepted"),
            Reply::text(format!("{name} closing")),
        )
        .rule(
            RuleMatch::any().contains(&task),
            Reply::tool_call("report", json!({"output": format!("{name} report")})),
        )
}

fn delegation_script() -> Script {
    let script = child_rules(child_rules(Script::new(), "A"), "B");
    script
        .rule(
            RuleMatch::any()
                .contains("PARENT")
                .contains("Background subagent"),
            Reply::text("PARENT noted"),
        )
        .rule(
            RuleMatch::any()
                .contains("PARENT")
                .contains("started subagent"),
            Reply::text("PARENT working on its own part"),
        )
        .rule(
            RuleMatch::any().contains("PARENT"),
            Reply::default()
                .with_tool_call(
                    "subagent",
                    json!({"description": "helper A", "prompt": "CHILD-A task: look at a.rs"}),
                )
                .with_tool_call(
                    "subagent",
                    json!({"description": "helper B", "prompt": "CHILD-B task: look at b.rs"}),
                ),
        )
}

#[tokio::test]
async fn a_headless_run_waits_for_two_background_children_and_ends_with_both_reports() {
    let server = serve(delegation_script()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox
        .dsh(&["run", "--json", "PARENT: delegate two helpers"])
        .await;
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let session = lines[0]["id"].as_str().unwrap().to_owned();
    // A start and an end line per child, each naming the child's own session.
    let child_lines: Vec<(String, String, String)> = lines
        .iter()
        .filter(|l| l["type"] == "child")
        .map(|l| {
            assert_eq!(l["parent"], session.as_str());
            (
                l["event"].as_str().unwrap().to_owned(),
                l["label"].as_str().unwrap().to_owned(),
                l["session"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(child_lines.iter().filter(|c| c.0 == "start").count(), 2);
    assert_eq!(child_lines.iter().filter(|c| c.0 == "end").count(), 2);
    assert_eq!(lines.last().unwrap()["type"], "result");
    assert_eq!(lines.last().unwrap()["outcome"]["kind"], "completed");

    // The parent's log holds both reports and both settlement notices, in whatever order
    // the children finished.
    let events = sandbox.events(&session);
    let relayed = |kind: &str| -> Vec<String> {
        let mut texts: Vec<String> = events
            .iter()
            .filter_map(|e| match &e.data {
                EventData::UserMessage(m) => Some(m.clone()),
                EventData::InboxSpliced(s) => s.inserted.first().cloned(),
                _ => None,
            })
            .filter(|m| matches!(&m.source, MessageSource::Other(map) if map.get("kind") == Some(&json!(kind))))
            .map(|m| m.text())
            .collect();
        texts.sort();
        texts.dedup();
        texts
    };
    let reports = relayed("subagent-report");
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert!(reports.iter().any(|r| r.ends_with("A report")));
    assert!(reports.iter().any(|r| r.ends_with("B report")));
    let notices = relayed("subagent-settled");
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices.iter().any(|n| n.ends_with("A closing")));
    assert!(
        notices.iter().any(|n| n.ends_with("B closing")),
        "{notices:?}"
    );

    // Each child is a session of its own, linked to the parent.
    let children: Vec<String> = child_lines
        .iter()
        .filter(|c| c.0 == "start")
        .map(|c| c.2.clone())
        .collect();
    for child in &children {
        let loaded = sandbox
            .store()
            .load(&dsh_protocol::SessionId::new(child.as_str()))
            .unwrap();
        let header = serde_json::to_value(&loaded.header).unwrap();
        assert_eq!(header["parentSession"], session.as_str());
        assert_eq!(header["origin"], "subagent");
        assert_eq!(header["delegationDepth"], 1);
        // The delegated policy, in the original's shape.
        let policy: Vec<Value> = loaded
            .events
            .iter()
            .filter(|e| matches!(e.type_name(), "approval/policy" | "sandbox/mode"))
            .map(|e| e.data.to_value())
            .collect();
        assert_eq!(policy.len(), 2, "{policy:?}");
        assert!(policy.iter().all(|p| p["source"] == "delegation"));
        assert!(policy.contains(&json!({"policy": "never", "source": "delegation"})));
    }

    // A child resumes on its own, as a session of its own.
    let resumed = sandbox
        .dsh(&["run", "--resume", &children[0], "one more look"])
        .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    let turns = sandbox
        .events(&children[0])
        .iter()
        .filter(|e| matches!(e.data, EventData::TurnStart(_)))
        .count();
    assert_eq!(turns, 2);

    // `sessions list` nests the children under their parent; `--flat` does not.
    let listed = text(&sandbox.dsh(&["sessions", "list"]).await.stdout);
    let rows: Vec<&str> = listed.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{listed}");
    assert!(rows[0].starts_with(&session), "{listed}");
    assert!(rows[1..].iter().all(|r| r.starts_with("  ")), "{listed}");
    let flat = text(&sandbox.dsh(&["sessions", "list", "--flat"]).await.stdout);
    assert!(flat.lines().skip(1).all(|r| !r.starts_with(' ')), "{flat}");
}
