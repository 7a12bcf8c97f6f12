//! The interactive UI asks once per workspace whether to trust its `.mcp.json` and hooks,
//! showing what would run: "no" holds for the session only, "yes" is remembered.

use super::run_support::Sandbox;
use super::tui_tmux::{tmux_available, Tmux};

fn trusted_list(sandbox: &Sandbox) -> Option<String> {
    std::fs::read_to_string(sandbox.home.path().join("trusted.json")).ok()
}

#[test]
fn the_ui_asks_once_per_workspace_showing_what_would_run() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.cwd.path().join(".mcp.json"),
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-filesystem", "/repo"]}}}"#,
    )
    .unwrap();
    let workspace = sandbox.workspace();

    // "No": the UI opens, nothing is remembered.
    let tmux = Tmux::launch(&sandbox, &[]);
    let pane = tmux.wait_for("Workspace trust");
    for text in [
        format!("Trust {}?", workspace.display()),
        "It brings .mcp.json.".to_owned(),
        "These would run on your machine, outside the sandbox:".to_owned(),
        "  MCP server fs: npx -y server-filesystem /repo".to_owned(),
        "y yes, trust it (remembered)   n no, ignore them this session".to_owned(),
    ] {
        assert!(pane.contains(&text), "{text:?} missing in:\n{pane}");
    }
    tmux.keys("n");
    tmux.wait_for("type a task; Enter sends");
    // The UI then says once what it ignored, and how to trust it.
    tmux.wait_for("this workspace is not trusted, so its .mcp.json is ignored");
    assert!(tmux.quit());
    drop(tmux);
    assert!(!dsh_cli::trust::is_trusted(sandbox.home.path(), &workspace));

    // Asked again next time; "yes" is remembered.
    let tmux = Tmux::launch(&sandbox, &[]);
    tmux.wait_for("Workspace trust");
    tmux.keys("y");
    tmux.wait_for("type a task; Enter sends");
    assert!(tmux.quit());
    drop(tmux);
    assert!(dsh_cli::trust::is_trusted(sandbox.home.path(), &workspace));
    assert!(trusted_list(&sandbox).is_some());

    // Trusted: no question.
    let tmux = Tmux::start(&sandbox);
    assert!(!tmux.pane().contains("Workspace trust"));
    assert!(tmux.quit());
}
