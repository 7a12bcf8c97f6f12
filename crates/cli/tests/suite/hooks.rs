//! Claude Code hooks through the real binary: a user settings file (`~/.claude/settings.json`)
//! whose hooks block `rm`, see an `Edit`, and add context to the prompt.

use super::run_support::{serve, session_of, text, turn_ends, Sandbox};
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::{json, Value};

#[tokio::test]
async fn a_claude_code_settings_file_blocks_rm_sees_an_edit_and_adds_prompt_context() {
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": "rm -rf build", "description": "clean"}),
            ))
            .respond(Reply::tool_call("read", json!({"file_path": "notes.txt"})))
            .respond(Reply::tool_call(
                "edit",
                json!({"file_path": "notes.txt", "old_string": "draft", "new_string": "final"}),
            ))
            .respond(Reply::text("done")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let workspace = sandbox.workspace();
    std::fs::write(workspace.join("notes.txt"), "a draft\n").unwrap();
    std::fs::create_dir(workspace.join("build")).unwrap();
    let seen = sandbox.home.path().join("post-tool-use.json");
    let guard = r#"cmd=$(cat); case "$cmd" in *'"command":"rm '*) echo 'rm is not allowed here' >&2; exit 2;; esac; exit 0"#;
    let settings = json!({
        "permissions": {"allow": []},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}],
            "PostToolUse": [{"matcher": "Edit|Write", "hooks": [
                {"type": "command", "command": format!("cat > '{}'", seen.display())}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command",
                "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"the build dir is precious\"}}'"}]}]
        }
    });
    let claude = sandbox.home.path().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), settings.to_string()).unwrap();

    let output = sandbox.dsh(&["run", "tidy up"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(workspace.join("build").is_dir(), "the rm ran");
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "a final\n",
        "{}",
        text(&output.stderr)
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let first = requests[0].body.to_string();
    assert!(first.contains("the build dir is precious"), "{first}");
    let second = requests[1].body.to_string();
    assert!(second.contains("rm is not allowed here"), "{second}");

    let payload: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    let id = session_of(&output);
    assert_eq!(payload["session_id"], id.as_str());
    assert_eq!(payload["hook_event_name"], "PostToolUse");
    assert_eq!(payload["tool_name"], "Edit");
    assert_eq!(
        payload["tool_input"]["file_path"],
        workspace.join("notes.txt").display().to_string()
    );
    assert_eq!(payload["cwd"], workspace.display().to_string());

    let events = sandbox.events(&id);
    assert_log_ok(&events);
    let hooks: Vec<Value> = events
        .iter()
        .map(|e| serde_json::to_value(e.as_ref()).unwrap())
        .filter(|e| e["type"].as_str().unwrap_or("").starts_with("hook/"))
        .map(|mut e| {
            if e["data"].get("durationMs").is_some() {
                e["data"]["durationMs"] = json!(0);
            }
            json!({"type": e["type"], "data": e["data"]})
        })
        .collect();
    let invoked = |point: &str, matcher: Option<&str>, n: u32| {
        let mut data = json!({"turn": 1, "point": point, "dialect": "claude-code",
            "handlerId": format!("claude-code:{point}:{n}")});
        if let Some(matcher) = matcher {
            data["matcher"] = json!(matcher);
        }
        json!({"type": "hook/invoked", "data": data})
    };
    let result = |point: &str, n: u32, decision: &str, code: i32, stderr: Option<&str>| {
        let mut data = json!({"turn": 1, "point": point,
            "handlerId": format!("claude-code:{point}:{n}"), "decision": decision,
            "exitCode": code, "durationMs": 0});
        if let Some(stderr) = stderr {
            data["stderrSummary"] = json!(stderr);
        }
        json!({"type": "hook/result", "data": data})
    };
    assert_eq!(
        hooks,
        [
            invoked("UserPromptSubmit", None, 1),
            result("UserPromptSubmit", 1, "pass", 0, None),
            invoked("PreToolUse", Some("Bash"), 2),
            result("PreToolUse", 2, "block", 2, Some("rm is not allowed here")),
            invoked("PostToolUse", Some("Edit|Write"), 3),
            result("PostToolUse", 3, "pass", 0, None),
        ]
    );
    assert_eq!(turn_ends(&events), [json!({"kind": "completed"})]);
    server.shutdown().await;
}

#[tokio::test]
async fn a_malformed_hooks_file_is_named_on_stderr_and_the_run_goes_on() {
    let server = serve(Script::new().respond(Reply::text("fine"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(sandbox.home.path().join("hooks.json"), "{\n  \"Stop\": [\n").unwrap();
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    let file = sandbox.home.path().join("hooks.json");
    assert!(
        stderr.contains(&format!("dsh: hooks: {}:3: not valid JSON", file.display())),
        "{stderr}"
    );
    assert_eq!(text(&output.stdout), "fine\n");
    server.shutdown().await;
}

#[tokio::test]
async fn continue_false_stops_the_run_and_says_why() {
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": "ls", "description": "x"}),
            ))
            .respond(Reply::text("never")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let stop = r#"echo '{"continue":false,"stopReason":"quota reached"}'"#;
    std::fs::write(
        sandbox.home.path().join("hooks.json"),
        json!({"PreToolUse": [{"hooks": [{"command": stop}]}]}).to_string(),
    )
    .unwrap();
    let output = sandbox.dsh(&["run", "list"]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("dsh: stopped by a hook: quota reached"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);
    server.shutdown().await;
}

/// Codex keeps its hooks in `~/.codex/hooks.json`: read in the Codex dialect (regex matcher
/// on the dsh name, `tool_input: {command}`), they block like the Claude Code ones.
#[tokio::test]
async fn codex_hooks_json_is_read_in_the_codex_dialect() {
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": "rm -rf build", "description": "clean"}),
            ))
            .respond(Reply::text("done")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let workspace = sandbox.workspace();
    std::fs::create_dir(workspace.join("build")).unwrap();
    let seen = sandbox.home.path().join("codex-payload.json");
    let guard = format!(
        "tee '{}' | grep -q '\"command\":\"rm ' && {{ echo 'codex says no rm' >&2; exit 2; }}; exit 0",
        seen.display()
    );
    let hooks = json!({"hooks": {"PreToolUse": [
        {"matcher": "^bash$", "hooks": [{"type": "command", "command": guard}]}]}});
    let codex = sandbox.home.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(codex.join("hooks.json"), hooks.to_string()).unwrap();

    let output = sandbox.dsh(&["run", "tidy up"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(workspace.join("build").is_dir(), "the rm ran");
    let second = server.requests()[1].body.to_string();
    assert!(second.contains("codex says no rm"), "{second}");
    let payload: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(payload["hook_event_name"], "PreToolUse");
    assert_eq!(payload["tool_name"], "bash");
    assert_eq!(payload["tool_input"], json!({"command": "rm -rf build"}));
    server.shutdown().await;
}
