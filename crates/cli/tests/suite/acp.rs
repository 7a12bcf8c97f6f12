//! `dsh acp` end to end: the official TypeScript ACP client drives a tool-using scenario
//! (streaming, a plan, permission both ways, cancel while a permission request is open,
//! session/load and continuing), a conformance table of every error text over the real
//! binary's stdio, and a client that disconnects mid-turn.

use super::acp_support::{error_of, Server};
use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, Script};
use dsh_testkit::normalize::outline;
use serde_json::{json, Value};
use std::path::PathBuf;

/// Where `@agentclientprotocol/sdk` is installed: `$DSH_TEST_ACP_NODE_MODULES`, else
/// `target/npm-acp/node_modules` (scripts/install-acp-client). `None` (skip, loudly) only
/// when `DSH_SKIP_ACP_E2E=1` and not under `CI=true`; otherwise a missing client fails.
pub fn acp_client() -> Option<PathBuf> {
    let dir = match std::env::var_os("DSH_TEST_ACP_NODE_MODULES") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/npm-acp/node_modules"),
    };
    if dir.join("@agentclientprotocol/sdk/package.json").exists() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !ci && std::env::var("DSH_SKIP_ACP_E2E").is_ok_and(|v| v == "1") {
        eprintln!(
            "!!! SKIPPING the ACP end-to-end test: no client in {} (DSH_SKIP_ACP_E2E=1)",
            dir.display()
        );
        return None;
    }
    panic!(
        "the ACP client is not in {}: run scripts/install-acp-client (or set DSH_SKIP_ACP_E2E=1 locally)",
        dir.display()
    );
}

