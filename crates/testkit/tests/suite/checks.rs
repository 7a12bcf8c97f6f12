//! The log checkers accept correct logs and catch every kind of broken one.

use dsh_protocol::{codes, ContentBlock, LlmFailure};
use dsh_session::{interrupted_turn_closers, SessionEvent, TurnEndCancelCause, TurnEndReason};
use dsh_testkit::checks::{
    check_all, check_anchors, check_enclosure, check_seqs, check_tool_pairing, Checks, Invariant,
    Violation,
};
use dsh_testkit::scripted::{
    error_finish, reasoning_text_response, text_response, tool_call_response, Response,
    SCRIPTED_USAGE,
};

use super::log_builder::{tool_call, Log};

const DONE: TurnEndReason = TurnEndReason::Completed;

/// A correct two-step turn: two parallel tool calls, then an answer.
fn tool_turn(log: &mut Log, turn: u64) {
    log.turn_start(turn).step_start(turn, 1);
    log.user("go");
    let at = (turn, 1);
    log.model_call(
        at,
        tool_call_response(&[("a", "read", "{}"), ("b", "bash", "{\"c\":1}")]),
    );
    let ca = log.call(at, "a", "read", "{}");
    let cb = log.call(at, "b", "bash", "{\"c\":1}");
    log.result(at, "a", Some(vec![ca]));
    log.result(at, "b", Some(vec![cb]));
    log.step_end(turn, 1).step_start(turn, 2);
    log.model_call((turn, 2), text_response("done"));
    log.step_end(turn, 2).turn_end(turn, DONE);
}

fn good_log() -> Log {
    let mut log = Log::new();
    tool_turn(&mut log, 1);
    tool_turn(&mut log, 2);
    log
}

/// The invariants of every violation found by `check_all`.
fn caught(log: &Log) -> Vec<(Invariant, Option<u64>)> {
    match check_all(&log.events) {
        Ok(()) => Vec::new(),
        Err(found) => found.iter().map(|v| (v.invariant, v.seq)).collect(),
    }
}

#[test]
fn a_correct_log_passes_every_check() {
    let log = good_log();
    assert_eq!(check_all(&log.events), Ok(()));
    // Also through Arc events, as `session.events()` hands them out.
    let shared: Vec<_> = log
        .events
        .iter()
        .cloned()
        .map(std::sync::Arc::new)
        .collect();
    assert_eq!(check_all(&shared), Ok(()));
}

#[test]
fn seq_gaps_are_reported_once_with_a_readable_message() {
    let mut log = good_log();
    log.events.remove(3);
    assert_eq!(
        check_seqs(&log.events),
        Err(vec![Violation {
            invariant: Invariant::ContiguousSeqs,
            seq: Some(4),
            message: "assistant/chunk has seq 4 at index 3; seqs must equal their index".into(),
        }])
    );
    assert_eq!(
        check_seqs(&log.events).unwrap_err()[0].to_string(),
        "invariant 1 (contiguous seqs) at seq 4: assistant/chunk has seq 4 at index 3; seqs must equal their index"
    );
}

#[test]
fn an_open_last_turn_fails_strict_checks_only() {
    let mut log = good_log();
    log.turn_start(3).step_start(3, 1);
    log.chunks(3, 1, Response::new().text("stream").chunks()[..2].to_vec());
    assert_eq!(
        check_enclosure(&log.events),
        Err(vec![Violation {
            invariant: Invariant::BalancedEnclosure,
            seq: None,
            message: format!(
                "turn 3 (opened at seq {}) was never closed (step 3.1 also open)",
                log.events.len() - 4
            ),
        }])
    );
    assert_eq!(Checks::allowing_open_turn().run(&log.events), Ok(()));
}

#[test]
fn broken_nesting_and_numbering_are_caught() {
    let enc = Invariant::BalancedEnclosure;
    // turn/end names another turn.
    let mut log = Log::new();
    log.turn_start(1).turn_end(2, DONE);
    assert_eq!(caught(&log), [(enc, Some(1))]);
    // Turn numbers skip.
    let mut log = Log::new();
    log.turn_start(1)
        .turn_end(1, DONE)
        .turn_start(3)
        .turn_end(3, DONE);
    assert_eq!(caught(&log), [(enc, Some(2))]);
    // The first turn of a log is 1.
    let mut log = Log::new();
    log.turn_start(2).turn_end(2, DONE);
    assert_eq!(caught(&log), [(enc, Some(0))]);
    // Steps start at 1 in every turn.
    let mut log = Log::new();
    log.turn_start(1)
        .step_start(1, 1)
        .step_end(1, 1)
        .turn_end(1, DONE);
    log.turn_start(2)
        .step_start(2, 2)
        .step_end(2, 2)
        .turn_end(2, DONE);
    assert_eq!(caught(&log), [(enc, Some(5))]);
    // A turn opened inside another.
    let mut log = Log::new();
    log.turn_start(1).turn_start(2).turn_end(2, DONE);
    assert_eq!(caught(&log), [(enc, Some(1))]);
    // turn/end while its step is open, then a stray step/end.
    let mut log = Log::new();
    log.turn_start(1)
        .step_start(1, 1)
        .turn_end(1, DONE)
        .step_end(1, 1);
    assert_eq!(caught(&log), [(enc, Some(2)), (enc, Some(3))]);
    // A step opened outside any turn.
    let mut log = Log::new();
    log.step_start(1, 1).step_end(1, 1);
    assert_eq!(caught(&log), [(enc, Some(0))]);
}

