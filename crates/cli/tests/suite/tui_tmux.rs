//! End to end: the real `dsh` binary in a pseudo-terminal (a private tmux server), talking
//! to the in-process mock model. Skipped, with a printed reason, when tmux is missing.

use super::run_support::{serve, Sandbox};
// Re-exported so the other `tui_tmux_*` suites keep importing the driver from here.
pub(super) use super::tui_tmux_support::{
    lines_from, stored, tmux_available, turn_end_kinds, Tmux,
};
use dsh_testkit::mock_llm::{Fault, Reply, Script};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_turn_in_a_real_terminal() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server =
        serve(Script::new().respond(Reply::text("Hello from the mock model.").chunks(3))).await;
    let sandbox = Sandbox::new().with_server(&server);
    // tmux and the polling block; the mock server needs this thread to keep serving.
    let sandbox = Arc::new(sandbox);
    let in_pane = sandbox.clone();
    let (before, after, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        let before = tmux.pane();
        tmux.enter("say hello");
        let after = tmux.wait_for("turn 1 completed");
        (before, after, tmux.quit())
    })
    .await
    .unwrap();
    assert!(before.contains("idle · deepseek-v4-flash"), "{before}");
    assert_eq!(
        lines_from(&after, "› say hello", 5),
        [
            "› say hello",
            "",
            "• Hello from the mock model.",
            "",
            "─ turn 1 completed"
        ]
    );
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(stored.len(), 1);
    assert_eq!(turn_end_kinds(&stored[0].events), ["completed"]);
    server.shutdown().await;
}

#[tokio::test]
async fn an_approved_tool_call_then_a_fork_in_a_real_terminal() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": "echo tui-ok", "description": "Print a marker"}),
            ))
            .respond(Reply::text("It printed tui-ok.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (asked, done, forked, ended) = tokio::task::spawn_blocking(move || {
        // Under the default policy this command would run in the sandbox unasked.
        let tmux = Tmux::start_with(&in_pane, &["--approval", "untrusted"]);
        tmux.enter("run the check");
        // The status line is drawn last: the whole prompt is on screen once it says so.
        let asked = tmux.wait_for("waiting for your approval");
        tmux.keys("a");
        let done = tmux.wait_for("turn 1 completed");
        tmux.enter("/fork");
        let forked = tmux.wait_for("forked session");
        (asked, done, forked, tmux.quit())
    })
    .await
    .unwrap();
    assert!(asked.contains("│bash  echo tui-ok"), "{asked}");
    assert!(asked.contains("waiting for your approval"), "{asked}");
    // The card says the exit code and how long the command took (not asserted: wall clock).
    let mut shown = lines_from(&done, "› run the check", 7);
    if let Some(card) = shown.get_mut(2) {
        if let Some(at) = card.find(" · ") {
            card.truncate(at);
        }
    }
    assert_eq!(
        shown,
        [
            "› run the check",
            "",
            "✓ bash  echo tui-ok  exit 0",
            "  └ tui-ok",
            "",
            "• It printed tui-ok.",
            "",
        ]
    );
    assert!(ended, "dsh did not exit after Ctrl-C twice");
    let stored = stored(&sandbox.sessions_root());
    let [parent, child] = &stored[..] else {
        panic!(
            "expected the session and its fork, got {} sessions",
            stored.len()
        );
    };
    let decided: Vec<Value> = parent
        .events
        .iter()
        .filter(|e| e.type_name() == "approval/decided")
        .map(|e| e.data.to_value())
        .collect();
    assert_eq!(
        decided,
        [json!({"callId": decided[0]["callId"], "decision": "allow-once"})]
    );
    assert!(
        forked.contains(&format!("forked session {}", parent.header.id)),
        "{forked}"
    );
    assert_eq!(
        child.header.parent_session.as_ref(),
        Some(&parent.header.id)
    );
    // The fork carries the parent's conversation.
    assert_eq!(turn_end_kinds(&child.events), ["completed"]);
    server.shutdown().await;
}

