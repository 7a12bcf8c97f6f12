//! Against the fixture server (examples/mcp_fixture_server.rs) and broken commands.

use super::support::*;
use dsh_mcp::{McpApproval, McpServerConfig, McpState, McpTransport, ReconnectPolicy};
use dsh_protocol::CallId;
use dsh_tools::ToolInvocation;
use std::path::Path;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn fixture(name: &str, log: &Path, mode: &str) -> McpServerConfig {
    let mut server = stdio(name, fixture_server().to_str().unwrap(), &[]);
    if let McpTransport::Stdio { env, .. } = &mut server.transport {
        env.insert("FIXTURE_LOG".into(), log.display().to_string());
        env.insert("FIXTURE_MODE".into(), mode.into());
    }
    server
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

async fn wait_for_line(log: &Path, pred: impl Fn(&str) -> bool) {
    for _ in 0..200 {
        if log_lines(log).iter().any(|l| pred(l)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no such line in {:?}", log_lines(log));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_drained_and_results_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let m = mount(vec![fixture("fx", &log, "")]);
    m.ready("fx").await;
    assert_eq!(
        m.tools.names(None),
        ["mcp__fx__add", "mcp__fx__echo", "mcp__fx__wait"]
    );
    let sum = m.call("mcp__fx__add", r#"{"a":1,"b":2}"#).await;
    assert_eq!(text(&sum), "3");
    assert_eq!(
        sum.value().unwrap()["structuredContent"],
        serde_json::json!({"sum": 3.0})
    );
    // A string or null argument never reaches the body: a clear INVALID_TOOL_ARGUMENTS result.
    let string_args = m.call("mcp__fx__echo", r#""text""#).await;
    assert!(string_args.is_error());
    assert_eq!(
        string_args.error_info().unwrap().code,
        "INVALID_TOOL_ARGUMENTS"
    );
    let null_args = m.call("mcp__fx__echo", "null").await;
    assert_eq!(
        null_args.error_info().unwrap().code,
        "INVALID_TOOL_ARGUMENTS"
    );
    assert_eq!(
        log_lines(&log)[1..],
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/list",
            "tools/call"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_tells_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let m = mount(vec![fixture("fx", &log, "")]);
    m.ready("fx").await;
    let token = CancellationToken::new();
    let call = m.tools.execute(
        ToolInvocation::new(CallId::from("c"), "mcp__fx__wait", "{}").signal(token.clone()),
    );
    let cancel = async {
        wait_for_line(&log, |l| l == "tools/call").await;
        token.cancel();
    };
    let (result, ()) = tokio::join!(call, cancel);
    assert_eq!(text(&result), "Error: tool call aborted");
    wait_for_line(&log, |l| l.starts_with("cancelled ")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_tells_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut server = fixture("fx", &log, "");
    server.tool_timeout_ms = 200;
    let m = mount(vec![server]);
    m.ready("fx").await;
    let result = m.call("mcp__fx__wait", "{}").await;
    assert_eq!(text(&result), "Error: MCP error -32001: Request timed out");
    wait_for_line(&log, |l| l.starts_with("cancelled ")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_names_refuse_the_list_and_bad_schemas_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut dup = fixture("dup", &dir.path().join("a"), "dup");
    dup.reconnect.max_attempts = 1;
    let m = mount(vec![
        dup,
        fixture("bad", &dir.path().join("b"), "badschema"),
    ]);
    m.ready("bad").await;
    assert_eq!(m.board.server("bad").unwrap().tool_count, 3);
    assert!(m
        .board
        .server("bad")
        .unwrap()
        .last_error
        .unwrap()
        .contains("\"bad\": inputSchema type must be \"object\""));
    m.wait_for("dup", |s| s.gave_up).await;
    let dup = m.board.server("dup").unwrap();
    assert!(dup
        .last_error
        .unwrap()
        .contains("server listed tool \"add\" more than once — invalid tool list"));
    assert!(m
        .tools
        .names(None)
        .iter()
        .all(|n| !n.starts_with("mcp__dup__")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_reconnects_and_its_tools_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut server = fixture("fx", &log, "");
    server.reconnect.initial_delay_ms = 50;
    let m = mount(vec![server]);
    m.ready("fx").await;
    let pid: i32 = log_lines(&log)[0]
        .strip_prefix("pid ")
        .unwrap()
        .parse()
        .unwrap();
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    wait_for_line(&log, |l| l.starts_with("pid ") && l != format!("pid {pid}")).await;
    m.ready("fx").await;
    assert_eq!(
        text(&m.call("mcp__fx__echo", r#"{"text":"back"}"#).await),
        "back"
    );
    let pids = log_lines(&log)
        .iter()
        .filter(|l| l.starts_with("pid "))
        .count();
    assert_eq!(pids, 2);
    let notices = m.board.notices_since(&mut 0);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0]
            .message
            .starts_with("MCP server \"fx\": the server exited"),
        "{notices:?}"
    );
    assert!(notices[0]
        .message
        .contains("connection lost; reconnecting in 50ms (attempt 1/10)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_servers_never_block_activation_and_give_one_notice_each() {
    let mut exits = stdio("exits", "false", &[]);
    exits.reconnect = ReconnectPolicy {
        initial_delay_ms: 10,
        max_delay_ms: 20,
        max_attempts: 3,
        enabled: true,
    };
    let mut hangs = stdio("hangs", "sleep", &["30"]);
    hangs.startup_timeout_ms = 300;
    hangs.reconnect.max_attempts = 1;
    let missing = stdio("missing", "/nonexistent/mcp-server", &[]);
    let started = std::time::Instant::now();
    let m = mount(vec![exits, hangs, missing]);
    // Mounting returned before any server answered.
    assert!(m
        .board
        .servers()
        .iter()
        .all(|s| s.state == McpState::Starting || s.state == McpState::Failed));
    assert!(started.elapsed() < Duration::from_secs(2));
    m.wait_for("exits", |s| s.gave_up).await;
    m.wait_for("hangs", |s| s.gave_up).await;
    let notices = m.board.notices_since(&mut 0);
    let about = |name: &str| -> Vec<String> {
        notices
            .iter()
            .filter(|n| n.server == name)
            .map(|n| n.message.clone())
            .collect()
    };
    let exits = about("exits");
    assert_eq!(exits.len(), 2, "{exits:?}");
    assert!(exits[0].starts_with("MCP server \"exits\": "), "{exits:?}");
    assert!(
        exits[0].contains("connection failed; retrying in 10ms (attempt 1/3)"),
        "{exits:?}"
    );
    assert!(exits[1].contains("giving up after 3 consecutive failed reconnect attempts"));
    let hangs = about("hangs");
    assert!(
        hangs[0].contains("no answer to initialize within 300 ms"),
        "{hangs:?}"
    );
    let missing = about("missing");
    assert!(
        missing[0].contains("cannot start `/nonexistent/mcp-server`"),
        "{missing:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_ask_makes_every_call_of_that_server_ask() {
    let dir = tempfile::tempdir().unwrap();
    let mut asking = fixture("asks", &dir.path().join("a"), "");
    asking.approval = McpApproval::Ask;
    let m = mount(vec![asking, fixture("free", &dir.path().join("b"), "")]);
    m.ready("asks").await;
    m.ready("free").await;
    // No approval answerer is mounted here, so an ask is a denial.
    let asked = m.call("mcp__asks__echo", r#"{"text":"x"}"#).await;
    assert_eq!(asked.error_info().unwrap().code, "TOOL_DENIED");
    assert_eq!(
        text(&m.call("mcp__free__echo", r#"{"text":"x"}"#).await),
        "x"
    );
    drop(m.ctx);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn giving_up_unregisters_the_servers_tools() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let marker = dir.path().join("started-once");
    // Starts the fixture the first time only; every restart fails at once.
    let script = format!(
        "if [ -e {m} ]; then exit 3; fi; touch {m}; exec {f}",
        m = marker.display(),
        f = fixture_server().display()
    );
    let mut server = stdio("once", "sh", &["-c", &script]);
    if let McpTransport::Stdio { env, .. } = &mut server.transport {
        env.insert("FIXTURE_LOG".into(), log.display().to_string());
    }
    server.reconnect = ReconnectPolicy {
        enabled: true,
        initial_delay_ms: 10,
        max_delay_ms: 40,
        max_attempts: 2,
    };
    let m = mount(vec![server]);
    m.ready("once").await;
    assert_eq!(m.tools.names(None).len(), 3);
    let pid: i32 = log_lines(&log)[0]
        .strip_prefix("pid ")
        .unwrap()
        .parse()
        .unwrap();
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    m.wait_for("once", |s| s.gave_up).await;
    assert!(m.tools.names(None).is_empty());
    let status = m.board.server("once").unwrap();
    assert_eq!((status.state, status.tool_count), (McpState::Failed, 0));
    let notices = m.board.notices_since(&mut 0);
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[1].message.starts_with(
        "MCP server \"once\" giving up after 2 consecutive failed reconnect attempts"
    ));
}
