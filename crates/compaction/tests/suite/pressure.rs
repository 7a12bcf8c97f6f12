//! The pressure path: whole-log tests of compactions before a step.

use super::rig::*;
use dsh_compaction::{CompactionEnd, CompactionStart, CompactionSummary, SeqRange};
use dsh_llm::RequestPurpose;
use dsh_protocol::{ContentBlock, MessageSource};
use dsh_session::{derive_event_message, EventData, SessionEvent};
use dsh_testkit::harness::Harness;
use dsh_testkit::harness::ScriptedTool;
use dsh_testkit::scripted::tool_call_response;
use serde_json::{json, Value};
use std::sync::Arc;

/// Four ~800-token turns, so turn 5's pre-step is at the threshold.
async fn four_big_turns(h: &Harness) -> Arc<dyn dsh_agent::Agent> {
    let agent = h.create_agent_named("s1").await.agent().clone();
    for (i, tag) in ["one", "two", "three", "four"].iter().enumerate() {
        turn(&agent, &big(tag, 800)).await;
        assert_eq!(
            h.adapter().calls(),
            i + 1,
            "no compaction below the threshold"
        );
    }
    agent
}

fn after_turn_start(events: &[Arc<SessionEvent>], turn: u64) -> Vec<String> {
    let from = events
        .iter()
        .position(|e| matches!(&e.data, EventData::TurnStart(t) if t.turn == turn))
        .unwrap();
    shape(&events[from..])
}

/// Four ~800-token prompts reach the 3,200-token threshold at turn 5's pre-step: the head
/// (turns 1–3) is summarised, turn 4 stays verbatim, and turn 5's request holds the
/// checkpoint and the retained tail. `finish` rebuilds every loop request from the log.
#[tokio::test]
async fn a_pressure_compaction_keeps_the_tail_and_the_next_request_sees_the_checkpoint() {
    let script = vec![
        answer("ok1"),
        answer("ok2"),
        answer("ok3"),
        answer("ok4"),
        summary_response(),
        answer("done"),
    ];
    let (h, _engine) = rig(script, Value::Null);
    let agent = four_big_turns(&h).await;
    let before = agent.session().surface().nodes;
    turn(&agent, "five").await;
    let events = agent.session().events();
    assert_eq!(
        after_turn_start(&events, 5),
        [
            "turn/start 5",
            "agent/inbox/spliced",
            "compaction/start",
            "compaction/summary",
            &format!("user/message This replace {}-{}", before[0], before[5]),
            "compaction/end",
            "step/start",
            "user/message five",
            "assistant/message done",
            "step/end",
            "turn/end 5",
        ]
    );
    // The transaction's records, whole.
    let start_at = events
        .iter()
        .position(|e| e.is::<CompactionStart>())
        .unwrap();
    let [start, summary, checkpoint, end] = &events[start_at..start_at + 4] else {
        unreachable!()
    };
    let start_data = start.decode::<CompactionStart>().unwrap().unwrap();
    assert_eq!(start_data.turn, Some(5));
    let summary_data = summary.decode::<CompactionSummary>().unwrap().unwrap();
    let shadowed: Vec<u64> = before[..6].to_vec();
    assert_eq!(summary_data.shadowed_seqs, shadowed);
    assert_eq!(
        summary_data.shadowed_range,
        SeqRange {
            start: before[0],
            end: before[5]
        }
    );
    assert_eq!(summary_data.summary, vec![ContentBlock::text(SUMMARY)]);
    assert_eq!(
        summary_data.raw_output,
        Some(vec![ContentBlock::text(SUMMARY)])
    );
    assert_eq!(summary_data.llm_stream_call, Some(true));
    assert_eq!(summary_data.max_tokens, Some(8192));
    assert_eq!(
        (summary_data.provider.as_str(), summary_data.model.as_str()),
        (dsh_testkit::harness::PROVIDER, dsh_testkit::harness::MODEL)
    );
    let mut sources = vec![start.seq, summary.seq];
    sources.extend(&shadowed);
    assert_eq!(checkpoint.source_event_seqs.as_ref(), Some(&sources));
    let message = derive_event_message(checkpoint).unwrap();
    assert_eq!(
        serde_json::to_value(&message.source).unwrap(),
        json!({"kind": "plugin", "plugin": "compact", "compactionId": start_data.compaction_id})
    );
    let texts: Vec<&str> = message
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.as_str(),
            _ => "",
        })
        .collect();
    assert_eq!(texts.len(), 3);
    assert!(texts[0].starts_with(dsh_compaction::CHECKPOINT_PREAMBLE));
    assert!(texts[0].ends_with("\n\n<compacted-summary>"));
    assert_eq!(&texts[1..], [SUMMARY, "</compacted-summary>"]);
    let end_data = end.decode::<CompactionEnd>().unwrap().unwrap();
    assert_eq!((end_data.turn, end_data.error), (Some(5), None));
    // The summarizer's request replays the last header and the shadowed prefix.
    let requests = h.adapter().requests();
    let summarize = &requests[4];
    assert_eq!(summarize.purpose, RequestPurpose::Compaction);
    assert_eq!(summarize.system, requests[3].system);
    assert_eq!(summarize.tools, requests[3].tools);
    assert_eq!(
        serde_json::to_value(&summarize.messages[..6]).unwrap(),
        serde_json::to_value(&requests[3].messages[..6]).unwrap(),
        "a strict prefix of the conversation's last request"
    );
    assert_eq!(summarize.messages.len(), 7);
    assert!(
        matches!(&summarize.messages[6].source, MessageSource::Plugin { plugin, .. } if plugin == "dsh-compaction")
    );
    assert_eq!(summarize.config.max_tokens, Some(8192));
    assert_eq!(request_words(&h, 5), ["This", "four", "ok4", "five"]);
    h.finish().await;
}

