//! `TokenMeter`: the estimate, the fold, replaces, calibration to provider usage, `measure`.

use super::common::*;
use dsh_compaction::*;
use dsh_protocol::{CallId, ContentBlock, EpochHeader, LlmCallConfig, StreamChunk};
use dsh_session::*;
use serde_json::json;
use std::sync::Arc;

/// Spec §1.5.5: three emoji are 6 UTF-16 units (2 tokens), 3 chars (1 token) and 12 bytes
/// (3 tokens); only the UTF-16 count gives 2.
#[test]
fn the_estimate_counts_utf16_code_units() {
    assert_eq!(text_tokens("😀😀😀"), 2);
    assert_eq!(utf16_len("😀😀😀"), 6);
    assert_eq!(text_tokens("ééééé"), 2, "é is one unit, two bytes");
    assert_eq!(text_tokens(""), 0);
    assert_eq!(text_tokens("abcd"), 1);
    assert_eq!(text_tokens("abcde"), 2);
}

#[test]
fn block_message_and_header_prices() {
    assert_eq!(estimate_block(&ContentBlock::text("abcdefgh")), 2 + 4);
    assert_eq!(
        estimate_block(&ContentBlock::Reasoning {
            text: "😀😀😀".into()
        }),
        2 + 4
    );
    let call = ContentBlock::ToolCall {
        id: CallId::new("c"),
        name: "read".into(),
        arguments: "{\"a\":1}".into(),
    };
    assert_eq!(estimate_block(&call), 1 + 2 + 4);
    let result = ContentBlock::ToolResult {
        tool_call_id: CallId::new("c"),
        content: vec![ContentBlock::text("abcd"), ContentBlock::text("abcdefgh")],
        is_error: None,
    };
    assert_eq!(estimate_block(&result), (1 + 4) + (2 + 4) + 4);
    // Other blocks: their JSON text, `{"type":"image","attachment":{"id":"x"}}` (40 units).
    let image = ContentBlock::Image {
        attachment: json!({"id": "x"}),
    };
    assert_eq!(
        serde_json::to_string(&image).unwrap().len(),
        40,
        "the JSON this price is computed from"
    );
    assert_eq!(estimate_block(&image), 10 + 4);
    let message = text_message("m", "abcd");
    assert_eq!(estimate_message(&message), 1 + 4 + 4);

    let mut header = EpochHeader {
        config: LlmCallConfig::default(),
        adapter_defaults: None,
        system: None,
        tools: None,
    };
    assert_eq!(estimate_header(&header), 0);
    header.system = Some("".into());
    header.tools = Some(vec![]);
    assert_eq!(estimate_header(&header), 0, "empty counts as absent");
    header.system = Some("abcdefgh".into());
    assert_eq!(estimate_header(&header), 2 + 4);
    header.tools = Some(vec![dsh_protocol::ToolSchema {
        name: "t".into(),
        description: "d".into(),
        parameters: json!({}).into(),
    }]);
    // [{"name":"t","description":"d","parameters":{}}] is 48 units.
    assert_eq!(estimate_header(&header), 2 + 4 + 12 + 4);
}

#[test]
fn baseline_none_exactly_for_an_empty_surface_without_header() {
    assert_eq!(TokenMeter::new().measure().baseline, Baseline::None);

    let s = session("s");
    s.append(header("abcd"), log_only()).unwrap();
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let m = meter.measure();
    // system "abcd": 1 + 4; tools: 77 units of JSON, 20 + 4.
    assert_eq!(m.baseline, Baseline::Estimated { tokens: 5 + 24 });
    assert_eq!(m.total_tokens, 29);

    let s = session("s");
    s.append(user("u", ""), surface()).unwrap();
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    assert_eq!(
        meter.measure().baseline,
        Baseline::Estimated { tokens: 8 },
        "an empty text block still costs its overhead"
    );
}

