//! Goals through the real binary against the mock model server: `dsh run --goal` until the
//! goal is complete (exit 0) or out of rounds (exit 1), and a goal stopped by a failed round
//! that `dsh run --resume` continues (the original idled forever after a restart).

use super::run_support::*;
use dsh_session::EventData;
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::{json, Value};

/// `update_goal` on the goal the last tool result showed (the mock fills the placeholders).
fn update_goal(action: &str) -> Reply {
    Reply::tool_call(
        "update_goal",
        Value::String(format!(
            r#"{{"goal_id":"{{{{last-tool-result:/goal/id}}}}","revision":{{{{last-tool-result:/goal/revision}}}},"action":"{action}"}}"#
        )),
    )
}

/// The `operation phase rounds` of every `goal/change` and the goal round of every round
/// message, in log order.
fn goal_story(sandbox: &Sandbox, id: &str) -> Vec<String> {
    sandbox
        .events(id)
        .iter()
        .filter_map(|e| match &e.data {
            EventData::Other { type_name, data } if type_name == "goal/change" => Some(format!(
                "{} {} rounds={}",
                data["operation"].as_str().unwrap_or("?"),
                data["goal"]["phase"].as_str().unwrap_or("-"),
                data["roundsStarted"]
            )),
            EventData::UserMessage(m) => {
                let source = serde_json::to_value(&m.source).unwrap();
                (source["kind"] == "goal").then(|| format!("round {}", source["round"]))
            }
            _ => None,
        })
        .collect()
}

fn with_cap(sandbox: &Sandbox, rounds: u64) {
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        format!("[[plugins]]\nid = \"goal\"\nconfig = {{ defaultMaxGoalRounds = {rounds} }}\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn dsh_run_goal_works_three_rounds_until_the_goal_is_complete() {
    let server = serve(
        Script::new()
            .respond(Reply::text("Round one: fixed the parser."))
            .respond(Reply::text("Round two: fixed the lexer."))
            .respond(Reply::tool_call("get_goal", json!({})))
            .respond(update_goal("complete"))
            .respond(Reply::text("All tests pass now.")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "--goal", "Make the tests pass"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("dsh: goal: Make the tests pass (up to 256 rounds)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("dsh: goal complete after 3/256 rounds"),
        "{stderr}"
    );
    let stdout = text(&output.stdout);
    assert!(stdout.contains("All tests pass now."), "{stdout}");
    let id = session_of(&output);
    assert_eq!(
        goal_story(&sandbox, &id),
        [
            "create active rounds=0",
            "round 1",
            "round 2",
            "round 3",
            "complete complete rounds=3"
        ]
    );
    // The wrap-up step was asked with the original's notice, after the goal was complete.
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{stderr}");
    let last = requests[4].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"].to_string().contains("<goal_complete>"),
        "{last}"
    );
    assert_eq!(
        turn_ends(&sandbox.events(&id)),
        vec![json!({"kind": "completed"}); 3]
    );
}

#[tokio::test]
async fn dsh_run_goal_out_of_rounds_exits_1_and_says_so() {
    let server = serve(
        Script::new()
            .respond(Reply::text("Round one: still failing."))
            .respond(Reply::text("Round two: still failing.")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    with_cap(&sandbox, 2);
    let output = sandbox.dsh(&["run", "--goal", "Make the tests pass"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "dsh: goal out of rounds (2/2): Goal reached its configured limit of 2 rounds."
        ),
        "{stderr}"
    );
    let id = session_of(&output);
    assert_eq!(
        goal_story(&sandbox, &id),
        [
            "create active rounds=0",
            "round 1",
            "round 2",
            "block blocked rounds=2"
        ]
    );
    assert_eq!(server.requests().len(), 2);
    // `dsh sessions show` says where the goal stands.
    let shown = sandbox.dsh(&["sessions", "show", &id]).await;
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let shown = text(&shown.stdout);
    assert!(
        shown.contains(
            "goal: blocked · round 2/2 · \"Make the tests pass\" · blocked: round-limit: Goal reached its configured limit of 2 rounds."
        ),
        "{shown}"
    );
}

#[tokio::test]
async fn a_goal_stopped_by_a_failed_round_continues_on_resume_unless_no_goal() {
    let server = serve(
        Script::new()
            .respond(Reply::text("Round one: migrated half."))
            .respond(Reply::error(400, "bad request"))
            .respond(Reply::tool_call("get_goal", json!({})))
            .respond(update_goal("complete"))
            .respond(Reply::text("Migration finished.")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "--goal", "Migrate the data"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("dsh: goal stopped after 2/256 rounds"),
        "{stderr}"
    );
    let id = session_of(&output);
    // --no-goal leaves it alone (a prompt is then needed).
    let refused = sandbox.dsh(&["run", "--resume", &id, "--no-goal"]).await;
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    // A resume without a prompt continues the goal where it stopped.
    let resumed = sandbox.dsh(&["run", "--resume", &id]).await;
    let stderr = text(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("dsh: continuing goal: Migrate the data (round 2/256 done"),
        "{stderr}"
    );
    assert!(
        stderr.contains("dsh: goal complete after 3/256 rounds"),
        "{stderr}"
    );
    assert_eq!(
        goal_story(&sandbox, &id),
        [
            "create active rounds=0",
            "round 1",
            "round 2",
            "resume active rounds=2",
            "round 3",
            "complete complete rounds=3"
        ]
    );
}
