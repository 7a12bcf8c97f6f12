//! `dsh run`: streamed output, exit statuses, JSON Lines, resume and continue, stdin
//! prompts, real tool calls, SIGINT and SIGTERM.

use super::run_support::*;
use dsh_session::SessionEvent;
use dsh_store::SessionPersistence;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Fault, Reply, Script, UsageSpec};
use serde_json::{json, Value};
use std::path::Path;

fn demo_script() -> Script {
    Script::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo-script.json"))
        .unwrap()
}

#[tokio::test]
async fn a_completed_turn_streams_the_answer_and_exits_0() {
    let server = serve(Script::new().respond(Reply::text("Hello there, world.").chunks(4))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "say hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "Hello there, world.\n");
    let id = session_of(&output);
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events), [json!({"kind": "completed"})]);
    // The prompt went to the model, under the DeepSeek route with the fake key.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {FAKE_KEY}").as_str())
    );
    let body = requests[0].body.to_string();
    assert!(body.contains("say hello"), "{body}");
    server.shutdown().await;
}

#[tokio::test]
async fn json_mode_prints_a_session_line_every_event_and_a_result() {
    let usage = UsageSpec {
        prompt_tokens: Some(120),
        completion_tokens: Some(7),
        ..UsageSpec::default()
    };
    let server = serve(Script::new().respond(Reply::text("Done.").chunks(2).usage(usage))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "--json", "finish"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let lines = json_lines(&output);
    let first = &lines[0];
    let id = first["id"].as_str().unwrap().to_owned();
    assert_eq!(
        first,
        &json!({"type": "session", "id": id, "version": 0, "resumed": false})
    );
    let events: Vec<SessionEvent> = lines[1..lines.len() - 1]
        .iter()
        .map(|line| SessionEvent::from_value(line).unwrap())
        .collect();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    // Exactly what the log stores, event for event.
    let stored = sandbox.events(&id);
    assert_eq!(
        events,
        stored.iter().map(|e| (**e).clone()).collect::<Vec<_>>()
    );
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["session"], json!(id));
    assert_eq!(last["outcome"], json!({"kind": "completed"}));
    assert_eq!(last["usage"]["inputTokens"], json!(120));
    assert_eq!(last["usage"]["outputTokens"], json!(7));
    server.shutdown().await;
}