#[tokio::test]
async fn esc_cancels_and_keeps_the_queued_follow_up_for_enter() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let stalled = Reply::text("This answer never finishes because the stream stalls")
        .chunks(6)
        .with_fault(Fault::Stall {
            after_chunks: Some(2),
        });
    let server = serve(
        Script::new()
            .respond(stalled)
            .respond(Reply::text("Follow-up answered.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let (queued, done, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("start something long");
        // The model is streaming (its request was served) before anything is queued.
        tmux.wait_for("This answer never");
        tmux.run(&["send-keys", "-t", "dsh", "-l", "then summarize"]);
        tmux.keys("Tab");
        let queued = tmux.wait_for("queued › then summarize");
        tmux.keys("Escape");
        // The follow-up stays queued (parked) after the cancel; Enter sends it.
        tmux.wait_for("Enter sends what is queued");
        tmux.keys("Enter");
        let done = tmux.wait_for("turn 2 completed");
        (queued, done, tmux.quit())
    })
    .await
    .unwrap();
    assert!(queued.contains("running · turn 1"), "{queued}");
    assert!(
        done.contains("■ turn 1 cancelled by you"),
        "the turn ends as cancelled by the user:\n{done}"
    );
    assert_eq!(
        lines_from(&done, "› then summarize", 5),
        [
            "› then summarize",
            "",
            "• Follow-up answered.",
            "",
            "─ turn 2 completed"
        ]
    );
    assert!(ended);
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(turn_end_kinds(&stored[0].events), ["aborted", "completed"]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_permission_chosen_before_the_first_prompt_keeps_the_instructions() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(Script::new().respond(Reply::text("Brief hello."))).await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    std::fs::write(
        sandbox.cwd.path().join("AGENTS.md"),
        "Always answer briefly.\n",
    )
    .unwrap();
    let in_pane = sandbox.clone();
    let (switched, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("/permission read-only");
        let switched = tmux.wait_for("applies from the first prompt");
        tmux.enter("hello");
        tmux.wait_for("turn 1 completed");
        (switched, tmux.quit())
    })
    .await
    .unwrap();
    assert!(
        switched.contains("permission: read-only (sandbox read-only, approval ask)"),
        "{switched}"
    );
    assert!(ended);
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(stored.len(), 1);
    let events = &stored[0].events;
    let last = |type_name: &str| {
        events
            .iter()
            .rev()
            .find(|e| e.type_name() == type_name)
            .map(|e| e.data.to_value())
    };
    assert_eq!(
        last("permission/preset"),
        Some(json!({"preset": "read-only"}))
    );
    assert_eq!(last("sandbox/mode"), Some(json!({"mode": "read-only"})));
    // The switch kept the queued instructions, and they reached the model in turn 1.
    let claimed: Vec<String> = events
        .iter()
        .filter(|e| e.type_name() == "user/message")
        .filter_map(|e| e.message().map(|m| m.text()))
        .collect();
    assert!(
        claimed.iter().any(|t| t.contains("Always answer briefly.")),
        "{claimed:?}"
    );
    assert!(claimed.iter().any(|t| t == "hello"), "{claimed:?}");
    assert_eq!(turn_end_kinds(events), ["completed"]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_permission_switch_applies_to_the_live_agent_s_next_tool_call() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let sandbox = Sandbox::new();
    // Outside the workspace: workspace-write refuses it, danger-full-access does not.
    let outside = sandbox.home.path().join("outside.txt");
    let server = serve(
        Script::new()
            .respond(Reply::text("Ready."))
            .respond(Reply::tool_call(
                "write",
                json!({"file_path": outside.display().to_string(), "content": "switched\n"}),
            ))
            .respond(Reply::text("Written.")),
    )
    .await;
    let sandbox = Arc::new(sandbox.with_server(&server));
    let in_pane = sandbox.clone();
    let (switched, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("get ready");
        tmux.wait_for("turn 1 completed");
        tmux.enter("/permission danger-full-access");
        let switched = tmux.wait_for("approval never)");
        tmux.enter("write the file");
        tmux.wait_for("turn 2 completed");
        (switched, tmux.quit())
    })
    .await
    .unwrap();
    assert!(
        switched.contains("permission: danger-full-access (sandbox danger-full-access,"),
        "{switched}"
    );
    assert!(ended);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "switched\n");
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(stored.len(), 1);
    let events = &stored[0].events;
    assert_eq!(turn_end_kinds(events), ["completed", "completed"]);
    let modes: Vec<Value> = events
        .iter()
        .filter(|e| e.type_name() == "sandbox/mode")
        .map(|e| e.data.to_value())
        .collect();
    assert_eq!(
        modes,
        [
            json!({"mode": "workspace-write"}),
            json!({"mode": "danger-full-access"})
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn clear_lists_and_resumes_in_a_real_terminal() {
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
    let (first_id, listed, resumed, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        let first_id = tmux
            .pane()
            .lines()
            .find_map(|l| l.trim().strip_prefix("new session ").map(str::to_owned))
            .unwrap();
        tmux.enter("first question");
        tmux.wait_for("turn 1 completed");
        tmux.enter("/clear");
        tmux.wait_for("› /clear");
        tmux.enter("/sessions");
        let listed = tmux.wait_for("resume a session");
        // Esc closes the picker; `/resume ID` resumes without it. (Typing before the
        // picker is gone could join the Esc into an Alt-key sequence.)
        tmux.keys("Escape");
        tmux.wait_until(|pane| !pane.contains("resume a session"));
        tmux.enter(&format!("/resume {first_id}"));
        tmux.wait_for("resumed session");
        tmux.enter("second question");
        let resumed = tmux.wait_for("turn 2 completed");
        (first_id, listed, resumed, tmux.quit())
    })
    .await
    .unwrap();
    // The picker lists the session with its title, age, turns, last outcome and id.
    let row = listed
        .lines()
        .find(|l| l.starts_with("›   "))
        .unwrap_or_else(|| panic!("no row in:\n{listed}"));
    // The model's title, or the first prompt while the title request is still out.
    assert!(
        row.starts_with("›   Mock session title") || row.starts_with("›   first question"),
        "{row}"
    );
    let short = &first_id["session-".len().."session-".len() + 8];
    assert!(
        row.trim_end()
            .ends_with(&format!("1 turn  completed    {short}")),
        "{row}"
    );
    // The resumed history is printed again, then the new turn follows it.
    assert_eq!(
        lines_from(&resumed, &format!("resumed session {first_id}"), 11),
        [
            format!("resumed session {first_id}"),
            String::new(),
            "› first question".into(),
            String::new(),
            "• First answer.".into(),
            String::new(),
            "─ turn 1 completed".into(),
            String::new(),
            "› second question".into(),
            String::new(),
            "• Second answer.".into(),
        ]
    );
    assert!(ended);
    // The cleared session never got a prompt, so it left nothing behind.
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].header.id.as_str(), first_id);
    assert_eq!(
        turn_end_kinds(&stored[0].events),
        ["completed", "completed"]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_closed_terminal_closes_the_turn_and_stops_its_command() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": "echo $$ > pid; sleep 30; touch after", "description": "Wait"}),
            ))
            .respond(Reply::text("never asked for")),
    )
    .await;
    let mut sandbox = Sandbox::new().with_server(&server);
    let tmp = tempfile::tempdir().unwrap();
    sandbox
        .env
        .push(("TMPDIR".into(), tmp.path().display().to_string()));
    let sandbox = Arc::new(sandbox);
    let in_pane = sandbox.clone();
    let pid = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start_with(&in_pane, &["--approval", "never"]);
        tmux.enter("wait for it");
        let pid_file = in_pane.cwd.path().join("pid");
        let start = Instant::now();
        let pid = loop {
            let pid = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok());
            if let Some(pid) = pid {
                break pid;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the command never started; the pane shows:\n{}",
                tmux.pane()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // Closing the terminal: dsh gets SIGHUP (it used to die of it on the spot).
        tmux.run(&["kill-server"]);
        pid
    })
    .await
    .unwrap();
    let gone = |pid: i32| {
        // SAFETY: signal 0 only checks whether the process exists.
        unsafe { libc::kill(pid, 0) != 0 && *libc::__errno_location() == libc::ESRCH }
    };
    let start = Instant::now();
    let settled = || {
        gone(pid)
            && std::fs::read_dir(tmp.path()).unwrap().next().is_none()
            && stored(&sandbox.sessions_root())
                .first()
                .is_some_and(|s| !turn_end_kinds(&s.events).is_empty())
    };
    while !settled() && start.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone(pid), "the command outlived the terminal");
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(stored.len(), 1);
    assert_eq!(turn_end_kinds(&stored[0].events), ["aborted"]);
    dsh_testkit::checks::assert_log_ok(&stored[0].events);
    assert!(!sandbox.cwd.path().join("after").exists());
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "the temp area was left behind"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_escalation_approved_in_a_real_terminal() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let probe = dsh_tools_builtin::sandbox::SandboxProbe::current();
    if probe.enforcement(dsh_tools_builtin::SandboxMode::WorkspaceWrite)
        != dsh_tools_builtin::sandbox::Enforcement::Full
    {
        println!("skipped: the kernel cannot fully enforce the sandbox: {probe:?}");
        return;
    }
    let sandbox = Sandbox::new();
    let outside = sandbox.home.path().join("outside.txt");
    let touch = format!("touch {}", outside.display());
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": touch, "description": "Create the file"}),
            ))
            .respond(Reply::tool_call(
                "bash",
                json!({"command": touch, "sandbox_permissions": "danger-full-access",
                       "justification": "The file belongs next to the workspace."}),
            ))
            .respond(Reply::text("Created it.")),
    )
    .await;
    let sandbox = Arc::new(sandbox.with_server(&server));
    let in_pane = sandbox.clone();
    let (asked, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("create the file");
        let asked = tmux.wait_for("waiting for your approval");
        tmux.keys("a");
        tmux.wait_for("turn 1 completed");
        (asked, tmux.quit())
    })
    .await
    .unwrap();
    assert!(
        asked.contains("Let this command leave the sandbox?"),
        "{asked}"
    );
    assert!(
        asked.contains("run outside the sandbox: danger-full-access instead of"),
        "{asked}"
    );
    assert!(
        asked.contains("why: The file belongs next to the workspace."),
        "{asked}"
    );
    assert!(asked.contains("[Allow once]   Deny"), "{asked}");
    assert!(ended);
    assert!(outside.exists(), "the approved run did not create the file");
    let stored = stored(&sandbox.sessions_root());
    let approvals: Vec<Value> = stored[0]
        .events
        .iter()
        .filter(|e| ["approval/asked", "approval/decided"].contains(&e.type_name()))
        .map(|e| json!({"type": e.type_name(), "data": e.data.to_value()}))
        .collect();
    let call = approvals[0]["data"]["callId"].clone();
    assert_eq!(
        approvals,
        [
            json!({"type": "approval/asked", "data": {
                "callId": call, "tool": "bash", "summary": touch,
                "reason": "escalate sandbox to danger-full-access: The file belongs next to the workspace.",
                "escalation": {"from": "workspace-write", "mode": "danger-full-access",
                               "justification": "The file belongs next to the workspace."}}}),
            json!({"type": "approval/decided", "data": {"callId": call, "decision": "allow-once"}}),
        ]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn resume_and_continue_open_the_ui_on_a_stored_session() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::text("First answer."))
            .respond(Reply::text("Second answer."))
            .respond(Reply::text("Third answer.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let first = sandbox.dsh(&["run", "first question"]).await;
    assert_eq!(first.status.code(), Some(0));
    let id = super::run_support::session_of(&first);
    let prefix = id["session-".len().."session-".len() + 8].to_owned();
    let in_pane = sandbox.clone();
    let shown = id.clone();
    let (resumed, continued, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start_with(&in_pane, &["--resume", &prefix]);
        let resumed = tmux.wait_for(&format!("resumed session {shown}"));
        tmux.enter("second question");
        tmux.wait_for("turn 2 completed");
        let ended = tmux.quit();
        drop(tmux);
        let tmux = Tmux::start_with(&in_pane, &["--continue"]);
        tmux.wait_for(&format!("resumed session {shown}"));
        let continued = tmux.wait_for("─ turn 2 completed");
        tmux.enter("third question");
        tmux.wait_for("turn 3 completed");
        (resumed, continued, ended && tmux.quit())
    })
    .await
    .unwrap();
    assert_eq!(
        lines_from(&resumed, &format!("resumed session {id}"), 7),
        [
            format!("resumed session {id}"),
            String::new(),
            "› first question".into(),
            String::new(),
            "• First answer.".into(),
            String::new(),
            "─ turn 1 completed".into(),
        ]
    );
    assert!(continued.contains("• Second answer."), "{continued}");
    assert!(ended);
    // One session, three turns: neither opening started a new one.
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(stored.len(), 1);
    assert_eq!(
        turn_end_kinds(&stored[0].events),
        ["completed", "completed", "completed"]
    );
    // A wrong id is refused before the UI starts.
    let wrong = sandbox.dsh(&["--resume", "nope"]).await;
    assert_eq!(wrong.status.code(), Some(2));
    server.shutdown().await;
}