#[test]
fn step_content_must_sit_in_the_step_it_names() {
    let enc = Invariant::BalancedEnclosure;
    // A chunk after its step closed.
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1).step_end(1, 1);
    log.chunks(1, 1, error_finish("SERVER"));
    log.turn_end(1, DONE);
    assert_eq!(caught(&log), [(enc, Some(3))]);
    // A tool/call naming a different step than the open one.
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1);
    log.call((1, 2), "x", "read", "{}");
    log.step_end(1, 1).turn_end(1, DONE);
    let found = check_enclosure(&log.events).unwrap_err();
    assert_eq!(
        found[0].message,
        "tool/call names step 1.2 but the open step is 1.1"
    );
    // request/header outside a turn.
    let mut log = Log::new();
    log.push(dsh_session::EventData::RequestContext(
        dsh_session::RequestContext {
            provider: "p".into(),
            model: "m".into(),
            context_window: None,
        },
    ));
    assert_eq!(caught(&log), [(enc, Some(0))]);
    // A replace-op tool/result (the pruner) may be written between turns.
    let mut log = good_log();
    let first_result = 13;
    log.push_with(
        dsh_session::EventData::ToolResult(dsh_session::ToolResult {
            turn: 1,
            step: 1,
            message: std::sync::Arc::new(dsh_protocol::Message::tool_result(
                "a".into(),
                vec![ContentBlock::text("[pruned]")],
                false,
            )),
            error: None,
            meta: None,
        }),
        Some(dsh_session::SurfaceOp::Replace {
            start: first_result,
            end: first_result,
        }),
        Some(vec![first_result]),
    );
    assert_eq!(check_all(&log.events), Ok(()));
}

/// One step with two requested calls; `tools` writes the tool events.
fn paired(tools: impl FnOnce(&mut Log, (u64, u64)), reason: TurnEndReason) -> Log {
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1);
    log.model_call(
        (1, 1),
        tool_call_response(&[("a", "read", "{}"), ("b", "bash", "{}")]),
    );
    tools(&mut log, (1, 1));
    log.step_end(1, 1).turn_end(1, reason);
    log
}

#[test]
fn tool_calls_must_pair_in_model_order() {
    let pair = Invariant::ToolPairing;
    let error = TurnEndReason::Error {
        error: LlmFailure::new(codes::UNKNOWN, "scheduler failed"),
    };
    // Good: calls then results, both in model order (the message is at seq 10).
    let good = paired(
        |l, at| {
            let a = l.call(at, "a", "read", "{}");
            let b = l.call(at, "b", "bash", "{}");
            l.result(at, "a", Some(vec![a]));
            l.result(at, "b", Some(vec![b]));
        },
        DONE,
    );
    assert_eq!(check_tool_pairing(&good.events), Ok(()));
    // A missing result.
    let log = paired(
        |l, at| {
            let a = l.call(at, "a", "read", "{}");
            l.call(at, "b", "bash", "{}");
            l.result(at, "a", Some(vec![a]));
        },
        DONE,
    );
    assert_eq!(caught(&log), [(pair, Some(12))]);
    // ...is allowed when the turn ended `error` (scheduler failure).
    let log = paired(
        |l, at| {
            let a = l.call(at, "a", "read", "{}");
            l.result(at, "a", Some(vec![a]));
        },
        error.clone(),
    );
    assert_eq!(check_all(&log.events), Ok(()));
    // Results committed out of model order.
    let log = paired(
        |l, at| {
            let a = l.call(at, "a", "read", "{}");
            let b = l.call(at, "b", "bash", "{}");
            l.result(at, "b", Some(vec![b]));
            l.result(at, "a", Some(vec![a]));
        },
        DONE,
    );
    assert_eq!(caught(&log), [(pair, Some(14))]);
    // A result citing the wrong event, a duplicate call, an unrequested call, and a call
    // whose arguments differ from what the model wrote.
    let log = paired(
        |l, at| {
            let a = l.call(at, "a", "read", "{}");
            l.call(at, "a", "read", "{}");
            let b = l.call(at, "b", "bash", "{\"x\":1}");
            l.call(at, "zzz", "read", "{}");
            l.result(at, "a", Some(vec![a + 1]));
            l.result(at, "b", Some(vec![b]));
        },
        error,
    );
    let found = check_tool_pairing(&log.events).unwrap_err();
    let messages: Vec<&str> = found.iter().map(|v| v.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "tool/call zzz was not requested by the step's assistant message",
            "call a has 2 tool/call events",
            "tool/result a cites Some([12]), expected [11] (its tool/call)",
            "tool/call b logs bash({\"x\":1}) but the model asked for bash({})",
        ]
    );
}

