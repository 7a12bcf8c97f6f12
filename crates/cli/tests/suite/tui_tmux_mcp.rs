//! The interactive UI shows an MCP server's notice (here: a server that exits at once) as a
//! line on screen, and the prompt stays usable: a broken server never holds the session up.

use super::run_support::{serve, Sandbox};
use super::tui_tmux::{tmux_available, Tmux};
use dsh_testkit::mock_llm::{Reply, Script};
use std::sync::Arc;

#[tokio::test]
async fn a_failing_server_is_one_notice_line_and_the_prompt_still_works() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(Script::new().respond(Reply::text("Still here."))).await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        "[mcp_servers.exits]\ncommand = \"false\"\n",
    )
    .unwrap();
    let sandbox = Arc::new(sandbox);
    let in_pane = sandbox.clone();
    let (noticed, answered, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        let noticed = tmux.wait_for("MCP server \"exits\"");
        tmux.enter("are you there");
        let answered = tmux.wait_for("turn 1 completed");
        (noticed, answered, tmux.quit())
    })
    .await
    .unwrap();
    let line = noticed
        .lines()
        .find(|l| l.contains("MCP server \"exits\""))
        .unwrap_or_default();
    assert!(
        line.contains("MCP server \"exits\": initialize failed:")
            || line.contains("MCP server \"exits\": the server exited during initialize"),
        "{noticed}"
    );
    assert!(answered.contains("• Still here."), "{answered}");
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    server.shutdown().await;
}

/// A hooks file that cannot be read is named on screen, as `dsh run` names it on stderr.
#[tokio::test]
async fn a_malformed_hooks_file_is_a_notice_line_in_the_ui() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(Script::new().respond(Reply::text("Still here."))).await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(sandbox.home.path().join("hooks.json"), "{\n  \"Stop\": [\n").unwrap();
    let sandbox = Arc::new(sandbox);
    let in_pane = sandbox.clone();
    let (noticed, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        let noticed = tmux.wait_for("not valid JSON");
        (noticed, tmux.quit())
    })
    .await
    .unwrap();
    assert!(noticed.contains("hooks: "), "{noticed}");
    assert!(
        noticed.contains("hooks.json:3: not valid JSON"),
        "{noticed}"
    );
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    server.shutdown().await;
}
