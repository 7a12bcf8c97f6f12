//! Overflow recovery: a provider's context-overflow refusal gets one compaction and one retry.

use super::rig::*;
use dsh_compaction::CompactionSummary;
use dsh_protocol::{codes, LlmFailure};
use dsh_session::{EventData, TurnEndReason};
use dsh_testkit::scripted::{error_finish, error_finish_with};
use serde_json::{json, Value};

fn overflow() -> dsh_testkit::scripted::ScriptEntry {
    let mut failure = LlmFailure::new(
        codes::CONTEXT_WINDOW_EXCEEDED,
        "This model's maximum context length is 4000 tokens",
    );
    failure.status = Some(400);
    error_finish_with(failure).into()
}

fn turn_end(session: &dsh_session::Session) -> TurnEndReason {
    session
        .events()
        .iter()
        .rev()
        .find_map(|e| match &e.data {
            EventData::TurnEnd(t) => Some(t.reason.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn overflow_compacts_retries_the_same_step_and_completes() {
    let (h, _engine) = rig(
        vec![
            answer("ok1"),
            overflow(),
            summary_response(),
            answer("done"),
        ],
        Value::Null,
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    turn(&agent, &big("one", 600)).await;
    turn(&agent, "two").await;
    assert_eq!(turn_end(agent.session()), TurnEndReason::Completed);
    let events = agent.session().events();
    let from = events
        .iter()
        .position(|e| matches!(&e.data, EventData::TurnStart(t) if t.turn == 2))
        .unwrap();
    let summary = events
        .iter()
        .find_map(|e| e.decode::<CompactionSummary>())
        .unwrap()
        .unwrap();
    // The first turn's prompt and answer: everything but the newest unit.
    let first_turn: Vec<u64> = events[..from]
        .iter()
        .filter(|e| e.surface_op.is_some())
        .map(|e| e.seq)
        .collect();
    assert_eq!(summary.shadowed_seqs, first_turn);
    let shadowed = [first_turn[0], first_turn[1]];
    assert_eq!(
        shape(&events[from..]),
        [
            "turn/start 2".to_string(),
            "agent/inbox/spliced".into(),
            "step/start".into(),
            "user/message two".into(),
            "compaction/start".into(),
            "compaction/summary".into(),
            format!("user/message This replace {}-{}", shadowed[0], shadowed[1]),
            "compaction/end".into(),
            "assistant/message done".into(),
            "step/end".into(),
            "turn/end 2".into(),
        ]
    );
    // The retry is the same step, re-derived: the checkpoint and the prompt.
    assert_eq!(request_words(&h, 3), ["This", "two"]);
    h.finish().await;
}

#[tokio::test]
async fn overflow_twice_ends_the_turn_with_a_typed_error_that_says_what_to_do() {
    let (h, _engine) = rig(
        vec![answer("ok1"), overflow(), summary_response(), overflow()],
        Value::Null,
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    turn(&agent, &big("one", 600)).await;
    turn(&agent, "two").await;
    let TurnEndReason::Error { error } = turn_end(agent.session()) else {
        panic!("the turn must end with an error");
    };
    assert_eq!(error.code, codes::CONTEXT_WINDOW_EXCEEDED);
    assert_eq!(
        error.message,
        "This model's maximum context length is 4000 tokens: the conversation is still too \
         large for this model's context window after compaction; run /compact, or switch to a \
         model with a larger context window"
    );
    assert_eq!(h.adapter().calls(), 4, "one compaction, one retry, no more");
    // The session is usable: the next turn runs.
    h.adapter().push(answer("later"));
    turn(&agent, "three").await;
    assert_eq!(turn_end(agent.session()), TurnEndReason::Completed);
    h.finish().await;
}

#[tokio::test]
async fn a_non_overflow_error_never_compacts_and_zero_retries_turn_recovery_off() {
    let (h, _engine) = rig(
        vec![answer("ok1"), error_finish("SERVER").into()],
        Value::Null,
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    turn(&agent, &big("one", 600)).await;
    turn(&agent, "two").await;
    assert!(
        matches!(turn_end(agent.session()), TurnEndReason::Error { error } if error.code == "SERVER")
    );
    assert_eq!(h.adapter().calls(), 2);
    h.finish().await;

    let (h, _engine) = rig(
        vec![answer("ok1"), overflow()],
        json!({"overflowRetries": 0}),
    );
    let agent = h.create_agent_named("s2").await.agent().clone();
    turn(&agent, &big("one", 600)).await;
    turn(&agent, "two").await;
    let TurnEndReason::Error { error } = turn_end(agent.session()) else {
        panic!("error expected");
    };
    assert_eq!(
        error.message,
        "This model's maximum context length is 4000 tokens"
    );
    assert!(!agent
        .session()
        .events()
        .iter()
        .any(|e| e.type_name().starts_with("compaction/")));
    h.finish().await;
}