#[test]
fn repaired_turns_may_answer_calls_that_never_started() {
    let log = paired(
        |l, at| {
            let a = l.call(at, "a", "read", "{}");
            l.result(at, "a", Some(vec![a]));
            l.result(at, "b", None); // TOOL_NOT_STARTED closer
        },
        TurnEndReason::Interrupted,
    );
    assert_eq!(check_all(&log.events), Ok(()));
    // The same shape in a completed turn is a broken pair.
    let log = paired(
        |l, at| {
            let a = l.call(at, "a", "read", "{}");
            l.result(at, "a", Some(vec![a]));
            l.result(at, "b", None);
        },
        DONE,
    );
    assert_eq!(caught(&log), [(Invariant::ToolPairing, Some(13))]);
}

#[test]
fn messages_cite_exactly_their_own_attempt() {
    let anchor = Invariant::CompletionAnchor;
    // A failed attempt then a retry: the message cites only the retry's chunks.
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1);
    log.chunks(1, 1, error_finish("SERVER"));
    log.model_call((1, 1), reasoning_text_response("r", "t"));
    log.step_end(1, 1).turn_end(1, DONE);
    assert_eq!(check_all(&log.events), Ok(()));

    // Citing the failed attempt too.
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1);
    let failed = log.chunks(1, 1, error_finish("SERVER"));
    let mut seqs = log.chunks(1, 1, text_response("t"));
    seqs.insert(0, failed[0]);
    log.message(
        (1, 1),
        vec![ContentBlock::text("t")],
        Some(SCRIPTED_USAGE),
        false,
        seqs,
    );
    log.step_end(1, 1).turn_end(1, DONE);
    assert_eq!(caught(&log), [(anchor, Some(8))]);

    // Usage dropped from the message.
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1);
    let seqs = log.chunks(1, 1, text_response("t"));
    log.message((1, 1), vec![ContentBlock::text("t")], None, false, seqs);
    log.step_end(1, 1).turn_end(1, DONE);
    let found = check_anchors(&log.events).unwrap_err();
    assert_eq!(
        found[0].message,
        format!(
            "assistant/message usage is None, but its attempt reported {:?}",
            Some(SCRIPTED_USAGE)
        )
    );

    // A successful call with no message in a completed turn.
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1);
    log.chunks(1, 1, text_response("t"));
    log.step_end(1, 1).turn_end(1, DONE);
    assert_eq!(caught(&log), [(anchor, Some(6))]);
    // ...is fine when the turn was aborted right after the finish.
    log.events.pop();
    log.turn_end(
        1,
        TurnEndReason::Aborted {
            reason: TurnEndCancelCause::User,
        },
    );
    assert_eq!(check_all(&log.events), Ok(()));
    // ...and when the process died between the finish and the message: crash repair closes
    // the step and the turn `interrupted`, and the response is simply not in the history.
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1);
    log.chunks(1, 1, tool_call_response(&[("a", "read", "{}")]));
    let stored: Vec<std::sync::Arc<SessionEvent>> = log
        .events
        .iter()
        .cloned()
        .map(std::sync::Arc::new)
        .collect();
    let closers = interrupted_turn_closers(&stored);
    assert_eq!(
        closers
            .iter()
            .map(SessionEvent::type_name)
            .collect::<Vec<_>>(),
        ["step/end", "turn/end"]
    );
    log.events.extend(closers);
    assert_eq!(check_all(&log.events), Ok(()));

    // A stream that produced nothing is cited as [].
    let mut log = Log::new();
    log.turn_start(1).step_start(1, 1);
    log.message((1, 1), vec![], None, false, vec![]);
    log.step_end(1, 1).turn_end(1, DONE);
    assert_eq!(check_all(&log.events), Ok(()));
}

#[test]
fn interrupted_messages_keep_only_visible_text() {
    let aborted = TurnEndReason::Aborted {
        reason: TurnEndCancelCause::User,
    };
    let streamed = Response::new()
        .text("partial")
        .tool_call("a", "read", "{}")
        .chunks();
    for (content, ok) in [
        (vec![ContentBlock::text("partial")], true),
        (
            vec![ContentBlock::text("partial"), tool_call("a", "read", "{}")],
            false,
        ),
        (vec![ContentBlock::text("  ")], false),
    ] {
        let mut log = Log::new();
        log.turn_start(1).step_start(1, 1);
        let seqs = log.chunks(1, 1, streamed[..3].to_vec());
        log.message((1, 1), content, None, true, seqs);
        log.step_end(1, 1).turn_end(1, aborted.clone());
        let expected: Vec<(Invariant, Option<u64>)> = if ok {
            vec![]
        } else {
            vec![(Invariant::InterruptedPrefix, Some(5))]
        };
        // Only the prefix rule fires: interrupted tool calls need no pairs.
        assert_eq!(caught(&log), expected);
    }
}
