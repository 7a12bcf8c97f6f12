//! End to end: what the real `dsh` renders in a terminal: a streamed markdown answer and an
//! edit shown as its diff (tmux, against the mock model).

use super::run_support::{serve, Sandbox};
use super::tui_tmux::{lines_from, tmux_available, Tmux};
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::json;
use std::sync::Arc;

const ANSWER: &str = "## Summary\n\nThe fix is **small**: rename `old_name`.\n\n1. Edit the file\n2. Run the tests\n   - [x] unit\n   - [ ] e2e\n\n```rust\nfn main() {}\n```\n\n| step | time |\n|------|-----:|\n| edit | 1s |\n\n> quoted\n";

#[tokio::test]
async fn a_streamed_markdown_answer_renders_in_a_real_terminal() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(Script::new().respond(Reply::text(ANSWER).chunks(40))).await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (after, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("explain the fix");
        let after = tmux.wait_for("turn 1 completed");
        (after, tmux.quit())
    })
    .await
    .unwrap();
    let shown: Vec<String> = lines_from(&after, "• Summary", 18);
    assert_eq!(
        shown,
        [
            "• Summary",
            "",
            "  The fix is small: rename old_name.",
            "",
            "  1. Edit the file",
            "  2. Run the tests",
            "     ◦ [x] unit",
            "     ◦ [ ] e2e",
            "",
            "    fn main() {}",
            "",
            "  step │ time",
            "  ─────┼─────",
            "  edit │   1s",
            "",
            "  │ quoted",
            "",
            "─ turn 1 completed",
        ]
    );
    assert!(!after.contains("**") && !after.contains("```"), "{after}");
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    server.shutdown().await;
}

#[tokio::test]
async fn an_edit_shows_its_diff_in_a_real_terminal() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::tool_call("read", json!({"file_path": "notes.txt"})))
            .respond(Reply::tool_call(
                "edit",
                json!({"file_path": "notes.txt", "old_string": "status: draft", "new_string": "status: reviewed"}),
            ))
            .respond(Reply::text("Updated.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    std::fs::write(
        sandbox.workspace().join("notes.txt"),
        "title: notes\nstatus: draft\nowner: nobody\n",
    )
    .unwrap();
    let in_pane = sandbox.clone();
    let (after, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("mark it reviewed");
        let after = tmux.wait_for("turn 1 completed");
        (after, tmux.quit())
    })
    .await
    .unwrap();
    assert_eq!(
        lines_from(&after, "✓ edit  notes.txt  +1 -1", 5),
        [
            "✓ edit  notes.txt  +1 -1",
            "  └ 1   title: notes",
            "    2 - status: draft",
            "    2 + status: reviewed",
            "    3   owner: nobody",
        ]
    );
    assert!(after.contains("✓ read  notes.txt  3 lines of 3"), "{after}");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("notes.txt")).unwrap(),
        "title: notes\nstatus: reviewed\nowner: nobody\n"
    );
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    server.shutdown().await;
}
