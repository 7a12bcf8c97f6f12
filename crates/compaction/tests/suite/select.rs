//! Range selection and tool pairing: retain, move-back, floor, absorption.

use super::common::*;
use dsh_compaction::*;
use dsh_protocol::{ContentBlock, MessageSource};
use dsh_session::*;

fn metered(s: &Session) -> TokenMeter {
    let mut meter = TokenMeter::new();
    meter.catch_up(s).unwrap();
    meter
}

fn price(s: &Session, seq: u64) -> u64 {
    estimate_event(&s.event(seq).unwrap())
}

/// Three tool steps: nodes u1 a1 r1 u2 a2 r2 u3 a3 r3.
fn three_steps(s: &Session, result: &str) -> Vec<(u64, u64, u64)> {
    (1..=3)
        .map(|step| tool_step(s, 1, step, result, None))
        .collect()
}

#[test]
fn pairing_cuts_follow_tool_calls_and_results() {
    let s = session("s");
    let steps = three_steps(&s, "result");
    let cuts = balanced_cuts(&s, &s.surface().nodes).unwrap();
    assert_eq!(
        cuts,
        vec![true, true, false, true, true, false, true, true, false, true]
    );
    let (u, a, r) = steps[1];
    assert!(balanced_before(&s, u).unwrap());
    assert!(balanced_before(&s, a).unwrap());
    assert!(!balanced_before(&s, r).unwrap());
    assert!(
        !balanced_after(&s, a).unwrap(),
        "the call waits for its result"
    );
    assert!(balanced_after(&s, r).unwrap());
    assert_eq!(
        balanced_before(&s, 999).unwrap_err().code(),
        "NOT_ON_SURFACE"
    );
}

#[test]
fn a_result_without_a_pending_call_is_a_corrupt_surface() {
    let s = session("s");
    s.append(step_start(1, 1), log_only()).unwrap();
    let r = s
        .append(
            tool_result(1, 1, "c", vec![ContentBlock::text("x")]),
            surface(),
        )
        .unwrap()
        .seq;
    let err = balanced_cuts(&s, &s.surface().nodes).unwrap_err();
    assert!(matches!(err, CompactionError::UnpairedToolResult { seq } if seq == r));
}

#[test]
fn selection_keeps_the_retained_tail_and_moves_back_to_a_balanced_cut() {
    let s = session("s");
    let steps = three_steps(&s, &"x".repeat(800));
    let meter = metered(&s);
    let nodes = s.surface().nodes;
    let (u3, a3, r3) = steps[2];

    // Retaining exactly r3's price would cut between a3 and r3: moved back before a3 (after
    // u3, balanced), so u3 is shadowed and a3, r3 kept.
    let retain = price(&s, r3);
    let range = select_compactable_range(&s, &meter, retain, SelectFloor::RELATIVE_ONLY)
        .unwrap()
        .unwrap();
    assert_eq!(range.shadowed_seqs, nodes[..7].to_vec());
    assert_eq!((range.start, range.end), (nodes[0], u3));
    let kept: u64 = [a3, r3].iter().map(|&q| price(&s, q)).sum();
    assert!(
        kept >= retain,
        "the retained tail is at least retain_tokens"
    );
    assert_eq!(
        range.shadowed_tokens,
        meter.surface_tokens() - kept,
        "shadowed price is the sum of the shadowed nodes"
    );

    // retain = 0 keeps at least the newest node (and its call).
    let zero = select_compactable_range(&s, &meter, 0, SelectFloor::RELATIVE_ONLY)
        .unwrap()
        .unwrap();
    assert_eq!(zero, range);

    // A bigger tail: the cut lands inside step 2 and moves back to before a2.
    let (_, a2, r2) = steps[1];
    let retain = kept + price(&s, u3) + price(&s, r2);
    let range = select_compactable_range(&s, &meter, retain, SelectFloor::RELATIVE_ONLY)
        .unwrap()
        .unwrap();
    assert_eq!(range.end, steps[1].0, "{range:?}");
    assert!(!range.shadowed_seqs.contains(&a2));
}

#[test]
fn nothing_to_select() {
    let s = session("s");
    let meter = metered(&s);
    assert_eq!(
        select_compactable_range(&s, &meter, 0, SelectFloor::RELATIVE_ONLY).unwrap(),
        None
    );

    // A single unit: one tool step's nodes are only balanced before u and a.
    tool_step(&s, 1, 1, "result", None);
    let meter = metered(&s);
    let range = select_compactable_range(&s, &meter, 0, SelectFloor::RELATIVE_ONLY).unwrap();
    assert_eq!(range.unwrap().shadowed_seqs, vec![s.surface().nodes[0]]);
    // Retaining more than the whole surface selects nothing.
    assert_eq!(
        select_compactable_range(
            &s,
            &meter,
            meter.surface_tokens() + 1,
            SelectFloor::RELATIVE_ONLY
        )
        .unwrap(),
        None
    );

    // An open tail (a call without its result) walks back to the head: nothing.
    let s = session("s");
    s.append(step_start(1, 1), log_only()).unwrap();
    s.append(
        assistant(1, 1, "a", vec![tool_call_block("c")], None),
        surface().sources(vec![]),
    )
    .unwrap();
    s.append(user("late", "steer"), surface()).unwrap();
    let meter = metered(&s);
    assert_eq!(
        select_compactable_range(&s, &meter, 0, SelectFloor::RELATIVE_ONLY).unwrap(),
        None
    );
}

