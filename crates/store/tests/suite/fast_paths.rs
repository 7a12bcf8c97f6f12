//! The typed fast paths (appending typed events, reading straight into typed events) are
//! indistinguishable from the general `Value` paths: same bytes on disk, same events, same
//! torn tails, same errors.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_protocol::{BlockType, StreamChunk};
use dsh_session::{AssistantChunk, EventData, SessionEvent, StepBoundary, TurnStart};
use dsh_store::{
    read_log, read_typed_log, Compression, LogFormat, LogHeader, LogWriter, StoreError, TornReason,
    TypedLog,
};
use proptest::prelude::*;
use serde_json::{json, Value};

use super::common::{
    both_formats, fixture_log, format, turn_end, turn_start, write_log, SCENARIOS,
};

const MAX_SAFE: u64 = (1 << 53) - 1;

fn describe(err: StoreError) -> String {
    format!("{}: {err}", err.code())
}

/// What the general reader followed by typing yields.
pub(super) fn general(
    path: &Path,
    compression: Compression,
    expected_id: Option<&str>,
) -> Result<TypedLog, String> {
    let log = read_log(path, compression, expected_id).map_err(describe)?;
    let events = log
        .events
        .iter()
        .map(|v| SessionEvent::from_value(v).map(Arc::new))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| {
            describe(StoreError::Rejected {
                path: log.path.clone(),
                source,
            })
        })?;
    Ok(TypedLog {
        path: log.path,
        compression: log.compression,
        header: log.header,
        events,
        torn_tail: log.torn_tail,
        file_len: log.file_len,
    })
}

#[track_caller]
pub(super) fn assert_readers_agree(
    path: &Path,
    compression: Compression,
) -> Result<TypedLog, String> {
    let fast = read_typed_log(path, compression, Some("s")).map_err(describe);
    assert_eq!(fast, general(path, compression, Some("s")));
    fast
}

fn header() -> LogHeader {
    let mut header = LogHeader::new("s", 1);
    header.cwd = Some("/work".into());
    header
}

fn to_values(events: &[Arc<SessionEvent>]) -> Vec<Value> {
    events
        .iter()
        .map(|e| serde_json::to_value(&**e).unwrap())
        .collect()
}

/// Writes the same batches once as typed events and once as their values; returns both
/// paths.
fn write_both(dir: &Path, fmt: LogFormat, batches: &[&[Arc<SessionEvent>]]) -> (PathBuf, PathBuf) {
    let typed = dir.join("typed/s").join(fmt.compression.file_name());
    let valued = dir.join("valued/s").join(fmt.compression.file_name());
    let mut typed_writer = LogWriter::create_lazy(&typed, fmt, header());
    let mut value_writer = LogWriter::create_lazy(&valued, fmt, header());
    for batch in batches {
        typed_writer.append_events(batch).unwrap();
        value_writer.append(&to_values(batch)).unwrap();
    }
    (typed, valued)
}

fn fixture_events(scenario: &str) -> Vec<Arc<SessionEvent>> {
    let (_, path) = fixture_log(scenario, Compression::Zstd);
    let log = read_log(&path, Compression::Zstd, None).unwrap();
    log.events
        .iter()
        .map(|v| Arc::new(SessionEvent::from_value(v).unwrap()))
        .collect()
}

#[test]
fn typed_appends_write_the_same_bytes_as_value_appends_for_every_fixture() {
    for scenario in SCENARIOS {
        let events = fixture_events(scenario);
        let (first, rest) = events.split_at(events.len() / 3);
        for fmt in both_formats()
            .into_iter()
            .chain([format(Compression::None, true)])
        {
            let dir = tempfile::tempdir().unwrap();
            let (typed, valued) = write_both(dir.path(), fmt, &[first, rest]);
            assert_eq!(
                fs::read(&typed).unwrap(),
                fs::read(&valued).unwrap(),
                "{scenario} {fmt:?}"
            );
            let read = assert_readers_agree(&typed, fmt.compression).unwrap();
            assert_eq!(read.events, events, "{scenario} {fmt:?}");
        }
    }
}

