//! The real binary with MCP servers configured through a `[[plugins]]` patch of row `mcp`,
//! against the mock model: the tools appear in the background and the model calls them.

use super::run_support::*;
use dsh_session::SessionEvent;
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// Where the npm-installed servers are (see dsh-mcp's tests and scripts/install-mcp-servers).
pub(super) fn npm_bin() -> Option<PathBuf> {
    let dir = match std::env::var_os("DSH_TEST_MCP_BIN") {
        Some(dir) => PathBuf::from(dir),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/npm/node_modules/.bin"),
    };
    if dir.join("mcp-server-everything").exists() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !ci && std::env::var("DSH_SKIP_MCP_E2E").is_ok_and(|v| v == "1") {
        eprintln!(
            "!!! SKIPPING MCP end-to-end test: no servers in {} (DSH_SKIP_MCP_E2E=1)",
            dir.display()
        );
        return None;
    }
    panic!(
        "MCP servers not found in {}: run scripts/install-mcp-servers (or set DSH_SKIP_MCP_E2E=1 locally)",
        dir.display()
    );
}

fn configure(sandbox: &Sandbox, servers: &str) {
    let settings = format!("[[plugins]]\nid = \"mcp\"\nconfig = {{ servers = [{servers}] }}\n");
    std::fs::write(sandbox.home.path().join("settings.toml"), settings).unwrap();
}

/// Until `tool` is offered the model waits with a short `bash sleep`; then the script runs.
fn script_after(tool: &str, calls: Vec<(&str, Value)>) -> Script {
    let mut script = Script::new().rule(
        RuleMatch::any().lacks_tool(tool),
        Reply::tool_call(
            "bash",
            json!({"command": "sleep 0.2", "description": "wait"}),
        ),
    );
    for (name, args) in calls {
        script = script.respond(Reply::tool_call(name, args));
    }
    script.respond(Reply::text("done"))
}

/// Each MCP tool call and its result, from the log: `{name, arguments, result}` where
/// `result` is the tool-result block the model sees.
fn mcp_calls(events: &[Arc<SessionEvent>]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut calls = std::collections::BTreeMap::new();
    for event in events {
        let data = event.data.to_value();
        match event.type_name() {
            "tool/call"
                if data["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("mcp__")) =>
            {
                calls.insert(data["callId"].to_string(), data);
            }
            "tool/result" => {
                let id = data["message"]["source"]["callId"].to_string();
                if let Some(call) = calls.remove(&id) {
                    let mut block = data["message"]["content"][0].clone();
                    block.as_object_mut().unwrap().remove("toolCallId");
                    out.push(json!({
                        "name": call["name"],
                        "arguments": call["arguments"],
                        "result": block,
                    }));
                }
            }
            _ => {}
        }
    }
    out
}

fn result(name: &str, arguments: &str, text: &str) -> Value {
    json!({"name": name, "arguments": arguments,
           "result": {"type": "tool-result", "content": [{"type": "text", "text": text}], "isError": false}})
}

const IMAGE_TEXT: &str = "Here's the image you requested:\n\
    [image unavailable: image/png; no attachment store is mounted; raw image data remains available to programmatic callers]\n\
    The image above is the MCP logo.";

async fn everything_run(name: &str, transport: String) {
    let echo = format!("mcp__{name}__echo");
    let sum = format!("mcp__{name}__get-sum");
    let image = format!("mcp__{name}__get-tiny-image");
    let server = serve(script_after(
        &echo,
        vec![
            (echo.as_str(), json!({"message": "hi"})),
            (sum.as_str(), json!({"a": 2, "b": 3})),
            (image.as_str(), json!({})),
        ],
    ))
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    configure(
        &sandbox,
        &format!("{{ name = \"{name}\", transport = {transport} }}"),
    );
    let output = sandbox.dsh(&["run", "use the tools"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let events = sandbox.events(&session_of(&output));
    let calls = mcp_calls(&events);
    let sum_text = calls[1]["result"]["content"][0]["text"].clone();
    assert!(sum_text.as_str().unwrap().contains('5'), "{sum_text}");
    assert_eq!(
        calls,
        vec![
            result(&echo, r#"{"message": "hi"}"#, "Echo: hi"),
            result(&sum, r#"{"a": 2, "b": 3}"#, sum_text.as_str().unwrap()),
            result(&image, "{}", IMAGE_TEXT),
        ]
    );
    // No MCP failure notice on a healthy run.
    assert!(
        !text(&output.stderr).contains("MCP server"),
        "{}",
        text(&output.stderr)
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_server_everything_over_stdio() {
    let Some(bin) = npm_bin() else { return };
    let command = bin.join("mcp-server-everything").display().to_string();
    everything_run(
        "everything",
        format!("{{ type = \"stdio\", command = {command:?}, args = [\"stdio\"] }}"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_server_everything_over_streamable_http() {
    let Some(bin) = npm_bin() else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(bin.join("mcp-server-everything"))
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
    everything_run(
        "web",
        format!("{{ type = \"http\", url = \"http://127.0.0.1:{port}/mcp\" }}"),
    )
    .await;
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_reads_a_file_through_server_filesystem() {
    let Some(bin) = npm_bin() else { return };
    let sandbox_dir = tempfile::tempdir().unwrap();
    let root = sandbox_dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "file body\n").unwrap();
    let file = root.join("a.txt").display().to_string();
    let server = serve(script_after(
        "mcp__fs__read_text_file",
        vec![("mcp__fs__read_text_file", json!({"path": file}))],
    ))
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let command = bin.join("mcp-server-filesystem").display().to_string();
    configure(
        &sandbox,
        &format!(
            "{{ name = \"fs\", transport = {{ type = \"stdio\", command = {command:?}, args = [{:?}] }} }}",
            root.display().to_string()
        ),
    );
    let output = sandbox.dsh(&["run", "read it"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let calls = mcp_calls(&sandbox.events(&session_of(&output)));
    assert_eq!(
        calls,
        vec![result(
            "mcp__fs__read_text_file",
            &format!("{{\"path\": {file:?}}}"),
            "file body\n"
        )]
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_servers_do_not_delay_the_prompt_and_each_gives_one_notice() {
    // The answer takes a moment, long enough for `false` to fail, far shorter than the
    // hanging server's 10 s startup timeout: its silence shows the prompt did not wait for it.
    let server = serve(Script::new().respond(Reply::text("answered").delay_ms(1500))).await;
    let sandbox = Sandbox::new().with_server(&server);
    configure(
        &sandbox,
        "{ name = \"exits\", transport = { type = \"stdio\", command = \"false\" } }, \
         { name = \"hangs\", transport = { type = \"stdio\", command = \"sleep\", args = [\"60\"] } }",
    );
    let output = sandbox.dsh(&["run", "hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "answered\n");
    let stderr = text(&output.stderr);
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("dsh: MCP server"))
        .collect();
    // The server that exits says so once; the one that hangs never got to its timeout.
    assert_eq!(notices.len(), 1, "{stderr}");
    assert!(
        notices[0].starts_with("dsh: MCP server \"exits\": initialize failed:")
            || notices[0]
                .starts_with("dsh: MCP server \"exits\": the server exited during initialize"),
        "{stderr}"
    );
    assert!(
        notices[0].contains("connection failed; retrying in 500ms (attempt 1/10)"),
        "{stderr}"
    );
    server.shutdown().await;
}