#[test]
fn surface_nodes_follow_appends_and_empty_assistant_messages_cost_nothing() {
    let s = session("s");
    s.append(user("u1", "abcdefgh"), surface()).unwrap();
    s.append(step_start(1, 1), log_only()).unwrap();
    s.append(
        assistant(1, 1, "a", vec![], None),
        surface().sources(vec![]),
    )
    .unwrap();
    s.append(step_end(1, 1), log_only()).unwrap();
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    assert_eq!(
        meter.nodes(),
        &[
            SurfaceNode { seq: 0, tokens: 10 },
            SurfaceNode { seq: 2, tokens: 0 }
        ]
    );
    assert_eq!(meter.consumed(), 4);
    let m = meter.measure();
    assert_eq!(
        (m.total_tokens, m.surface_tokens, m.log_revision),
        (10, 10, 4)
    );
    // catch_up with nothing new is a no-op.
    meter.catch_up(&s).unwrap();
    assert_eq!(meter.measure(), m);
}

/// A checkpoint-style replace splices the nodes out and puts the new node at their position.
#[test]
fn a_replace_splices_nodes_and_adjusts_the_total() {
    let s = session("s");
    let (u1, a1, r1) = tool_step(&s, 1, 1, &"x".repeat(400), None);
    let (u2, a2, r2) = tool_step(&s, 1, 2, "short", None);
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let before = meter.surface_tokens();
    let removed: u64 = meter.nodes()[..3].iter().map(|n| n.tokens).sum();

    let checkpoint = s
        .append(
            user("cp", "summary"),
            AppendOptions::surface_replace(u1, r1).sources(vec![u1, a1, r1]),
        )
        .unwrap();
    meter.catch_up(&s).unwrap();
    let cp_price = estimate_event(&checkpoint);
    let seqs: Vec<u64> = meter.nodes().iter().map(|n| n.seq).collect();
    assert_eq!(seqs, vec![checkpoint.seq, u2, a2, r2]);
    assert_eq!(meter.nodes()[0].tokens, cp_price);
    assert_eq!(meter.surface_tokens(), before - removed + cp_price);
    assert_eq!(
        seqs,
        s.surface().nodes,
        "the meter's nodes are the session's surface"
    );
}

fn event(
    seq: u64,
    data: EventData,
    op: Option<SurfaceOp>,
    sources: Option<Vec<u64>>,
) -> SessionEvent {
    SessionEvent {
        seq,
        time: TIME,
        data,
        ignorable: false,
        surface_op: op,
        source_event_seqs: sources,
    }
}

/// Every check runs before any mutation: a refused event leaves the meter exactly as it was,
/// so the retry fails the same way.
#[test]
fn refused_events_leave_the_meter_unchanged() {
    let s = session("s");
    tool_step(&s, 1, 1, "result", None);
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let next = meter.consumed();
    let snapshot = format!("{meter:?}");

    let cases: Vec<(SessionEvent, &str)> = vec![
        (
            event(
                next,
                user("x", "y"),
                Some(SurfaceOp::Replace { start: 99, end: 1 }),
                Some(vec![99]),
            ),
            "METER_INVALID_REPLACE",
        ),
        (
            event(
                next,
                user("x", "y"),
                Some(SurfaceOp::Replace { start: 5, end: 1 }),
                Some(vec![1, 5]),
            ),
            "METER_INVALID_REPLACE",
        ),
        (
            event(next + 1, user("x", "y"), Some(SurfaceOp::Append), None),
            "METER_OUT_OF_ORDER",
        ),
        (
            event(next, step_end(1, 1), None, None),
            "METER_STEP_MISMATCH",
        ),
        (
            event(
                next,
                assistant(1, 2, "a", vec![ContentBlock::text("t")], None),
                Some(SurfaceOp::Append),
                None,
            ),
            "METER_MESSAGE_OUTSIDE_STEP",
        ),
    ];
    for (bad, code) in cases {
        let err = meter.observe(&bad).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
        assert_eq!(format!("{meter:?}"), snapshot, "{code} changed the meter");
        assert_eq!(meter.observe(&bad).unwrap_err(), err, "retried identically");
    }

    let mut meter = TokenMeter::new();
    meter
        .observe(&event(0, step_start(1, 1), None, None))
        .unwrap();
    let err = meter
        .observe(&event(1, step_start(1, 2), None, None))
        .unwrap_err();
    assert_eq!(err.code(), "METER_STEP_ALREADY_OPEN");
}

