//! Parsing vectors for every MCP configuration form, expansion, precedence and bad input.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::config::{load, Overrides};
use serde_json::json;
use std::collections::BTreeMap;

struct Fixture {
    home: tempfile::TempDir,
    ws: tempfile::TempDir,
    env: BTreeMap<String, String>,
}

fn fixture(settings: &str, user: Option<&str>, workspace: Option<&str>) -> Fixture {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("settings.toml"), settings).unwrap();
    if let Some(text) = user {
        std::fs::write(home.path().join(USER_FILE), text).unwrap();
    }
    if let Some(text) = workspace {
        std::fs::write(ws.path().join(WORKSPACE_FILE), text).unwrap();
    }
    let mut env = BTreeMap::new();
    env.insert("DSH_HOME".to_owned(), home.path().display().to_string());
    env.insert("TOKEN".to_owned(), "t0k".to_owned());
    env.insert("HOME".to_owned(), "/home/me".to_owned());
    Fixture { home, ws, env }
}

impl Fixture {
    fn resolve(&self, trust: TrustDecision) -> McpConfig {
        let settings = load(&self.env, &Overrides::default()).unwrap();
        resolve(&settings, self.ws.path(), trust, &self.env)
    }

    /// Problems with the temp paths replaced by `HOME/` and `WS/`.
    fn problems(&self, config: &McpConfig) -> Vec<String> {
        config
            .problems
            .iter()
            .map(|p| {
                p.to_string()
                    .replace(&format!("{}/", self.home.path().display()), "HOME/")
                    .replace(&format!("{}/", self.ws.path().display()), "WS/")
            })
            .collect()
    }
}

fn row(config: &McpConfig) -> serde_json::Value {
    let mut value = config.row_config();
    for server in value["servers"].as_array_mut().unwrap() {
        let source = server["source"].as_str().unwrap().to_owned();
        server["source"] = json!(source.rsplit('/').next().unwrap());
    }
    value
}

const SETTINGS: &str = r#"
[model]
provider = "deepseek-official"

[mcp_servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/repo"]
env = { ROOT = "/repo" }
cwd = "/tmp"
startup_timeout_sec = 20
tool_timeout_sec = 1.5
enabled_tools = ["read_text_file"]
disabled_tools = ["write_file"]
approval = "ask"

[mcp_servers.web]
url = "http://127.0.0.1:3001/mcp"
headers = { "X-Team" = "core" }
bearer_token_env_var = "WEB_TOKEN"
enabled = false
"#;

#[test]
fn settings_tables_take_codex_keys_and_map_onto_the_row_shape() {
    let f = fixture(SETTINGS, None, None);
    let config = f.resolve(TrustDecision::Untrusted);
    assert_eq!(config.problems, vec![]);
    assert_eq!(
        row(&config),
        json!({ "servers": [
            { "name": "fs",
              "transport": { "type": "stdio", "command": "npx",
                  "args": ["-y", "@modelcontextprotocol/server-filesystem", "/repo"],
                  "env": { "ROOT": "/repo" }, "cwd": "/tmp" },
              "enabled": true, "startupTimeoutMs": 20000, "toolTimeoutMs": 1500,
              "enabledTools": ["read_text_file"], "disabledTools": ["write_file"],
              "approval": "ask", "source": "settings.toml" },
            { "name": "web",
              "transport": { "type": "http", "url": "http://127.0.0.1:3001/mcp",
                  "headers": { "X-Team": "core" }, "bearerTokenEnvVar": "WEB_TOKEN" },
              "enabled": false, "startupTimeoutMs": 10000, "toolTimeoutMs": 60000,
              "approval": "policy", "source": "settings.toml" }
        ]})
    );
    assert_eq!((config.servers[0].line, config.servers[1].line), (5, 16));
}

const CLAUDE: &str = r#"{
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "server-filesystem", "${HOME}/x"],
            "env": { "ROOT": "${HOME}/x", "LEVEL": "${LEVEL:-info}" } },
    "web": { "type": "http", "url": "https://h/${PATH_PART:-mcp}",
             "headers": { "Authorization": "Bearer ${TOKEN}" }, "description": "ignored" },
    "bare url": { "url": "http://127.0.0.1:1/mcp" }
  }
}"#;