#[tokio::test]
async fn a_refused_key_fails_the_turn_with_exit_1() {
    let server = serve(Script::new().respond(Reply::error(401, "invalid api key"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("the turn failed"), "{stderr}");
    let id = session_of(&output);
    let ends = turn_ends(&sandbox.events(&id));
    assert_eq!(ends[0]["kind"], "error");
    assert_eq!(ends[0]["error"]["status"], json!(401));
    server.shutdown().await;
}

#[tokio::test]
async fn an_answer_cut_at_max_tokens_exits_1() {
    let server =
        serve(Script::new().respond(Reply::text("It all began").finish_reason("length"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "tell a long story"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("max-tokens"));
    let id = session_of(&output);
    assert_eq!(
        turn_ends(&sandbox.events(&id)),
        [json!({"kind": "max-tokens"})]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_missing_key_is_a_configuration_error_naming_the_variable() {
    let mut sandbox = Sandbox::new();
    sandbox.env.clear();
    let output = sandbox.dsh(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "dsh: error: DEEPSEEK_API_KEY is not set: export it, or use --base-url with \
         --provider openai-compatible for a local server\n"
    );
    assert_eq!(text(&output.stdout), "");
    // Nothing was started, so nothing was stored.
    assert!(!sandbox.sessions_root().exists());
}

#[tokio::test]
async fn a_broken_settings_file_is_a_configuration_error() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.home.path().join("settings.toml"), "[model\n").unwrap();
    let output = sandbox.dsh(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("settings.toml:1: invalid TOML"), "{stderr}");
}

#[tokio::test]
async fn a_local_server_needs_no_key() {
    let server = serve(Script::new().respond(Reply::text("local"))).await;
    let mut sandbox = Sandbox::new();
    sandbox.env.clear();
    let url = server.base_url();
    let output = sandbox
        .dsh(&[
            "run",
            "--provider",
            "openai-compatible",
            "--base-url",
            &url,
            "hi",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "local\n");
    assert_eq!(server.requests()[0].header("authorization"), None);
    server.shutdown().await;
}

/// Starts a run whose answer stalls mid-stream, sends `signal` once the server has the
/// request, and checks the turn was cancelled with cause `user`, both in the final `result`
/// line and in the balanced stored log. Returns the exit code.
async fn signal_a_stalled_run(signal: i32) -> Option<i32> {
    let stalled = Reply::text("This answer never finishes because the stream stalls")
        .chunks(6)
        .with_fault(Fault::Stall {
            after_chunks: Some(2),
        });
    let server = serve(Script::new().respond(stalled)).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut command = sandbox.command(&["run", "--json", "start"]);
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    server.wait_for_requests(1).await;
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let lines = json_lines(&output);
    let id = lines[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        lines.last().unwrap()["outcome"],
        json!({"kind": "aborted", "reason": {"kind": "user"}}),
        "{}",
        text(&output.stderr)
    );
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "aborted", "reason": {"kind": "user"}})]
    );
    server.shutdown().await;
    output.status.code()
}

#[tokio::test]
async fn sigint_cancels_the_turn_and_exits_130_with_a_balanced_log() {
    assert_eq!(signal_a_stalled_run(libc::SIGINT).await, Some(130));
}

#[tokio::test]
async fn sigterm_cancels_the_turn_and_exits_0_with_a_balanced_log() {
    assert_eq!(signal_a_stalled_run(libc::SIGTERM).await, Some(0));
}

#[tokio::test]
async fn resume_and_continue_add_turns_to_the_same_log() {
    let script = Script::new()
        .respond(Reply::text("first"))
        .respond(Reply::text("second"))
        .respond(Reply::text("third"));
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let first = sandbox.dsh(&["run", "one"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = session_of(&first);
    let prefix = &id["session-".len().."session-".len() + 8];
    let second = sandbox.dsh(&["run", "--resume", prefix, "two"]).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert_eq!(session_of(&second), id);
    assert_eq!(text(&second.stdout), "second\n");
    let third = sandbox.dsh(&["run", "--continue", "--json", "three"]).await;
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
    let lines = json_lines(&third);
    assert_eq!(lines[0]["id"], json!(id));
    assert_eq!(lines[0]["resumed"], json!(true));

    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events).len(), 3);
    let prompts: Vec<String> = events
        .iter()
        .filter(|e| e.type_name() == "user/message")
        .filter_map(|e| e.message().map(|m| m.text()))
        .collect();
    assert_eq!(prompts, ["one", "two", "three"]);
    // One log file holds all three turns.
    let logs: Vec<_> = walk(&sandbox.sessions_root())
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with("session.jsonl.zstd"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    server.shutdown().await;
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[tokio::test]
async fn continue_without_a_session_here_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let output = sandbox.dsh(&["run", "--continue", "again"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no stored session ran in"));
    let output = sandbox.dsh(&["run", "--resume", "nope", "again"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("no stored session matches \"nope\""));
}

#[tokio::test]
async fn the_prompt_can_come_from_stdin() {
    let server = serve(
        Script::new()
            .respond(Reply::text("ok 1"))
            .respond(Reply::text("ok 2")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let piped = sandbox
        .dsh_with_stdin(&["run"], "summarize\nthis text\n")
        .await;
    assert_eq!(piped.status.code(), Some(0), "{}", text(&piped.stderr));
    let dashed = sandbox.dsh_with_stdin(&["run", "-"], "from dash").await;
    assert_eq!(dashed.status.code(), Some(0), "{}", text(&dashed.stderr));
    for (output, prompt) in [(&piped, "summarize\nthis text\n"), (&dashed, "from dash")] {
        let events = sandbox.events(&session_of(output));
        let first = events
            .iter()
            .find(|e| e.type_name() == "user/message")
            .and_then(|e| e.message().map(|m| m.text()));
        assert_eq!(first.as_deref(), Some(prompt));
    }
    let empty = sandbox.dsh_with_stdin(&["run"], "  \n").await;
    assert_eq!(empty.status.code(), Some(2));
    assert_eq!(text(&empty.stderr), "dsh: error: the prompt is empty\n");
    server.shutdown().await;
}

/// The tool result text of the call named `tool`.
fn tool_output(events: &[std::sync::Arc<SessionEvent>], tool: &str) -> String {
    let call_id = events
        .iter()
        .find_map(|e| match &e.data {
            dsh_session::EventData::ToolCall(call) if call.name == tool => {
                Some(call.call_id.clone())
            }
            _ => None,
        })
        .unwrap();
    events
        .iter()
        .find_map(|e| match &e.data {
            dsh_session::EventData::ToolResult(result) => {
                let value = serde_json::to_value(&*result.message).unwrap();
                (value["content"][0]["toolCallId"] == json!(call_id.as_str()))
                    .then(|| value["content"][0]["content"][0]["text"].clone())
            }
            _ => None,
        })
        .and_then(|v: Value| v.as_str().map(str::to_owned))
        .unwrap()
}

#[tokio::test]
async fn the_demo_script_runs_real_tools_in_the_workspace() {
    let server = serve(demo_script()).await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(
        sandbox.cwd.path().join("README.md"),
        "# Widget\nA tiny widget.\n",
    )
    .unwrap();
    std::fs::write(sandbox.cwd.path().join("marker-7f3a.txt"), "x").unwrap();
    let output = sandbox.dsh(&["run", "what is this project?"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("→ bash ls\n"), "{stderr}");
    assert!(stderr.contains("→ read README.md\n"), "{stderr}");
    let events = sandbox.events(&session_of(&output));
    assert_log_ok(&events);
    let listing = tool_output(&events, "bash");
    assert!(listing.contains("marker-7f3a.txt"), "{listing}");
    let read = tool_output(&events, "read");
    assert!(read.contains("A tiny widget."), "{read}");
    assert_eq!(turn_ends(&events), [json!({"kind": "completed"})]);
    // The session records its workspace.
    let header = sandbox
        .store()
        .load(&dsh_protocol::SessionId::new(session_of(&output)))
        .unwrap()
        .header;
    assert_eq!(
        header.cwd.as_deref(),
        Some(sandbox.workspace().to_str().unwrap())
    );
    server.shutdown().await;
}

/// Whether this kernel confines commands fully (the sandbox tests skip, saying so, if not).
fn sandbox_enforced() -> bool {
    use dsh_tools_builtin::sandbox::{Enforcement, SandboxProbe};
    let probe = SandboxProbe::current();
    let full =
        probe.enforcement(dsh_tools_builtin::SandboxMode::WorkspaceWrite) == Enforcement::Full;
    if !full {
        eprintln!("skipping: the kernel cannot fully enforce the sandbox: {probe:?}");
    }
    full
}

/// A script that runs `commands` with bash, one model step each, then answers "done".
fn commands_script(commands: &[String]) -> Script {
    let mut script = Script::new();
    for command in commands {
        script = script.respond(Reply::tool_call(
            "bash",
            json!({"command": command, "description": "test"}),
        ));
    }
    script.respond(Reply::text("done"))
}

/// The text of every bash result, in order.
fn bash_outputs(events: &[std::sync::Arc<SessionEvent>]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.data {
            dsh_session::EventData::ToolResult(result) => {
                let value = serde_json::to_value(&*result.message).unwrap();
                value["content"][0]["content"][0]["text"]
                    .as_str()
                    .map(str::to_owned)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn headless_under_the_default_policy_commands_run_in_the_workspace_but_not_outside() {
    if !sandbox_enforced() {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let escaped = outside.path().join("escaped.txt");
    let server = serve(commands_script(&[
        "echo ok > f && cat f".into(),
        format!("echo x > {}", escaped.display()),
    ]))
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "make a file"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        std::fs::read_to_string(sandbox.cwd.path().join("f")).unwrap(),
        "ok\n"
    );
    assert!(!escaped.exists());
    let events = sandbox.events(&session_of(&output));
    assert_log_ok(&events);
    let outputs = bash_outputs(&events);
    assert_eq!(outputs[0], "ok\n");
    assert!(
        outputs[1].ends_with(
            "[sandbox: file access denied under workspace-write mode]\n[sandbox: escalating needs \
             a person's approval and no one can answer approval prompts in this session; do not \
             set sandbox_permissions — tell the user what you needed]"
        ),
        "{}",
        outputs[1]
    );
    // Nobody was asked anything.
    assert!(!events.iter().any(|e| e.type_name() == "approval/asked"));
    server.shutdown().await;
}

#[tokio::test]
async fn headless_untrusted_refuses_with_a_message_instead_of_waiting() {
    let server = serve(demo_script()).await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(sandbox.cwd.path().join("README.md"), "# Widget\n").unwrap();
    let output = sandbox
        .dsh(&["run", "--approval", "untrusted", "look around"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let events = sandbox.events(&session_of(&output));
    // `ls` is a read-only command: it runs even under untrusted.
    assert!(!tool_output(&events, "bash").starts_with("Error"));
    assert!(tool_output(&events, "read").contains("# Widget"));
    server.shutdown().await;

    let server = serve(commands_script(&["touch made-here".into()])).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox
        .dsh(&["run", "--approval", "untrusted", "touch it"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let refusal = tool_output(&sandbox.events(&session_of(&output)), "bash");
    assert!(
        refusal.contains("need approval under the untrusted policy"),
        "{refusal}"
    );
    assert!(refusal.contains("--approval ask"), "{refusal}");
    assert!(!sandbox.cwd.path().join("made-here").exists());
    server.shutdown().await;
}

#[tokio::test]
async fn max_turns_stops_the_turn_before_the_next_model_request() {
    let server = serve(demo_script()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&["run", "--max-turns", "1", "look"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("stopped after 1 model requests (--max-turns 1)"));
    assert_eq!(server.requests().len(), 1);
    let events = sandbox.events(&session_of(&output));
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events), [json!({"kind": "blocked"})]);
    server.shutdown().await;
}

#[tokio::test]
async fn workspace_instructions_reach_a_new_session_once() {
    let server = serve(
        Script::new()
            .respond(Reply::text("one"))
            .respond(Reply::text("two")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(
        sandbox.cwd.path().join("AGENTS.md"),
        "Always answer in haiku.\n",
    )
    .unwrap();
    let first = sandbox.dsh(&["run", "hi"]).await;
    let id = session_of(&first);
    let second = sandbox.dsh(&["run", "--resume", &id, "again"]).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    let events = sandbox.events(&id);
    let with_instructions = events
        .iter()
        .filter(|e| e.type_name() == "user/message")
        .filter(|e| {
            e.message()
                .is_some_and(|m| m.text().contains("Always answer in haiku."))
        })
        .count();
    assert_eq!(with_instructions, 1);
    let body = server.requests()[0].body.to_string();
    assert!(body.contains("Always answer in haiku."), "{body}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_resumed_session_keeps_its_safety_unless_this_run_chooses_another() {
    let server = serve(
        Script::new()
            .respond(Reply::text("one"))
            .respond(Reply::text("two"))
            .respond(Reply::text("three")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let elsewhere = tempfile::tempdir().unwrap();
    let workspace = sandbox.workspace();
    let mut command = sandbox.command(&[
        "run",
        "--cwd",
        workspace.to_str().unwrap(),
        "--sandbox",
        "read-only",
        "one",
    ]);
    command.current_dir(elsewhere.path());
    let first = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = session_of(&first);
    let safety = |events: &[std::sync::Arc<SessionEvent>]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| {
                ["permission/preset", "sandbox/mode", "approval/policy"].contains(&e.type_name())
            })
            .map(|e| json!([e.type_name(), e.data.to_value()]))
            .collect()
    };
    let started = vec![
        json!(["permission/preset", {"preset": "read-only"}]),
        json!(["sandbox/mode", {"mode": "read-only"}]),
        json!(["approval/policy", {"policy": "ask"}]),
    ];
    assert_eq!(safety(&sandbox.events(&id)), started);
    assert_eq!(
        sandbox
            .store()
            .load(&dsh_protocol::SessionId::new(id.clone()))
            .unwrap()
            .header
            .cwd,
        Some(workspace.to_string_lossy().into_owned())
    );

    // No flags: the recorded mode and policy stay, nothing new is logged.
    let second = sandbox.dsh(&["run", "--continue", "two"]).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert_eq!(safety(&sandbox.events(&id)), started);

    // Flags of this run win, and the change is logged.
    let third = sandbox
        .dsh(&[
            "run",
            "--continue",
            "--sandbox",
            "workspace-write",
            "--approval",
            "never",
            "three",
        ])
        .await;
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
    let mut changed = started.clone();
    changed.push(json!(["sandbox/mode", {"mode": "workspace-write"}]));
    changed.push(json!(["approval/policy", {"policy": "never"}]));
    assert_eq!(safety(&sandbox.events(&id)), changed);
    server.shutdown().await;
}

#[tokio::test]
async fn a_resumed_session_wider_than_this_run_runs_under_this_runs_settings() {
    if !sandbox_enforced() {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let escaped = outside.path().join("escaped.txt");
    let write_outside = format!("echo x > {}", escaped.display());
    let script = Script::new()
        .respond(Reply::text("one"))
        .respond(Reply::tool_call(
            "bash",
            json!({"command": write_outside, "description": "test"}),
        ))
        .respond(Reply::text("two"))
        .respond(Reply::text("three"));
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let first = sandbox
        .dsh(&["run", "--sandbox", "danger-full-access", "one"])
        .await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = session_of(&first);
    let safety = |events: &[std::sync::Arc<SessionEvent>]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| {
                ["permission/preset", "sandbox/mode", "approval/policy"].contains(&e.type_name())
            })
            .map(|e| json!([e.type_name(), e.data.to_value()]))
            .collect()
    };
    let started = vec![
        json!(["permission/preset", {"preset": "danger-full-access"}]),
        json!(["sandbox/mode", {"mode": "danger-full-access"}]),
        json!(["approval/policy", {"policy": "never"}]),
    ];
    assert_eq!(safety(&sandbox.events(&id)), started);

    // No flags: the session runs confined and asking, says so, and logs it.
    let second = sandbox.dsh(&["run", "--continue", "two"]).await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert!(
        !escaped.exists(),
        "the resumed session wrote outside the workspace"
    );
    let stderr = text(&second.stderr);
    assert!(
        stderr.starts_with(
            "dsh: note: the resumed session was recorded with sandbox \"danger-full-access\", \
             wider than this run's \"workspace-write\", so it runs under \"workspace-write\" \
             (give --sandbox danger-full-access again to keep it)\n\
             dsh: note: the resumed session was recorded with approval policy \"never\", wider \
             than this run's \"ask\", so it runs under \"ask\" (give --approval never again to \
             keep it)\n"
        ),
        "{stderr}"
    );
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    let mut narrowed = started.clone();
    narrowed.push(json!(["sandbox/mode", {"mode": "workspace-write"}]));
    narrowed.push(json!(["approval/policy", {"policy": "ask"}]));
    assert_eq!(safety(&events), narrowed);
    let denied = bash_outputs(&events).pop().unwrap();
    assert!(
        denied.contains("[sandbox: file access denied under workspace-write mode]"),
        "{denied}"
    );

    // The same flag again widens it back, and the log says so.
    let third = sandbox
        .dsh(&[
            "run",
            "--continue",
            "--sandbox",
            "danger-full-access",
            "three",
        ])
        .await;
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
    assert!(text(&third.stderr).contains("this run's flag --sandbox chooses"));
    let mut widened = narrowed.clone();
    widened.push(json!(["sandbox/mode", {"mode": "danger-full-access"}]));
    widened.push(json!(["approval/policy", {"policy": "never"}]));
    assert_eq!(safety(&sandbox.events(&id)), widened);
    server.shutdown().await;
}
