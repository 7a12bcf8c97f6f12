//! Against the real third-party servers (server-everything, server-filesystem).

use super::support::*;
use dsh_mcp::{McpServerConfig, McpState, McpTransport};
use sha2::Digest as _;
use std::collections::BTreeMap;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_echo_sum_image_and_env_scrub() {
    let Some(bin) = npm_bin() else { return };
    std::env::set_var("DSH_MCP_TEST_PARENT_TOKEN", "parent-secret");
    let mut server = stdio(
        "everything",
        bin.join("mcp-server-everything").to_str().unwrap(),
        &["stdio"],
    );
    if let McpTransport::Stdio { env, .. } = &mut server.transport {
        env.insert("EXPLICIT_TOKEN".into(), "mine".into());
    }
    let m = mount(vec![server]);
    m.ready("everything").await;
    // server-everything may announce a changed list right after start; a re-sync swaps the
    // generation tool by tool, so read the registry once the swap has settled.
    let mut names = m.tools.names(None);
    for _ in 0..100 {
        if m.board.server("everything").unwrap().tool_count == names.len() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        names = m.tools.names(None);
    }
    for tool in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
    ] {
        assert!(names.contains(&tool.to_owned()), "{names:?}");
    }
    assert_eq!(
        m.board.server("everything").unwrap().tool_count,
        names.len()
    );

    let echo = m.call("mcp__everything__echo", r#"{"message":"hi"}"#).await;
    assert_eq!(text(&echo), "Echo: hi");
    assert!(!echo.is_error());
    let sum = m.call("mcp__everything__get-sum", r#"{"a":2,"b":3}"#).await;
    assert!(text(&sum).contains('5'), "{}", text(&sum));
    let image = m.call("mcp__everything__get-tiny-image", "{}").await;
    let shown = text(&image);
    assert!(
        shown.contains("[image unavailable: image/png; no attachment store is mounted; raw image data remains available to programmatic callers]"),
        "{shown}"
    );
    // No inline base64 in the value either.
    assert!(!image.value().unwrap().to_string().contains("iVBOR"));

    let env = text(&m.call("mcp__everything__get-env", "{}").await);
    assert!(
        env.contains("EXPLICIT_TOKEN") && env.contains("mine"),
        "{env}"
    );
    assert!(!env.contains("DSH_MCP_TEST_PARENT_TOKEN"), "{env}");
    assert!(env.contains("PATH"), "{env}");

    // A server-side argument error is the server's own message.
    let bad = m.call("mcp__everything__get-sum", r#"{"a":"x"}"#).await;
    assert!(bad.is_error());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http() {
    let Some(bin) = npm_bin() else { return };
    let server = HttpEverything::start(&bin).await;
    let config = McpServerConfig::new(
        "web",
        McpTransport::Http {
            url: server.url.clone(),
            headers: BTreeMap::from([("X-Test".to_owned(), "1".to_owned())]),
            bearer_token_env_var: None,
        },
    );
    let images = tempfile::tempdir().unwrap();
    let m = mount_with_images(vec![config], Some(images.path()));
    m.ready("web").await;
    assert_eq!(
        text(&m.call("mcp__web__echo", r#"{"message":"over http"}"#).await),
        "Echo: over http"
    );
    let sum = m.call("mcp__web__get-sum", r#"{"a":20,"b":22}"#).await;
    assert!(text(&sum).contains("42"), "{}", text(&sum));
    // With a store the image is kept there, and the result holds its reference in place.
    let image = m.call("mcp__web__get-tiny-image", "{}").await;
    let expected = tiny_image(&bin);
    let digest: String = sha2::Sha256::digest(&expected)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let reference = serde_json::json!({"attachmentId": format!("sha256:{digest}"),
        "mediaType": "image/png", "bytes": expected.len(), "width": 20, "height": 20});
    assert_eq!(
        serde_json::to_value(&image.content).unwrap(),
        serde_json::json!([
            {"type": "text", "text": "Here's the image you requested:"},
            {"type": "image", "attachment": reference},
            {"type": "text", "text": "The image above is the MCP logo."},
        ])
    );
    let stored = images
        .path()
        .join("objects")
        .join(&digest[..2])
        .join(&digest);
    assert_eq!(std::fs::read(stored).unwrap(), expected);
    assert!(!image.value().unwrap().to_string().contains("iVBOR"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_read_text_file_and_structured_content() {
    let Some(bin) = npm_bin() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("note.txt"), "hello from a file\n").unwrap();
    let m = mount(vec![stdio(
        "fs",
        bin.join("mcp-server-filesystem").to_str().unwrap(),
        &[root.to_str().unwrap()],
    )]);
    m.ready("fs").await;
    let args = serde_json::json!({"path": root.join("note.txt")}).to_string();
    let read = m.call("mcp__fs__read_text_file", &args).await;
    assert_eq!(text(&read), "hello from a file\n");
    assert!(read.value().unwrap().get("structuredContent").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_fails_with_the_spec_text() {
    let Some(bin) = npm_bin() else { return };
    let mut server = stdio(
        "slow",
        bin.join("mcp-server-everything").to_str().unwrap(),
        &["stdio"],
    );
    server.tool_timeout_ms = 300;
    let m = mount(vec![server]);
    m.ready("slow").await;
    let result = m
        .call(
            "mcp__slow__trigger-long-running-operation",
            r#"{"duration":5,"steps":5}"#,
        )
        .await;
    assert_eq!(text(&result), "Error: MCP error -32001: Request timed out");
    // The connection survives the timeout.
    assert_eq!(
        text(&m.call("mcp__slow__echo", r#"{"message":"still"}"#).await),
        "Echo: still"
    );
    assert_eq!(m.board.server("slow").unwrap().state, McpState::Ready);
}
