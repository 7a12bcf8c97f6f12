//! The original's compaction fixture: a 10k-window session that compacted 22 times and
//! failed 22 more attempts on ranges that were only its own last checkpoint.

use dsh_compaction::*;
use dsh_session::*;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

pub fn load_fixture() -> (SessionHeader, Vec<Arc<SessionEvent>>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/dsh-0.1.0-compaction/sessions");
    assert!(root.is_dir(), "fixture {} is missing", root.display());
    let project = std::fs::read_dir(&root)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let dir = std::fs::read_dir(project)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = std::fs::File::open(dir.join("session.jsonl.zstd")).unwrap();
    let mut text = String::new();
    zstd::stream::read::Decoder::new(file)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let mut lines = text.lines();
    let header: SessionHeader = serde_json::from_str(lines.next().unwrap()).unwrap();
    let events = lines
        .map(|line| Arc::new(SessionEvent::from_json(line).unwrap()))
        .collect();
    (header, events)
}

/// Every compaction event the original wrote decodes to our typed payload, passes its
/// validation hook, and serializes back to exactly the original's data.
#[test]
fn the_original_compaction_events_decode_validate_and_round_trip() {
    fn check<T: PluginEvent + PartialEq + std::fmt::Debug>(event: &SessionEvent) -> bool {
        let Some(decoded) = event.decode::<T>() else {
            return false;
        };
        let decoded = decoded.unwrap();
        decoded.validate().unwrap();
        assert_eq!(
            serde_json::to_value(&decoded).unwrap(),
            event.data.to_value(),
            "seq {}",
            event.seq
        );
        true
    }
    let (_, events) = load_fixture();
    let mut counts = [0; 3];
    for event in &events {
        counts[0] += usize::from(check::<CompactionStart>(event));
        counts[1] += usize::from(check::<CompactionSummary>(event));
        counts[2] += usize::from(check::<CompactionEnd>(event));
    }
    assert_eq!(counts, [44, 22, 44]);
}

/// The original's configuration in the fixture: a 10,000-token window, retainRatio 0.16.
const RETAIN: u64 = 1600;

#[test]
fn the_meter_folds_the_fixture_and_the_surface_starts_at_the_last_checkpoint() {
    let (header, events) = load_fixture();
    assert_eq!(events.len(), 398);
    let meter = TokenMeter::from_events(&events).unwrap();
    let session = Session::with_seed(header, events.clone(), SeedSource::Import).unwrap();
    let seqs: Vec<u64> = meter.nodes().iter().map(|n| n.seq).collect();
    assert_eq!(seqs, session.surface().nodes);

    let last_checkpoint = events
        .iter()
        .rev()
        .find(|e| is_compact_checkpoint(e))
        .unwrap();
    assert_eq!(last_checkpoint.seq, 384);
    assert_eq!(meter.nodes()[0].seq, last_checkpoint.seq);
    let head = session.derive_messages()[0].text();
    assert!(head.contains("<compacted-summary>"), "{head}");

    // Each node's price is the estimate of its derived message.
    for node in meter.nodes() {
        assert_eq!(node.tokens, estimate_event(&events[node.seq as usize]));
    }
    let m = meter.measure();
    assert_eq!(m.log_revision, 398);
    assert!(matches!(m.baseline, Baseline::Usage { .. }), "{m:?}");
}

/// Parity with the original: at every successful compaction of the fixture, our selection
/// (with only the relative floor) picks exactly the nodes the original shadowed, and our
/// meter prices them exactly as the original did (`shadowedTokenCount`, computed by its
/// UTF-16 heuristic). At every failed attempt ("summary is not smaller": the range was only
/// the previous checkpoint) the floor refuses, so no model call would be made. With the
/// default absolute floor (1,024 new tokens) the original's small compactions (541 new tokens
/// over a 123-token checkpoint) wait until more material has accumulated.
#[test]
fn selection_matches_the_original_and_the_floor_refuses_its_wasted_attempts() {
    let (_, events) = load_fixture();
    let mut meter = TokenMeter::new();
    let (mut matched, mut refused) = (0, 0);
    for (i, event) in events.iter().enumerate() {
        if event.is::<CompactionStart>() {
            let session = Session::with_seed(
                SessionHeader::new("s".into(), 1),
                events[..i].to_vec(),
                SeedSource::Import,
            )
            .unwrap();
            let selected =
                select_compactable_range(&session, &meter, RETAIN, SelectFloor::RELATIVE_ONLY)
                    .unwrap();
            let outcome = events[i + 1..]
                .iter()
                .find(|e| e.is::<CompactionSummary>() || e.is::<CompactionEnd>())
                .unwrap();
            if let Some(summary) = outcome.decode::<CompactionSummary>() {
                let summary = summary.unwrap();
                let range = selected.unwrap();
                assert_eq!(range.shadowed_seqs, summary.shadowed_seqs, "at seq {i}");
                assert_eq!(
                    range.shadowed_tokens, summary.shadowed_token_count,
                    "at seq {i}"
                );
                assert_eq!(
                    (range.start, range.end),
                    (summary.shadowed_range.start, summary.shadowed_range.end)
                );
                let default =
                    select_compactable_range(&session, &meter, RETAIN, SelectFloor::default())
                        .unwrap();
                let new = summary.shadowed_token_count
                    - candidate_checkpoints(&events, &summary.shadowed_seqs);
                assert_eq!(default.is_some(), new >= 1024, "at seq {i}");
                matched += 1;
            } else {
                let end = outcome.decode::<CompactionEnd>().unwrap().unwrap();
                assert!(end.error.unwrap().contains("not smaller"));
                // The original selected the lone checkpoint (priced 123, as its error says);
                // the floor refuses it.
                let candidate = compactable_candidate(&session, &meter, RETAIN)
                    .unwrap()
                    .unwrap();
                let head = meter.nodes()[0];
                assert!(is_compact_checkpoint(&events[head.seq as usize]));
                assert_eq!(candidate.range.shadowed_seqs, vec![head.seq], "at seq {i}");
                assert_eq!(candidate.range.shadowed_tokens, 123);
                assert_eq!(candidate.checkpoint_tokens, 123);
                assert_eq!(selected, None, "at seq {i}");
                refused += 1;
            }
        }
        meter.observe(event).unwrap();
    }
    assert_eq!((matched, refused), (22, 22));
}

fn candidate_checkpoints(events: &[Arc<SessionEvent>], seqs: &[u64]) -> u64 {
    seqs.iter()
        .map(|&s| &events[s as usize])
        .filter(|e| is_compact_checkpoint(e))
        .map(|e| estimate_event(e))
        .sum()
}
