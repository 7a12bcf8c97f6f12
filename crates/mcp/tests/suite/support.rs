//! Mounting the plugin in a kernel and finding the servers.

use dsh_kernel::Context;
use dsh_mcp::{
    McpPlugin, McpPluginConfig, McpServerConfig, McpState, McpStatusBoard, McpTransport,
};
use dsh_protocol::CallId;
use dsh_tools::{InvocationResult, ToolInvocation, ToolRuntime, ToolsConfig, ToolsPlugin};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub struct Mounted {
    pub ctx: Context,
    pub tools: Arc<ToolRuntime>,
    pub board: Arc<McpStatusBoard>,
}

pub fn mount(servers: Vec<McpServerConfig>) -> Mounted {
    mount_with_images(servers, None)
}

/// [`mount`], with the `attachments` plugin storing images under `images` when given.
pub fn mount_with_images(servers: Vec<McpServerConfig>, images: Option<&Path>) -> Mounted {
    let ctx = Context::root();
    ctx.plugin::<ToolsPlugin>(ToolsConfig::default()).unwrap();
    if let Some(root) = images {
        let config = dsh_attachments::AttachmentsConfig {
            root: Some(root.to_path_buf()),
            ..Default::default()
        };
        ctx.plugin::<dsh_attachments::AttachmentsPlugin>(config)
            .unwrap();
    }
    ctx.plugin::<McpPlugin>(McpPluginConfig { servers })
        .unwrap();
    Mounted {
        tools: ctx.get::<ToolRuntime>().unwrap(),
        board: ctx.get::<McpStatusBoard>().unwrap(),
        ctx,
    }
}

impl Mounted {
    /// Waits (up to 30 s) until `pred` holds for the server's status.
    pub async fn wait_for(&self, server: &str, pred: impl Fn(&dsh_mcp::McpServerStatus) -> bool) {
        for _ in 0..600 {
            if self.board.server(server).is_some_and(|s| pred(&s)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "server {server} never reached the state: {:?}",
            self.board.server(server)
        );
    }

    pub async fn ready(&self, server: &str) {
        self.wait_for(server, |s| s.state == McpState::Ready).await;
    }

    pub async fn call(&self, name: &str, args: &str) -> InvocationResult {
        self.tools
            .execute(ToolInvocation::new(CallId::from("call-1"), name, args))
            .await
    }
}

pub fn text(result: &InvocationResult) -> String {
    result
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .collect::<Vec<_>>()
        .join("")
}

pub fn stdio(name: &str, command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig::new(
        name,
        McpTransport::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        },
    )
}

/// The test-only fixture server (src/bin/dsh-mcp-fixture-server.rs).
pub fn fixture_server() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dsh-mcp-fixture-server"))
}

/// Where `mcp-server-everything` and `mcp-server-filesystem` are: `$DSH_TEST_MCP_BIN`, else
/// `target/npm/node_modules/.bin` (scripts/install-mcp-servers). `None` (skip, loudly) only
/// when `DSH_SKIP_MCP_E2E=1` and not under `CI=true`; otherwise missing servers fail the test.
pub fn npm_bin() -> Option<PathBuf> {
    let dir = match std::env::var_os("DSH_TEST_MCP_BIN") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/npm/node_modules/.bin"),
    };
    if dir.join("mcp-server-everything").exists() && dir.join("mcp-server-filesystem").exists() {
        return Some(dir);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    if !ci && std::env::var("DSH_SKIP_MCP_E2E").is_ok_and(|v| v == "1") {
        eprintln!(
            "!!! SKIPPING MCP end-to-end test: servers not found in {} (DSH_SKIP_MCP_E2E=1); run scripts/install-mcp-servers",
            dir.display()
        );
        return None;
    }
    panic!(
        "MCP servers not found in {}: run scripts/install-mcp-servers (or set DSH_SKIP_MCP_E2E=1 locally)",
        dir.display()
    );
}

/// A free 127.0.0.1 port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `mcp-server-everything streamableHttp` on a free port; killed on drop.
pub struct HttpEverything {
    pub child: std::process::Child,
    pub url: String,
}

impl HttpEverything {
    pub async fn start(bin: &Path) -> Self {
        let port = free_port();
        let child = std::process::Command::new(bin.join("mcp-server-everything"))
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
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        HttpEverything {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The PNG `get-tiny-image` returns, read from the installed server's source.
pub fn tiny_image(bin: &Path) -> Vec<u8> {
    use base64::Engine as _;
    let source =
        bin.join("../@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js");
    let text = std::fs::read_to_string(&source).unwrap();
    let start = text.find("MCP_TINY_IMAGE = \"").unwrap() + "MCP_TINY_IMAGE = \"".len();
    let end = start + text[start..].find('"').unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(&text[start..end])
        .unwrap()
}