#[test]
fn a_stale_meter_is_refused() {
    let s = session("s");
    three_steps(&s, "r");
    let meter = metered(&s);
    s.append(user("more", "x"), surface()).unwrap();
    let err = select_compactable_range(&s, &meter, 0, SelectFloor::RELATIVE_ONLY).unwrap_err();
    assert_eq!(err.code(), "SURFACE_MISMATCH");
}

/// Replaces the surface nodes from the head through `end` with a checkpoint.
fn compact_head(s: &Session, end: u64, id: &str, text: &str) -> u64 {
    let nodes = s.surface().nodes;
    let upto = nodes.iter().position(|&n| n == end).unwrap();
    append_checkpoint(s, id, text, nodes[0], end, nodes[..=upto].to_vec())
}

#[test]
fn checkpoint_sources_are_recognised() {
    let EventData::UserMessage(m) = checkpoint_message("c", "s") else {
        unreachable!()
    };
    assert!(is_compact_checkpoint_source(&m.source));
    assert!(!is_compact_checkpoint_source(&MessageSource::plugin(
        "other"
    )));
    assert!(!is_compact_checkpoint_source(&MessageSource::user()));
}

/// Issue item 7: a range that is only the previous checkpoint, or brings too little beyond
/// it, is refused; enough new material is selected and the old checkpoint is absorbed.
#[test]
fn the_floor_refuses_ranges_that_cannot_shrink_the_context() {
    let s = session("s");
    let steps = three_steps(&s, &"x".repeat(400));
    let cp = compact_head(&s, steps[0].2, "c1", &"summary ".repeat(40));
    let cp_price = price(&s, cp);
    // Surface: cp u2 a2 r2 u3 a3 r3. Retaining everything after cp leaves only cp.
    let meter = metered(&s);
    let after_cp = meter.surface_tokens() - cp_price;
    for floor in [SelectFloor::RELATIVE_ONLY, SelectFloor::default()] {
        assert_eq!(
            select_compactable_range(&s, &meter, after_cp, floor).unwrap(),
            None,
            "a checkpoint-only range ({floor:?})"
        );
    }
    let candidate = compactable_candidate(&s, &meter, after_cp)
        .unwrap()
        .unwrap();
    assert_eq!(candidate.range.shadowed_seqs, vec![cp]);
    assert_eq!(candidate.checkpoint_tokens, cp_price);

    // cp + u2 (a short prompt): new material below the checkpoint's own price: refused.
    let (u2, a2, r2) = steps[1];
    let retain = meter.surface_tokens() - cp_price - price(&s, u2);
    assert!(price(&s, u2) < cp_price);
    assert_eq!(
        select_compactable_range(&s, &meter, retain, SelectFloor::RELATIVE_ONLY).unwrap(),
        None
    );

    // cp + step 2 + u3: new material above the checkpoint price: selected, cp absorbed.
    let (u3, ..) = steps[2];
    let range = select_compactable_range(&s, &meter, 0, SelectFloor::RELATIVE_ONLY)
        .unwrap()
        .unwrap();
    assert_eq!(range.shadowed_seqs, vec![cp, u2, a2, r2, u3]);
    assert_eq!(
        range.start, cp,
        "head-anchored: the old checkpoint is absorbed"
    );
    let new = range.shadowed_tokens - cp_price;
    assert!(new >= cp_price && new < SelectFloor::DEFAULT_MIN_NEW_TOKENS);
    // ... but below the default absolute floor of 1,024 new tokens.
    assert_eq!(
        select_compactable_range(&s, &meter, 0, SelectFloor::default()).unwrap(),
        None
    );
    assert_eq!(
        select_compactable_range(&s, &meter, 0, SelectFloor::new(new)).unwrap(),
        Some(range.clone())
    );
    assert_eq!(
        select_compactable_range(&s, &meter, 0, SelectFloor::new(new + 1)).unwrap(),
        None
    );

    // Without a checkpoint, only the absolute floor applies.
    let fresh = session("f");
    three_steps(&fresh, "r");
    let m = metered(&fresh);
    let r = select_compactable_range(&fresh, &m, 0, SelectFloor::RELATIVE_ONLY)
        .unwrap()
        .unwrap();
    assert_eq!(
        select_compactable_range(&fresh, &m, 0, SelectFloor::new(r.shadowed_tokens)).unwrap(),
        Some(r.clone())
    );
    assert_eq!(
        select_compactable_range(&fresh, &m, 0, SelectFloor::new(r.shadowed_tokens + 1)).unwrap(),
        None
    );
}

#[test]
fn floor_arithmetic() {
    let f = SelectFloor::new(1024);
    assert!(!f.admits(500, 500), "checkpoint only");
    assert!(!f.admits(1500, 500), "1000 new < 1024");
    assert!(f.admits(1524, 500));
    assert!(
        !f.admits(3000, 2000),
        "1000 new < the 2000-token checkpoint"
    );
    assert!(f.admits(4000, 2000));
    assert!(f.admits(1024, 0));
    assert!(!f.admits(1023, 0));
    assert!(!SelectFloor::RELATIVE_ONLY.admits(0, 0));
    assert!(SelectFloor::RELATIVE_ONLY.admits(1, 0));
}