#[test]
fn the_mcp_servers_json_convention_expands_variables_in_the_spec_fields() {
    let f = fixture("", Some(CLAUDE), None);
    let config = f.resolve(TrustDecision::Untrusted);
    assert_eq!(config.problems, vec![]);
    assert_eq!(
        row(&config),
        json!({ "servers": [
            { "name": "fs",
              "transport": { "type": "stdio", "command": "npx",
                  "args": ["-y", "server-filesystem", "/home/me/x"],
                  "env": { "LEVEL": "info", "ROOT": "/home/me/x" } },
              "enabled": true, "startupTimeoutMs": 10000, "toolTimeoutMs": 60000,
              "approval": "policy", "source": "mcp.json" },
            { "name": "web",
              "transport": { "type": "http", "url": "https://h/mcp",
                  "headers": { "Authorization": "Bearer t0k" } },
              "enabled": true, "startupTimeoutMs": 10000, "toolTimeoutMs": 60000,
              "approval": "policy", "source": "mcp.json" },
            { "name": "bare_url",
              "transport": { "type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {} },
              "enabled": true, "startupTimeoutMs": 10000, "toolTimeoutMs": 60000,
              "approval": "policy", "source": "mcp.json" }
        ]})
    );
}

#[test]
fn expansion_vectors() {
    let env: BTreeMap<String, String> = [("A", "1"), ("EMPTY", "")]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let cases = [
        ("${A}", Ok("1")),
        ("x${A}y${A}", Ok("x1y1")),
        ("${B:-dflt}", Ok("dflt")),
        ("${EMPTY:-dflt}", Ok("dflt")),
        ("${EMPTY}", Ok("")),
        ("${B:-}", Ok("")),
        ("$A and $", Ok("$A and $")),
        (
            "${B}",
            Err("environment variable `B` is not set (write `${B:-default}` for a fallback)"),
        ),
        ("${A", Err("`${` without a closing `}` in \"${A\"")),
        ("${1x}", Err("`${1x}` is not a variable reference")),
    ];
    for (text, expected) in cases {
        assert_eq!(
            expand(text, &env),
            expected.map(str::to_owned).map_err(str::to_owned),
            "{text}"
        );
    }
}

#[test]
fn precedence_is_settings_then_workspace_then_user_by_name() {
    let user = r#"{"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"},
                  "c": {"command": "user-c"}}}"#;
    let workspace = r#"{"mcpServers": {"a": {"command": "ws-a"}, "b": {"command": "ws-b"}}}"#;
    let settings = "[mcp_servers.a]\ncommand = \"settings-a\"\n";
    let f = fixture(settings, Some(user), Some(workspace));
    let names = |config: &McpConfig| -> Vec<String> {
        config
            .servers
            .iter()
            .map(|s| format!("{} {} {}", s.name, s.transport.describe(), s.scope))
            .collect()
    };
    let trusted = f.resolve(TrustDecision::Trusted);
    assert_eq!(
        names(&trusted),
        ["a settings-a settings", "b ws-b workspace", "c user-c user"]
    );
    assert_eq!(trusted.shadowed.len(), 3);
    assert_eq!(trusted.untrusted_file, None);

    // Untrusted: the workspace file is not read at all.
    for decision in [TrustDecision::Untrusted, TrustDecision::DeclinedForSession] {
        let untrusted = f.resolve(decision);
        assert_eq!(
            names(&untrusted),
            ["a settings-a settings", "b user-b user", "c user-c user"]
        );
        assert_eq!(
            untrusted.untrusted_file,
            Some(f.ws.path().join(WORKSPACE_FILE))
        );
    }
}

