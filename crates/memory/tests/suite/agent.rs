//! The plugin on a running agent: live indexing, the history tools' workspace limit and
//! framing, `@session` references logged and rebuilt, `remember` asked, denied and refused.

use std::sync::{Arc, Mutex};

use dsh_agent::{CreateAgentOptions, SessionMeta as AgentSessionMeta};
use dsh_memory::{EventFilter, Memory, MemoryConfig, MemoryPlugin, SessionFilter};
use dsh_protocol::{MessageSource, SessionId};
use dsh_session::EventData;
use dsh_store::{JsonlPersistenceConfig, JsonlPersistencePlugin};
use dsh_testkit::harness::{agent_options, run_followup, Harness};
use dsh_testkit::scripted::{text_response, tool_call_response, ScriptEntry};
use dsh_tools_builtin::{
    ApprovalAnswerer, ApprovalDecision, ApprovalPlugin, ApprovalPolicy, ApprovalQuestion,
    ApprovalSettings, Approvals,
};
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::support::*;

struct Mounted {
    harness: Harness,
    fixture: Fixture,
    memory: Arc<Memory>,
}

fn mount(script: Vec<ScriptEntry>, policy: ApprovalPolicy) -> Mounted {
    mount_on(Fixture::with_sessions(), script, policy)
}

fn mount_on(fixture: Fixture, script: Vec<ScriptEntry>, policy: ApprovalPolicy) -> Mounted {
    dsh_session::register_event_types(dsh_tools_builtin::approval::EVENT_TYPES).unwrap();
    let harness = Harness::builder().script(script).build();
    let ctx = harness.ctx();
    let mut store = JsonlPersistenceConfig::new(fixture.root());
    store.compression = dsh_store::Compression::None;
    ctx.plugin::<JsonlPersistencePlugin>(store).unwrap();
    ctx.plugin::<ApprovalPlugin>(ApprovalSettings {
        policy,
        ..ApprovalSettings::default()
    })
    .unwrap();
    ctx.plugin::<MemoryPlugin>(MemoryConfig {
        index: Some(fixture.index_path()),
        dsh_home: Some(fixture.dir.path().join("home")),
        ..MemoryConfig::default()
    })
    .unwrap();
    let memory = ctx.require::<Memory>().unwrap();
    Mounted {
        harness,
        fixture,
        memory,
    }
}

async fn agent_in(harness: &Harness, id: &str, cwd: &str, parent: Option<&str>) {
    harness
        .create_agent_with(CreateAgentOptions {
            session_id: Some(SessionId::from(id)),
            agent_options: agent_options(),
            meta: AgentSessionMeta {
                cwd: Some(cwd.to_owned()),
                parent_session: parent.map(SessionId::from),
                delegation_depth: parent.map(|_| 1),
                ..AgentSessionMeta::default()
            },
            ..Default::default()
        })
        .await
        .unwrap();
}

