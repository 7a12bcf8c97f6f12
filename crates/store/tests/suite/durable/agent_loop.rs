//! End to end with the real agent loop: an agent persisted by the store runs a turn, a new
//! process (a fresh context over a copy of the disk) resumes it and runs the next one.

use std::path::Path;
use std::sync::{Arc, Mutex};

use dsh_agent::{AgentOptions, AgentRegistry, CreateAgentOptions, ResumeAgentOptions, SessionMeta};
use dsh_agent_loop::{AgentLoop, AgentLoopConfig};
use dsh_kernel::Context;
use dsh_llm::{LlmRuntime, LlmStream};
use dsh_prompt::{SystemPromptConfig, SystemPromptPlugin};
use dsh_protocol::{Message, SessionId};
use dsh_session::{EventData, Session, SessionStore, SessionsPlugin};
use dsh_store::{
    read_log, CheckpointPolicyPlugin, Compression, JsonlPersistenceConfig, JsonlPersistencePlugin,
    SessionPersistence,
};
use dsh_testkit::scripted::{text_response, ScriptedAdapter};
use dsh_tools::ToolRuntime;
use serde_json::Value;

use super::support::{copy_tree, CWD};

/// One "process": every core service, the store with its checkpoint policy, the loop, and a
/// scripted model under the route `mock`.
struct Process {
    root: Context,
    registry: Arc<AgentRegistry>,
    sessions: Arc<SessionStore>,
    model: Arc<ScriptedAdapter>,
    /// (durable events, session length) whenever a request reached the model side.
    at_request: Arc<Mutex<Vec<(u64, u64)>>>,
}

impl Process {
    fn start(sessions_root: &Path) -> Process {
        let root = Context::root();
        root.plugin::<SystemPromptPlugin>(SystemPromptConfig::default())
            .unwrap();
        root.plugin::<SessionsPlugin>(()).unwrap();
        let mut store = JsonlPersistenceConfig::new(sessions_root);
        store.compression = Compression::None;
        root.plugin::<JsonlPersistencePlugin>(store).unwrap();
        root.plugin::<CheckpointPolicyPlugin>(()).unwrap();
        let llm = LlmRuntime::install(&root).unwrap();
        root.provide(ToolRuntime::new(&root)).unwrap().forget();
        let registry = AgentRegistry::install(&root).unwrap();
        let loop_ctx = root.child("agent-loop").unwrap();
        AgentLoop::install(&loop_ctx, AgentLoopConfig::default()).unwrap();
        let model = Arc::new(ScriptedAdapter::new([]));
        drop(model.register(&root, &llm, "mock").unwrap());

        // registered after the checkpoint policy, so it runs inside it: what it sees is what
        // the model is sent
        let at_request: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
        let (seen, sessions, persistence) = (
            at_request.clone(),
            root.require::<SessionStore>().unwrap(),
            root.require::<dyn SessionPersistence>().unwrap(),
        );
        root.on_waterfall::<LlmStream, _, _>(move |request, next| {
            if let Some(session) = request.session_id.as_ref().and_then(|id| sessions.get(id)) {
                let durable = persistence.next_seq(session.id()).unwrap();
                seen.lock().unwrap().push((durable, session.len()));
            }
            next.run()
        })
        .unwrap()
        .forget();
        Process {
            registry,
            sessions: root.require::<SessionStore>().unwrap(),
            root,
            model,
            at_request,
        }
    }

    /// Disposes `handle`, then ends the process. Disposal resolves only after the session's
    /// last events are written, so whatever the disk holds afterwards is what a clean exit
    /// leaves; nothing here waits for the store's background release.
    async fn dispose(&self, handle: dsh_agent::AgentHandle) {
        handle.dispose().await;
        self.root.fiber().dispose();
    }

    async fn resume(&self, id: &str) -> dsh_agent::AgentHandle {
        let mut options = ResumeAgentOptions::new(SessionId::from(id));
        options.agent_options = AgentOptions::new("mock", "m");
        self.registry.resume(&self.root, options).await.unwrap()
    }
}

/// Turn boundaries and the text of user and assistant messages, in log order.
fn outline(session: &Session) -> Vec<String> {
    session
        .events()
        .iter()
        .filter_map(|e| match &e.data {
            EventData::TurnStart(t) => Some(format!("turn/start {}", t.turn)),
            EventData::TurnEnd(t) => Some(format!("turn/end {}", t.turn)),
            EventData::UserMessage(m) if !dsh_prompt::is_runtime_context_message(m) => {
                Some(format!("user: {}", m.text()))
            }
            EventData::AssistantMessage(a) => Some(format!("assistant: {}", a.message.text())),
            EventData::EndSeed => Some("session/end-seed".into()),
            _ => None,
        })
        .collect()
}