#[test]
fn sse_is_refused_naming_file_server_and_line_and_the_rest_loads() {
    let user = "{\"mcpServers\": {\n  \"old\": { \"type\": \"sse\", \"url\": \"https://h/sse\" },\n  \"ok\": { \"command\": \"srv\" }\n}}";
    let f = fixture("", Some(user), None);
    let config = f.resolve(TrustDecision::Untrusted);
    assert_eq!(
        f.problems(&config),
        [
            "HOME/mcp.json:2: `mcpServers.old.type`: transport `sse` is not supported (dsh speaks \
          stdio and Streamable HTTP; most servers also serve Streamable HTTP: use `\"type\": \
          \"http\"` with its endpoint URL); server `old` is skipped"
        ]
    );
    assert_eq!(config.servers.len(), 1);
    assert_eq!(config.servers[0].name, "ok");
}

#[test]
fn bad_entries_are_skipped_with_file_line_and_key_and_the_rest_still_loads() {
    let settings = "[model]\nprovider = \"deepseek-official\"\n\n[mcp_servers.bad]\ncommand = \"x\"\nargz = []\n\n[mcp_servers.slow]\ncommand = \"y\"\nstartup_timeout_sec = -1\n\n[mcp_servers.both]\ncommand = \"z\"\nurl = \"http://127.0.0.1/\"\n\n[mcp_servers.good]\ncommand = \"ok\"\n";
    let workspace = "{\"mcpServers\": {\n  \"a\": { \"command\": 5 },\n  \"b\": { \"command\": \"x\", \"args\": \"notalist\" },\n  \"c\": { \"command\": \"${NOPE}\" },\n  \"d\": { },\n  \"e\": { \"type\": \"ws\", \"url\": \"x\" },\n  \"g\": { \"url\": \"ftp://h/mcp\" },\n  \"f\": { \"command\": \"fine\" }\n}}";
    let user = "{\"mcpServers\": {\n  \"u\": { \"command\": \"x\" },,\n}}";
    let f = fixture(settings, Some(user), Some(workspace));
    let config = f.resolve(TrustDecision::Trusted);
    assert_eq!(
        f.problems(&config),
        [
            "HOME/settings.toml:6: `mcp_servers.bad.argz`: unknown key; did you mean `args`?; server `bad` is skipped",
            "HOME/settings.toml:10: `mcp_servers.slow.startup_timeout_sec`: expected a positive number of seconds, found an integer (-1); server `slow` is skipped",
            "HOME/settings.toml:14: `mcp_servers.both.url`: a server has either `command` (stdio) or `url` (http), not both; server `both` is skipped",
            "WS/.mcp.json:2: `mcpServers.a.command`: expected a string, found 5; server `a` is skipped",
            "WS/.mcp.json:3: `mcpServers.b.args`: expected an array of strings; server `b` is skipped",
            "WS/.mcp.json:4: `mcpServers.c.command`: environment variable `NOPE` is not set (write `${NOPE:-default}` for a fallback); server `c` is skipped",
            "WS/.mcp.json:5: `mcpServers.d`: needs `command` (stdio) or `url` (http); server `d` is skipped",
            "WS/.mcp.json:6: `mcpServers.e.type`: unknown transport \"ws\" (expected \"stdio\" or \"http\"); server `e` is skipped",
            "WS/.mcp.json:7: `mcpServers.g.url`: expected an http:// or https:// URL, found \"ftp://h/mcp\"; server `g` is skipped",
            "HOME/mcp.json:2: invalid JSON (key must be a string at line 2 column 27); the file is skipped",
        ]
    );
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good", "f"]);
}

#[test]
fn names_are_sanitised_to_the_tool_name_alphabet() {
    assert_eq!(sanitize_name("my server.v2"), "my_server_v2");
    assert_eq!(sanitize_name(&"x".repeat(40)), "x".repeat(32));
    assert!(is_server_name("fs-1_a"));
    assert!(!is_server_name("a.b"));
    assert!(!is_server_name(""));
    assert!(!is_server_name(&"x".repeat(33)));
}