/// The scenario's model: each prompt's keyword picks its reply, and so does each tool
/// result the follow-up request ends with.
fn scenario() -> Script {
    let rule = |text: &str, reply: Reply| {
        (
            dsh_testkit::mock_llm::RuleMatch::any().last_message_contains(text),
            reply,
        )
    };
    let rules = [
        rule(
            "PLAN-AND-WRITE",
            Reply::text("I will plan and write.")
                .with_reasoning("Let me plan this first.")
                .chunks(3)
                .with_tool_call(
                    "todo_write",
                    json!({"todos": [{"content": "write the note", "status": "in_progress"}]}),
                )
                .with_tool_call(
                    "write",
                    json!({"file_path": "note.txt", "content": "hello\n"}),
                ),
        ),
        rule(
            "has been created successfully",
            Reply::text("Done writing.").chunks(2),
        ),
        rule(
            "REJECT",
            Reply::tool_call("write", json!({"file_path": "nope.txt", "content": "no\n"})),
        ),
        rule(
            "the user rejected this tool call",
            Reply::text("Okay, not written."),
        ),
        rule(
            "LONG",
            Reply::tool_call(
                "bash",
                json!({"command": "sleep 30", "description": "Wait a long time"}),
            ),
        ),
        rule("AGAIN", Reply::text("Continued.")),
    ];
    rules
        .into_iter()
        .fold(Script::new(), |script, (matcher, reply)| {
            script.rule(matcher, reply)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_streams_a_tool_turn_answers_permissions_cancels_and_loads() {
    let Some(modules) = acp_client() else { return };
    let server = serve(scenario()).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut command = std::process::Command::new("node");
    command
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/acp-client/e2e.mjs"))
        .arg(env!("CARGO_BIN_EXE_dsh"))
        .arg(sandbox.workspace())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DSH_HOME", sandbox.home.path())
        .env("HOME", sandbox.home.path())
        .env("DEEPSEEK_API_KEY", FAKE_KEY)
        .env("DEEPSEEK_BASE_URL", server.base_url())
        .env("DSH_ACP_NODE_MODULES", &modules);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "the client failed:\n{}\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let summary: Value =
        serde_json::from_str(text(&output.stdout).lines().last().unwrap()).unwrap();
    let id = summary["sessionId"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("note.txt")).unwrap(),
        "hello\n"
    );
    assert!(
        !sandbox.workspace().join("nope.txt").exists(),
        "the rejected write ran"
    );

    // The session is an ordinary dsh session: the whole log, from the first prompt on.
    let events = sandbox.events(id);
    assert_log_ok(&events);
    let lines = outline(&events);
    let first = lines.iter().position(|l| l.starts_with("user: ")).unwrap();
    let workspace = sandbox.workspace().display().to_string();
    let from_prompt: Vec<String> = lines[first..]
        .iter()
        // Titles are written beside the turn (their timing is the title row's, not ACP's).
        .filter(|l| {
            !l.starts_with("request/")
                && !l.starts_with("chunk ")
                && !l.starts_with("session/title")
        })
        .map(|l| l.replace(&workspace, "<ws>"))
        .map(|l| l.split(" cites ").next().unwrap_or_default().to_owned())
        .collect();
    assert_lines(&from_prompt, &expected_log());
    // The three answers, as the approval flow logged them: allowed once, rejected, and the
    // unanswered one cancelled with the turn.
    let decisions: Vec<Value> = events
        .iter()
        .filter(|e| e.type_name() == "approval/decided")
        .map(|e| e.data.to_value()["decision"].clone())
        .collect();
    assert_eq!(
        decisions,
        vec![json!("allow-once"), json!("deny"), json!("cancelled")]
    );
}

/// Compares line by line, showing the actual lines on failure.
pub fn assert_lines(actual: &[String], expected: &[&str]) {
    assert_eq!(actual, expected, "\nactual:\n{}\n", actual.join("\n"));
}

fn expected_log() -> Vec<&'static str> {
    vec![
        "user: PLAN-AND-WRITE the note",
        "assistant: (thinking Let me plan this first.) I will plan and write. <call call_0_0_c7a6dd09 todo_write> <call call_0_1_d05ed1a9 write> +usage",
        "tool/call call_0_0_c7a6dd09 todo_write {\"todos\": [{\"content\": \"write the note\", \"status\": \"in_progress\"}]}",
        "todo/write",
        "tool/result Updated todo list: 0 pending, 1 in progress, 0 completed.",
        "tool/call call_0_1_d05ed1a9 write {\"file_path\": \"note.txt\", \"content\": \"hello\\n\"}",
        "approval/asked",
        "approval/decided",
        "tool/result The file <ws>/note.txt has been created successfully.",
        "step/end 1.1",
        "step/start 1.2",
        "assistant: Done writing. +usage",
        "step/end 1.2",
        "turn/end 1 completed",
        "splice next-turn @0 -0 +[\"REJECT this write\"]",
        "turn/start 2",
        "splice next-turn @0 -1 +[]",
        "step/start 2.1",
        "user: REJECT this write",
        "assistant: <call call_2_0_eee55f5d write> +usage",
        "tool/call call_2_0_eee55f5d write {\"file_path\": \"nope.txt\", \"content\": \"no\\n\"}",
        "approval/asked",
        "approval/decided",
        "tool/result ERR Error: the user rejected this tool call [TOOL_DENIED]",
        "step/end 2.1",
        "step/start 2.2",
        "assistant: Okay, not written. +usage",
        "step/end 2.2",
        "turn/end 2 completed",
        "splice next-turn @0 -0 +[\"LONG command\"]",
        "turn/start 3",
        "splice next-turn @0 -1 +[]",
        "step/start 3.1",
        "user: LONG command",
        "assistant: <call call_4_0_4418378a bash> +usage",
        "tool/call call_4_0_4418378a bash {\"command\": \"sleep 30\", \"description\": \"Wait a long time\"}",
        "approval/asked",
        "approval/decided",
        "tool/result ERR Error: tool call aborted before dispatch [ABORTED_BEFORE_DISPATCH]",
        "step/end 3.1",
        "turn/end 3 aborted user",
        "session/end-seed",
        "splice next-turn @0 -0 +[\"AGAIN please\"]",
        "turn/start 4",
        "splice next-turn @0 -1 +[]",
        "step/start 4.1",
        "user: AGAIN please",
        "assistant: Continued. +usage",
        "step/end 4.1",
        "turn/end 4 completed",
    ]
}

/// A fresh `dsh acp` on `sandbox`, initialized.
fn acp(sandbox: &Sandbox, args: &[&str]) -> Server {
    let mut all = vec!["acp"];
    all.extend_from_slice(args);
    let mut server = Server::start(sandbox, &all);
    let init = server.call(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    server
}

fn new_session(server: &mut Server, sandbox: &Sandbox, id: u64) -> String {
    let cwd = sandbox.workspace().display().to_string();
    let created = server.call(id, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    created["result"]["sessionId"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_answers_with_the_originals_text_and_stdout_stays_protocol_only() {
    let server = serve(Script::new().respond(Reply::text("unused"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut acp = acp(&sandbox, &[]);
    let init = acp.call(1, "initialize", json!({"protocolVersion": 1}));
    assert_eq!(
        init["result"],
        json!({
            "protocolVersion": 1,
            "agentInfo": {"name": "deepseek-harness-acp", "version": env!("CARGO_PKG_VERSION")},
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": false, "audio": false, "embeddedContext": false},
                "mcpCapabilities": {"http": true, "sse": false},
            },
            "authMethods": [],
        })
    );
    let cwd = sandbox.workspace().display().to_string();
    let session = new_session(&mut acp, &sandbox, 2);
    let big = "x".repeat(10 << 20);
    let table: Vec<(&str, Value, i64, String)> = vec![
        (
            "nope",
            json!({}),
            -32601,
            "\"Method not found\": nope".into(),
        ),
        (
            "initialize",
            json!({"protocolVersion": "one"}),
            -32602,
            "Invalid params: initialize: invalid type: string \"one\", expected u64".into(),
        ),
        (
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
            -32602,
            "Invalid params: cwd must be an absolute path: relative/dir".into(),
        ),
        (
            "session/new",
            json!({"cwd": cwd, "mcpServers": [], "additionalDirectories": ["/x"]}),
            -32602,
            "Invalid params: additionalDirectories is not supported".into(),
        ),
        (
            "session/new",
            json!({"cwd": cwd, "mcpServers": [{"type": "sse", "name": "x", "url": "http://127.0.0.1:1/", "headers": []}]}),
            -32602,
            "Invalid params: mcpServers: the \"sse\" transport is not supported (use stdio or http)".into(),
        ),
        (
            "session/new",
            json!({"cwd": 7}),
            -32602,
            "Invalid params: session/new: invalid type: integer `7`, expected a string".into(),
        ),
        (
            "session/load",
            json!({"sessionId": "session-missing", "cwd": cwd, "mcpServers": []}),
            -32602,
            "Invalid params: unknown session: session-missing".into(),
        ),
        (
            "session/prompt",
            json!({"sessionId": "session-missing", "prompt": [{"type": "text", "text": "hi"}]}),
            -32602,
            "Invalid params: unknown session: session-missing".into(),
        ),
        (
            "session/prompt",
            json!({"sessionId": session, "prompt": "hi"}),
            -32602,
            "Invalid params: session/prompt: invalid type: string \"hi\", expected a sequence"
                .into(),
        ),
        (
            "session/prompt",
            json!({"sessionId": session, "prompt": []}),
            -32602,
            "Invalid params: empty prompt".into(),
        ),
        (
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
            -32602,
            "Invalid params: inline image prompts were not advertised by this connection".into(),
        ),
        (
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]}),
            -32602,
            "Invalid params: audio prompt content is not supported".into(),
        ),
        (
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "resource", "resource": {"uri": "file:///a", "text": "a"}}]}),
            -32602,
            "Invalid params: embedded resource prompt content is not supported".into(),
        ),
        (
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": big}]}),
            -32602,
            "Invalid params: the prompt is larger than 4 MiB".into(),
        ),
    ];
    for (n, (method, params, code, message)) in table.into_iter().enumerate() {
        let id = 100 + n as u64;
        let reply = acp.call(id, method, params);
        let error = error_of(&reply);
        assert_eq!(
            (error["code"].as_i64(), error["message"].as_str()),
            (Some(code), Some(message.as_str())),
            "{method}"
        );
    }
    // Not JSON, and a notification nobody knows, and a cancel of an unknown session: no
    // answer at all (the SDK's transport skips bad lines).
    acp.send_raw(b"this is not json\n{\"jsonrpc\":\"2.0\",\"method\":\"what/ever\"}\n");
    acp.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "session-missing"}}));
    // A request with a bad method type is answered as an invalid request.
    acp.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":7}\n");
    let reply = acp.next_non_notification();
    assert_eq!(
        reply,
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "Invalid request: method must be a string"}})
    );
    // A frame over the size bound is dropped unread and answered without an id.
    let mut huge = vec![b'x'; (16 << 20) + 10];
    huge.push(b'\n');
    acp.send_raw(&huge);
    let reply = acp.next_non_notification();
    assert_eq!(reply["id"], Value::Null);
    assert_eq!(
        reply["error"]["message"],
        format!(
            "Invalid request: a frame of {} bytes is over the 16 MiB limit",
            (16 << 20) + 10
        )
    );
    assert_eq!(
        acp.call(3, "authenticate", json!({"methodId": "x"}))["result"],
        json!({})
    );
    assert_eq!(acp.close(), Some(0));
    // The session the table used is stored, whole and valid, with no turn in it.
    let events = sandbox.events(&session);
    assert_log_ok(&events);
    assert!(!events.iter().any(|e| e.type_name() == "turn/start"));
}

