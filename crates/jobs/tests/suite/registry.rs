//! The registry on its own: ids, the limit, settlement, reads, kills, foreign ids.

use dsh_agent::{Agent, AgentStatus};
use dsh_jobs::{
    JobError, JobHandle, JobId, JobKind, JobOutcome, JobRegistry, JobState, RegistrySettings,
};
use dsh_kernel::Context;
use dsh_protocol::SessionId;
use dsh_session::{SessionOptions, SessionStore, SessionsPlugin};
use dsh_testkit::fake_agent::FakeAgent;
use futures_util::future::BoxFuture;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct CountingHandle(pub AtomicUsize);

impl JobHandle for CountingHandle {
    fn kill(&self) -> BoxFuture<'static, ()> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {})
    }
}

pub fn handle() -> Arc<CountingHandle> {
    Arc::new(CountingHandle(AtomicUsize::new(0)))
}

pub fn agent(root: &Context, id: &str) -> Arc<dyn Agent> {
    let store = root.require::<SessionStore>().unwrap();
    let session = store
        .create(root, Some(SessionId::from(id)), SessionOptions::default())
        .unwrap();
    FakeAgent::builder()
        .status(AgentStatus::Running)
        .create(root, session)
        .unwrap()
}

fn root() -> Context {
    let root = Context::root();
    root.plugin::<SessionsPlugin>(()).unwrap();
    root
}

fn registry() -> JobRegistry {
    JobRegistry::new(RegistrySettings::default())
}

#[tokio::test]
async fn ids_count_per_owner_and_kind_and_the_eleventh_job_is_refused_without_an_id() {
    let root = root();
    let (a, b) = (agent(&root, "a"), agent(&root, "b"));
    let jobs = registry();
    let mut tickets = Vec::new();
    for _ in 0..10 {
        tickets.push(
            jobs.start(&a, JobKind::Bash, "sleep 9".into(), handle())
                .unwrap(),
        );
    }
    assert_eq!(tickets[9].id().as_str(), "bash-10");
    let refused = jobs
        .start(&a, JobKind::Bash, "one more".into(), handle())
        .unwrap_err();
    assert_eq!(refused, JobError::Limit { limit: 10 });
    assert_eq!(refused.code(), "JOB_LIMIT");
    // Another owner and another kind count on their own.
    assert_eq!(
        jobs.start(&b, JobKind::Bash, "x".into(), handle())
            .unwrap()
            .id()
            .as_str(),
        "bash-1"
    );
    let first = tickets.remove(0);
    assert!(first.settle(JobOutcome::Completed {
        detail: Some("exit code: 0".into()),
        output: None
    }));
    let next = jobs
        .start(&a, JobKind::Subagent, "child".into(), handle())
        .unwrap();
    assert_eq!(next.id().as_str(), "subagent-1");
    let refused = jobs
        .start(&a, JobKind::Bash, "again".into(), handle())
        .unwrap_err();
    assert_eq!(refused.code(), "JOB_LIMIT");
    drop(next);
    // The refused start consumed no number.
    assert_eq!(
        jobs.start(&a, JobKind::Bash, "z".into(), handle())
            .unwrap()
            .id()
            .as_str(),
        "bash-11"
    );
}

#[tokio::test]
async fn settlement_is_first_wins_and_a_dropped_ticket_fails_the_job() {
    let root = root();
    let a = agent(&root, "a");
    let jobs = registry();
    let ticket = jobs
        .start(&a, JobKind::Bash, "true".into(), handle())
        .unwrap();
    let id = ticket.id().clone();
    jobs.kill(a.id(), &id).await.unwrap();
    assert_eq!(jobs.get(a.id(), &id).unwrap().state, JobState::Stopping);
    assert!(ticket.settle(JobOutcome::Killed {
        detail: Some("signal: SIGTERM".into())
    }));
    let job = jobs.get(a.id(), &id).unwrap();
    assert_eq!(
        (job.state, job.detail.as_deref(), job.reported),
        (JobState::Killed, Some("signal: SIGTERM"), true)
    );

    let dropped = jobs.start(&a, JobKind::Bash, "x".into(), handle()).unwrap();
    let id2 = dropped.id().clone();
    drop(dropped);
    let job = jobs.get(a.id(), &id2).unwrap();
    assert_eq!(job.state, JobState::Failed);
    let killed = jobs.kill_job(a.id(), &id2).await.unwrap();
    assert!(!killed.requested);
}

