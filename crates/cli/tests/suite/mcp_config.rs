//! `dsh mcp list|add|remove` and `dsh trust` on the real binary, and what a headless run does
//! in an untrusted workspace that brings its own `.mcp.json` and hooks.

use super::run_support::*;
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::Value;

const SETTINGS: &str = "# my own notes, kept verbatim\n[model]\nprovider = \"deepseek-official\"   # the default, spelled out\n\n[sandbox]\nmode = \"workspace-write\"\n";

fn run(sandbox: &Sandbox, args: &[&str]) -> (Option<i32>, String, String) {
    let output = sandbox.command(args).output().unwrap();
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

fn settings(sandbox: &Sandbox) -> String {
    std::fs::read_to_string(sandbox.home.path().join("settings.toml")).unwrap()
}

#[test]
fn add_and_remove_edit_settings_toml_keeping_the_rest_of_its_text() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.home.path().join("settings.toml"), SETTINGS).unwrap();
    let (code, out, err) = run(
        &sandbox,
        &[
            "mcp",
            "add",
            "fs",
            "--env",
            "ROOT=/repo",
            "--",
            "npx",
            "-y",
            "server-filesystem",
            "/repo",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("added MCP server `fs` to "), "{out}");
    let (code, _, err) = run(
        &sandbox,
        &[
            "mcp",
            "add",
            "web",
            "--url",
            "http://127.0.0.1:3001/mcp",
            "--header",
            "X-Team=core",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        settings(&sandbox),
        format!(
            "{SETTINGS}\n[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"server-filesystem\", \"/repo\"]\nenv = {{ ROOT = \"/repo\" }}\n\n[mcp_servers.web]\nurl = \"http://127.0.0.1:3001/mcp\"\nheaders = {{ X-Team = \"core\" }}\n"
        )
    );

    // A second add of the same name is refused, and changes nothing.
    let (code, _, err) = run(&sandbox, &["mcp", "add", "fs", "--", "other"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("server `fs` already exists"), "{err}");

    let (code, out, _) = run(&sandbox, &["mcp", "list", "--json", "--no-connect"]);
    assert_eq!(code, Some(0));
    let listed: Value = serde_json::from_str(&out).unwrap();
    let rows: Vec<String> = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {} line {}",
                s["name"].as_str().unwrap(),
                s["transport"].as_str().unwrap(),
                s["target"].as_str().unwrap(),
                s["state"].as_str().unwrap(),
                s["line"]
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "fs stdio npx -y server-filesystem /repo enabled line 8",
            "web http http://127.0.0.1:3001/mcp enabled line 13"
        ]
    );

    let (code, _, err) = run(&sandbox, &["mcp", "remove", "fs"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = run(&sandbox, &["mcp", "remove", "web"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(settings(&sandbox), SETTINGS);

    let (code, _, err) = run(&sandbox, &["mcp", "remove", "web"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no MCP server is named `web`"), "{err}");
}

#[test]
fn remove_names_the_json_file_to_edit() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.home.path().join("mcp.json"),
        "{\n  \"mcpServers\": {\n    \"gh\": { \"command\": \"gh-mcp\" }\n  }\n}\n",
    )
    .unwrap();
    let (code, _, err) = run(&sandbox, &["mcp", "remove", "gh"]);
    assert_eq!(code, Some(2));
    let path = sandbox.home.path().join("mcp.json");
    assert!(
        err.contains(&format!(
            "server `gh` is configured in {} (line 3), which dsh does not edit",
            path.display()
        )),
        "{err}"
    );
}

const PROJECT_MCP: &str = r#"{ "mcpServers": {
  "marker": { "command": "sh", "args": ["-c", "touch ${MARK}"] }
} }"#;

fn untrusted_workspace(sandbox: &Sandbox) -> std::path::PathBuf {
    let marker = sandbox.home.path().join("server-ran");
    std::fs::write(sandbox.cwd.path().join(".mcp.json"), PROJECT_MCP).unwrap();
    std::fs::create_dir(sandbox.cwd.path().join(".claude")).unwrap();
    std::fs::write(
        sandbox.cwd.path().join(".claude/settings.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#,
    )
    .unwrap();
    marker
}

fn listed_states(sandbox: &Sandbox) -> Vec<String> {
    let (code, out, err) = run(sandbox, &["mcp", "list", "--json", "--no-connect"]);
    assert_eq!(code, Some(0), "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["name"].as_str().unwrap(),
                s["state"].as_str().unwrap()
            )
        })
        .collect()
}

fn configured_servers(sandbox: &Sandbox) -> Vec<String> {
    let (code, out, err) = run(sandbox, &["config", "show", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let shown: Value = serde_json::from_str(&out).unwrap();
    shown["mcp"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["name"].as_str().unwrap(),
                s["scope"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn an_untrusted_workspace_is_ignored_with_one_notice_until_trusted() {
    let server = serve(
        Script::new()
            .respond(Reply::text("done"))
            .respond(Reply::text("done again")),
    )
    .await;
    let mut sandbox = Sandbox::new().with_server(&server);
    let marker = untrusted_workspace(&sandbox);
    sandbox
        .env
        .push(("MARK".into(), marker.display().to_string()));
    let workspace = sandbox.workspace();

    // Refused (never trusted): nothing configured from the workspace, one notice, nothing ran.
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let notice = format!(
        "dsh: notice: this workspace is not trusted, so its .mcp.json, .claude/settings.json are \
         ignored (nothing in them runs); to use them: dsh trust {}",
        workspace.display()
    );
    let stderr = text(&output.stderr);
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("dsh: notice: this workspace"))
        .collect();
    assert_eq!(notices, [notice.as_str()]);
    assert!(!marker.exists(), "an untrusted .mcp.json server ran");
    assert_eq!(configured_servers(&sandbox), Vec::<String>::new());
    assert_eq!(
        listed_states(&sandbox),
        ["marker untrusted (run `dsh trust` to enable)"]
    );
    // A connecting listing does not start an untrusted server either.
    let (code, out, err) = run(&sandbox, &["mcp", "list"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("[untrusted (run `dsh trust` to enable)]"),
        "{out}"
    );
    assert!(!out.contains("status:"), "{out}");
    assert!(
        !marker.exists(),
        "`dsh mcp list` started an untrusted server"
    );

    // Granted: `dsh trust` says what it enables; the server is configured, no notice.
    let (code, out, err) = run(&sandbox, &["trust"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        format!(
            "trusted {ws}\nnow enabled: .mcp.json, .claude/settings.json\n  MCP server marker: sh -c touch {mark}\n  hook: ./guard.sh\n",
            ws = workspace.display(),
            mark = marker.display()
        )
    );
    let (_, out, _) = run(&sandbox, &["trust", "--list"]);
    assert_eq!(out, format!("{}\n", workspace.display()));
    assert_eq!(configured_servers(&sandbox), ["marker workspace"]);
    assert_eq!(listed_states(&sandbox), ["marker enabled"]);
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        !text(&output.stderr).contains("not trusted"),
        "{}",
        text(&output.stderr)
    );

    // Revoked: back to ignored.
    let (code, out, _) = run(
        &sandbox,
        &["trust", "--revoke", &workspace.display().to_string()],
    );
    assert_eq!(code, Some(0));
    assert!(out.starts_with("revoked trust in "), "{out}");
    assert_eq!(configured_servers(&sandbox), Vec::<String>::new());
    let (_, out, _) = run(&sandbox, &["trust", "--list"]);
    assert_eq!(out, "no trusted workspaces\n");
    let stored: Value = serde_json::from_str(
        &std::fs::read_to_string(sandbox.home.path().join("trusted.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(stored, serde_json::json!({ "trusted": [] }));
    server.shutdown().await;
}

#[tokio::test]
async fn a_broken_mcp_json_is_one_notice_and_the_run_goes_on() {
    let server = serve(Script::new().respond(Reply::text("fine"))).await;
    let sandbox = Sandbox::new().with_server(&server);
    std::fs::write(
        sandbox.home.path().join("mcp.json"),
        "{ \"mcpServers\": {\n  \"x\": [,\n",
    )
    .unwrap();
    let output = sandbox.dsh(&["run", "hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "fine\n");
    let warnings: Vec<String> = text(&output.stderr)
        .lines()
        .filter(|l| l.contains("MCP configuration"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        warnings,
        [format!(
            "dsh: warning: MCP configuration: {}:2: invalid JSON (expected value at line 2 column 9); the file is skipped",
            sandbox.home.path().join("mcp.json").display()
        )]
    );
    server.shutdown().await;
}