/// A turn cut off at the output cap reports `max_tokens` (the original says `end_turn`), and
/// a model failure is the original's `turn failed` error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_reasons_follow_the_turns_end() {
    let script = Script::new()
        .rule(
            dsh_testkit::mock_llm::RuleMatch::any().last_message_contains("CUT"),
            Reply::text("half an ans").finish_reason("length"),
        )
        .rule(
            dsh_testkit::mock_llm::RuleMatch::any().last_message_contains("FAIL"),
            Reply::error(400, "this request is malformed"),
        );
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut acp = acp(&sandbox, &[]);
    let session = new_session(&mut acp, &sandbox, 1);
    let prompt =
        |text: &str| json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    let cut = acp.call(2, "session/prompt", prompt("CUT it short"));
    assert_eq!(cut["result"], json!({"stopReason": "max_tokens"}), "{cut}");
    let failed = acp.call(3, "session/prompt", prompt("FAIL now"));
    let error = error_of(&failed);
    assert_eq!(error["code"], -32603);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("Internal error: turn failed: ")
            && message.contains("this request is malformed"),
        "{message}"
    );
    assert_eq!(acp.close(), Some(0));
    let events = sandbox.events(&session);
    assert_log_ok(&events);
    assert_eq!(turn_ends(&events)[0], json!({"kind": "max-tokens"}));
    assert_eq!(turn_ends(&events)[1]["kind"], "error");
}

