//! The compaction event payloads: wire shapes, `null` turns, validation.

use dsh_compaction::*;
use dsh_session::{PluginEvent, SessionEvent};
use serde_json::json;

#[test]
fn payloads_round_trip_the_original_wire_shapes() {
    let start = json!({"compactionId": "c1", "turn": null});
    let decoded: CompactionStart = serde_json::from_value(start.clone()).unwrap();
    assert_eq!(decoded.turn, None);
    assert_eq!(
        serde_json::to_value(&decoded).unwrap(),
        start,
        "turn: null is written"
    );

    let start = json!({"compactionId": "c1", "sourceCommandId": "cmd", "turn": 3});
    let decoded: CompactionStart = serde_json::from_value(start.clone()).unwrap();
    assert_eq!(serde_json::to_value(&decoded).unwrap(), start);

    let summary = json!({"compactionId": "c1",
        "summary": [{"type": "text", "text": "## Primary Request and Intent\n- read notes"}],
        "rawOutput": [{"type": "text", "text": "## Primary Request and Intent\n- read notes"}],
        "llmStreamCall": true, "shadowedRange": {"start": 43, "end": 19},
        "shadowedSeqs": [43, 17, 19], "shadowedTokenCount": 664,
        "provider": "deepseek-official", "model": "deepseek-v4-flash", "maxTokens": 8192,
        "usage": {"inputTokens": 9021, "outputTokens": 21, "cacheReadTokens": 0, "reasoningTokens": 0}});
    let decoded: CompactionSummary = serde_json::from_value(summary.clone()).unwrap();
    decoded.validate().unwrap();
    assert_eq!(serde_json::to_value(&decoded).unwrap(), summary);

    let end = json!({"compactionId": "c1", "turn": null, "error": "summary is not smaller"});
    let decoded: CompactionEnd = serde_json::from_value(end.clone()).unwrap();
    assert_eq!(serde_json::to_value(&decoded).unwrap(), end);

    let prune = json!({"shadowedRange": {"start": 5, "end": 5}, "shadowedSeqs": [5], "shadowedTokenCount": 12});
    let decoded: CompactionPrune = serde_json::from_value(prune.clone()).unwrap();
    decoded.validate().unwrap();
    assert_eq!(serde_json::to_value(&decoded).unwrap(), prune);
}

#[test]
fn wire_names_and_declarations() {
    assert_eq!(CompactionStart::TYPE, "compaction/start");
    assert_eq!(CompactionSummary::TYPE, "compaction/summary");
    assert_eq!(CompactionEnd::TYPE, "compaction/end");
    assert_eq!(CompactionPrune::TYPE, "compaction/prune");
    let names: Vec<_> = EVENT_TYPES.iter().map(|d| d.type_name()).collect();
    assert_eq!(
        names,
        [
            "compaction/start",
            "compaction/summary",
            "compaction/end",
            "compaction/prune"
        ]
    );
    dsh_session::register_event_types(EVENT_TYPES).unwrap();
    let event = SessionEvent::from_value(&json!({"type": "compaction/start", "seq": 0, "time": 1,
        "data": {"compactionId": "c", "turn": null}}))
    .unwrap();
    let start = event.decode::<CompactionStart>().unwrap().unwrap();
    assert_eq!(start.turn, None);
}

fn prune(start: u64, end: u64, seqs: Vec<u64>) -> CompactionPrune {
    CompactionPrune {
        shadowed_range: SeqRange { start, end },
        shadowed_seqs: seqs,
        shadowed_token_count: 1,
    }
}

#[test]
fn validation_refuses_bad_shapes() {
    assert!(prune(1, 1, vec![])
        .validate()
        .unwrap_err()
        .contains("must not be empty"));
    assert!(prune(1, 2, vec![1, 3]).validate().is_err());
    assert!(prune(2, 1, vec![1, 2]).validate().is_err());
    prune(9, 3, vec![9, 2, 3]).validate().unwrap();
    let mut p = prune(1, 1, vec![1]);
    p.shadowed_token_count = MAX_SAFE + 1;
    assert!(p.validate().is_err());

    let start = |id: &str, cmd: Option<&str>| CompactionStart {
        compaction_id: id.into(),
        source_command_id: cmd.map(Into::into),
        turn: Some(1),
    };
    start("c", None).validate().unwrap();
    assert!(start("", None).validate().is_err());
    assert!(start("c", Some("")).validate().is_err());

    let end = |error: Option<&str>| CompactionEnd {
        compaction_id: "c".into(),
        source_command_id: None,
        turn: None,
        error: error.map(Into::into),
    };
    end(None).validate().unwrap();
    end(Some("boom")).validate().unwrap();
    assert!(end(Some("")).validate().is_err());

    let mut summary: CompactionSummary = serde_json::from_value(json!({"compactionId": "c",
        "summary": [], "shadowedRange": {"start": 1, "end": 2}, "shadowedSeqs": [1, 2],
        "shadowedTokenCount": 3, "provider": "p", "model": "m", "llmStreamCall": true}))
    .unwrap();
    assert!(summary.validate().unwrap_err().contains("rawOutput"));
    summary.raw_output = Some(vec![]);
    summary.validate().unwrap();
    summary.shadowed_seqs = vec![2, 1];
    assert!(summary.validate().is_err());
}

const MAX_SAFE: u64 = dsh_compaction::events::MAX_SAFE_INTEGER;
