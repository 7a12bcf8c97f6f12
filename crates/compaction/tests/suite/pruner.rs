//! The tool-result pruner: config rules, content pruning invariants, whole-log output.

use super::common::*;
use dsh_compaction::*;
use dsh_protocol::ContentBlock;
use dsh_session::*;
use serde_json::json;

fn small() -> PrunerConfig {
    PrunerConfig {
        threshold_chars: 100,
        head_chars: 20,
        tail_chars: 10,
    }
}

fn text(t: &str) -> ContentBlock {
    ContentBlock::text(t)
}

fn texts(blocks: &[ContentBlock]) -> String {
    blocks.iter().filter_map(ContentBlock::as_text).collect()
}

#[test]
fn the_marker_and_the_shipped_config() {
    assert_eq!(PRUNE_MARKER.chars().count(), 39);
    let shipped = PrunerConfig::default();
    assert_eq!(
        (
            shipped.threshold_chars,
            shipped.head_chars,
            shipped.tail_chars
        ),
        (8192, 4096, 1024)
    );
    shipped.validate().unwrap();
    let config: PrunerConfig =
        serde_json::from_value(json!({"thresholdChars": 100, "headChars": 20})).unwrap();
    assert_eq!(
        config.tail_chars, 1024,
        "missing keys take the shipped defaults"
    );
    assert!(serde_json::from_value::<PrunerConfig>(json!({"maxChars": 1})).is_err());
}

#[test]
fn bad_configs_are_refused() {
    let bad = [
        PrunerConfig {
            threshold_chars: 0,
            head_chars: 0,
            tail_chars: 0,
        },
        PrunerConfig {
            threshold_chars: 100,
            head_chars: 50,
            tail_chars: 12,
        },
        PrunerConfig {
            threshold_chars: 100,
            head_chars: usize::MAX,
            tail_chars: 1,
        },
    ];
    for config in bad {
        let err = config.validate().unwrap_err();
        assert_eq!(err.code(), "PRUNER_CONFIG");
        assert!(prune_content(&[text(&"x".repeat(200))], &config).is_err());
    }
    PrunerConfig {
        threshold_chars: 100,
        head_chars: 50,
        tail_chars: 11,
    }
    .validate()
    .unwrap();
}

#[test]
fn content_at_or_below_the_threshold_is_left_alone() {
    assert_eq!(
        prune_content(&[text(&"x".repeat(100))], &small()).unwrap(),
        None
    );
    assert_eq!(
        prune_content(&[text(&"x".repeat(60)), text(&"y".repeat(40))], &small()).unwrap(),
        None
    );
}

#[test]
fn pruned_content_is_head_marker_tail() {
    let input: String = (0..300)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let out = prune_content(&[text(&input)], &small()).unwrap().unwrap();
    let expected = format!("{}{}{}", &input[..20], PRUNE_MARKER, &input[290..]);
    assert_eq!(out, vec![text(&expected)]);
    assert_eq!(measure_content(&out), 20 + 39 + 10);

    let shipped = PrunerConfig::default();
    let out = prune_content(&[text(&"z".repeat(10_000))], &shipped)
        .unwrap()
        .unwrap();
    assert_eq!(measure_content(&out), 5159);
}

/// Code points, not bytes or UTF-16 units: astral characters count 1 and are never split.
#[test]
fn astral_characters_at_the_cut_are_kept_whole() {
    let input: String = "😀é".repeat(100);
    assert_eq!(measure_content(&[text(&input)]), 200);
    let out = prune_content(&[text(&input)], &small()).unwrap().unwrap();
    let chars: Vec<char> = input.chars().collect();
    let expected: String = chars[..20]
        .iter()
        .chain(PRUNE_MARKER.chars().collect::<Vec<_>>().iter())
        .chain(chars[190..].iter())
        .collect();
    assert_eq!(texts(&out), expected);
    assert_eq!(measure_content(&out), 69);
    // An odd head lands between the emoji and the é.
    let odd = PrunerConfig {
        threshold_chars: 100,
        head_chars: 21,
        tail_chars: 9,
    };
    let out = prune_content(&[text(&input)], &odd).unwrap().unwrap();
    assert!(texts(&out).starts_with(&format!("{}😀\n\n[", "😀é".repeat(10))));
    assert!(texts(&out).ends_with(&format!("]\n\né{}", "😀é".repeat(4))));
}

#[test]
fn images_keep_their_position_and_emptied_blocks_go() {
    let image = ContentBlock::Image {
        attachment: json!({"id": "img"}),
    };
    let blocks = vec![
        text(&"a".repeat(15)),
        image.clone(),
        text(&"b".repeat(50)),
        text(&"c".repeat(50)),
        image.clone(),
        text(&"d".repeat(5)),
    ];
    // 120 code points; [20, 110) goes. The a-block [0, 15) is untouched, the b-block
    // [15, 65) keeps its first 5 and takes the marker, the c-block [65, 115) keeps its last
    // 5, the d-block is untouched, and both images stay where they were.
    let out = prune_content(&blocks, &small()).unwrap().unwrap();
    assert_eq!(
        out,
        vec![
            text(&"a".repeat(15)),
            image.clone(),
            text(&format!("{}{PRUNE_MARKER}", "b".repeat(5))),
            text(&"c".repeat(5)),
            image.clone(),
            text(&"d".repeat(5)),
        ]
    );
    assert_eq!(measure_content(&out), 69);

    // A text block wholly inside the removed span is dropped; the marker goes into the
    // first overlapping block even when that block keeps nothing else.
    let blocks = vec![
        text(&"a".repeat(20)),
        text(&"b".repeat(40)),
        image.clone(),
        text(&"c".repeat(40)),
        text(&"d".repeat(20)),
    ];
    let out = prune_content(&blocks, &small()).unwrap().unwrap();
    assert_eq!(
        out,
        vec![
            text(&"a".repeat(20)),
            text(PRUNE_MARKER),
            image,
            text(&"d".repeat(10)),
        ]
    );
}

