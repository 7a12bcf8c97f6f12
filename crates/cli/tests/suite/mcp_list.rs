//! `dsh mcp list` connects the enabled servers and shows each one's live status, tool count
//! and last error; `--no-connect` shows the configuration only and starts nothing.

use super::mcp::npm_bin;
use super::run_support::*;
use serde_json::Value;

fn list(sandbox: &Sandbox, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["mcp", "list"];
    all.extend_from_slice(args);
    let output = sandbox.command(&all).output().unwrap();
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

/// A ready server, one that exits at once, and a disabled one.
fn configure(sandbox: &Sandbox, everything: &str) {
    let settings = format!(
        "[mcp_servers.everything]\ncommand = {everything:?}\nargs = [\"stdio\"]\n\n\
         [mcp_servers.exits]\ncommand = \"false\"\n\n\
         [mcp_servers.off]\ncommand = \"false\"\nenabled = false\n"
    );
    std::fs::write(sandbox.home.path().join("settings.toml"), settings).unwrap();
}

#[test]
fn list_connects_and_shows_status_tool_count_and_last_error() {
    let Some(bin) = npm_bin() else { return };
    let sandbox = Sandbox::new();
    let everything = bin.join("mcp-server-everything").display().to_string();
    configure(&sandbox, &everything);

    let (code, out, err) = list(&sandbox, &["--json"]);
    assert_eq!(code, Some(0), "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    let rows: Vec<String> = listed["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {} {}",
                s["name"].as_str().unwrap(),
                s["state"].as_str().unwrap(),
                s["status"].as_str().unwrap(),
                s["toolCount"],
                s["lastError"]
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "everything enabled ready 13 null",
            "exits enabled failed 0 \"the server exited during initialize (exit status: 1)\"",
            "off disabled disabled 0 null",
        ]
    );

    let (code, out, err) = list(&sandbox, &[]);
    assert_eq!(code, Some(0), "{err}");
    let settings = sandbox.home.path().join("settings.toml");
    let settings = settings.display();
    assert_eq!(
        out,
        format!(
            "everything  stdio  {everything} stdio  [enabled]\n    source: {settings}:1 (settings)\n    status: ready, 13 tools\n\
             exits  stdio  false  [enabled]\n    source: {settings}:5 (settings)\n    status: failed, 0 tools\n    last error: the server exited during initialize (exit status: 1)\n\
             off  stdio  false  [disabled]\n    source: {settings}:8 (settings)\n    status: disabled, 0 tools\n"
        )
    );
}

#[test]
fn no_connect_starts_nothing() {
    let sandbox = Sandbox::new();
    let marker = sandbox.home.path().join("server-ran");
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        format!(
            "[mcp_servers.marker]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n",
            marker.display()
        ),
    )
    .unwrap();
    let (code, out, err) = list(&sandbox, &["--no-connect"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("marker  stdio  sh -c touch "), "{out}");
    assert!(!out.contains("status:"), "{out}");
    assert!(!marker.exists(), "--no-connect started the server");
    // Without the flag the listing does start it (and it fails: it exits at once).
    let (code, out, err) = list(&sandbox, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("    status: failed, 0 tools\n"), "{out}");
    assert!(
        marker.exists(),
        "the connecting listing did not start the server"
    );
}

#[test]
fn a_slow_server_is_never_waited_for_in_silence() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        "[mcp_servers.hangs]\ncommand = \"sleep\"\nargs = [\"60\"]\nstartup_timeout_sec = 2\n",
    )
    .unwrap();
    let (code, out, err) = list(&sandbox, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.starts_with("dsh: waiting for MCP server \"hangs\" to start ("),
        "{err}"
    );
    assert!(
        err.contains("`dsh mcp list --no-connect` lists without starting them)"),
        "{err}"
    );
    assert!(out.contains("    status: "), "{out}");
}