/// A second compaction starts at the surface head, which is the first checkpoint: the new
/// summary absorbs it.
#[tokio::test]
async fn a_later_summary_absorbs_the_earlier_checkpoint() {
    let script = vec![
        answer("ok1"),
        answer("ok2"),
        answer("ok3"),
        answer("ok4"),
        summary_response(),
        answer("ok5"),
        answer("ok6"),
        answer("ok7"),
        summary_response(),
        answer("ok8"),
    ];
    let (h, _engine) = rig(script, Value::Null);
    let agent = four_big_turns(&h).await;
    for tag in ["five", "six", "seven"] {
        turn(&agent, &big(tag, 800)).await;
    }
    let head = agent.session().surface().nodes[0];
    turn(&agent, "eight").await;
    let events = agent.session().events();
    let summaries: Vec<CompactionSummary> = events
        .iter()
        .filter_map(|e| e.decode::<CompactionSummary>())
        .map(Result::unwrap)
        .collect();
    assert_eq!(summaries.len(), 2);
    assert_eq!(
        summaries[1].shadowed_seqs[0], head,
        "starts at the first checkpoint"
    );
    assert!(dsh_compaction::select::is_compact_checkpoint(
        &events[head as usize]
    ));
    // The summarizer saw the old checkpoint first, and the model now sees one checkpoint.
    assert_eq!(request_words(&h, 8)[0], "This");
    assert_eq!(request_words(&h, 9), ["This", "seven", "ok7", "eight"]);
    h.finish().await;
}

/// Below the threshold nothing is written, not even a prune; no summarizer call happens.
#[tokio::test]
async fn below_the_threshold_nothing_is_written() {
    let (h, _engine) = rig(vec![answer("ok1"), answer("ok2")], Value::Null);
    let agent = h.create_agent_named("s1").await.agent().clone();
    turn(&agent, &big("one", 1000)).await;
    turn(&agent, &big("two", 1000)).await;
    assert_eq!(h.adapter().calls(), 2);
    assert!(!agent
        .session()
        .events()
        .iter()
        .any(|e| e.type_name().starts_with("compaction/")));
    h.finish().await;
}

/// A step whose tool call waits for its result cannot be cut: the retained tail moves back
/// to the last balanced cut (before the call), never between a call and its result.
#[tokio::test]
async fn the_cut_moves_back_instead_of_splitting_a_tool_pair() {
    let script = vec![
        answer("ok1"),
        answer("ok2"),
        tool_call_response(&[("c1", "echo", &format!("{{\"text\":\"{}\"}}", big("x", 500)))])
            .into(),
        summary_response(),
        answer("done"),
    ];
    register();
    let adapter = dsh_testkit::scripted::ScriptedAdapter::new([]).context_window(WINDOW);
    let h = Harness::builder()
        .adapter(adapter)
        .script(script)
        .scripted_tools([ScriptedTool::new("echo")])
        .build();
    h.ctx()
        .plugin::<dsh_compaction::CompactionPlugin>(
            dsh_compaction::CompactionConfig::from_value(&json!({"retainTokens": 100})).unwrap(),
        )
        .unwrap();
    let agent = h.create_agent_named("s1").await.agent().clone();
    turn(&agent, &big("one", 1200)).await;
    turn(&agent, &big("two", 1300)).await;
    // Step 1 of turn 3 calls the tool (whose result echoes ~500 tokens); the pre-step of step
    // 2 is above the threshold. Keeping 100 tokens would cut between the call and its result;
    // the cut moves back before the assistant's call.
    turn(&agent, "three").await;
    let events = agent.session().events();
    let summary = events
        .iter()
        .find_map(|e| e.decode::<CompactionSummary>())
        .unwrap()
        .unwrap();
    let last = &events[*summary.shadowed_seqs.last().unwrap() as usize];
    assert!(
        matches!(&last.data, EventData::UserMessage(m) if m.content.iter().any(|b| matches!(b, ContentBlock::Text{text} if text == "three"))),
        "the shadowed span ends with the prompt, before the tool call: {:?}",
        last.type_name()
    );
    let words = request_words(&h, 4);
    assert_eq!(words.len(), 3, "{words:?}");
    assert_eq!(words[..2], ["This", "call:echo"]);
    h.finish().await;
}