#[test]
fn cited_chunks_must_be_earlier_unique_chunks_of_the_step() {
    let text_end = |index| StreamChunk::BlockEnd {
        index,
        block: Box::new(ContentBlock::text("hello")),
    };
    let base = vec![
        event(0, header("sys"), None, None),
        event(1, step_start(1, 1), None, None),
        event(2, chunk(1, 1, text_end(0)), None, None),
        event(3, user("u", "hi"), Some(SurfaceOp::Append), None),
        event(4, chunk(1, 2, text_end(0)), None, None),
    ];
    let message = |sources: Vec<u64>| {
        event(
            5,
            assistant(
                1,
                1,
                "a",
                vec![ContentBlock::text("hello")],
                Some(usage(1000, 10)),
            ),
            Some(SurfaceOp::Append),
            Some(sources),
        )
    };
    let fold = |sources: Vec<u64>| {
        let mut meter = TokenMeter::new();
        for e in &base {
            meter.observe(e).unwrap();
        }
        meter.observe(&message(sources)).map(|()| meter)
    };
    fold(vec![2]).unwrap();
    for (sources, reason) in [
        (vec![3], "not an assistant/chunk of the open step"),
        (vec![2, 2], "cited twice"),
        (vec![4], "a chunk of another turn or step"),
        (vec![5], "not an earlier event"),
    ] {
        match fold(sources.clone()) {
            Err(MeterError::BadChunkCitation { reason: r, .. }) => {
                assert_eq!(r, reason, "{sources:?}")
            }
            other => panic!("{sources:?}: {other:?}"),
        }
    }
}

/// The calibration, and the fix of the original's quirk: right after a usage-anchored step,
/// the reading is the provider's total plus what joined after the assistant message (the
/// tool result) — the step's entered user message is not counted a second time.
#[test]
fn usage_anchors_at_the_surface_just_before_the_assistant_message() {
    let s = session("s");
    s.append(header("system prompt"), log_only()).unwrap();
    let reported = usage(5000, 20);
    let (u, a, r) = tool_step(&s, 1, 1, "file contents", Some(reported));
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let events = s.events();
    let price = |seq: u64| estimate_event(&events[seq as usize]);

    let m = meter.measure();
    assert_eq!(
        m.baseline,
        Baseline::Usage {
            tokens: 5020,
            usage: reported
        }
    );
    assert_eq!(m.surface_delta_tokens, price(r) as i64);
    assert_eq!(m.total_tokens, 5020 + price(r));
    // The original's anchor (the total at step/start) would add the entered message again.
    assert_ne!(m.total_tokens, 5020 + price(u) + price(r));
    assert_eq!(m.surface_tokens, price(u) + price(a) + price(r));

    // The next step's prompt joins; then a new usage report re-anchors.
    let reported = usage(6000, 30);
    let (_, _, r2) = tool_step(&s, 1, 2, "more", Some(reported));
    meter.catch_up(&s).unwrap();
    let m = meter.measure();
    assert_eq!(m.total_tokens, 6030 + price_of(&s, r2));
}

fn price_of(s: &Session, seq: u64) -> u64 {
    estimate_event(&s.event(seq).unwrap())
}

#[test]
fn provider_totals_below_the_estimate_fall_back_to_the_estimate() {
    let s = session("s");
    s.append(header("system prompt"), log_only()).unwrap();
    let (u, a, r) = tool_step(&s, 1, 1, "file contents", Some(usage(1, 1)));
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let header_price = estimate_header(&s.request_header().unwrap());
    let anchored = header_price + price_of(&s, u) + price_of(&s, a);
    let m = meter.measure();
    assert_eq!(m.baseline, Baseline::Estimated { tokens: anchored });
    assert_eq!(m.total_tokens, anchored + price_of(&s, r));
    assert_eq!(m.total_tokens, header_price + m.surface_tokens);

    // Cache reads and writes count towards the provider total.
    let s = session("s");
    s.append(header("system prompt"), log_only()).unwrap();
    let mut reported = usage(10, 5);
    reported.cache_read_tokens = Some(4000);
    reported.cache_write_tokens = Some(100);
    tool_step(&s, 1, 1, "x", Some(reported));
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    assert_eq!(meter.measure().baseline.tokens(), 4115);
}