#[tokio::test]
async fn an_id_of_another_owner_is_refused_like_an_unknown_one() {
    let root = root();
    let (a, b) = (agent(&root, "a"), agent(&root, "b"));
    let jobs = registry();
    let ticket = jobs.start(&a, JobKind::Bash, "x".into(), handle()).unwrap();
    let foreign = jobs.get(b.id(), ticket.id()).unwrap_err();
    let unknown = jobs.get(b.id(), &JobId::new("bash-99")).unwrap_err();
    assert_eq!(foreign.to_string(), "unknown job bash-1");
    assert_eq!(unknown.to_string(), "unknown job bash-99");
    assert_eq!(
        jobs.read(b.id(), ticket.id()).unwrap_err().code(),
        "JOB_UNKNOWN"
    );
    assert_eq!(
        jobs.kill(b.id(), ticket.id()).await.unwrap_err().code(),
        "JOB_UNKNOWN"
    );
    assert!(jobs.list(b.id()).is_empty());
    assert_eq!(
        jobs.get(a.id(), ticket.id()).unwrap().state,
        JobState::Running
    );
}

#[tokio::test]
async fn stream_reads_never_repeat_bytes_and_final_output_reads_are_idempotent() {
    let root = root();
    let a = agent(&root, "a");
    let dir = tempfile::tempdir().unwrap();
    let mut settings = RegistrySettings::default();
    settings.output.memory_limit = 16;
    settings.output.read_limit = 10;
    settings.spill_dir = dir.path().to_path_buf();
    let jobs = JobRegistry::new(settings);
    let ticket = jobs.start(&a, JobKind::Bash, "x".into(), handle()).unwrap();
    let id = ticket.id().clone();
    let mut expected = String::new();
    let mut seen = String::new();
    for round in 0..20 {
        let line = format!("line {round}\n");
        expected.push_str(&line);
        ticket.append_output(line.as_bytes());
        if round % 3 == 0 {
            seen.push_str(&jobs.read(a.id(), &id).unwrap().text);
        }
    }
    assert!(ticket.spill_path().is_some());
    ticket.settle(JobOutcome::Completed {
        detail: Some("exit code: 0".into()),
        output: None,
    });
    loop {
        let read = jobs.read(a.id(), &id).unwrap();
        seen.push_str(&read.text);
        if read.remaining == 0 {
            assert!(read.job.reported);
            break;
        }
        assert!(!read.job.reported);
    }
    assert_eq!(seen, expected);
    assert_eq!(jobs.read(a.id(), &id).unwrap().text, "");

    let child = jobs
        .start(&a, JobKind::Subagent, "child".into(), handle())
        .unwrap();
    let cid = child.id().clone();
    assert_eq!(jobs.read(a.id(), &cid).unwrap().text, "");
    child.settle(JobOutcome::Completed {
        detail: None,
        output: Some("the report".into()),
    });
    assert_eq!(jobs.read(a.id(), &cid).unwrap().text, "the report");
    assert_eq!(jobs.read(a.id(), &cid).unwrap().text, "the report");
}

#[tokio::test]
async fn a_wait_returns_the_live_job_at_its_timeout_and_refuses_zero() {
    let root = root();
    let a = agent(&root, "a");
    let jobs = registry();
    let ticket = jobs.start(&a, JobKind::Bash, "x".into(), handle()).unwrap();
    let id = ticket.id().clone();
    let live = jobs
        .wait(a.id(), &id, Duration::from_millis(20))
        .await
        .unwrap();
    assert_eq!(live.state, JobState::Running);
    assert_eq!(
        jobs.wait(a.id(), &id, Duration::ZERO)
            .await
            .unwrap_err()
            .code(),
        "JOB_INVALID"
    );
    let waiting = jobs.wait(a.id(), &id, Duration::from_secs(60));
    let settle = async {
        tokio::task::yield_now().await;
        ticket.settle(JobOutcome::Completed {
            detail: None,
            output: None,
        });
    };
    let (waited, ()) = tokio::join!(waiting, settle);
    let waited = waited.unwrap();
    assert_eq!(waited.state, JobState::Completed);
    assert!(waited.reported, "a waiter takes the notice's place");
}
