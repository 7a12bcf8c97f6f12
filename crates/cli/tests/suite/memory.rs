//! Memory end to end: `dsh sessions search|reindex|show --at` over real runs, `@session`
//! references in `dsh run`, `#` notes reaching the next session, `remember` refused
//! headless, and the history tools on by default.

use super::run_support::*;
use super::tui_support::{key, new_state, type_text};
use crossterm::event::KeyCode;
use dsh_cli::tui::interactive::Effect;
use dsh_memory::NoteScope;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::{json, Value};

/// The text of every message of one recorded request, in order.
fn message_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        })
        .collect()
}

#[tokio::test]
async fn search_is_limited_to_the_workspace_and_opens_a_hit() {
    let server = serve(
        Script::new()
            .respond(Reply::text("The flaky_widget test races the clock."))
            .respond(Reply::text("Launch plan for the widget is ready."))
            .respond(Reply::text("ok")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let here = sandbox
        .dsh(&["run", "Why does the widget test flake?"])
        .await;
    assert_eq!(here.status.code(), Some(0), "{}", text(&here.stderr));
    let here_id = session_of(&here);
    let elsewhere = tempfile::tempdir().unwrap();
    let other = elsewhere.path().to_str().unwrap().to_owned();
    let there = sandbox
        .dsh(&["run", "--cwd", &other, "Secret widget launch plan"])
        .await;
    assert_eq!(there.status.code(), Some(0), "{}", text(&there.stderr));
    let there_id = session_of(&there);

    // This workspace only, by default.
    let found = sandbox
        .dsh(&["sessions", "search", "widget", "--json"])
        .await;
    assert_eq!(found.status.code(), Some(0), "{}", text(&found.stderr));
    let hits: Vec<Value> = serde_json::from_slice(&found.stdout).unwrap();
    let ids: Vec<&str> = hits
        .iter()
        .map(|h| h["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [here_id.as_str()]);
    assert_eq!(hits[0]["turn"], 1);
    assert!(
        hits[0]["snippet"].as_str().unwrap().contains("**widget**"),
        "{}",
        hits[0]
    );

    // Every workspace with --all.
    let all = sandbox
        .dsh(&["sessions", "search", "--all", "--json", "widget"])
        .await;
    let hits: Vec<Value> = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(hits.iter().any(|h| h["sessionId"] == there_id.as_str()));

    // The table: session, age, turn, seq, title, highlighted snippet.
    let table = sandbox.dsh(&["sessions", "search", "flaky_widget"]).await;
    let out = text(&table.stdout);
    assert!(out.starts_with(&format!("{here_id}  ")), "{out}");
    assert!(
        // The model's title, or the first prompt when the run ended before the title came.
        out.contains("turn 1")
            && (out.contains("Mock session title")
                || out.contains("Why does the widget test flake?")),
        "{out}"
    );
    assert!(
        out.contains("**flaky**_**widget**") || out.contains("**flaky_widget**"),
        "{out}"
    );

    // Operators and odd characters are text; words-free input is a usage error.
    for query in ["widget AND \"(", "NEAR(widget*", "-widget:", "wid'get:^"] {
        let odd = sandbox.dsh(&["sessions", "search", "--", query]).await;
        assert_eq!(odd.status.code(), Some(0), "{query}: {}", text(&odd.stderr));
    }
    let empty = sandbox.dsh(&["sessions", "search", "()*"]).await;
    assert_eq!(empty.status.code(), Some(2), "{}", text(&empty.stderr));
    assert!(text(&empty.stderr).contains("no words to search for"));

    // Opening a hit shows the events around it.
    let seq = hits
        .iter()
        .find(|h| h["sessionId"] == here_id.as_str())
        .unwrap()["seq"]
        .as_u64()
        .unwrap()
        .to_string();
    let shown = sandbox
        .dsh(&[
            "sessions",
            "show",
            &here_id[..16],
            "--at",
            &seq,
            "--context",
            "2",
        ])
        .await;
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let out = text(&shown.stdout);
    assert!(
        out.contains(&format!(">  {seq:>4}")) || out.contains(&format!("> {seq:>5}")),
        "{out}"
    );

    // A corrupt index is rebuilt with a note, and finds the same.
    let index = sandbox.home.path().join("memory/index.sqlite");
    std::fs::write(&index, vec![0x5a; 8192]).unwrap();
    let again = sandbox
        .dsh(&["sessions", "search", "--json", "widget"])
        .await;
    assert!(
        text(&again.stderr).contains("rebuilt from the session logs"),
        "{}",
        text(&again.stderr)
    );
    let hits: Vec<Value> = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(hits.len(), 1);

    let reindexed = sandbox.dsh(&["sessions", "reindex"]).await;
    assert_eq!(
        reindexed.status.code(),
        Some(0),
        "{}",
        text(&reindexed.stderr)
    );
    assert!(
        text(&reindexed.stdout).contains("of 2 sessions"),
        "{}",
        text(&reindexed.stdout)
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_session_reference_is_injected_logged_and_rebuilt_on_resume() {
    let server = serve(
        Script::new()
            .respond(Reply::text("Use a FakeClock in the widget test."))
            .respond(Reply::text("continuing"))
            .respond(Reply::text("still here")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let first = sandbox
        .dsh(&["run", "Why does the widget test flake?"])
        .await;
    let first_id = session_of(&first);
    let prompt = format!(
        "Pick up from @session:{} and @session:nope",
        &first_id[8..16]
    );
    let second = sandbox.dsh(&["run", &prompt]).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert!(
        text(&second.stderr).contains(
            "session reference skipped: @session:nope: no stored session matches @session:nope"
        ),
        "{}",
        text(&second.stderr)
    );
    let second_id = session_of(&second);

    let sent = message_texts(&server.requests()[1].body);
    let at = sent.iter().position(|t| t == &prompt).unwrap();
    let snapshot = &sent[at + 1];
    assert!(
        snapshot.starts_with("<session-reference trust=\"untrusted\">"),
        "{snapshot}"
    );
    assert!(
        snapshot.contains("Use a FakeClock in the widget test."),
        "{snapshot}"
    );
    assert!(snapshot.contains(&first_id), "{snapshot}");

    let events = sandbox.events(&second_id);
    assert_log_ok(&events);
    let source = events
        .iter()
        .find_map(|e| {
            let v = serde_json::to_value(&**e).unwrap();
            (v["data"]["source"]["kind"] == "session-reference")
                .then(|| v["data"]["source"].clone())
        })
        .expect("the reference is logged with its source");
    assert_eq!(source["trust"], "untrusted");
    assert_eq!(source["sessions"][0]["sessionId"], first_id.as_str());
    assert_eq!(
        source["sessions"][1],
        json!({"reference": "nope", "code": "MEMORY_UNKNOWN_SESSION", "error": "no stored session matches @session:nope"})
    );

    // Resumed, the request is rebuilt from the log: the snapshot is there again, unchanged.
    let resumed = sandbox.dsh(&["run", "--resume", &second_id, "go on"]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    let again = message_texts(&server.requests()[2].body);
    assert!(again.contains(snapshot), "{again:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_hash_note_lands_in_agents_md_and_in_the_next_sessions_first_request() {
    // The UI: the first Enter shows the diff, the second writes.
    let mut state = new_state(60);
    type_text(&mut state, "# Run cargo nextest, not cargo test");
    let effects = state.reduce(key(KeyCode::Enter));
    let note = "Run cargo nextest, not cargo test".to_owned();
    assert_eq!(
        effects,
        [Effect::PreviewNote(NoteScope::Workspace, note.clone())]
    );
    assert_eq!(state.input().text(), "# Run cargo nextest, not cargo test");
    let effects = state.reduce(key(KeyCode::Enter));
    assert_eq!(
        effects,
        [Effect::WriteNote(NoteScope::Workspace, note.clone())]
    );

    // What the runner does with it, then a new session.
    let server = serve(Script::new().respond(Reply::text("ok"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let path = dsh_memory::note_path(
        NoteScope::Workspace,
        &sandbox.workspace(),
        sandbox.home.path(),
    );
    dsh_memory::write_note(&dsh_memory::plan_note(&path, &note).unwrap()).unwrap();
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("AGENTS.md")).unwrap(),
        "- Run cargo nextest, not cargo test\n"
    );
    let output = sandbox.dsh(&["run", "test it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let sent = message_texts(&server.requests()[0].body).join("\n");
    assert!(
        sent.contains("- Run cargo nextest, not cargo test"),
        "{sent}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn remember_is_refused_headless_and_the_history_tools_are_on() {
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "remember",
                json!({"note": "Always use rg"}),
            ))
            .respond(Reply::text("ok")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "remember to use rg"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let requests = server.requests();
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    for name in dsh_memory::HISTORY_TOOLS
        .iter()
        .chain([&dsh_memory::REMEMBER_TOOL])
    {
        assert!(tools.contains(name), "{name} in {tools:?}");
    }
    let result = message_texts(&requests[1].body).pop().unwrap();
    assert!(
        result.contains("no one can answer approval prompts"),
        "{result}"
    );
    assert!(result.contains("Always use rg"), "{result}");
    assert!(!sandbox.workspace().join("AGENTS.md").exists());
    server.shutdown().await;
}
