//! The whole delegation story through the real binary: a parent starts two background
//! children and a background command, keeps working, and ends with both children's reports
//! and the command's output; then the same run killed with SIGKILL while all of it runs,
//! after which every log verifies, the parent resumes to completion and no process of the
//! killed run is left. The mock answers each agent by what its conversation holds.

use super::run_support::*;
use dsh_testkit::checks::assert_log_ok;
use dsh_testkit::mock_llm::{Reply, RuleMatch, Script};
use dsh_testkit::normalize::outline;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The runtime-context entry every child reads.
const DELEGATION: &str = "You are a subagent: another agent started you to do one task, and no person is watching this conversation. Your sandbox and tools are fixed for you; any request for approval or for more access is refused automatically. When a limit stops you, do not retry: say what you could not do and why in your result, so the agent that started you can decide.";

/// A hang guard for conditions the test waits on; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

/// `command` is the background command; `child_delay_ms` how long each child's model call
/// takes to answer.
fn script(command: &str, child_delay_ms: u64) -> Script {
    let parent = || RuleMatch::any().contains("PARENT");
    Script::new()
        .rule(
            RuleMatch::any().contains("CHILD-A task"),
            Reply::text("A-REPORT: a.rs has 2 callers").head_delay_ms(child_delay_ms),
        )
        .rule(
            RuleMatch::any().contains("CHILD-B task"),
            Reply::text("B-REPORT: b.rs has 1 caller").head_delay_ms(child_delay_ms),
        )
        // The command's completion notice: read its output (once).
        .rule(
            parent()
                .contains("Read its output with job_output")
                .lacks("done\n[status"),
            Reply::tool_call("job_output", json!({"job_id": "bash-1"})),
        )
        .rule(
            parent().contains("Background subagent"),
            Reply::text("PARENT noted"),
        )
        .rule(
            parent().contains("done\n[status"),
            Reply::text("PARENT read the output"),
        )
        .rule(
            parent().contains("parent-work"),
            Reply::text("PARENT did its own part"),
        )
        // Keeps working while they run: a foreground command of its own.
        .rule(
            parent().contains("started background job bash-1"),
            Reply::tool_call(
                "bash",
                json!({"command": "echo parent-work", "description": "Own work"}),
            ),
        )
        .rule(
            parent(),
            Reply::default()
                .with_tool_call(
                    "subagent",
                    json!({"description": "helper A", "prompt": "CHILD-A task: look at a.rs"}),
                )
                .with_tool_call(
                    "subagent",
                    json!({"description": "helper B", "prompt": "CHILD-B task: look at b.rs"}),
                )
                .with_tool_call(
                    "bash",
                    json!({"command": command, "description": "Wait, then say done", "run_in_background": true}),
                ),
        )
}

fn run_args(prompt: &str) -> Vec<&str> {
    vec!["run", "--json", "--approval", "never", prompt]
}

#[tokio::test]
async fn two_background_children_and_a_background_command_all_report_back() {
    let server = serve(script("sleep 1; echo done", 300)).await;
    let sandbox = Sandbox::new().with_server(&server);
    let output = sandbox.dsh(&run_args("PARENT: delegate two helpers")).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let lines = json_lines(&output);
    let id = lines[0]["id"].as_str().unwrap().to_owned();
    let events = sandbox.events(&id);
    assert_log_ok(&events);
    let outline = outline(&events);
    // The first step, as the model asked for it, is fixed.
    let calls: Vec<&String> = outline
        .iter()
        .filter(|l| l.starts_with("tool/call"))
        .collect();
    assert!(calls[0].contains(" subagent {"), "{outline:#?}");
    assert!(calls[1].contains(" subagent {"), "{outline:#?}");
    assert!(calls[2].contains(" bash {"), "{outline:#?}");
    // The rest arrives in whatever order the children and the command finish, so the log is
    // compared as the set of what it says: every prompt, notice and tool result, none
    // missing and none extra; every answer one the script gives; every turn completed.
    let said = |prefixes: &[&str]| -> Vec<String> {
        let mut lines: Vec<String> = outline
            .iter()
            .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
            .map(|l| {
                let l = l.split(" +usage").next().unwrap_or(l);
                let l = l.split(" cites [").next().unwrap_or(l);
                ids_as_child(l)
            })
            .collect();
        lines.sort();
        lines
    };
    let mut expected = vec![
        "user: PARENT: delegate two helpers",
        "tool/result started subagent <child>",
        "tool/result started subagent <child>",
        "tool/result started background job bash-1",
        "tool/result parent-work\n",
        "user: Background subagent <child> finished and will do no further work unless you send it more. Its closing message: A-REPORT: a.rs has 2 callers",
        "user: Background subagent <child> finished and will do no further work unless you send it more. Its closing message: B-REPORT: b.rs has 1 caller",
        "user: background job bash-1 (bash: sleep 1; echo done) finished [status: completed, exit code: 0]. Read its output with job_output.",
        "tool/result done\n[status: completed, exit code: 0]",
    ];
    expected.sort_unstable();
    assert_eq!(said(&["user:", "tool/result"]), expected, "{outline:#?}");
    let answers = said(&["assistant:"]);
    let job_reads = answers
        .iter()
        .filter(|a| a.ends_with(" job_output>"))
        .count();
    assert_eq!(job_reads, 1, "{answers:#?}");
    assert!(
        answers.iter().all(|a| a.contains("<call ")
            || [
                "assistant: PARENT did its own part",
                "assistant: PARENT noted",
                "assistant: PARENT read the output"
            ]
            .contains(&a.as_str())),
        "{answers:#?}"
    );
    let ends = turn_ends(&events);
    assert!(
        ends.iter().all(|e| *e == json!({"kind": "completed"})),
        "{ends:?}"
    );
    // Every turn completed, and the run ended once the whole tree was at rest.
    assert_eq!(lines.last().unwrap()["outcome"]["kind"], "completed");
    server.shutdown().await;
}

