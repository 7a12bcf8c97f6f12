//! Manual compaction (`compact_now`) and the summarizer's faults.

use super::rig::*;
use dsh_agent::{AbortSignal, Agent, AgentCancelCause, CancelOptions};
use dsh_compaction::{
    result_message, CompactionEnd, CompactionEngine, CompactionStart, ManualCompactionError,
};
use dsh_protocol::{FinishReason, TokenUsage};
use dsh_testkit::harness::Harness;
use dsh_testkit::scripted::{
    error_finish, max_tokens_response, text_response, Response, ScriptEntry,
};
use serde_json::Value;
use std::sync::Arc;

/// Two big turns, then the agent is idle.
async fn two_turns(h: &Harness) -> Arc<dyn Agent> {
    let agent = h.create_agent_named("s1").await.agent().clone();
    turn(&agent, &big("one", 600)).await;
    turn(&agent, &big("two", 600)).await;
    agent
}

fn tail_from(agent: &Arc<dyn Agent>, len: u64) -> Vec<String> {
    shape(&agent.session().events_from(len))
}

#[tokio::test]
async fn compact_now_on_an_idle_agent_compacts_without_a_turn() {
    let (h, engine) = rig(
        vec![
            answer("ok1"),
            answer("ok2"),
            summary_response(),
            answer("ok3"),
        ],
        Value::Null,
    );
    let agent = two_turns(&h).await;
    let len = agent.session().len();
    let result = engine
        .compact_now(&agent, AbortSignal::new(), Some("cmd-1".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        tail_from(&agent, len),
        [
            "compaction/start",
            "compaction/summary",
            &format!(
                "user/message This replace {}-{}",
                result.shadowed_range.start, result.shadowed_range.end
            ),
            "compaction/end",
        ]
    );
    let events = agent.session().events();
    let start = events[len as usize]
        .decode::<CompactionStart>()
        .unwrap()
        .unwrap();
    assert_eq!(start.turn, None, "a standalone compaction owns no turn");
    assert_eq!(start.source_command_id.as_deref(), Some("cmd-1"));
    assert_eq!(
        events[len as usize].data.to_value()["turn"],
        Value::Null,
        "turn is written as null"
    );
    assert_eq!(result.shadowed_seqs.len(), 3, "keeps the newest unit");
    assert_eq!(result.summary_seq, len + 1);
    assert_eq!(result.end_seq, len + 3);
    assert_eq!(
        result_message(Some(&result)),
        format!(
            "Compacted 3 history items (~{} tokens).",
            result.shadowed_token_count
        )
    );
    // The next turn sees the checkpoint and the retained answer.
    turn(&agent, "three").await;
    assert_eq!(request_words(&h, 3), ["This", "ok2", "three"]);
    h.finish().await;
}

#[tokio::test]
async fn compact_now_is_refused_while_running_and_writes_nothing() {
    let (h, engine) = rig(vec![ScriptEntry::Hang], Value::Null);
    let agent = h.create_agent_named("s1").await.agent().clone();
    agent.followup(dsh_testkit::harness::msg("go")).unwrap();
    h.adapter().wait_for_hang(1).await;
    let len = agent.session().len();
    let error = engine
        .compact_now(&agent, AbortSignal::new(), None)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "busy");
    assert_eq!(
        error.user_message(),
        "Compaction is unavailable because this process has an active compaction, or the agent is not idle."
    );
    assert_eq!(agent.session().len(), len, "nothing logged");
    agent
        .cancel(AgentCancelCause::User, CancelOptions::default())
        .unwrap();
    h.finish().await;
}

#[tokio::test]
async fn compact_now_with_nothing_to_compact_writes_nothing() {
    let (h, engine) = rig(vec![], Value::Null);
    let agent = h.create_agent_named("s1").await.agent().clone();
    let len = agent.session().len();
    let empty = engine
        .compact_now(&agent, AbortSignal::new(), None)
        .await
        .unwrap();
    assert_eq!(empty, None);
    // A single-unit surface: the newest unit is always kept, so there is nothing to shadow.
    agent
        .session()
        .append(
            dsh_session::EventData::UserMessage(Arc::new(dsh_testkit::harness::msg("lonely"))),
            dsh_session::AppendOptions::surface_append(),
        )
        .unwrap();
    let single = engine
        .compact_now(&agent, AbortSignal::new(), None)
        .await
        .unwrap();
    assert_eq!(single, None);
    assert_eq!(agent.session().len(), len + 1, "only the appended message");
    assert_eq!(h.adapter().calls(), 0);
    assert_eq!(result_message(None), "No compactable history yet.");
    h.finish().await;
}