/// After a compaction, a resumed session's next request carries the checkpoint and the
/// retained tail (not the shadowed turns), and a fork at any seq derives what the model saw
/// at that point.
#[tokio::test]
async fn resume_and_fork_after_a_compaction_see_what_the_model_saw() {
    let script = vec![
        answer("ok1"),
        answer("ok2"),
        answer("ok3"),
        answer("ok4"),
        summary_response(),
        answer("done"),
        answer("resumed"),
    ];
    let (h, _engine) = rig(script, Value::Null);
    let store = h.mount_memory_source();
    let agent = four_big_turns(&h).await;
    let before = agent.session().events();
    turn(&agent, "five").await;
    let session = agent.session().clone();
    // Fork before the compaction: the uncompacted history; after it: checkpoint + tail.
    let fork_before = dsh_session::fork(&session, Some(before.len() as u64 - 1), "f1".into())
        .unwrap()
        .build(&session)
        .unwrap();
    // Turn 4's request plus its answer: the history before the compaction.
    let mut seen = h.adapter().requests()[3].messages.clone();
    seen.extend(session.derive_messages().get(2).cloned());
    assert_eq!(
        serde_json::to_value(fork_before.derive_messages()).unwrap(),
        serde_json::to_value(&seen).unwrap()
    );
    let fork_after = dsh_session::fork(&session, None, "f2".into())
        .unwrap()
        .build(&session)
        .unwrap();
    assert_eq!(
        serde_json::to_value(fork_after.derive_messages()).unwrap(),
        serde_json::to_value(session.derive_messages()).unwrap()
    );
    store.save_session(&session);
    h.handle().dispose().await;
    let mut options = dsh_agent::ResumeAgentOptions::new("s1".into());
    options.agent_options = dsh_testkit::harness::agent_options();
    let resumed = h.resume_agent(options).await.unwrap().agent().clone();
    turn(&resumed, "six").await;
    assert_eq!(
        request_words(&h, 6),
        ["This", "four", "ok4", "five", "done", "six"]
    );
    h.finish().await;
}

/// The original's defect (issue 12 item 7): once above the threshold with little new beyond
/// the last checkpoint, it re-summarised at every step and failed each time. Here a range
/// that is mostly the previous checkpoint is not worth a call: no compaction starts, and the
/// model is called only for the turns.
#[tokio::test]
async fn no_compaction_starts_when_it_cannot_shrink_the_context() {
    let script = vec![
        answer("ok1"),
        answer("ok2"),
        answer("ok3"),
        answer("ok4"),
        summary_response(),
        answer("ok5"),
        answer("ok6"),
        answer("ok7"),
    ];
    let (h, _engine) = rig(script, Value::Null);
    let agent = four_big_turns(&h).await;
    turn(&agent, &big("five", 3000)).await;
    assert_eq!(h.adapter().calls(), 6, "one compaction at turn 5");
    // Above the threshold now, but the compactable head is the checkpoint plus one small
    // turn: below the floor, so nothing is attempted at turns 6 and 7.
    turn(&agent, "six").await;
    turn(&agent, "seven").await;
    assert_eq!(
        h.adapter().calls(),
        8,
        "no summarizer calls after the first"
    );
    let starts = agent
        .session()
        .events()
        .iter()
        .filter(|e| e.is::<CompactionStart>())
        .count();
    assert_eq!(starts, 1);
    h.finish().await;
}