#[tokio::test]
async fn custom_commands_complete_run_and_show_in_help() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(Script::new().respond(Reply::text("Fixed it."))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let commands = sandbox.workspace().join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("fix-issue.md"),
        "---\ndescription: Fix a tracked issue\nargument-hint: NUMBER\n---\nFix issue #$1 now.\n",
    )
    .unwrap();
    let sandbox = Arc::new(sandbox);
    let in_pane = sandbox.clone();
    let (completing, completed, help, ended) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.run(&["send-keys", "-t", "dsh", "-l", "/fi"]);
        let completing = tmux.wait_for("Fix a tracked issue");
        tmux.keys("Tab");
        let completed = tmux.wait_for("› /fix-issue\nidle");
        tmux.enter("42");
        tmux.wait_for("turn 1 completed");
        tmux.enter("/help");
        let help = tmux.wait_for("custom commands");
        (completing, completed, help, tmux.quit())
    })
    .await
    .unwrap();
    assert!(
        completing.contains("  /fix-issue NUMBER   Fix a tracked issue"),
        "{completing}"
    );
    assert!(completed.contains("› /fix-issue"), "{completed}");
    assert!(
        help.contains("  /fix-issue NUMBER   Fix a tracked issue"),
        "{help}"
    );
    assert!(ended);
    let body = server.requests()[0].body.clone();
    let prompts: Vec<Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(prompts, [json!("Fix issue #42 now.")], "{body}");
    server.shutdown().await;
}
