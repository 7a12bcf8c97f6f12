//! End to end in tmux: the input editor's features in the real binary against the mock
//! model: a multi-line prompt, history recalled in a second run, `@` completion, `/resume`
//! through the picker, `!ls`, and Esc-Esc. Skipped, with a printed reason, without tmux.

use super::run_support::{serve, Sandbox};
use super::tui_tmux::{stored, tmux_available, Tmux};
use dsh_testkit::mock_llm::{Reply, Script};
use std::sync::Arc;

/// Whether any request the mock received carries `needle` in its JSON body.
fn sent(requests: &[dsh_testkit::mock_llm::RecordedRequest], needle: &str) -> bool {
    requests.iter().any(|r| r.body.to_string().contains(needle))
}

#[tokio::test]
async fn a_multi_line_prompt_is_one_message_with_its_newline() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(Script::new().respond(Reply::text("Two lines read."))).await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (typed, done, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.type_text("line one");
        tmux.keys("C-j");
        tmux.type_text("line two");
        let typed = tmux.wait_for("  line two");
        tmux.keys("Enter");
        let done = tmux.wait_for("turn 1 completed");
        (typed, done, tmux.quit())
    })
    .await
    .unwrap();
    assert!(typed.contains("› line one\n  line two"), "{typed}");
    assert!(done.contains("› line one\n  line two"), "{done}");
    assert!(ended);
    let requests = server.requests();
    assert!(sent(&requests, r"line one\nline two"), "{requests:#?}");
    server.shutdown().await;
}

#[tokio::test]
async fn history_is_recalled_in_a_second_run_and_searched_with_ctrl_r() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::text("First."))
            .respond(Reply::text("Second.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (recalled, searched) = tokio::task::spawn_blocking(move || {
        let first = Tmux::start(&in_pane);
        first.enter("remember the parser task");
        first.wait_for("turn 1 completed");
        first.enter("and the lexer");
        first.wait_for("turn 2 completed");
        assert!(first.quit());
        drop(first);
        let second = Tmux::start(&in_pane);
        second.keys("Up");
        let recalled = second.wait_for("› and the lexer");
        second.keys("C-u");
        second.keys("C-r");
        second.type_text("parser");
        let searched = second.wait_for("history search: parser");
        assert!(second.quit());
        (recalled, searched)
    })
    .await
    .unwrap();
    assert!(recalled.contains("› and the lexer"), "{recalled}");
    assert!(
        searched.contains("› remember the parser task"),
        "{searched}"
    );
    let history =
        std::fs::read_to_string(sandbox.home.path().join("history.jsonl")).unwrap_or_default();
    assert_eq!(
        history, "\"remember the parser task\"\n\"and the lexer\"\n",
        "appended one JSON string per prompt"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn at_completes_a_workspace_file_and_leaves_ignored_ones_out() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let sandbox = Arc::new(Sandbox::new());
    let cwd = sandbox.cwd.path();
    std::fs::create_dir_all(cwd.join("notes")).unwrap();
    std::fs::create_dir_all(cwd.join("build")).unwrap();
    std::fs::write(cwd.join("notes/release-plan.md"), "plan").unwrap();
    std::fs::write(cwd.join("build/release-plan.md"), "generated").unwrap();
    std::fs::write(cwd.join(".gitignore"), "build/\n").unwrap();
    let in_pane = sandbox.clone();
    let (offered, completed) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.type_text("read @release");
        let offered = tmux.wait_for("@notes/release-plan.md");
        tmux.keys("Tab");
        let completed = tmux.wait_for("› read notes/release-plan.md");
        assert!(tmux.quit());
        (offered, completed)
    })
    .await
    .unwrap();
    assert!(!offered.contains("build/release-plan.md"), "{offered}");
    assert!(!completed.contains("@notes"), "{completed}");
}

#[tokio::test]
async fn resume_opens_a_picker_and_enter_resumes_the_session() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::text("First answer."))
            .respond(Reply::text("Second answer.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (picked, resumed) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("the picked question");
        tmux.wait_for("turn 1 completed");
        tmux.enter("/clear");
        tmux.wait_for("› /clear");
        tmux.enter("/resume");
        // The one stored session is the first row; its title is the model's or, while that
        // is still on its way, the first prompt: either way Enter resumes it.
        let picked = tmux.wait_for("1 turn  completed");
        tmux.keys("Enter");
        tmux.wait_for("resumed session");
        tmux.enter("a follow-up");
        let resumed = tmux.wait_for("turn 2 completed");
        assert!(tmux.quit());
        (picked, resumed)
    })
    .await
    .unwrap();
    assert!(picked.contains("resume a session"), "{picked}");
    let row = picked
        .lines()
        .find(|l| l.starts_with("›   ") && l.contains("1 turn  completed"))
        .unwrap_or_else(|| panic!("no session row in:\n{picked}"));
    assert!(
        row.contains("Mock session title") || row.contains("the picked question"),
        "{row}"
    );
    assert!(resumed.contains("• Second answer."), "{resumed}");
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(stored.len(), 1, "the turn went to the resumed session");
    server.shutdown().await;
}

#[tokio::test]
async fn bang_ls_shows_the_workspace_without_asking_the_model() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(Script::new()).await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    std::fs::write(sandbox.cwd.path().join("marker-file.txt"), "").unwrap();
    let in_pane = sandbox.clone();
    let (listed, refused) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("!ls");
        let listed = tmux.wait_for("marker-file.txt");
        // The sandbox confines writes to the workspace (when the kernel can).
        tmux.enter("!touch /etc/dsh-bang-test && echo wrote");
        let refused = tmux.wait_for("[exit code:");
        assert!(tmux.quit());
        (listed, refused)
    })
    .await
    .unwrap();
    let _ = std::fs::remove_file("/etc/dsh-bang-test");
    assert!(listed.contains("! ls\nmarker-file.txt"), "{listed}");
    assert!(!refused.contains("\nwrote"), "{refused}");
    assert!(server.requests().is_empty(), "nothing went to the model");
    assert!(
        stored(&sandbox.sessions_root()).is_empty(),
        "nothing logged"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn esc_twice_forks_from_before_the_last_prompt_to_edit_it() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::text("One."))
            .respond(Reply::text("Two."))
            .respond(Reply::text("Edited.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let editing = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("first prompt");
        tmux.wait_for("turn 1 completed");
        tmux.enter("second prompt");
        tmux.wait_for("turn 2 completed");
        tmux.keys("Escape");
        tmux.wait_for("press Esc again");
        tmux.keys("Escape");
        let editing = tmux.wait_for("edit the prompt and send it");
        tmux.type_text(" edited");
        tmux.keys("Enter");
        tmux.wait_for("• Edited.");
        assert!(tmux.quit());
        editing
    })
    .await
    .unwrap();
    assert!(editing.contains("› second prompt"), "{editing}");
    assert!(
        !editing.contains("steering ›") && !editing.contains("queued ›"),
        "the fork does not show the prompt as still queued: {editing}"
    );
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(stored.len(), 2, "the session and its fork");
    let fork = &stored[1];
    let prompts: Vec<String> = fork
        .events
        .iter()
        .filter(|e| e.type_name() == "user/message")
        .map(|e| {
            e.data.to_value()["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .filter(|t| t.ends_with("prompt") || t.ends_with("edited"))
        .collect();
    assert_eq!(prompts, ["first prompt", "second prompt edited"]);
    server.shutdown().await;
}
