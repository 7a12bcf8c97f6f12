//! Background jobs through the real binary: a background command whose output the model
//! reads after the completion wakes it, and a SIGKILL of dsh that must leave no process of
//! the run behind.

use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, Script};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// A hang guard for conditions the test waits on; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

fn run_args(prompt: &str) -> Vec<&str> {
    vec!["run", "--json", "--approval", "never", prompt]
}

/// The text of every tool result the request carries.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            m["content"]
                .as_str()
                .map_or_else(|| m["content"].to_string(), str::to_owned)
        })
        .collect()
}

/// The user-role texts of a request.
fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| {
            m["content"]
                .as_str()
                .map_or_else(|| m["content"].to_string(), str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn a_background_command_wakes_the_model_which_reads_its_output_before_the_run_ends() {
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": "sleep 1; echo done", "description": "Wait, then say done", "run_in_background": true}),
            ))
            .respond(Reply::text("Started it; I will read it when it finishes."))
            .respond(Reply::tool_call("job_output", json!({"job_id": "bash-1"})))
            .respond(Reply::text("The command printed done.")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&run_args("run it in the background")).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", text(&output.stderr));
    assert_eq!(
        tool_results(&requests[1].body),
        ["started background job bash-1"]
    );
    // The completion opened a second turn with its notice.
    let notice = "background job bash-1 (bash: sleep 1; echo done) finished [status: completed, \
                  exit code: 0]. Read its output with job_output.";
    assert_eq!(
        user_texts(&requests[2].body).last().map(String::as_str),
        Some(notice)
    );
    assert_eq!(
        tool_results(&requests[3].body).last().map(String::as_str),
        Some("done\n[status: completed, exit code: 0]")
    );
    let lines = json_lines(&output);
    let id = lines[0]["id"].as_str().unwrap().to_owned();
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    assert_eq!(
        turn_ends(&events),
        [json!({"kind": "completed"}), json!({"kind": "completed"})]
    );
    server.shutdown().await;
}

/// Process ids whose process group is `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid pgrp ...`: comm may hold spaces, so split after `)`.
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().collect())
                .unwrap_or_default();
            let state = fields.first().copied().unwrap_or("Z");
            state != "Z" && fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
        })
        .collect()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

async fn until_gone(what: &str, mut gone: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !gone() {
        assert!(Instant::now() < deadline, "{what} survived dsh");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn no_process_of_a_background_command_survives_a_sigkill_of_dsh() {
    let command = "sleep 300 & echo $! > grandchild.pid; echo $$ > shell.pid; wait";
    let server = serve(
        Script::new()
            .respond(Reply::tool_call(
                "bash",
                json!({"command": command, "description": "Sleep for a long time", "run_in_background": true}),
            ))
            .respond(Reply::text("It runs in the background.")),
    )
    .await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut child = sandbox
        .command(&run_args("start a long command"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let cwd = sandbox.cwd.path().to_path_buf();
    let deadline = Instant::now() + PATIENCE;
    let (shell, grandchild) = loop {
        if let (Some(shell), Some(grandchild)) = (
            read_pid(&cwd.join("shell.pid")),
            read_pid(&cwd.join("grandchild.pid")),
        ) {
            break (shell, grandchild);
        }
        assert!(
            Instant::now() < deadline,
            "the background command never started"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "dsh exited before its job settled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The run is waiting for its job: nothing else would keep it alive.
    server.wait_for_requests(2).await;
    assert!(alive(shell) && alive(grandchild));
    child.kill().unwrap();
    child.wait().unwrap();
    until_gone("the shell", || !alive(shell)).await;
    until_gone("the shell's own background child", || !alive(grandchild)).await;
    until_gone("a process of the command's group", || {
        group_members(shell).is_empty()
    })
    .await;

    let verify = sandbox.dsh(&["sessions", "verify", "--all"]).await;
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{}{}",
        text(&verify.stdout),
        text(&verify.stderr)
    );
    server.shutdown().await;
}