/// `text` with each session id (a UUID, with or without `session-`) as `<child>`.
fn ids_as_child(text: &str) -> String {
    let mut out = String::new();
    for word in text.split(' ') {
        let bare = word.trim_start_matches("session-");
        let is_id = bare.len() == 36 && bare.chars().filter(|c| *c == '-').count() == 4;
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(if is_id { "<child>" } else { word });
    }
    out
}

/// `/proc/PID/stat` fields after the command name: state, ppid, pgrp, ...
fn stat(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|fields| fields.first().is_some_and(|s| s != "Z"))
}

/// Every live process below `root` (children, their children, ...).
fn descendants(root: i32) -> Vec<i32> {
    let pids: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let fields = stat(pid)?;
            (fields.first()? != "Z").then_some(())?;
            Some((pid, fields.get(1)?.parse().ok()?))
        })
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            pids.iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        i += 1;
    }
    found.remove(0);
    found
}

fn read_pid(path: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[tokio::test]
async fn a_sigkill_mid_run_leaves_no_process_and_every_log_verifies_and_resumes() {
    let command = "sleep 300 & echo $! > grandchild.pid; echo $$ > shell.pid; wait; echo done";
    let server = serve(script(command, 20_000)).await;
    let sandbox = Sandbox::new().with_server(&server);
    let mut dsh = sandbox
        .command(&run_args("PARENT: delegate two helpers"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = i32::try_from(dsh.id()).unwrap();
    let cwd = sandbox.cwd.path().to_path_buf();
    // Mid-way: both children wait on their model call, the command runs, the parent is idle
    // and the run waits for the tree.
    let deadline = Instant::now() + PATIENCE;
    let (shell, grandchild) = loop {
        let requests = server.requests();
        let first_user = |body: &Value| {
            body["messages"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["role"] == "user"))
                .map(|m| m["content"].to_string())
                .unwrap_or_default()
        };
        let children_asked = requests
            .iter()
            .filter(|r| first_user(&r.body).contains("task: look at"))
            .count();
        let parent_done = requests
            .iter()
            .any(|r| r.body.to_string().contains("parent-work"));
        if let (Some(shell), Some(grandchild), 2, true) = (
            read_pid(&cwd.join("shell.pid")),
            read_pid(&cwd.join("grandchild.pid")),
            children_asked,
            parent_done,
        ) {
            break (shell, grandchild);
        }
        assert!(
            Instant::now() < deadline,
            "the run never got going: {children_asked} child requests, parent done: {parent_done}"
        );
        assert!(dsh.try_wait().unwrap().is_none(), "dsh exited early");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let below = descendants(pid);
    assert!(
        below.contains(&shell) && below.contains(&grandchild),
        "{below:?}"
    );
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let status = tokio::task::spawn_blocking(move || dsh.wait_with_output().unwrap())
        .await
        .unwrap()
        .status;
    assert_eq!(status.code(), None, "killed by a signal");
    // Nothing of the run is left: every process that was below dsh is gone.
    let deadline = Instant::now() + PATIENCE;
    while below.iter().any(|pid| alive(*pid)) {
        let left: Vec<i32> = below.iter().copied().filter(|p| alive(*p)).collect();
        assert!(Instant::now() < deadline, "survived dsh: {left:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let verify = sandbox.dsh(&["sessions", "verify", "--all"]).await;
    assert_eq!(
        verify.status.code(),
        Some(0),
        "{}{}",
        text(&verify.stdout),
        text(&verify.stderr)
    );
    // Three sessions: the parent and its two children, linked.
    let listed = text(&sandbox.dsh(&["sessions", "list"]).await.stdout);
    let rows: Vec<&str> = listed.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{listed}");
    let parent = rows[0].split_whitespace().next().unwrap().to_owned();
    assert!(rows[1..].iter().all(|r| r.starts_with("  ")), "{listed}");

    // The parent resumes and completes; it is told its children were interrupted.
    let resumed = sandbox
        .dsh(&["run", "--json", "--resume", &parent, "PARENT: carry on"])
        .await;
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}{}",
        text(&resumed.stdout),
        text(&resumed.stderr)
    );
    let events = sandbox.events(&parent);
    assert_log_ok(&events);
    let told: Vec<Value> = events
        .iter()
        .filter(|e| e.type_name() == "user/message")
        .map(|e| e.data.to_value())
        .filter(|m| m["source"]["plugin"] == "subagents")
        .collect();
    assert_eq!(told.len(), 1, "{told:#?}");
    let notice = told[0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        notice.matches("was interrupted before it finished").count(),
        2,
        "{notice}"
    );
    let ends = turn_ends(&events);
    assert_eq!(ends.last(), Some(&json!({"kind": "completed"})), "{ends:?}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_childs_sandbox_escalation_is_refused_with_a_message_its_model_reads() {
    let refusal = "approval prompts are off in this session (approval policy never)";
    let script = Script::new()
        .rule(
            RuleMatch::any().contains("CHILD-E task").contains(refusal),
            Reply::text("CHILD-E could not write outside the workspace"),
        )
        .rule(
            RuleMatch::any().contains("CHILD-E task"),
            Reply::tool_call(
                "bash",
                json!({"command": "touch /etc/dsh-escalation-test", "description": "Write outside",
                    "sandbox_permissions": "danger-full-access",
                    "justification": "The task needs a file in /etc."}),
            ),
        )
        .rule(
            RuleMatch::any()
                .contains("PARENT-E")
                .contains("CHILD-E could not"),
            Reply::text("PARENT-E heard why"),
        )
        .rule(
            RuleMatch::any().contains("PARENT-E"),
            Reply::tool_call(
                "subagent",
                json!({"description": "write etc", "prompt": "CHILD-E task: write /etc/x",
                    "run_in_background": false}),
            ),
        );
    let server = serve(script).await;
    let sandbox = Sandbox::new().with_server(&server);
    // The parent's own policy would ask a person (the default); the child's is `never`.
    let output = sandbox
        .dsh(&["run", "--json", "PARENT-E: delegate a write"])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let lines = json_lines(&output);
    let child = lines
        .iter()
        .find(|l| l["type"] == "child")
        .and_then(|l| l["session"].as_str())
        .unwrap()
        .to_owned();
    let events = sandbox.events(&child);
    assert_log_ok(&events);
    let outline: Vec<String> = outline(&events)
        .into_iter()
        .filter(|l| {
            [
                "user:",
                "assistant:",
                "tool/result",
                "turn/end",
                "approval/",
                "sandbox/",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .map(|l| ids_as_child(l.split(" +usage").next().unwrap_or(&l)))
        .map(|l| l.split(" cites [").next().unwrap_or(&l).to_owned())
        .collect();
    let call = outline[4].clone();
    assert!(
        call.starts_with("assistant: <call ") && call.ends_with(" bash>"),
        "{outline:#?}"
    );
    assert_eq!(
        outline,
        [
            "sandbox/mode".to_owned(),
            "approval/policy".into(),
            "user: CHILD-E task: write /etc/x".into(),
            format!("user: Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n{DELEGATION}"),
            call,
            // The model reads this (the mock answers the next request by it).
            format!("tool/result ERR Error: the command was not run: {refusal}, so its \"workspace-write\" sandbox mode is fixed and the sandbox's denial is final. Do not set sandbox_permissions again; tell the user what you needed and why. [ESCALATION_DISABLED]"),
            "assistant: CHILD-E could not write outside the workspace".into(),
            "turn/end 1 completed".into(),
        ]
    );
    // Nothing ran outside the sandbox, and the parent got the child's explanation.
    assert!(!std::path::Path::new("/etc/dsh-escalation-test").exists());
    let parent = sandbox.events(lines[0]["id"].as_str().unwrap());
    let answer = parent.iter().rev().find_map(|e| match &e.data {
        dsh_session::EventData::AssistantMessage(m) => Some(m.message.text()),
        _ => None,
    });
    assert_eq!(answer.as_deref(), Some("PARENT-E heard why"));
    server.shutdown().await;
}

/// The names of the tools a request offers.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// The text of a request's first user message (the task, for a child).
fn first_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

fn system_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_cold_resumed_child_keeps_the_persona_and_tool_filter_it_was_started_with() {
    let persona = "You are the PERSONA-X reviewer.";
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.home.path().join("settings.toml"),
        format!(
            "[[plugins]]\nid = \"subagents\"\nconfig = {{ persona = {persona:?}, toolFilter = {{ deny = [\"list_agents\"] }} }}\n"
        ),
    )
    .unwrap();
    let first = serve(
        Script::new()
            .rule(
                RuleMatch::any().contains("CHILD-P task"),
                Reply::text("CHILD-P first pass done"),
            )
            .rule(
                RuleMatch::any()
                    .contains("PARENT-P")
                    .contains("Background subagent"),
                Reply::text("PARENT-P noted"),
            )
            .rule(
                RuleMatch::any()
                    .contains("PARENT-P")
                    .contains("started subagent"),
                Reply::text("PARENT-P waits"),
            )
            .rule(
                RuleMatch::any().contains("PARENT-P"),
                Reply::tool_call(
                    "subagent",
                    json!({"description": "review", "prompt": "CHILD-P task: review a.rs"}),
                ),
            ),
    )
    .await;
    let mut sandbox = sandbox.with_server(&first);
    let output = sandbox.dsh(&run_args("PARENT-P: get a review")).await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let lines = json_lines(&output);
    let parent = lines[0]["id"].as_str().unwrap().to_owned();
    let child = lines
        .iter()
        .find(|l| l["type"] == "child")
        .and_then(|l| l["session"].as_str())
        .unwrap()
        .to_owned();
    let child_first = first
        .requests()
        .into_iter()
        .find(|r| first_user_text(&r.body).contains("CHILD-P task"))
        .unwrap();
    assert!(
        system_text(&child_first.body).contains(persona),
        "{}\n{}",
        system_text(&child_first.body),
        text(&output.stderr)
    );
    assert!(!offered(&child_first.body).contains(&"list_agents".to_owned()));
    first.shutdown().await;

    // A new process whose settings give children no persona and no filter: the stored child
    // is resumed from the store by `send_message` and keeps its own.
    std::fs::remove_file(sandbox.home.path().join("settings.toml")).unwrap();
    let second = serve(
        Script::new()
            .rule(
                RuleMatch::any().contains("CHILD-P task"),
                Reply::text("CHILD-P second pass done"),
            )
            .rule(
                RuleMatch::any()
                    .contains("PARENT-P")
                    .contains("second pass"),
                Reply::text("PARENT-P noted again"),
            )
            .rule(
                RuleMatch::any()
                    .contains("PARENT-P")
                    .contains("message queued"),
                Reply::text("PARENT-P waits again"),
            )
            .rule(
                RuleMatch::any().contains("PARENT-P"),
                Reply::tool_call(
                    "send_message",
                    json!({"subagent_id": child, "message": "CHILD-P: look again"}),
                ),
            ),
    )
    .await;
    sandbox.base_url = Some(second.base_url());
    let output = sandbox
        .dsh(&run_args_resume(&parent, "PARENT-P: ask it again"))
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let child_again = second
        .requests()
        .into_iter()
        .find(|r| {
            first_user_text(&r.body).contains("CHILD-P task")
                && r.body.to_string().contains("CHILD-P: look again")
        })
        .unwrap();
    assert!(
        system_text(&child_again.body).contains(persona),
        "{}",
        system_text(&child_again.body)
    );
    let tools = offered(&child_again.body);
    assert!(!tools.contains(&"list_agents".to_owned()), "{tools:?}");
    assert!(tools.contains(&"report".to_owned()), "{tools:?}");
    // The parent itself never had either.
    let parent_request = second.requests().into_iter().next().unwrap();
    assert!(!system_text(&parent_request.body).contains(persona));
    assert!(offered(&parent_request.body).contains(&"list_agents".to_owned()));
    second.shutdown().await;
}

fn run_args_resume<'a>(id: &'a str, prompt: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--json",
        "--approval",
        "never",
        "--resume",
        id,
        prompt,
    ]
}
