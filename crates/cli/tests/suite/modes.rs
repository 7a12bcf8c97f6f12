//! Plan mode, questions and titles end to end: the real binary against the mock model
//! server, headless and in a real terminal (tmux).

use super::run_support::{serve, session_of, text, Sandbox};
use super::tui_tmux::{stored, tmux_available, Tmux};
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, Script, DEFAULT_TITLE};
use serde_json::{json, Value};
use std::sync::Arc;

const PLAN: &str = "# Add --verbose\n\n1. Parse the flag.\n2. Test it.";

fn data_of(events: &[Arc<dsh_session::SessionEvent>], type_name: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.type_name() == type_name)
        .map(|e| serde_json::to_value(&**e).unwrap()["data"].clone())
        .collect()
}

#[tokio::test]
async fn run_plan_refuses_changes_prints_the_plan_and_the_session_gets_a_model_title() {
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "write",
                json!({"file_path": "x.txt", "content": "no"}),
            ))
            .respond(Reply::tool_call("exit_plan_mode", json!({ "plan": PLAN }))),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox
        .dsh(&["run", "--plan", "add a --verbose flag"])
        .await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&output.stdout), format!("{PLAN}\n"));
    assert!(
        stderr.contains("plan mode is on: `write` changes files"),
        "{stderr}"
    );
    assert!(!sandbox.workspace().join("x.txt").exists());
    let id = session_of(&output);
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(data_of(&events, "plan/mode"), [json!({"active": true})]);
    // Headless: nobody can approve, so the plan ends the turn and plan mode stays on.
    assert_eq!(server.requests().len(), 2);
    let titles = data_of(&events, "session/title");
    assert_eq!(titles.len(), 2, "{titles:#?}");
    assert_eq!(titles[0]["source"], json!({"kind": "fallback"}));
    assert_eq!(titles[1]["title"], DEFAULT_TITLE);
    // The side request: no tools, 64 output tokens, never in the conversation.
    let title_requests = server.title_requests();
    assert_eq!(title_requests.len(), 1);
    let body = &title_requests[0].body;
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.to_string().contains("64"), "{body}");
    for request in server.requests() {
        assert!(!request.body.to_string().contains("concise title"));
    }
    // The index carries the title to `dsh sessions list`.
    let list = sandbox.dsh(&["sessions", "list"]).await;
    assert!(
        text(&list.stdout).contains(DEFAULT_TITLE),
        "{}",
        text(&list.stdout)
    );

    // A pinned rename survives later prompts.
    let renamed = sandbox
        .dsh(&["sessions", "rename", &id[..14], "  Verbose\tflag plan "])
        .await;
    assert_eq!(renamed.status.code(), Some(0), "{}", text(&renamed.stderr));
    assert_eq!(text(&renamed.stdout), format!("{id}  Verbose flag plan\n"));
    let list = sandbox.dsh(&["sessions", "list", "--json"]).await;
    let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed[0]["title"], "Verbose flag plan");
    let blank = sandbox
        .dsh(&["sessions", "rename", &id, " \u{200b} "])
        .await;
    assert_eq!(blank.status.code(), Some(2));
    server.shutdown().await;
}

#[tokio::test]
async fn run_plan_without_a_presented_plan_exits_1() {
    let server = serve(Script::new().respond(Reply::text("Here is my plan in prose."))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "--plan", "plan it"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("no plan: the model did not present one"));
    server.shutdown().await;
}

#[tokio::test]
async fn the_tui_answers_a_question_and_approves_a_plan() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "ask_user_question",
                json!({"questions": [{"id": "db", "question": "Which database?",
                    "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}),
            ))
            .respond(Reply::tool_call("exit_plan_mode", json!({ "plan": PLAN })))
            .respond(Reply::text("Carrying out the plan.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (toggled, asked, review, done) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.keys("BTab");
        let toggled = tmux.wait_for("Plan mode on.");
        tmux.enter("plan a --verbose flag");
        let asked = tmux.wait_for("waiting for your answer");
        tmux.keys("Down");
        tmux.keys("Enter");
        let review = tmux.wait_for("Keep planning, with feedback");
        tmux.keys("Enter");
        let done = tmux.wait_for("turn 1 completed");
        assert!(tmux.quit());
        (toggled, asked, review, done)
    })
    .await
    .unwrap();
    assert!(toggled.contains("Plan mode on."), "{toggled}");
    assert!(
        asked.contains("Which database?") && asked.contains("SQLite"),
        "{asked}"
    );
    assert!(review.contains("plan for your review:"), "{review}");
    assert!(review.contains("Approve"), "{review}");
    assert!(done.contains("Carrying out the plan."), "{done}");
    let events = &stored(&sandbox.sessions_root())[0].events;
    assert_log_ok(events);
    assert_eq!(
        data_of(events, "plan/mode"),
        [json!({"active": true}), json!({"active": false})]
    );
    let results: Vec<String> = events
        .iter()
        .filter(|e| e.type_name() == "tool/result")
        .map(|e| {
            e.data.to_value()["message"]["content"][0]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(
        results,
        [
            r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#,
            "Plan approved — plan mode exited; carry out the plan starting with your next step.",
        ]
    );
    server.shutdown().await;
}
