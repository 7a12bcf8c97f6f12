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

/// The PNG server-everything's `get-tiny-image` returns, from the installed server's source.
fn tiny_image(bin: &std::path::Path) -> Vec<u8> {
    use base64::Engine as _;
    let source =
        bin.join("../@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js");
    let text = std::fs::read_to_string(&source).unwrap();
    let marker = "MCP_TINY_IMAGE = \"";
    let start = text.find(marker).unwrap() + marker.len();
    let end = start + text[start..].find('"').unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(&text[start..end])
        .unwrap()
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The reference the log holds for `image` (a 20x20 PNG).
fn image_reference(image: &[u8]) -> Value {
    json!({"attachmentId": format!("sha256:{}", sha256_hex(image)),
        "mediaType": "image/png", "bytes": image.len(), "width": 20, "height": 20})
}

/// The tool-result block of `get-tiny-image` as the log keeps it: the image by reference.
fn image_result(image: &[u8]) -> Value {
    json!({"type": "tool-result", "isError": false, "content": [
        {"type": "text", "text": "Here's the image you requested:"},
        {"type": "image", "attachment": image_reference(image)},
        {"type": "text", "text": "The image above is the MCP logo."},
    ]})
}

/// The chat-completions requests the mock answered, in order.
fn chat_requests(server: &dsh_testkit::mock_llm::MockServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body)
        .collect()
}

async fn everything_run(name: &str, transport: String, bin: &std::path::Path) {
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
    let tiny = tiny_image(bin);
    let sum_text = calls[1]["result"]["content"][0]["text"].clone();
    assert!(sum_text.as_str().unwrap().contains('5'), "{sum_text}");
    assert_eq!(
        calls,
        vec![
            result(&echo, r#"{"message": "hi"}"#, "Echo: hi"),
            result(&sum, r#"{"a": 2, "b": 3}"#, sum_text.as_str().unwrap()),
            json!({"name": image, "arguments": "{}", "result": image_result(&tiny)}),
        ]
    );
    // The default model reads text only: its last request names the image and its size in
    // the tool message, and carries no image part.
    let last = chat_requests(&server).pop().unwrap();
    let tool = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(
        tool["content"],
        format!(
            "Here's the image you requested:\n[image omitted: this model does not accept image \
             input; image/png, 20x20 px, 3.9 KiB, sha256:{}]\nThe image above is the MCP logo.",
            &sha256_hex(&tiny)[..8]
        )
    );
    assert!(!last.to_string().contains("image_url"), "{last}");
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
        &bin,
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
        &bin,
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

/// The messages of `request` from the user message carrying a tool's images: the heading, the
/// caption naming the call, and the image part.
fn image_message(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user" && m["content"].is_array())
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_image_reaches_a_vision_model_by_reference_through_resume_and_fork() {
    use base64::Engine as _;
    let Some(bin) = npm_bin() else { return };
    let image_tool = "mcp__everything__get-tiny-image";
    let script = script_after(image_tool, vec![(image_tool, json!({}))])
        .respond(Reply::text("again"))
        .respond(Reply::text("forked"));
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    let command = bin.join("mcp-server-everything").display().to_string();
    configure(
        &sandbox,
        &format!("{{ name = \"everything\", transport = {{ type = \"stdio\", command = {command:?}, args = [\"stdio\"] }} }}"),
    );
    let vision = ["--model", "deepseek-v4-flash-vision-exp"];
    let output = sandbox
        .dsh(&[&["run"][..], &vision, &["show me the logo"]].concat())
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let id = session_of(&output);
    let tiny = tiny_image(&bin);
    let digest = sha256_hex(&tiny);
    let short = &digest[..8];

    // The request after the call: the tool message names the image, and one user message
    // after the tool messages carries it, captioned with the call, with the exact bytes.
    let first = chat_requests(&server).pop().unwrap();
    let messages = first["messages"].as_array().unwrap();
    let tool_at = messages.iter().rposition(|m| m["role"] == "tool").unwrap();
    let call_id = messages[tool_at]["tool_call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        messages[tool_at]["content"],
        format!(
            "Here's the image you requested:\n[image sha256:{short}: image/png, 20x20 px, 3.9 KiB; \
             attached in the next message]\nThe image above is the MCP logo."
        )
    );
    let data_url = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&tiny)
    );
    assert_eq!(
        messages[tool_at + 1],
        json!({"role": "user", "content": [
            {"type": "text", "text": "Attached image(s) from tool result:"},
            {"type": "text", "text": format!("Image sha256:{short} from tool call {call_id}:")},
            {"type": "image_url", "image_url": {"url": data_url}},
        ]})
    );
    assert_eq!(messages.len(), tool_at + 2);

    // The log keeps the reference, never the bytes: the whole log holds no base64 of the
    // image, and its tool/result for the call is exactly the reference in place.
    let events = sandbox.events(&id);
    dsh_testkit::checks::assert_log_ok(&events);
    let log = dsh_testkit::normalize::log_json(&events).to_string();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&tiny);
    assert!(
        !log.contains(&encoded[..40]),
        "inline image data in the log"
    );
    assert!(!log.contains("image_url"), "{log}");
    assert_eq!(log.matches(&format!("sha256:{digest}")).count(), 1, "{log}");
    assert_eq!(
        mcp_calls(&events),
        vec![json!({"name": image_tool, "arguments": "{}", "result": image_result(&tiny)})]
    );
    // The bytes are in the store, under their digest.
    let stored = sandbox
        .home
        .path()
        .join("attachments/v1/objects")
        .join(&digest[..2])
        .join(&digest);
    assert_eq!(std::fs::read(&stored).unwrap(), tiny);

    // Resumed, the request is rebuilt from the log: the same image message, byte for byte.
    let resumed = sandbox
        .dsh(&[&["run", "--resume", &id][..], &vision, &["once more"]].concat())
        .await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    let second = chat_requests(&server).pop().unwrap();
    assert_eq!(
        second["messages"].as_array().unwrap()[1..tool_at + 2],
        messages[1..tool_at + 2]
    );

    // A fork shares the stored image (content-addressed), so it sends the same bytes.
    let fork = sandbox.dsh(&["sessions", "fork", &id]).await;
    assert_eq!(fork.status.code(), Some(0), "{}", text(&fork.stderr));
    let child = text(&fork.stdout).trim().to_owned();
    let forked = sandbox
        .dsh(
            &[
                &["run", "--resume", &child][..],
                &vision,
                &["from the fork"],
            ]
            .concat(),
        )
        .await;
    assert_eq!(forked.status.code(), Some(0), "{}", text(&forked.stderr));
    assert_eq!(
        image_message(&chat_requests(&server).pop().unwrap()),
        messages[tool_at + 1]
    );

    // Export writes the log with references and copies the images beside it, in the store's
    // layout.
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("s.jsonl");
    let export = sandbox
        .dsh(&["sessions", "export", &id, "-o", file.to_str().unwrap()])
        .await;
    assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
    assert!(
        text(&export.stderr).contains("exported 1 image(s) to"),
        "{}",
        text(&export.stderr)
    );
    let copied = out
        .path()
        .join("s.jsonl.attachments/objects")
        .join(&digest[..2])
        .join(&digest);
    assert_eq!(std::fs::read(copied).unwrap(), tiny);
    server.shutdown().await;
}