#[test]
fn the_typed_reader_agrees_on_every_original_log() {
    for scenario in SCENARIOS {
        for compression in [Compression::Zstd, Compression::None] {
            let (_, path) = fixture_log(scenario, compression);
            let fast = read_typed_log(&path, compression, None).unwrap();
            let general = read_log(&path, compression, None).unwrap();
            let typed: Vec<SessionEvent> = general
                .events
                .iter()
                .map(|v| SessionEvent::from_value(v).unwrap())
                .collect();
            let fast_events: Vec<SessionEvent> =
                fast.events.iter().map(|e| (**e).clone()).collect();
            assert_eq!(fast_events, typed, "{scenario} {compression:?}");
            assert_eq!(
                (fast.header, fast.torn_tail, fast.file_len),
                (general.header, general.torn_tail, general.file_len)
            );
        }
    }
}

fn plain_log(dir: &Path, lines: &[&str]) -> PathBuf {
    let step =
        json!({"type": "step/start", "seq": 1, "time": 1001, "data": {"turn": 1, "step": 1}});
    let path = write_log(
        dir,
        format(Compression::None, false),
        "s",
        &[vec![turn_start(0, 1), step]],
    );
    let mut text = fs::read_to_string(&path).unwrap();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    fs::write(&path, text).unwrap();
    path
}

/// How a read ended: `ok <events>`, `torn <events>` or the error code.
fn outcome(read: &Result<TypedLog, String>) -> String {
    match read {
        Ok(log) if log.torn_tail.is_some() => format!("torn {}", log.events.len()),
        Ok(log) => format!("ok {}", log.events.len()),
        Err(err) => err.split(':').next().unwrap_or_default().to_owned(),
    }
}