#[test]
fn another_header_prices_everything_by_the_heuristic() {
    let s = session("s");
    s.append(header("system prompt"), log_only()).unwrap();
    tool_step(&s, 1, 1, "file contents", Some(usage(5000, 20)));
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let logged = (*s.request_header().unwrap()).clone();
    assert_eq!(
        meter.measure_with_header(&logged),
        meter.measure(),
        "same header, same anchor"
    );

    let mut other = logged.clone();
    other.system = Some("a different system prompt".into());
    let m = meter.measure_with_header(&other);
    assert_eq!(
        m.baseline,
        Baseline::Estimated {
            tokens: estimate_header(&other) + meter.surface_tokens()
        }
    );
    assert_eq!(m.surface_delta_tokens, 0);

    // A newly logged header (a model switch) has the same effect on measure().
    s.append(header("a different system prompt"), log_only())
        .unwrap();
    meter.catch_up(&s).unwrap();
    assert_eq!(meter.measure().baseline, m.baseline);
}

#[test]
fn usage_without_a_header_anchors_on_the_estimate() {
    let s = session("s");
    let (u, a, r) = tool_step(&s, 1, 1, "file contents", Some(usage(5000, 20)));
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let m = meter.measure();
    assert_eq!(
        m.baseline,
        Baseline::Estimated {
            tokens: price_of(&s, u) + price_of(&s, a)
        }
    );
    assert_eq!(
        m.total_tokens,
        price_of(&s, u) + price_of(&s, a) + price_of(&s, r)
    );
}

#[test]
fn the_provider_price_is_the_reassembled_stream() {
    // The message holds less than was streamed (a filtered block): the anchor uses what the
    // provider produced, so the delta is the difference.
    let s = session("s");
    s.append(header("sys"), log_only()).unwrap();
    s.append(step_start(1, 1), log_only()).unwrap();
    let long = "y".repeat(400);
    let c = s
        .append(
            chunk(
                1,
                1,
                StreamChunk::BlockEnd {
                    index: 0,
                    block: Box::new(ContentBlock::text(long.clone())),
                },
            ),
            log_only(),
        )
        .unwrap()
        .seq;
    s.append(
        assistant(
            1,
            1,
            "a",
            vec![ContentBlock::text("y")],
            Some(usage(9000, 100)),
        ),
        surface().sources(vec![c]),
    )
    .unwrap();
    s.append(step_end(1, 1), log_only()).unwrap();
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let streamed = text_tokens(&long) + 4 + 4;
    let kept = text_tokens("y") + 4 + 4;
    let m = meter.measure();
    assert_eq!(m.surface_delta_tokens, kept as i64 - streamed as i64);
    assert_eq!(m.total_tokens, 9100 + kept - streamed);
    let _ = Arc::new(());
}

/// Cited chunks the assembler cannot rebuild (an image block that never closed) do not make
/// the session unmeasurable: the message's own price stands in for the provider's.
#[test]
fn unassemblable_chunks_fall_back_to_the_message_price() {
    let s = session("s");
    s.append(header("sys"), log_only()).unwrap();
    s.append(step_start(1, 1), log_only()).unwrap();
    let c = s
        .append(
            chunk(
                1,
                1,
                StreamChunk::BlockStart {
                    index: 0,
                    block_type: dsh_protocol::BlockType::Image,
                },
            ),
            log_only(),
        )
        .unwrap()
        .seq;
    let a = s
        .append(
            assistant(
                1,
                1,
                "a",
                vec![ContentBlock::text("answer")],
                Some(usage(9000, 10)),
            ),
            surface().sources(vec![c]),
        )
        .unwrap()
        .seq;
    s.append(step_end(1, 1), log_only()).unwrap();
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let m = meter.measure();
    assert_eq!(
        m.total_tokens, 9010,
        "anchored at the message's own price (delta 0)"
    );
    assert_eq!(m.surface_tokens, price_of(&s, a));
}
