//! `/goal` in a real terminal: a goal set by the person runs its rounds until the model marks
//! it complete, with the goal line above the input following along; and a resumed session
//! whose goal a failed round left active offers `/goal resume`, which continues it.

use super::run_support::{serve, Sandbox};
use super::tui_tmux::{stored, tmux_available, Tmux};
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::{json, Value};
use std::sync::Arc;

fn complete() -> Reply {
    Reply::tool_call(
        "update_goal",
        Value::String(
            r#"{"goal_id":"{{last-tool-result:/goal/id}}","revision":{{last-tool-result:/goal/revision}},"action":"complete"}"#
                .into(),
        ),
    )
}

#[tokio::test]
async fn a_goal_set_with_slash_goal_runs_its_rounds_and_a_resumed_one_is_offered() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::text("Round one: found the race."))
            .respond(Reply::text("Round two: fixed it."))
            .respond(Reply::tool_call("get_goal", json!({})))
            .respond(complete())
            .respond(Reply::text("The flaky test is fixed."))
            // The second goal: one round, then the model fails.
            .respond(Reply::text("Started the port."))
            .respond(Reply::error(400, "bad request"))
            // After /goal resume in a new process.
            .respond(Reply::tool_call("get_goal", json!({})))
            .respond(complete())
            .respond(Reply::text("Ported.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (done, second, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("/goal Fix the flaky test");
        let done = tmux.wait_for("goal: complete · round 3/256");
        tmux.enter("/goal Port the parser");
        let second = tmux.wait_for("turn 5 failed");
        (done, second, tmux.quit())
    })
    .await
    .unwrap();
    assert!(done.contains("• The flaky test is fixed."), "{done}");
    // The failed round disarmed the goal; the line says how to continue it.
    assert!(
        second
            .contains("goal: active, waiting for /goal resume · round 2/256 · \"Port the parser\""),
        "{second}"
    );
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    // A new process on the stored session: the goal waits, and /goal resume continues it.
    let in_pane = sandbox.clone();
    let (offered, finished, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start_with(&in_pane, &["--continue"]);
        let offered = tmux.wait_for("goal: active, waiting for /goal resume");
        tmux.enter("/goal resume");
        let finished = tmux.wait_for("goal: complete · round 3/256");
        (offered, finished, tmux.quit())
    })
    .await
    .unwrap();
    assert!(
        offered
            .contains("goal: active, waiting for /goal resume · round 2/256 · \"Port the parser\""),
        "{offered}"
    );
    assert!(finished.contains("• Ported."), "{finished}");
    assert!(ended);
    let sessions = stored(&sandbox.sessions_root());
    assert_eq!(sessions.len(), 1);
    let operations: Vec<String> = sessions[0]
        .events
        .iter()
        .filter(|e| e.type_name() == "goal/change")
        .map(|e| {
            e.data.to_value()["operation"]
                .as_str()
                .unwrap_or("?")
                .to_owned()
        })
        .collect();
    assert_eq!(
        operations,
        ["create", "complete", "create", "resume", "complete"]
    );
    server.shutdown().await;
}