/// Every summarizer fault closes the bracket with `end{error}`, leaves the surface as it was
/// and the session usable.
#[tokio::test]
async fn summarizer_faults_close_the_bracket_and_leave_the_session_usable() {
    let reasoning_only: ScriptEntry = Response::new().reasoning("thinking only").chunks().into();
    let not_smaller: ScriptEntry = text_response(&big("long", 2000)).into();
    let faults: Vec<(ScriptEntry, &str, &str)> = vec![
        (error_finish("SERVER").into(), "summary", "SERVER"),
        (
            text_response("   ").into(),
            "summary",
            "no text summary content",
        ),
        (reasoning_only, "summary", "no text summary content"),
        (
            max_tokens_response("## Primary", &[]).into(),
            "summary",
            "truncated at the token cap",
        ),
        (
            not_smaller,
            "summary",
            "summary is not smaller than the shadowed content",
        ),
    ];
    for (fault, code, says) in faults {
        let (h, engine) = rig(
            vec![answer("ok1"), answer("ok2"), fault, answer("ok3")],
            Value::Null,
        );
        let agent = two_turns(&h).await;
        let surface = agent.session().surface();
        let len = agent.session().len();
        let error = engine
            .compact_now(&agent, AbortSignal::new(), None)
            .await
            .unwrap_err();
        assert_eq!(error.code(), code, "{error}");
        assert!(error.to_string().contains(says), "{error}");
        assert!(error
            .user_message()
            .starts_with("Compaction could not produce a useful summary."));
        let tail = agent.session().events_from(len);
        assert_eq!(shape(&tail)[0], "compaction/start");
        assert_eq!(tail.len(), 2, "start and end only");
        let end = tail[1].decode::<CompactionEnd>().unwrap().unwrap();
        assert!(end.error.as_deref().unwrap().contains(says), "{end:?}");
        assert_eq!(
            agent.session().surface(),
            surface,
            "the surface is untouched"
        );
        turn(&agent, "three").await;
        assert_eq!(request_words(&h, 3), ["one", "ok1", "two", "ok2", "three"]);
        h.finish().await;
    }
}

#[tokio::test]
async fn a_cancelled_summary_closes_the_bracket_and_reports_cancelled() {
    let (h, engine) = rig(
        vec![
            answer("ok1"),
            answer("ok2"),
            ScriptEntry::Hang,
            answer("ok3"),
        ],
        Value::Null,
    );
    let agent = two_turns(&h).await;
    let len = agent.session().len();
    let signal = AbortSignal::new();
    let task = {
        let (engine, agent, signal) = (Arc::clone(&engine), Arc::clone(&agent), signal.clone());
        tokio::spawn(async move { engine.compact_now(&agent, signal, None).await })
    };
    h.adapter().wait_for_hang(1).await;
    signal.abort(AgentCancelCause::User);
    let error = task.await.unwrap().unwrap_err();
    assert!(
        matches!(error, ManualCompactionError::Cancelled),
        "{error:?}"
    );
    assert_eq!(error.user_message(), "Compaction cancelled.");
    let tail = agent.session().events_from(len);
    assert_eq!(
        shape(&tail),
        [
            "compaction/start",
            "compaction/end error: compaction cancelled"
        ]
    );
    turn(&agent, "three").await;
    h.finish().await;
}

#[tokio::test]
async fn usage_of_the_summary_call_is_recorded() {
    let usage = TokenUsage {
        input_tokens: 1200,
        output_tokens: 30,
        ..TokenUsage::default()
    };
    let summary: ScriptEntry = Response::new()
        .text(SUMMARY)
        .usage(Some(usage))
        .finish(FinishReason::Stop)
        .chunks()
        .into();
    let (h, engine) = rig(vec![answer("ok1"), answer("ok2"), summary], Value::Null);
    let agent = two_turns(&h).await;
    engine
        .compact_now(&agent, AbortSignal::new(), None)
        .await
        .unwrap()
        .unwrap();
    let recorded = agent
        .session()
        .events()
        .iter()
        .find_map(|e| e.decode::<dsh_compaction::CompactionSummary>())
        .unwrap()
        .unwrap();
    assert_eq!(recorded.usage, Some(usage));
    h.finish().await;
}

#[allow(dead_code)]
fn _engine_is_a_service(engine: &CompactionEngine) -> &CompactionEngine {
    engine
}

/// A live unmatched start holds the durable lock: a compaction is refused with `busy` and
/// nothing is logged; once it is closed, compaction proceeds.
#[tokio::test]
async fn a_live_unmatched_start_holds_the_lock() {
    let (h, engine) = rig(
        vec![answer("ok1"), answer("ok2"), summary_response()],
        Value::Null,
    );
    let agent = two_turns(&h).await;
    let session = agent.session();
    session
        .append_typed(&CompactionStart {
            compaction_id: "other".into(),
            source_command_id: None,
            turn: None,
        })
        .unwrap();
    let len = session.len();
    let error = engine
        .compact_now(&agent, AbortSignal::new(), None)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "busy");
    assert_eq!(session.len(), len);
    session
        .append_typed(&CompactionEnd {
            compaction_id: "other".into(),
            source_command_id: None,
            turn: None,
            error: Some("abandoned".into()),
        })
        .unwrap();
    assert!(engine
        .compact_now(&agent, AbortSignal::new(), None)
        .await
        .unwrap()
        .is_some());
    h.finish().await;
}

/// Spec §2.9.3: after a restart, an orphan start from before the new `session/end-seed` does
/// not block: the resumed session compacts.
#[tokio::test]
async fn an_orphan_start_from_a_crashed_process_does_not_block_after_resume() {
    let (h, engine) = rig(
        vec![answer("ok1"), answer("ok2"), summary_response()],
        Value::Null,
    );
    let store = h.mount_memory_source();
    let agent = two_turns(&h).await;
    agent
        .session()
        .append_typed(&CompactionStart {
            compaction_id: "crashed".into(),
            source_command_id: None,
            turn: None,
        })
        .unwrap();
    assert!(engine.is_busy(agent.session()));
    store.save_session(agent.session());
    h.handle().dispose().await;
    let mut options = dsh_agent::ResumeAgentOptions::new("s1".into());
    options.agent_options = dsh_testkit::harness::agent_options();
    let resumed = h.resume_agent(options).await.unwrap().agent().clone();
    assert!(!engine.is_busy(resumed.session()));
    let result = engine
        .compact_now(&resumed, AbortSignal::new(), None)
        .await
        .unwrap();
    assert!(result.is_some());
    h.finish().await;
}
