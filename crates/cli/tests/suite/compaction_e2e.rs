//! The real binary against the mock model server with a small configured context window: a
//! 40-step tool-using turn runs to completion through several pressure compactions, each
//! costing exactly one model call (no re-summarising of the previous checkpoint), then the
//! log verifies and a resumed turn sees the latest checkpoint.

use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{RecordedRequest, Reply, RuleMatch, Script};
use serde_json::json;

pub const STEPS: usize = 40;
/// The window given to `deepseek-v4-flash` by a partial override of the built-in catalogue.
pub const WINDOW: u64 = 12_000;

pub const SUMMARY: &str =
    "## Primary Request and Intent\n- read every note\n## Current Work\n- reading notes";

/// `settings.toml` shrinking deepseek-v4-flash's window (the rest of the catalogue stays).
pub fn small_window_settings() -> String {
    format!(
        "[providers.deepseek-official]\nmodels = [{{ id = \"deepseek-v4-flash\", context_window = {WINDOW} }}]\n"
    )
}

/// Summaries by header; the turn reads `note0.txt` .. `note39.txt`, then answers.
pub fn long_turn_script() -> Script {
    let mut script = Script::new().rule(
        RuleMatch::any().header("x-deepseek-harness-compact", "1"),
        Reply::text(SUMMARY),
    );
    for n in 0..STEPS {
        script = script.respond(Reply::tool_call(
            "read",
            json!({"file_path": format!("note{n}.txt")}),
        ));
    }
    script.respond(Reply::text("All forty notes read."))
}

/// Forty notes of about 450 estimated tokens each.
pub fn write_notes(sandbox: &Sandbox) {
    for n in 0..STEPS {
        let line = format!("note {n}: lorem ipsum dolor sit amet, consectetur adipiscing elit. ");
        std::fs::write(
            sandbox.cwd.path().join(format!("note{n}.txt")),
            line.repeat(24),
        )
        .unwrap();
    }
}

pub fn is_summary_request(request: &RecordedRequest) -> bool {
    request.header("x-deepseek-harness-compact") == Some("1")
}

#[tokio::test]
async fn a_forty_step_turn_compacts_under_pressure_and_completes() {
    let server = serve(long_turn_script()).await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        small_window_settings(),
    )
    .unwrap();
    write_notes(&sandbox);
    let output = sandbox
        .dsh(&["run", "Read note0.txt to note39.txt one by one"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "All forty notes read.\n");
    let id = session_of(&output);
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events), [json!({"kind": "completed"})]);

    let count = |kind: &str| events.iter().filter(|e| e.type_name() == kind).count();
    let (starts, summaries, ends) = (
        count("compaction/start"),
        count("compaction/summary"),
        count("compaction/end"),
    );
    let failed = events
        .iter()
        .filter(|e| e.type_name() == "compaction/end")
        .filter(|e| e.data.to_value()["error"].is_string())
        .count();
    assert!(summaries >= 2, "at least two compactions, got {summaries}");
    assert_eq!(
        (starts, ends, failed),
        (summaries, summaries, 0),
        "every attempt lands"
    );

    // Model calls: one per step, and exactly one per compaction.
    let requests = server.requests();
    let summary_calls = requests.iter().filter(|r| is_summary_request(r)).count();
    assert_eq!(summary_calls, summaries, "one model call per compaction");
    assert_eq!(requests.len() - summary_calls, STEPS + 1);

    // Each summary request replays the conversation's system prompt and tools, and asks
    // for the summary last; the human-mode line reports each landing.
    for request in requests.iter().filter(|r| is_summary_request(r)) {
        let turn = requests.iter().find(|r| !is_summary_request(r)).unwrap();
        assert_eq!(request.body["tools"], turn.body["tools"]);
        assert_eq!(request.body["messages"][0], turn.body["messages"][0]);
    }
    let stderr = text(&output.stderr);
    let landed: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("compacted: "))
        .collect();
    assert_eq!(landed.len(), summaries, "{stderr}");

    // The last step's request holds one checkpoint and only recent notes.
    let last = requests
        .iter()
        .rev()
        .find(|r| !is_summary_request(r))
        .unwrap();
    let body = last.body.to_string();
    assert_eq!(body.matches("<compacted-summary>").count(), 1, "{body}");
    assert!(
        !body.contains("note 0: lorem"),
        "the first note is summarised away"
    );
    assert!(body.contains("note 39: lorem"), "the newest note is kept");
    // The estimate after the turn is below the threshold that triggered the compactions.
    let show = sandbox.dsh(&["sessions", "show", &id]).await;
    let context = text(&show.stdout)
        .lines()
        .find(|l| l.starts_with("context: "))
        .unwrap()
        .to_owned();
    let tokens: u64 = context["context: ~".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(tokens < WINDOW, "{context}");
    assert!(
        text(&show.stdout).contains(&format!("compactions: {summaries} landed, 0 failed")),
        "{}",
        text(&show.stdout)
    );

    let verify = sandbox.dsh(&["sessions", "verify", &id]).await;
    assert_eq!(verify.status.code(), Some(0), "{}", text(&verify.stdout));
    server.shutdown().await;

    // A resumed turn starts from the latest checkpoint.
    let next = serve(
        Script::new()
            .rule(
                RuleMatch::any().header("x-deepseek-harness-compact", "1"),
                Reply::text(SUMMARY),
            )
            .respond(Reply::text("Resumed.")),
    )
    .await;
    let sandbox = sandbox.with_server(&next);
    let resumed = sandbox
        .dsh(&["run", "--resume", &id, "What did note 39 say?"])
        .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout), "Resumed.\n");
    let requests = next.requests();
    let turn: Vec<&RecordedRequest> = requests.iter().filter(|r| !is_summary_request(r)).collect();
    let body = turn[0].body.to_string();
    assert_eq!(body.matches("<compacted-summary>").count(), 1, "{body}");
    assert!(body.contains("What did note 39 say?"));
    assert!(
        body.contains("note 39: lorem"),
        "the retained tail is still there"
    );
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "completed"}), json!({"kind": "completed"})]
    );
    next.shutdown().await;
}
