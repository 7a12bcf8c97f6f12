//! `TokenMeter`: the fold, replaces, calibration, `measure`.

use super::common::*;
use dsh_compaction::*;
use dsh_protocol::ContentBlock;

#[test]
fn an_empty_meter_measures_nothing() {
    let m = TokenMeter::new().measure();
    assert_eq!(m.baseline, Baseline::None);
    assert_eq!(
        (m.total_tokens, m.surface_tokens, m.log_revision),
        (0, 0, 0)
    );
}

#[test]
fn surface_nodes_follow_appends() {
    let s = session("s");
    s.append(user("u1", "abcdefgh"), surface()).unwrap();
    let mut meter = TokenMeter::new();
    meter.catch_up(&s).unwrap();
    // ceil(8/4) + 4 (block) + 4 (message)
    assert_eq!(meter.nodes(), &[SurfaceNode { seq: 0, tokens: 10 }]);
    let m = meter.measure();
    assert_eq!(m.baseline, Baseline::Estimated { tokens: 10 });
    assert_eq!(m.total_tokens, 10);
    let _ = ContentBlock::text("");
}
