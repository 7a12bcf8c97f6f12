//! Packing is lossless for any event sequence, byte for byte.

use dsh_store::chunk_rows::{self, Unpacked};
use proptest::prelude::*;
use serde_json::{json, Value};

/// One generated event; seq and time are assigned while building the sequence.
#[derive(Clone, Debug)]
enum Gen {
    Delta {
        kind: u8,
        turn: u8,
        step: u8,
        index: u8,
        id: Option<u8>,
        name: Option<u8>,
        text: String,
    },
    Other,
    ExtraKey,
    FloatTime,
    Ignorable,
}

fn gen() -> impl Strategy<Value = Gen> {
    prop_oneof![
        6 => (0u8..3, 0u8..2, 0u8..2, 0u8..2, proptest::option::of(0u8..2),
              proptest::option::of(0u8..2), "[a-z\"\\\\é]{0,4}")
            .prop_map(|(kind, turn, step, index, id, name, text)| Gen::Delta { kind, turn, step, index, id, name, text }),
        1 => Just(Gen::Other),
        1 => Just(Gen::ExtraKey),
        1 => Just(Gen::FloatTime),
        1 => Just(Gen::Ignorable),
    ]
}

fn build(items: &[(Gen, u8, u64)]) -> Vec<Value> {
    let mut seq = 0u64;
    let mut time = 1_700_000_000_000u64;
    let mut events = Vec::new();
    for (item, seq_step, time_step) in items {
        // mostly contiguous seqs, sometimes a gap or a repeat; time may also go backwards
        seq += u64::from(*seq_step % 3 != 0) + u64::from(*seq_step == 7);
        time = if *time_step == 999 {
            time.saturating_sub(3)
        } else {
            time + time_step
        };
        let mut event = match item {
            Gen::Delta {
                kind,
                turn,
                step,
                index,
                id,
                name,
                text,
            } => {
                let mut chunk = serde_json::Map::new();
                let (tag, key) = match kind {
                    0 => ("text-delta", "text"),
                    1 => ("reasoning-delta", "text"),
                    _ => ("tool-call-delta", "argumentsDelta"),
                };
                chunk.insert("type".into(), json!(tag));
                chunk.insert("index".into(), json!(index));
                if *kind == 2 {
                    if let Some(id) = id {
                        chunk.insert("id".into(), json!(format!("call_{id}")));
                    }
                    if let Some(name) = name {
                        chunk.insert("name".into(), json!(format!("tool{name}")));
                    }
                }
                chunk.insert(key.into(), json!(text));
                json!({"type": "assistant/chunk", "seq": seq, "time": time,
                       "data": {"turn": turn, "step": step, "chunk": chunk}})
            }
            _ => json!({"type": "assistant/chunk", "seq": seq, "time": time,
                        "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}}),
        };
        match item {
            Gen::Other => event["type"] = json!("step/start"),
            Gen::ExtraKey => event["data"]["chunk"]["extra"] = json!(1),
            Gen::FloatTime => event["time"] = json!(time as f64 + 0.5),
            Gen::Ignorable => event["ignorable"] = json!(true),
            Gen::Delta { .. } => {}
        }
        events.push(event);
    }
    events
}

fn unpack_all(records: Vec<Value>) -> Vec<Value> {
    records
        .into_iter()
        .flat_map(|r| match chunk_rows::unpack(r).unwrap() {
            Unpacked::Event(e) => vec![e],
            Unpacked::Run(run) => run,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn pack_then_unpack_is_identity(items in proptest::collection::vec((gen(), 0u8..8, prop_oneof![0u64..20, Just(999u64)]), 0..60)) {
        let events = build(&items);
        let records = chunk_rows::pack(&events);
        prop_assert!(records.len() <= events.len());
        let restored = unpack_all(records);
        prop_assert_eq!(&restored, &events);
        prop_assert_eq!(serde_json::to_string(&restored).unwrap(), serde_json::to_string(&events).unwrap());
    }
}

#[test]
fn runs_shorter_than_three_are_never_packed_and_longer_ones_always_are() {
    let items: Vec<(Gen, u8, u64)> = (0..5)
        .map(|_| {
            (
                Gen::Delta {
                    kind: 0,
                    turn: 1,
                    step: 1,
                    index: 0,
                    id: None,
                    name: None,
                    text: "a".into(),
                },
                1,
                1,
            )
        })
        .collect();
    for n in 0..=5 {
        let events = build(&items[..n]);
        let records = chunk_rows::pack(&events);
        let expected = if n >= 3 { 1 } else { n };
        assert_eq!(records.len(), expected, "run of {n}");
    }
}
