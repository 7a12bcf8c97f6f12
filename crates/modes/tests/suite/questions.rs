//! ask_user_question over whole logs: answered, cancelled, headless, in a child, malformed.

use super::plan_support::*;
use dsh_agent::{AgentCancelCause, CancelOptions, CreateAgentOptions, SessionMeta};
use dsh_protocol::SessionId;
use dsh_session::SessionOrigin;
use dsh_testkit::harness::{agent_options, msg, Harness};
use dsh_testkit::scripted::{text_response, tool_call_response};

const ASK: &str = r#"{"questions":[{"id":"db","header":"Storage","question":"Which database?","options":[{"label":"Postgres (Recommended)","description":"Shared"},{"label":"SQLite"}]},{"id":"extras","question":"Which extras?","options":[{"label":"metrics"},{"label":"tracing"}],"multi_select":true}]}"#;

fn script(args: &str) -> dsh_testkit::harness::HarnessBuilder {
    Harness::builder().script([
        tool_call_response(&[("c1", "ask_user_question", args)]).into(),
        text_response("Carrying on.").into(),
    ])
}

fn results(agent: &std::sync::Arc<dyn dsh_agent::Agent>) -> Vec<String> {
    lines(&agent.session().events())
        .into_iter()
        .filter(|l| l.starts_with("tool/result") || l.starts_with("turn/end"))
        .collect()
}

#[tokio::test]
async fn an_answer_goes_back_to_the_model_as_the_tool_result() {
    let h = mount(script(ASK), None);
    let answer = dsh_modes::question::QuestionOutcome::Answered(dsh_modes::question::Answer {
        answers: vec![
            dsh_modes::question::AnswerItem {
                id: "db".into(),
                selected: vec![],
                custom: Some("MariaDB".into()),
            },
            dsh_modes::question::AnswerItem {
                id: "extras".into(),
                selected: vec!["metrics".into(), "tracing".into()],
                custom: None,
            },
        ],
    });
    let person = ScriptedPerson::install(&h, vec![answer]);
    let agent = h.create_agent().await.agent().clone();
    run(&agent, "set it up").await;
    assert_eq!(
        results(&agent),
        [
            r#"tool/result {"answers":[{"id":"db","selected":[],"custom":"MariaDB"},{"id":"extras","selected":["metrics","tracing"]}]}"#,
            "turn/end 1 completed",
        ]
    );
    let asked = person.asked.lock().unwrap().clone();
    let questions = &asked[0].questions;
    assert_eq!(questions[0].header.as_deref(), Some("Storage"));
    assert_eq!(
        questions[0].options[0].description.as_deref(),
        Some("Shared")
    );
    assert!(!questions[0].multi_select);
    assert!(questions[1].multi_select);
    assert_eq!(asked[0].call_id.as_ref().map(|c| c.as_str()), Some("c1"));
    h.finish().await;
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_refused() {
    let h = mount(script(ASK), None);
    ScriptedPerson::install(&h, vec![answer("db", &["Postgres (Recommended)"], None)]);
    let agent = h.create_agent().await.agent().clone();
    run(&agent, "set it up").await;
    assert_eq!(
        results(&agent)[0],
        "tool/result ERR Error: the answer did not fit the questions: 1 answers for 2 questions [BAD_RESPONSE]"
    );
    h.finish().await;
}

#[tokio::test]
async fn a_cancel_while_waiting_ends_the_call_as_cancelled() {
    let h = mount(script(ASK), None);
    let person = ScriptedPerson::install(&h, vec![]);
    let agent = h.create_agent().await.agent().clone();
    agent.followup(msg("set it up")).unwrap();
    person.seen.notified().await;
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    agent.when_idle().await;
    let got = results(&agent);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(got[0].starts_with("tool/result ERR"), "{got:#?}");
    assert!(got[0].ends_with("[ASK_ABORTED]"), "{got:#?}");
    assert_eq!(got[1], "turn/end 1 aborted user");
    h.finish().await;
}

#[tokio::test]
async fn headless_it_fails_closed_and_the_model_carries_on() {
    let h = mount(script(ASK), None);
    let agent = h.create_agent().await.agent().clone();
    run(&agent, "set it up").await;
    assert_eq!(
        results(&agent),
        [
            "tool/result ERR Error: no user-questions provider is registered: nobody can answer in this run (it is headless); decide yourself, and say in your answer what you assumed [NO_PROVIDER]",
            "turn/end 1 completed",
        ]
    );
    h.finish().await;
}

#[tokio::test]
async fn a_child_agent_never_asks_the_person() {
    let h = mount(script(ASK), None);
    // Were the child let through, the person would dismiss the question.
    let person = ScriptedPerson::install(&h, vec![dsh_modes::question::QuestionOutcome::Dismissed]);
    let child = h
        .create_agent_with(CreateAgentOptions {
            session_id: Some(SessionId::from("child-1")),
            agent_options: agent_options(),
            meta: SessionMeta {
                parent_session: Some(SessionId::from("parent")),
                origin: Some(SessionOrigin::Subagent),
                delegation_depth: Some(1),
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .unwrap()
        .agent()
        .clone();
    run(&child, "set it up").await;
    assert_eq!(
        results(&child),
        [
            "tool/result ERR Error: human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result [DELEGATED_CALLER]",
            "turn/end 1 completed",
        ]
    );
    assert!(person.asked.lock().unwrap().is_empty());
    h.finish().await;
}

#[tokio::test]
async fn malformed_question_arrays_get_a_clear_error() {
    for (args, expected) in [
        (r#"{"questions":[]}"#, "tool/result ERR Error: ask_user_question requires at least one question [EMPTY_QUESTIONS]"),
        (r#"{"questions":[{"question":"no id?"}]}"#, "[INVALID_TOOL_ARGUMENTS]"),
        (r#"{"questions":"which?"}"#, "[INVALID_TOOL_ARGUMENTS]"),
        (
            r#"{"questions":[{"id":"a","question":"x"},{"id":"a","question":"y"}]}"#,
            "tool/result ERR Error: question id a is used twice [INVALID_QUESTIONS]",
        ),
    ] {
        let h = mount(script(args), None);
        let person = ScriptedPerson::install(&h, vec![]);
        let agent = h.create_agent().await.agent().clone();
        run(&agent, "go").await;
        let got = results(&agent);
        assert!(got[0].ends_with(expected) || got[0] == expected, "{args}: {got:#?}");
        assert_eq!(got[1], "turn/end 1 completed");
        assert!(person.asked.lock().unwrap().is_empty());
        h.finish().await;
    }
}