/// The workspace's custom commands (and skills) are offered as ACP commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_commands_are_announced_after_session_new() {
    let server = serve(Script::new().respond(Reply::text("unused"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    let commands = sandbox.workspace().join(".dsh/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("fix-issue.md"),
        "---\ndescription: Fix a GitHub issue\nargument-hint: ISSUE\n---\nFix issue $ARGUMENTS.\n",
    )
    .unwrap();
    let mut acp = acp(&sandbox, &[]);
    let session = new_session(&mut acp, &sandbox, 1);
    let update = acp.next();
    assert_eq!(
        update["params"],
        json!({"sessionId": session, "update": {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"name": "fix-issue", "description": "Fix a GitHub issue", "input": {"hint": "ISSUE"}},
            ],
        }})
    );
    assert_eq!(acp.close(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_turn_leaves_a_closed_valid_log() {
    let server =
        serve(Script::new().respond(Reply::text("word ".repeat(200)).chunks(200).delay_ms(50)))
            .await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut acp = acp(&sandbox, &[]);
    let session = new_session(&mut acp, &sandbox, 1);
    acp.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "talk"}]}}),
    );
    // Wait until text streams, then hang up.
    loop {
        let frame = acp.next();
        if frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    acp.close_stdin();
    let reply = acp.next_non_notification();
    assert_eq!(
        reply["result"],
        json!({"stopReason": "cancelled"}),
        "{reply}"
    );
    assert_eq!(acp.close(), Some(0));
    let events = sandbox.events(&session);
    assert_log_ok(&events);
    let ends = turn_ends(&events);
    assert_eq!(
        ends,
        vec![json!({"kind": "aborted", "reason": {"kind": "disposed"}})]
    );
}

/// The client's `mcpServers` (stdio and Streamable HTTP) are connected for its session
/// before `session/new` answers, and the model calls their tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_from_the_client_are_connected_for_its_session() {
    let Some(bin) = super::mcp::npm_bin() else {
        return;
    };
    let everything = bin.join("mcp-server-everything").display().to_string();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut http = std::process::Command::new(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let script = Script::new()
        .rule(
            dsh_testkit::mock_llm::RuleMatch::any().last_message_contains("ECHO"),
            Reply::tool_call("mcp__local_one__echo", json!({"message": "over stdio"}))
                .with_tool_call("mcp__web__echo", json!({"message": "over http"})),
        )
        .rule(
            dsh_testkit::mock_llm::RuleMatch::any().last_message_contains("Echo: over http"),
            Reply::text("Both answered."),
        );
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut acp = acp(&sandbox, &[]);
    let cwd = sandbox.workspace().display().to_string();
    let created = acp.call(
        1,
        "session/new",
        json!({"cwd": cwd, "mcpServers": [
            {"name": "local one", "command": everything, "args": ["stdio"], "env": []},
            {"type": "http", "name": "web", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": []},
        ]}),
    );
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let reply = acp.call(
        2,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "ECHO twice"}]}),
    );
    assert_eq!(
        reply["result"],
        json!({"stopReason": "end_turn"}),
        "{reply}"
    );
    let results: Vec<(String, String)> = acp
        .notifications
        .iter()
        .map(|n| &n["params"]["update"])
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .map(|u| {
            (
                u["status"].as_str().unwrap().to_owned(),
                u["content"][0]["content"]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("completed".to_owned(), "Echo: over stdio".to_owned()),
            ("completed".to_owned(), "Echo: over http".to_owned()),
        ]
    );
    assert_eq!(acp.close(), Some(0));
    let _ = http.kill();
    let _ = http.wait();
    assert_log_ok(&sandbox.events(&session));
}
