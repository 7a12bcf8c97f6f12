//! End to end in a real terminal: a parent starts a background child; the UI shows it
//! working above the input, then prints its report and settlement cards; `/agents ID` shows
//! the child's conversation read-only.

use super::run_support::{serve, Sandbox};
use super::tui_tmux::{stored, tmux_available, turn_end_kinds, Tmux};
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use serde_json::json;
use std::sync::Arc;

fn script() -> Script {
    let closing: Vec<String> = (1..=8).map(|n| format!("finding {n}")).collect();
    Script::new()
        .rule(
            RuleMatch::any()
                .contains("CHILD task")
                .contains("report accepted"),
            Reply::text(closing.join("\n")),
        )
        // The child's first step takes a while, so it is seen working.
        .rule(
            RuleMatch::any().contains("CHILD task"),
            Reply::tool_call("report", json!({"output": "halfway: 2 callers"})).head_delay_ms(1500),
        )
        .rule(
            RuleMatch::any()
                .contains("PARENT")
                .contains("Background subagent"),
            Reply::text("PARENT noted"),
        )
        .rule(
            RuleMatch::any()
                .contains("PARENT")
                .contains("started subagent"),
            Reply::text("PARENT waits for the helper"),
        )
        .rule(
            RuleMatch::any().contains("PARENT"),
            Reply::tool_call(
                "subagent",
                json!({"description": "find callers", "prompt": "CHILD task: find callers"}),
            ),
        )
}

#[tokio::test]
async fn a_background_child_in_a_real_terminal() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(script()).await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (working, settled, listed, viewed, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("PARENT: delegate the search");
        let working = tmux.wait_for("· background · working");
        tmux.wait_for("◆ subagent done");
        tmux.wait_for("PARENT noted");
        let settled = tmux.history();
        tmux.enter("/agents");
        let listed = tmux.wait_for("find callers\n");
        let id = listed
            .lines()
            .rev()
            .find(|l| l.ends_with("done         find callers"))
            .and_then(|l| l.split_whitespace().next())
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no child row in:\n{listed}"));
        tmux.enter(&format!("/agents {}", &id[..8]));
        tmux.wait_for("── end of subagent");
        let viewed = tmux.history();
        (working, settled, listed, viewed, tmux.quit())
    })
    .await
    .unwrap();
    assert!(working.contains("◇ find callers  "), "{working}");
    assert!(
        settled.contains("◆ subagent started  find callers"),
        "{settled}"
    );
    assert!(
        settled.contains("◆ subagent reported  find callers"),
        "{settled}"
    );
    assert!(settled.contains("  │ halfway: 2 callers"), "{settled}");
    assert!(
        settled.contains("  │ finding 6\n  … 2 more lines"),
        "{settled}"
    );
    // Settled: no live line left.
    assert!(!settled.contains("· working"), "{settled}");
    // The cards come in the order things happened.
    let at = |text: &str| settled.find(text).unwrap_or(usize::MAX);
    assert!(
        at("◆ subagent started") < at("◆ subagent reported"),
        "{settled}"
    );
    assert!(
        at("◆ subagent reported") < at("◆ subagent done"),
        "{settled}"
    );
    assert!(
        listed.contains("subagents (/agents ID shows one's transcript):"),
        "{listed}"
    );
    assert!(viewed.contains("── subagent "), "{viewed}");
    assert!(viewed.contains("find callers · read-only"), "{viewed}");
    let view = &viewed[viewed.rfind("── subagent ").unwrap()..];
    assert!(view.contains("› CHILD task: find callers"), "{view}");
    assert!(
        view.contains("✓ report  output=halfway: 2 callers"),
        "{view}"
    );
    assert!(view.contains("(read-only) ──"), "{view}");
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    // The view wrote nothing: the child has the one turn it worked.
    let sessions = stored(&sandbox.sessions_root());
    assert_eq!(sessions.len(), 2);
    let child = sessions
        .iter()
        .find(|s| s.header.parent_session.is_some())
        .unwrap();
    assert_eq!(turn_end_kinds(&child.events), ["completed"]);
    server.shutdown().await;
}

#[tokio::test]
async fn clear_disposes_the_old_sessions_working_children() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    // The child's model call does not answer while the test runs.
    let server = serve(
        Script::new()
            .rule(
                RuleMatch::any().contains("CHILD task"),
                Reply::text("too late").head_delay_ms(60_000),
            )
            .rule(
                RuleMatch::any()
                    .contains("PARENT")
                    .contains("started subagent"),
                Reply::text("PARENT waits for the helper"),
            )
            .rule(
                RuleMatch::any().contains("PARENT"),
                Reply::tool_call(
                    "subagent",
                    json!({"description": "slow helper", "prompt": "CHILD task: take your time"}),
                ),
            ),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (working, cleared, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("PARENT: delegate slowly");
        tmux.wait_for("PARENT waits for the helper");
        let working = tmux.wait_for("idle · 1 agent ·");
        tmux.enter("/clear");
        tmux.wait_for("new session");
        let cleared = tmux.wait_for("idle · deepseek-v4-flash");
        (working, cleared, tmux.quit())
    })
    .await
    .unwrap();
    assert!(working.contains("◇ slow helper  "), "{working}");
    let status = cleared
        .lines()
        .rev()
        .find(|l| l.starts_with("idle"))
        .unwrap();
    assert!(!status.contains("agent"), "{cleared}");
    assert!(!cleared.contains("· working"), "{cleared}");
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    // The child's turn was ended by the disposal, durably.
    let sessions = stored(&sandbox.sessions_root());
    let child = sessions
        .iter()
        .find(|s| s.header.parent_session.is_some())
        .unwrap();
    assert_eq!(turn_end_kinds(&child.events), ["aborted"]);
    server.shutdown().await;
}
