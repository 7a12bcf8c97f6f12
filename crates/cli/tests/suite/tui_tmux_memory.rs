//! End to end in tmux: memory in the UI. `/search` finds an earlier session of the
//! workspace, Enter resumes it and Ctrl-F forks from the hit; `@session` completes an
//! earlier session by title into `@session:ID`. Skipped, with a printed reason, without tmux.

use super::run_support::{serve, Sandbox};
use super::tui_tmux::{stored, tmux_available, Tmux};
use dsh_protocol::MessageSource;
use dsh_session::EventData;
use dsh_testkit::mock_llm::{Reply, Script};
use std::sync::Arc;

fn prompts(session: &dsh_store::StoredSession) -> Vec<String> {
    session
        .events
        .iter()
        .filter_map(|e| match &e.data {
            EventData::UserMessage(m) if matches!(m.source, MessageSource::User { .. }) => {
                Some(m.text())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn search_finds_an_earlier_session_enter_resumes_it_and_ctrl_f_forks_from_the_hit() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::text("The zanzibar widget races the clock."))
            .respond(Reply::text("Resumed answer."))
            .respond(Reply::text("Fork answer.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (found, same, forked) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("why is the zanzibar widget flaky?");
        tmux.wait_for("turn 1 completed");
        tmux.enter("/clear");
        tmux.wait_for("› /clear");
        tmux.enter("/search");
        tmux.wait_for("search this workspace's sessions: type words");
        tmux.type_text("zanzib widget");
        // No session says "zanzib": the literal word must match.
        tmux.wait_for("no session of this workspace mentions");
        tmux.keys("BSpace");
        tmux.keys("BSpace");
        tmux.keys("BSpace");
        tmux.keys("BSpace");
        tmux.keys("BSpace");
        tmux.keys("BSpace");
        tmux.keys("BSpace");
        tmux.type_text("ar widget");
        let found = tmux.wait_for("1 session matches");
        tmux.keys("Enter");
        tmux.wait_for("resumed session");
        tmux.enter("a follow-up");
        tmux.wait_for("turn 2 completed");
        // The hit is in the session on screen now: Enter says so, Ctrl-F forks from it.
        tmux.enter("/search zanzibar");
        tmux.wait_for("1 session matches");
        tmux.keys("Enter");
        let same = tmux.wait_for("is in this session");
        tmux.enter("/search zanzibar");
        tmux.wait_for("1 session matches");
        tmux.keys("C-f");
        tmux.wait_for("forked session");
        tmux.enter("in the fork");
        let forked = tmux.wait_for("• Fork answer.");
        assert!(tmux.quit());
        (found, same, forked)
    })
    .await
    .unwrap();
    assert!(
        found.contains("Enter resume · Ctrl-F fork from the hit"),
        "{found}"
    );
    let row = found
        .lines()
        .find(|l| l.starts_with("›") && l.contains("turn 1"))
        .unwrap_or_else(|| panic!("no hit row in:\n{found}"));
    assert!(row.contains("zanzibar widget"), "{row}");
    assert!(same.contains("Ctrl-F on it forks from there"), "{same}");
    assert!(forked.contains("forked session"), "{forked}");

    let mut sessions = stored(&sandbox.sessions_root());
    assert_eq!(sessions.len(), 2, "the resumed session and its fork");
    sessions.sort_by_key(|s| s.header.parent_session.is_some());
    let (original, fork) = (&sessions[0], &sessions[1]);
    assert_eq!(
        prompts(original),
        ["why is the zanzibar widget flaky?", "a follow-up"]
    );
    assert_eq!(
        fork.header.parent_session.as_ref(),
        Some(&original.header.id)
    );
    // The fork holds the hit's whole turn, not what came after it, then its own prompt.
    assert_eq!(
        prompts(fork),
        ["why is the zanzibar widget flaky?", "in the fork"]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn at_session_completes_an_earlier_session_by_title() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::text("Noted."))
            .respond(Reply::text("Referenced.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (offered, inserted) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("plan the parser rewrite");
        tmux.wait_for("turn 1 completed");
        tmux.enter("/clear");
        tmux.wait_for("› /clear");
        tmux.type_text("continue @s");
        tmux.wait_for("@session:");
        tmux.type_text("ession:");
        // Its title is the model's or, until that arrives, the first prompt.
        let offered = tmux.wait_until(|pane| {
            pane.contains("  @session:")
                && (pane.contains("Mock session title") || pane.contains("plan the parser"))
        });
        tmux.keys("Tab");
        let inserted = tmux.wait_for("› continue @session:session-");
        tmux.keys("Enter");
        tmux.wait_for("turn 1 completed");
        assert!(tmux.quit());
        (offered, inserted)
    })
    .await
    .unwrap();
    assert!(offered.contains("· just now"), "{offered}");
    let mut sessions = stored(&sandbox.sessions_root());
    assert_eq!(sessions.len(), 2, "{inserted}");
    sessions.sort_by_key(|s| s.header.created_at);
    let (earlier, later) = (&sessions[0], &sessions[1]);
    let typed = format!("continue @session:{} ", earlier.header.id.as_str());
    assert!(inserted.contains(typed.trim_end()), "{inserted}");
    // The reference reached the log with its source.
    let reference = later
        .events
        .iter()
        .find_map(|e| match &e.data {
            EventData::UserMessage(m) if m.text().contains("<session-reference") => Some(m.text()),
            _ => None,
        })
        .unwrap_or_default();
    assert!(
        reference.contains(&format!("\"sessionId\":\"{}\"", earlier.header.id.as_str())),
        "{reference}"
    );
    server.shutdown().await;
}
