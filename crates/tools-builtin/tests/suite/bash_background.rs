//! `bash` with `run_in_background`: a job of the calling agent, confined like a foreground
//! call, streamed into the job, and never outliving a kill or its owner.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_jobs::{JobId, JobRegistry, JobState, JobsConfig, JobsPlugin};
use dsh_tools_builtin::sandbox::{Enforcement, SandboxProbe};
use dsh_tools_builtin::SandboxMode;
use serde_json::{json, Value};

use super::harness::{text, Harness};

/// A hang guard for conditions the test waits on; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(60);

fn with_jobs(h: &Harness) -> Arc<JobRegistry> {
    h.root.plugin::<JobsPlugin>(JobsConfig::default()).unwrap();
    h.root.require::<JobRegistry>().unwrap()
}

fn background(command: &str) -> Value {
    json!({"command": command, "run_in_background": true})
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

async fn pid_in(path: &Path) -> i32 {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn until_dead(pid: i32) {
    let deadline = Instant::now() + PATIENCE;
    while alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} survived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn settled(
    jobs: &JobRegistry,
    owner: &dsh_protocol::SessionId,
    id: &JobId,
) -> dsh_jobs::JobSnapshot {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let job = jobs.get(owner, id).unwrap();
        if !job.state.is_live() {
            return job;
        }
        assert!(Instant::now() < deadline, "job {id} never settled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The texts of the notices in the agent's inbox events.
fn notices(h: &Harness) -> Vec<(String, String)> {
    h.events(&["agent/inbox/spliced"])
        .iter()
        .flat_map(|e| {
            e["data"]["inserted"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|m| {
            (
                m["source"]["plugin"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                m["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn output_streams_into_the_job_which_settles_with_the_exit_code_and_notifies_the_busy_owner()
{
    let h = Harness::new(json!({"policy": "never"}));
    let jobs = with_jobs(&h);
    let command = "echo one; sleep 0.1; echo two; exit 3";
    let started = h.run("bash", background(command)).await;
    assert_eq!(text(&started), "started background job bash-1");
    assert_eq!(started.value().unwrap()["metadata"]["jobId"], "bash-1");
    let owner = h.agent.id().clone();
    let id = JobId::new("bash-1");
    // Polled, not waited for: a wait would take the notice's place.
    let job = settled(&jobs, &owner, &id).await;
    assert_eq!(
        (job.state, job.detail.as_deref()),
        (JobState::Completed, Some("exit code: 3"))
    );
    assert_eq!(job.description, command);
    let read = h.run("job_output", json!({"job_id": "bash-1"})).await;
    assert_eq!(text(&read), "one\ntwo\n[status: completed, exit code: 3]");
    assert_eq!(
        text(&h.run("job_output", json!({"job_id": "bash-1"})).await),
        "(no new output)\n[status: completed, exit code: 3]"
    );
    // The owner was mid-turn (the fake agent reports running): the notice is injected.
    assert_eq!(
        notices(&h),
        [(
            "tool-jobs".to_owned(),
            format!("background job bash-1 (bash: {command}) finished [status: completed, exit code: 3]. Read its output with job_output.")
        )]
    );
    assert!(h.events(&["agent/inbox/spliced"])[0]["data"]["target"] == "next-step");
}

#[tokio::test]
async fn job_kill_takes_down_the_whole_process_group_and_sends_no_notice() {
    let h = Harness::new(json!({"policy": "never"}));
    let jobs = with_jobs(&h);
    let ws = h.fx.env.workspace().to_path_buf();
    let started = h
        .run(
            "bash",
            background("sleep 300 & echo $! > gc.pid; echo $$ > sh.pid; wait"),
        )
        .await;
    assert_eq!(text(&started), "started background job bash-1");
    let (shell, grandchild) = (
        pid_in(&ws.join("sh.pid")).await,
        pid_in(&ws.join("gc.pid")).await,
    );
    let killed = h
        .run(
            "job_kill",
            json!({"job_id": "bash-1", "reason": "done with it"}),
        )
        .await;
    assert_eq!(text(&killed), "requested cancellation of job bash-1");
    let job = jobs
        .wait(h.agent.id(), &JobId::new("bash-1"), PATIENCE)
        .await
        .unwrap();
    assert_eq!(job.state, JobState::Killed);
    assert_eq!(
        job.detail.as_deref(),
        Some("signal: SIGTERM; reason: done with it")
    );
    until_dead(shell).await;
    until_dead(grandchild).await;
    assert_eq!(notices(&h), []);
}

#[tokio::test]
async fn disposing_the_owner_kills_its_commands_and_forgets_its_jobs() {
    let h = Harness::new(json!({"policy": "never"}));
    let jobs = with_jobs(&h);
    let ws = h.fx.env.workspace().to_path_buf();
    h.run("bash", background("sleep 300 & echo $! > gc.pid; wait"))
        .await;
    let grandchild = pid_in(&ws.join("gc.pid")).await;
    assert_eq!(jobs.live_count_of(h.agent.id()), 1);
    let owner = h.agent.id().clone();
    h.agent.ctx().fiber().dispose();
    jobs.when_quiet().await;
    until_dead(grandchild).await;
    assert!(jobs.list(&owner).is_empty());
    assert_eq!(notices(&h), []);
}

#[tokio::test]
async fn without_the_jobs_plugin_a_background_run_is_refused_clearly() {
    let h = Harness::new(json!({"policy": "never"}));
    let result = h.run("bash", background("true")).await;
    assert_eq!(
        text(&result),
        "Error: background jobs unavailable: mount the `jobs` plugin (row `jobs` of the composition) to use run_in_background"
    );
    assert_eq!(result.error_info().unwrap().code, "JOBS_UNAVAILABLE");
}

#[tokio::test]
async fn a_background_command_is_confined_like_a_foreground_one() {
    if SandboxProbe::current().enforcement(SandboxMode::ReadOnly) != Enforcement::Full {
        eprintln!("skipping: the kernel cannot fully enforce read-only");
        return;
    }
    let h = Harness::in_mode(SandboxMode::ReadOnly, json!({"policy": "never"}));
    let jobs = with_jobs(&h);
    h.run("bash", background("echo x > blocked.txt")).await;
    let job = jobs
        .wait(h.agent.id(), &JobId::new("bash-1"), PATIENCE)
        .await
        .unwrap();
    assert_eq!(job.detail.as_deref(), Some("exit code: 1"));
    let read = text(&h.run("job_output", json!({"job_id": "bash-1"})).await);
    assert!(!h.fx.env.workspace().join("blocked.txt").exists());
    assert!(
        read.contains("[sandbox: file access denied under read-only mode]"),
        "{read}"
    );
}