fn stored_types(dir: &Path) -> Vec<Value> {
    let path = dir.join("--home-user-project--/s1/session.jsonl");
    read_log(&path, Compression::None, Some("s1"))
        .unwrap()
        .events
        .iter()
        .map(|e| e["type"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_agent_resumes_in_a_new_process_and_keeps_only_crash_surviving_input() {
    let disk = tempfile::tempdir().unwrap();
    let first = Process::start(disk.path());
    first.model.push(text_response("one"));
    let handle = first
        .registry
        .create(
            &first.root,
            CreateAgentOptions {
                session_id: Some(SessionId::from("s1")),
                meta: SessionMeta {
                    cwd: Some(CWD.into()),
                    ..SessionMeta::default()
                },
                agent_options: AgentOptions::new("mock", "m"),
                ..CreateAgentOptions::default()
            },
        )
        .await
        .unwrap();
    let agent = handle.agent().clone();
    agent.followup(Message::user_text("a")).unwrap();
    agent.when_idle().await;
    agent.inject(Message::user_text("pending")).unwrap();
    // the write-behind window would store it within 200 ms; do not wait for it
    first.sessions.flush(agent.session()).await.unwrap();
    let durable_len = agent.session().len();

    // a crash now leaves exactly this on disk
    let crashed = tempfile::tempdir().unwrap();
    copy_tree(disk.path(), crashed.path());
    // a clean shutdown instead cancels the pending input durably
    first.dispose(handle).await;
    let clean = tempfile::tempdir().unwrap();
    copy_tree(disk.path(), clean.path());

    // the crashed process resumes: turn numbering continues, the pending input is claimed
    let second = Process::start(crashed.path());
    let resumed = second.resume("s1").await;
    let agent = resumed.agent().clone();
    assert_eq!(agent.session().first_live_seq(), durable_len as u64);
    assert_eq!(
        agent
            .inbox()
            .next_step()
            .iter()
            .map(|m| m.text())
            .collect::<Vec<_>>(),
        ["pending"]
    );
    second.model.push(text_response("two"));
    agent.followup(Message::user_text("b")).unwrap();
    agent.when_idle().await;
    assert_eq!(
        outline(agent.session()),
        [
            "turn/start 1",
            "user: a",
            "assistant: one",
            "turn/end 1",
            "session/end-seed",
            "turn/start 2",
            "user: pending",
            "user: b",
            "assistant: two",
            "turn/end 2",
        ]
    );
    // the model saw the whole history, and every request went out with the log durable
    let texts: Vec<String> = second.model.requests()[0]
        .messages
        .iter()
        .filter(|m| !dsh_prompt::is_runtime_context_message(m))
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, ["a", "one", "pending", "b"]);
    for (durable, len) in first
        .at_request
        .lock()
        .unwrap()
        .iter()
        .chain(second.at_request.lock().unwrap().iter())
    {
        assert_eq!(durable, len, "a request left before its log was durable");
    }
    assert_eq!(first.at_request.lock().unwrap().len(), 1);
    assert_eq!(second.at_request.lock().unwrap().len(), 1);
    second.dispose(resumed).await;
    let stored = stored_types(crashed.path());
    assert_eq!(stored.last().unwrap(), "turn/end");
    assert_eq!(stored.len() as u64, agent.session().len());

    // after a clean shutdown nothing is pending
    let third = Process::start(clean.path());
    let resumed = third.resume("s1").await;
    assert!(!resumed.agent().inbox().has_pending());
    third.dispose(resumed).await;
}

/// A session disposed and resumed at once in the same process (the TUI's `/permission` and
/// `/resume` do this) must get its own write queue: before the fix, the successor joined the
/// predecessor's queue, still waiting for its detached release, and nothing it logged was
/// ever written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumed_right_after_disposal_in_the_same_process_is_written() {
    let disk = tempfile::tempdir().unwrap();
    let process = Process::start(disk.path());
    process.model.push(text_response("one"));
    let handle = process
        .registry
        .create(
            &process.root,
            CreateAgentOptions {
                session_id: Some(SessionId::from("s1")),
                meta: SessionMeta {
                    cwd: Some(CWD.into()),
                    ..SessionMeta::default()
                },
                agent_options: AgentOptions::new("mock", "m"),
                ..CreateAgentOptions::default()
            },
        )
        .await
        .unwrap();
    let agent = handle.agent().clone();
    agent.followup(Message::user_text("a")).unwrap();
    agent.when_idle().await;
    // no waiting for the background release: resume immediately
    handle.dispose().await;
    let resumed = process.resume("s1").await;
    let agent = resumed.agent().clone();
    process.model.push(text_response("two"));
    agent.followup(Message::user_text("b")).unwrap();
    agent.when_idle().await;
    // disposal writes the last events before it resolves
    resumed.dispose().await;
    let logged = agent.session().len();
    let stored = stored_types(disk.path());
    assert_eq!(
        stored.len() as u64,
        logged,
        "every logged event is stored: {stored:?}"
    );
    assert_eq!(
        stored.iter().filter(|t| *t == "turn/end").count(),
        2,
        "both turns are on disk: {stored:?}"
    );
}