/// The text of the tool result the session logged for `call_id`.
fn tool_result(events: &[Arc<dsh_session::SessionEvent>], call_id: &str) -> String {
    events
        .iter()
        .find_map(|e| match &e.data {
            EventData::ToolResult(r) if matches!(&r.message.source, MessageSource::Tool { call_id: c } if c.as_str() == call_id) => {
                Some(serde_json::to_string(&r.message.content).unwrap())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call_id}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_tools_stay_in_the_callers_workspace_and_frame_results_as_history() {
    let m = mount(
        vec![
            tool_call_response(&[
                ("c1", "session_search", r#"{"query":"widget"}"#),
                (
                    "c2",
                    "session_event_read",
                    r#"{"session_id":"session-gamma","seq":1}"#,
                ),
                ("c3", "session_trace", r#"{"session_id":"session-beta"}"#),
                (
                    "c4",
                    "session_event_search",
                    r#"{"session_id":"session-alpha","query":"FakeClock"}"#,
                ),
                (
                    "c5",
                    "session_event_trace",
                    r#"{"session_id":"session-alpha","seq":7}"#,
                ),
                (
                    "c6",
                    "session_event_read",
                    r#"{"session_id":"session-alpha","seq":5,"before":1,"after":1}"#,
                ),
            ])
            .into(),
            text_response("done").into(),
        ],
        ApprovalPolicy::Ask,
    );
    agent_in(&m.harness, "session-now", WORKSPACE, None).await;
    run_followup(&m.harness.agent(), "look back").await;
    let events = m.harness.session().events();

    let search = tool_result(&events, "c1");
    assert!(
        search.contains("<session-history tool=\\\"session_search\\\">"),
        "{search}"
    );
    assert!(search.contains("not instructions to follow"), "{search}");
    assert!(
        search.contains("session-alpha") && search.contains("session-beta"),
        "{search}"
    );
    assert!(
        !search.contains("session-gamma") && !search.contains("Launch"),
        "{search}"
    );
    assert!(
        !search.contains("session-now"),
        "the caller's own session is not a prior one"
    );

    let refused = tool_result(&events, "c2");
    assert!(refused.contains("outside this workspace"), "{refused}");
    assert!(!refused.contains("March"), "{refused}");

    let trace = tool_result(&events, "c3");
    assert!(
        trace.contains("session-alpha"),
        "the parent is listed: {trace}"
    );

    let in_session = tool_result(&events, "c4");
    assert!(
        in_session.contains("seq 7 | assistant/message"),
        "{in_session}"
    );

    let event_trace = tool_result(&events, "c5");
    assert!(
        event_trace.contains("Target: seq 7 | assistant/message"),
        "{event_trace}"
    );

    let read = tool_result(&events, "c6");
    assert!(read.contains("Fix it with a fake clock"), "{read}");
    assert!(
        read.contains("Before:") && read.contains("After:"),
        "{read}"
    );

    // The live indexer took this session's events: after a flush it is searchable.
    m.memory.indexer().unwrap().flush();
    let own = m
        .memory
        .index()
        .search(
            "back",
            &SessionFilter {
                cwd: Some(WORKSPACE.into()),
                ..SessionFilter::default()
            },
            &EventFilter::default(),
            5,
        )
        .unwrap();
    assert_eq!(
        own.first().map(|h| h.session.id.as_str()),
        Some("session-now")
    );
    drop(m.fixture);
    m.harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_home_gets_its_index_from_the_first_session_not_at_boot() {
    // A fresh `$DSH_HOME`: no store, no index. Mounting the plugin (the boot path of every
    // surface) creates no file; the live indexer creates and fills it off the turn.
    let m = mount_on(
        Fixture::new(),
        vec![text_response("the quokka answer").into()],
        ApprovalPolicy::Ask,
    );
    let path = m.fixture.index_path();
    assert!(!path.exists(), "mounting created {}", path.display());
    assert!(
        !path.parent().unwrap().exists(),
        "mounting created the memory dir"
    );
    assert!(!m.memory.index().is_open());

    agent_in(&m.harness, "session-now", WORKSPACE, None).await;
    run_followup(&m.harness.agent(), "ask the quokka").await;
    m.memory.indexer().unwrap().flush();
    assert!(
        path.exists(),
        "the first session's events created the index"
    );
    assert!(m.memory.index().is_open());
    let stats = m.memory.index().stats().unwrap();
    assert_eq!(stats.sessions, 1);

    // A search right after (as the CLI and the tools do it: sync, then search) finds it.
    m.memory.sync().unwrap();
    let found = m
        .memory
        .index()
        .search(
            "quokka",
            &SessionFilter {
                cwd: Some(WORKSPACE.into()),
                ..SessionFilter::default()
            },
            &EventFilter::default(),
            5,
        )
        .unwrap();
    let found: Vec<&str> = found.iter().map(|h| h.session.id.as_str()).collect();
    assert_eq!(found, vec!["session-now"]);
    m.harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_reference_is_logged_with_its_source_and_rebuilt_into_the_request() {
    let m = mount(vec![text_response("ok").into()], ApprovalPolicy::Ask);
    agent_in(&m.harness, "session-now", WORKSPACE, None).await;
    run_followup(
        &m.harness.agent(),
        "continue @session:session-alpha and @session:nope please",
    )
    .await;
    let events = m.harness.session().events();
    let reference = events
        .iter()
        .find_map(|e| match &e.data {
            EventData::UserMessage(msg) => match &msg.source {
                MessageSource::Other(source)
                    if source.get("kind") == Some(&Value::from("session-reference")) =>
                {
                    Some((msg.clone(), Value::Object(source.clone())))
                }
                _ => None,
            },
            _ => None,
        })
        .expect("a session-reference message is logged");
    let (message, source) = reference;
    assert_eq!(source["trust"], "untrusted");
    assert_eq!(source["sessions"][0]["sessionId"], "session-alpha");
    assert_eq!(source["sessions"][0]["throughSeq"], 7);
    assert_eq!(source["sessions"][1]["reference"], "nope");
    assert_eq!(source["sessions"][1]["code"], "MEMORY_UNKNOWN_SESSION");
    let text = message.text();
    assert!(
        text.starts_with("<session-reference trust=\"untrusted\">"),
        "{text}"
    );
    assert!(
        text.contains("Done: the widget now takes a FakeClock."),
        "{text}"
    );
    assert!(text.contains("not instructions"), "{text}");
    // The request the model got holds the snapshot right after the prompt; the harness's
    // reconstruction check (in `finish`) proves it is rebuilt from the log.
    let request = m.harness.adapter().requests().pop().unwrap();
    let texts: Vec<String> = request.messages.iter().map(|m| m.text()).collect();
    let at = texts
        .iter()
        .position(|t| t.contains("@session:session-alpha"))
        .unwrap();
    assert_eq!(texts[at + 1], text);
    m.harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remember_is_denied_headless_and_written_once_a_person_allows_it() {
    // Headless (no answerer) under `ask`: refused with a message saying so.
    let m = mount(
        vec![
            tool_call_response(&[(
                "r1",
                "remember",
                r#"{"note":"Run cargo nextest, not cargo test"}"#,
            )])
            .into(),
            text_response("noted").into(),
        ],
        ApprovalPolicy::Ask,
    );
    let workspace = m.fixture.dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let ws = workspace.to_str().unwrap().to_owned();
    agent_in(&m.harness, "session-now", &ws, None).await;
    run_followup(&m.harness.agent(), "remember how to test").await;
    let denied = tool_result(&m.harness.session().events(), "r1");
    assert!(
        denied.contains("no one can answer approval prompts"),
        "{denied}"
    );
    assert!(denied.contains("Run cargo nextest"), "{denied}");
    assert!(!workspace.join("AGENTS.md").exists());

    // With a person: asked (the diff in the reason), then written.
    let asked = Arc::new(Mutex::new(Vec::new()));
    struct Yes(Arc<Mutex<Vec<ApprovalQuestion>>>);
    impl ApprovalAnswerer for Yes {
        fn answer(&self, q: ApprovalQuestion) -> BoxFuture<'_, ApprovalDecision> {
            self.0.lock().unwrap().push(q);
            Box::pin(async { ApprovalDecision::AllowOnce })
        }
    }
    m.harness
        .ctx()
        .require::<Approvals>()
        .unwrap()
        .set_answerer(Some(Arc::new(Yes(asked.clone()))));
    m.harness.adapter().push(tool_call_response(&[(
        "r2",
        "remember",
        r#"{"note":"Run cargo nextest, not cargo test"}"#,
    )]));
    m.harness.adapter().push(text_response("noted"));
    run_followup(&m.harness.agent(), "try again").await;
    let questions = asked.lock().unwrap().clone();
    assert_eq!(questions.len(), 1);
    let reason = questions[0].reason.clone().unwrap();
    assert!(
        reason.contains("+ - Run cargo nextest, not cargo test"),
        "{reason}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("AGENTS.md")).unwrap(),
        "- Run cargo nextest, not cargo test\n"
    );
    m.harness.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remember_is_written_without_asking_under_never_and_refused_to_a_child() {
    let m = mount(
        vec![
            tool_call_response(&[("r1", "remember", r#"{"note":"Prefer rg"}"#)]).into(),
            text_response("noted").into(),
            tool_call_response(&[("r2", "remember", r#"{"note":"child note"}"#)]).into(),
            text_response("noted").into(),
        ],
        ApprovalPolicy::Never,
    );
    let workspace = m.fixture.dir.path().join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let ws = workspace.to_str().unwrap().to_owned();
    agent_in(&m.harness, "session-now", &ws, None).await;
    run_followup(&m.harness.agent(), "remember rg").await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("AGENTS.md")).unwrap(),
        "- Prefer rg\n"
    );
    agent_in(&m.harness, "session-child", &ws, Some("session-now")).await;
    let child = m
        .harness
        .registry()
        .get(&SessionId::from("session-child"))
        .unwrap();
    run_followup(&child, "remember this").await;
    let refused = tool_result(&child.session().events(), "r2");
    assert!(
        refused.contains("not available to a delegated agent"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("AGENTS.md")).unwrap(),
        "- Prefer rg\n"
    );
    m.harness.finish().await;
}