#[test]
fn unusual_and_damaged_records_read_the_same_on_both_paths() {
    let row = |data: Value| {
        json!({"type": "text-chunks", "seq0": 2, "time0": 5, "data": data}).to_string()
    };
    let tool_row = |data: Value| {
        json!({"type": "tool-call-chunks", "seq0": 2, "time0": 5, "data": data}).to_string()
    };
    let good = json!({"turn": 1, "step": 1, "index": 0, "dt": [1, 2], "texts": ["a", "b", "c"]});
    let corrupt = "SESSION_PERSISTENCE_CORRUPTION";
    let rejected = "INVALID_EVENT_DATA";
    let refused = r#"{"type":"turn/start","seq":2,"time":1,"data":{}}"#;
    let cases: Vec<(Vec<String>, &str)> = vec![
        // well-formed rows and records
        (vec![row(good.clone())], "ok 5"),
        (
            vec![tool_row(
                json!({"turn": 1, "step": 1, "index": 2, "dt": [0], "id": "c", "name": "bash", "args": ["{", "}"]}),
            )],
            "ok 4",
        ),
        (
            vec![tool_row(
                json!({"turn": 1, "step": 1, "index": 2, "dt": [0], "id": "c", "args": ["{", "}"]}),
            )],
            "ok 4",
        ),
        (
            vec![r#"{"seq":2,"time":1,"data":{"turn":1},"type":"turn/start"}"#.into()],
            "ok 3",
        ),
        (
            vec![r#" {"type":"turn/start","seq":2,"time":1,"data":{"turn":1}}"#.into()],
            "ok 3",
        ),
        (
            vec![r#"{"type":"turn\/start","seq":2,"time":1,"data":{"turn":1}}"#.into()],
            "ok 3",
        ),
        (
            vec![r#"{"type":"turn/start","seq":2,"time":1,"data":{"turn":1,"turn":2}}"#.into()],
            "ok 3",
        ),
        (
            vec![r#"{"type":"turn/start","seq":2,"seq":2,"time":1,"data":{"turn":1}}"#.into()],
            "ok 3",
        ),
        (
            vec![
                r#"{"type":"acme/x","seq":2,"time":1,"data":{"a":[1.5,null]},"ignorable":true}"#
                    .into(),
            ],
            "ok 3",
        ),
        // rows the fast path leaves to the general one
        (
            vec![tool_row(
                json!({"turn": 1, "step": 1, "index": 2, "dt": [0], "id": null, "args": ["{", "}"]}),
            )],
            corrupt,
        ),
        (
            vec![tool_row(
                json!({"turn": 1, "step": 1, "index": 2, "dt": [0], "args": ["{", "}"]}),
            )],
            rejected,
        ),
        (
            vec![row(
                json!({"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b"], "args": []}),
            )],
            corrupt,
        ),
        (
            vec![row(
                json!({"turn": 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b"], "id": "x"}),
            )],
            corrupt,
        ),
        (
            vec![row(
                json!({"turn": 1, "step": 1, "index": 0, "dt": [1, 1], "texts": ["a", "b"]}),
            )],
            corrupt,
        ),
        (
            vec![row(
                json!({"turn": 1, "step": 1, "index": 0, "dt": [1.0], "texts": ["a", "b"]}),
            )],
            corrupt,
        ),
        (
            vec![row(
                json!({"turn": 1, "step": 1, "index": 5_000_000_000u64, "dt": [1], "texts": ["a", "b"]}),
            )],
            rejected,
        ),
        (
            vec![row(
                json!({"turn": 1, "step": 1, "index": 0, "dt": [MAX_SAFE], "texts": ["a", "b"]}),
            )],
            corrupt,
        ),
        (
            vec![row(
                json!({"turn": MAX_SAFE + 1, "step": 1, "index": 0, "dt": [1], "texts": ["a", "b"]}),
            )],
            corrupt,
        ),
        (
            vec![
                json!({"type": "text-chunks", "seq0": 2, "time0": 5, "data": good, "x": 1})
                    .to_string(),
            ],
            corrupt,
        ),
        (
            vec![json!({"type": "text-chunks", "seq0": 3, "time0": 5, "data": good}).to_string()],
            "torn 2",
        ),
        // torn tails, and what a crash cannot explain
        (
            vec![r#"{"type":"turn/start","seq":3,"time":1,"data":{"turn":2}}"#.into()],
            "torn 2",
        ),
        (vec!["garbage".into()], "torn 2"),
        (vec!["garbage".into(), turn_end(2, 1).to_string()], corrupt),
        // a record the session model refuses, alone and before later damage
        (vec![refused.into()], rejected),
        (
            vec![refused.into(), "garbage".into(), turn_end(3, 1).to_string()],
            corrupt,
        ),
        (
            vec![
                refused.into(),
                r#"{"type":"turn/start","seq":4,"time":1,"data":{"turn":2}}"#.into(),
            ],
            rejected,
        ),
        (
            vec![r#"{"type":"request/header-delta","seq":2,"time":1,"data":{}}"#.into()],
            "LEGACY_FORMAT",
        ),
    ];
    for (lines, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let text: Vec<&str> = lines.iter().map(String::as_str).collect();
        let path = plain_log(dir.path(), &text);
        let read = assert_readers_agree(&path, Compression::None);
        assert_eq!(outcome(&read), expected, "{lines:?}");
    }
}

#[test]
fn a_cut_frame_is_rewritten_from_typed_events_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let fmt = format(Compression::Zstd, true);
    let events = fixture_events("multi-turn");
    let (typed, _) = write_both(dir.path(), fmt, &[&events[..5], &events[5..]]);
    let data = fs::read(&typed).unwrap();
    fs::write(&typed, &data[..data.len() - 2]).unwrap();
    let log = assert_readers_agree(&typed, Compression::Zstd).unwrap();
    let tail = log.torn_tail.clone().unwrap();
    assert_eq!(
        (tail.reason, tail.rewrite_from),
        (TornReason::IncompleteFrame, 5)
    );

    let mut writer = LogWriter::open_typed(&log, true).unwrap();
    assert_eq!(writer.next_seq(), log.next_seq());
    let next = Arc::new(SessionEvent {
        seq: log.next_seq(),
        time: 9,
        data: EventData::StepStart(StepBoundary { turn: 9, step: 1 }),
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    });
    writer.append_events(std::slice::from_ref(&next)).unwrap();
    drop(writer);
    let again = assert_readers_agree(&typed, Compression::Zstd).unwrap();
    assert_eq!(again.torn_tail, None);
    assert_eq!(again.events, [&log.events[..], &[next]].concat());
}

/// One generated typed event; seqs are assigned in order.
#[derive(Clone, Debug)]
enum Gen {
    Delta {
        kind: u8,
        turn: u64,
        step: u8,
        index: u8,
        id: u8,
        name: Option<u8>,
        text: String,
    },
    BlockStart,
    TurnStart,
    Ignorable,
}

fn gen() -> impl Strategy<Value = Gen> {
    prop_oneof![
        8 => (0u8..3, prop_oneof![4 => 0u64..2, 1 => Just(MAX_SAFE + 1)], 0u8..2, 0u8..2, 0u8..3,
              proptest::option::of(0u8..2), "[a-z\"\\\\é\n]{0,4}")
            .prop_map(|(kind, turn, step, index, id, name, text)| Gen::Delta { kind, turn, step, index, id, name, text }),
        1 => Just(Gen::BlockStart),
        1 => Just(Gen::TurnStart),
        1 => Just(Gen::Ignorable),
    ]
}

fn build(items: &[(Gen, u64)]) -> Vec<Arc<SessionEvent>> {
    let mut time = 1_700_000_000_000u64;
    let chunk = |turn, step, chunk| EventData::AssistantChunk(AssistantChunk { turn, step, chunk });
    items
        .iter()
        .enumerate()
        .map(|(seq, (item, time_step))| {
            time = match time_step {
                999 => time.saturating_sub(3),
                1000 => MAX_SAFE + 7,
                step => time.min(MAX_SAFE) + step,
            };
            let mut ignorable = false;
            let data = match item {
                Gen::Delta {
                    kind,
                    turn,
                    step,
                    index,
                    id,
                    name,
                    text,
                } => {
                    let (index, text) = (u32::from(*index), text.clone());
                    let step = u64::from(*step);
                    chunk(
                        *turn,
                        step,
                        match kind {
                            0 => StreamChunk::TextDelta { index, text },
                            1 => StreamChunk::ReasoningDelta { index, text },
                            _ => StreamChunk::ToolCallDelta {
                                index,
                                id: if *id == 2 {
                                    String::new()
                                } else {
                                    format!("call_{id}")
                                },
                                name: name.map(|n| format!("tool{n}")),
                                arguments_delta: text,
                            },
                        },
                    )
                }
                Gen::BlockStart => chunk(
                    1,
                    1,
                    StreamChunk::BlockStart {
                        index: 0,
                        block_type: BlockType::Text,
                    },
                ),
                Gen::TurnStart => EventData::TurnStart(TurnStart { turn: 1 }),
                Gen::Ignorable => {
                    ignorable = true;
                    chunk(
                        0,
                        0,
                        StreamChunk::TextDelta {
                            index: 0,
                            text: "x".into(),
                        },
                    )
                }
            };
            Arc::new(SessionEvent {
                seq: seq as u64,
                time,
                data,
                ignorable,
                surface_op: None,
                source_event_seqs: None,
            })
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn typed_and_value_paths_agree_on_any_chunk_stream(
        items in proptest::collection::vec((gen(), prop_oneof![8 => 0u64..20, 1 => Just(999u64), 1 => Just(1000u64)]), 1..60),
        cut in 0usize..60,
    ) {
        let events = build(&items);
        let cut = cut.min(events.len());
        let batches: Vec<&[Arc<SessionEvent>]> =
            [&events[..cut], &events[cut..]].into_iter().filter(|b| !b.is_empty()).collect();
        for fmt in [format(Compression::None, true), format(Compression::Zstd, true)] {
            let dir = tempfile::tempdir().unwrap();
            let (typed, valued) = write_both(dir.path(), fmt, &batches);
            prop_assert_eq!(fs::read(&typed).unwrap(), fs::read(&valued).unwrap());
            let read = assert_readers_agree(&typed, fmt.compression).unwrap();
            prop_assert_eq!(&read.events, &events);
        }
    }
}