fn big_result(session: &Session, step: u64, chars: usize) -> (u64, u64, u64) {
    tool_step(session, 1, step, &"r".repeat(chars), None)
}

/// The whole tail of the log a pass appends: `compaction/prune` then the content-only
/// `tool/result` replace, per oversized result, newest included; a second pass is a no-op.
#[test]
fn prune_session_appends_prune_then_replace_and_is_idempotent() {
    let s = session("s");
    let (_, _, r1) = big_result(&s, 1, 150);
    let (_, _, r2) = big_result(&s, 2, 50);
    let (_, _, r3) = big_result(&s, 3, 120);
    let before = s.len();
    let original_r1 = s.event(r1).unwrap();
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let price_r1 = estimate_event(&original_r1);
    let price_r3 = estimate_event(&s.event(r3).unwrap());
    assert_eq!(
        meter.nodes().iter().find(|n| n.seq == r1).unwrap().tokens,
        price_r1
    );

    let report = prune_session(&s, &small()).unwrap();
    assert_eq!(
        report,
        PruneReport {
            pruned: vec![
                PrunedResult {
                    original_seq: r1,
                    replacement_seq: before + 1,
                    call_id: "c1-1".into(),
                    chars_before: 150,
                    chars_after: 69
                },
                PrunedResult {
                    original_seq: r3,
                    replacement_seq: before + 3,
                    call_id: "c1-3".into(),
                    chars_before: 120,
                    chars_after: 69
                },
            ],
            chars_removed: 81 + 51,
        }
    );
    let replaced = |seq: u64, call: &str, step: u64| {
        json!({"type": "tool/result", "seq": seq, "time": TIME,
            "data": {"turn": 1, "step": step, "message": {"id": format!("r-{call}"), "role": "user",
                "content": [{"type": "tool-result", "toolCallId": call, "isError": false,
                    "content": [{"type": "text", "text": format!("{}{PRUNE_MARKER}{}", "r".repeat(20), "r".repeat(10))}]}],
                "source": {"kind": "tool", "callId": call}}},
            "sourceEventSeqs": [seq_of(call, r1, r3)],
            "surfaceOp": {"op": "replace", "start": seq_of(call, r1, r3), "end": seq_of(call, r1, r3)}})
    };
    let tail: Vec<serde_json::Value> = log_json(&s).as_array().unwrap()[before as usize..].to_vec();
    assert_eq!(
        tail,
        vec![
            json!({"type": "compaction/prune", "seq": before, "time": TIME,
                "data": {"shadowedRange": {"start": r1, "end": r1}, "shadowedSeqs": [r1], "shadowedTokenCount": price_r1}}),
            replaced(before + 1, "c1-1", 1),
            json!({"type": "compaction/prune", "seq": before + 2, "time": TIME,
                "data": {"shadowedRange": {"start": r3, "end": r3}, "shadowedSeqs": [r3], "shadowedTokenCount": price_r3}}),
            replaced(before + 3, "c1-3", 3),
        ]
    );
    // The original stays in the log; the surface holds the replacement at its position.
    assert_eq!(s.event(r1).unwrap(), original_r1);
    let nodes = s.surface().nodes;
    assert!(nodes.contains(&(before + 1)) && !nodes.contains(&r1) && nodes.contains(&r2));
    // The meter prices the replacement and the shadow price is the replaced node's price.
    meter.catch_up(&s).unwrap();
    assert_eq!(
        meter.nodes().iter().map(|n| n.seq).collect::<Vec<_>>(),
        nodes
    );

    let len = s.len();
    assert_eq!(prune_session(&s, &small()).unwrap(), PruneReport::default());
    assert_eq!(s.len(), len, "a second pass appends nothing");
}

fn seq_of(call: &str, r1: u64, r3: u64) -> u64 {
    if call == "c1-1" {
        r1
    } else {
        r3
    }
}

/// Every prune `tool/result` is immediately preceded by its `compaction/prune`, whose shadow
/// price is exactly what the replaced node cost.
#[test]
fn each_replace_follows_its_shadow_price() {
    let s = session("s");
    for step in 1..=5 {
        big_result(&s, step, 90 + 10 * step as usize);
    }
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    let prices: std::collections::HashMap<u64, u64> =
        meter.nodes().iter().map(|n| (n.seq, n.tokens)).collect();
    let report = prune_session(&s, &small()).unwrap();
    assert_eq!(report.pruned.len(), 4, "results over 100 code points");
    let events = s.events();
    for p in &report.pruned {
        let shadow = events[p.replacement_seq as usize - 1]
            .decode::<CompactionPrune>()
            .unwrap()
            .unwrap();
        assert_eq!(shadow.shadowed_seqs, vec![p.original_seq]);
        assert_eq!(shadow.shadowed_token_count, prices[&p.original_seq]);
        let replacement = &events[p.replacement_seq as usize];
        assert_eq!(
            replacement.surface_op,
            Some(SurfaceOp::Replace {
                start: p.original_seq,
                end: p.original_seq
            })
        );
    }
}