/// `compact_region` is the forced form: inside an open turn it compacts the span it is given;
/// a span not on the surface, inverted, or outside a turn is refused without writing.
#[tokio::test]
async fn compact_region_validates_the_span_and_needs_an_open_turn() {
    use dsh_agent::{AbortSignal, PreStep};
    use std::sync::Mutex;
    let (h, engine) = rig(
        vec![
            answer("ok1"),
            answer("ok2"),
            summary_response(),
            answer("ok3"),
        ],
        json!({"auto": false}),
    );
    let agent = h.create_agent_named("s1").await.agent().clone();
    turn(&agent, &big("one", 600)).await;
    turn(&agent, &big("two", 600)).await;
    let nodes = agent.session().surface().nodes;
    // Outside a turn.
    let outside = engine
        .compact_region(&agent, nodes[0], nodes[1], &AbortSignal::new())
        .await
        .unwrap_err();
    assert_eq!(outside.code(), "COMPACTION_NO_OPEN_TURN");
    let len = agent.session().len();
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let (e, seen, n) = (Arc::clone(&engine), Arc::clone(&outcomes), nodes.clone());
    agent
        .ctx()
        .on_waterfall::<PreStep, _, _>(move |args, next| {
            let (engine, seen, n) = (Arc::clone(&e), Arc::clone(&seen), n.clone());
            async move {
                let signal = AbortSignal::new();
                for (start, end) in [(n[1], n[0]), (n[0], 999_999)] {
                    let error = engine
                        .compact_region(&args.agent, start, end, &signal)
                        .await
                        .unwrap_err();
                    seen.lock().unwrap().push(error.code().to_string());
                }
                let done = engine
                    .compact_region(&args.agent, n[0], n[1], &signal)
                    .await;
                seen.lock()
                    .unwrap()
                    .push(format!("{:?}", done.map(|r| r.shadowed_seqs)));
                next.run().await
            }
        })
        .unwrap()
        .forget();
    turn(&agent, "three").await;
    assert_eq!(
        *outcomes.lock().unwrap(),
        [
            "COMPACTION_INVALID_REGION".to_string(),
            "COMPACTION_INVALID_REGION".to_string(),
            format!("Ok({:?})", &nodes[..2]),
        ]
    );
    let tail = shape(&agent.session().events_from(len));
    assert_eq!(
        tail[3..7],
        [
            "compaction/start",
            "compaction/summary",
            &format!("user/message This replace {}-{}", nodes[0], nodes[1]),
            "compaction/end"
        ]
    );
    assert_eq!(request_words(&h, 3), ["This", "two", "ok2", "three"]);
    h.finish().await;
}

/// Automatic attempts need the whole surface unchanged while the summary is written: a node
/// appended meanwhile fails the attempt (`end{error}`, surface as it was plus the new node),
/// and the turn continues. A manual attempt only needs its span unchanged.
#[tokio::test]
async fn a_surface_change_during_the_summary_fails_an_automatic_attempt_only() {
    use dsh_testkit::scripted::ScriptEntry;
    use std::sync::Mutex;
    let target: Arc<Mutex<Option<dsh_session::Session>>> = Arc::default();
    let meddle = |target: Arc<Mutex<Option<dsh_session::Session>>>| {
        ScriptEntry::respond(move |_| {
            if let Some(session) = target.lock().unwrap().as_ref() {
                session
                    .append(
                        EventData::UserMessage(Arc::new(dsh_testkit::harness::msg("meddler"))),
                        dsh_session::AppendOptions::surface_append(),
                    )
                    .unwrap();
            }
            dsh_testkit::scripted::text_response(SUMMARY)
        })
    };
    let script = vec![
        answer("ok1"),
        answer("ok2"),
        answer("ok3"),
        answer("ok4"),
        meddle(Arc::clone(&target)),
        answer("done"),
    ];
    let (h, engine) = rig(script, Value::Null);
    let agent = four_big_turns(&h).await;
    *target.lock().unwrap() = Some(agent.session().clone());
    turn(&agent, "five").await;
    let events = agent.session().events();
    let end = events
        .iter()
        .find_map(|e| e.decode::<CompactionEnd>())
        .unwrap()
        .unwrap();
    assert!(
        end.error
            .as_deref()
            .unwrap()
            .contains("the surface changed"),
        "{end:?}"
    );
    assert!(!events.iter().any(|e| e.is::<CompactionSummary>()));
    assert_eq!(request_words(&h, 5)[0], "one", "nothing was shadowed");
    // Manual: the same meddling lands outside the selected span, and the attempt succeeds.
    h.adapter().push(meddle(Arc::clone(&target)));
    let result = engine
        .compact_now(&agent, dsh_agent::AbortSignal::new(), None)
        .await
        .unwrap();
    assert!(result.is_some());
    *target.lock().unwrap() = None;
    h.finish().await;
}
