//! The fast read path (`read_typed_log`, and `inspect` on top of it) agrees with the lenient
//! general reader (`read_log`, then typing each value) on every log the original wrote and
//! on generated variations of them: foreign event types, unknown fields in envelopes and
//! payloads, unusual key order, packed and unpacked rows, batches cut anywhere, and the
//! damage a crash leaves (truncation, zero fill, a garbage line) or one it cannot.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use dsh_protocol::SessionId;
use dsh_session::{interrupted_turn_closers, SeedSource, SessionBuilder, SessionHeader};
use dsh_store::{
    read_log, Compression, JsonlBackend, JsonlConfig, LogHeader, LogWriter, SessionPersistence,
    StoreError, TypedLog,
};
use proptest::prelude::*;
use serde_json::{json, Value};

use super::common::{fixture_log, format, SCENARIOS};
use super::fast_paths::{assert_readers_agree, general};

/// Every fixture's events as the general reader sees them.
fn fixture_values(scenario: &str) -> Vec<Value> {
    let (_, path) = fixture_log(scenario, Compression::Zstd);
    read_log(&path, Compression::Zstd, None).unwrap().events
}

/// One change to a fixture log.
#[derive(Clone, Debug)]
enum Edit {
    /// A foreign event before event `at`: ignorable or not, with a nested payload.
    Foreign { at: usize, ignorable: bool },
    /// An unknown key in event `at`'s `data` (dropped by both readers for modelled types).
    DataField { at: usize },
    /// An unknown envelope key on event `at` (refused by both).
    EnvelopeField { at: usize },
    /// `type` moved after `data` in event `at` (read the general way by both).
    TypeLast { at: usize },
    /// A run of text deltas (packable) before event `at`.
    Deltas { at: usize, count: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (any::<usize>(), any::<bool>()).prop_map(|(at, ignorable)| Edit::Foreign { at, ignorable }),
        3 => any::<usize>().prop_map(|at| Edit::DataField { at }),
        1 => any::<usize>().prop_map(|at| Edit::EnvelopeField { at }),
        2 => any::<usize>().prop_map(|at| Edit::TypeLast { at }),
        3 => (any::<usize>(), 1usize..6).prop_map(|(at, count)| Edit::Deltas { at, count }),
    ]
}

/// What happens to the stored bytes after writing.
#[derive(Clone, Debug)]
enum Damage {
    None,
    /// Cut this many bytes off the end (a torn append).
    Truncate(usize),
    /// Zero bytes after the data (space a crash allocated).
    ZeroFill(usize),
    /// A line that is not JSON, optionally followed by a committed turn end.
    Garbage {
        then_turn_end: bool,
    },
    /// One byte flipped somewhere in the file.
    Flip(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => Just(Damage::None),
        3 => (1usize..400).prop_map(Damage::Truncate),
        1 => (1usize..300).prop_map(Damage::ZeroFill),
        1 => any::<bool>().prop_map(|then_turn_end| Damage::Garbage { then_turn_end }),
        1 => any::<usize>().prop_map(Damage::Flip),
    ]
}

fn apply(events: &mut Vec<Value>, edit: &Edit) {
    let pick = |at: usize, len: usize| if len == 0 { 0 } else { at % len };
    match edit {
        Edit::Foreign { at, ignorable } => {
            let mut event = json!({"type": "acme/future-thing", "seq": 0, "time": 1,
                "data": {"nested": {"list": [1, 2.5, null, "é\n"]}, "flag": true}});
            if *ignorable {
                event["ignorable"] = json!(true);
            }
            let at = pick(*at, events.len() + 1);
            events.insert(at, event);
        }
        Edit::DataField { at } => {
            let at = pick(*at, events.len());
            if let Some(Value::Object(data)) = events.get_mut(at).and_then(|e| e.get_mut("data")) {
                data.insert(
                    "futureField".into(),
                    json!({"from": "a newer build", "n": [1, 2]}),
                );
            }
        }
        Edit::EnvelopeField { at } => {
            let at = pick(*at, events.len());
            if let Some(Value::Object(event)) = events.get_mut(at) {
                event.insert("futureEnvelopeKey".into(), json!(1));
            }
        }
        Edit::TypeLast { at } => {
            let at = pick(*at, events.len());
            if let Some(Value::Object(event)) = events.get_mut(at) {
                if let Some(kind) = event.shift_remove("type") {
                    event.insert("type".into(), kind);
                }
            }
        }
        Edit::Deltas { at, count } => {
            let at = pick(*at, events.len() + 1);
            for i in 0..*count {
                let text = ["Hel", "lo \"", "wörld\n", "", "\\"][i % 5];
                events.insert(
                    at + i,
                    json!({"type": "assistant/chunk", "seq": 0, "time": 1,
                        "data": {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}}),
                );
            }
        }
    }
}

/// Renumbers seqs (and keeps times non-decreasing) after the edits.
fn renumber(events: &mut [Value]) {
    let mut time = 0u64;
    for (seq, event) in events.iter_mut().enumerate() {
        event["seq"] = json!(seq);
        time = time.max(event["time"].as_u64().unwrap_or(time));
        event["time"] = json!(time);
    }
}

fn damaged(path: &Path, damage: &Damage, compression: Compression) {
    let mut data = fs::read(path).unwrap();
    match damage {
        Damage::None => {}
        Damage::Truncate(n) => {
            let keep = data.len().saturating_sub(*n).max(1);
            data.truncate(keep);
        }
        Damage::ZeroFill(n) => data.resize(data.len() + n, 0),
        Damage::Garbage { then_turn_end } => {
            let mut tail = b"{not json at all\n".to_vec();
            if *then_turn_end {
                tail.extend_from_slice(
                    br#"{"type":"turn/end","seq":999999,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
                );
                tail.push(b'\n');
            }
            match compression {
                Compression::None => data.extend_from_slice(&tail),
                Compression::Zstd => data.extend(zstd::bulk::compress(&tail, 3).unwrap()),
            }
        }
        Damage::Flip(at) => {
            let at = at % data.len();
            data[at] ^= 0x20;
        }
    }
    fs::write(path, data).unwrap();
}

/// `inspect` (the `dsh sessions verify` path) against the general reader followed by the
/// same checks: the same verdict, event count and pending closers.
fn assert_inspection_agrees(root: &Path, id: &str) {
    let backend = JsonlBackend::new(JsonlConfig::new(root));
    let fast = backend
        .inspect(&SessionId::new(id))
        .map(|i| (i.events, i.pending_closers, i.torn_tail))
        .map_err(|e| e.code());
    let path = backend.locate(&SessionId::new(id)).unwrap();
    let compression = Compression::of_path(&path).unwrap();
    let slow = general(&path, compression, Some(id))
        .map_err(|e| e.split(':').next().unwrap_or_default().to_owned())
        .and_then(|log: TypedLog| {
            let header: SessionHeader = serde_json::from_value(log.header.to_value()).unwrap();
            let closers = interrupted_turn_closers(&log.events);
            let mut events = log.events.clone();
            events.extend(closers.iter().cloned().map(Arc::new));
            SessionBuilder::new(header)
                .seed(events, SeedSource::Persistence)
                .build()
                .map_err(|source| {
                    let path = path.clone();
                    StoreError::Rejected { path, source }.code().to_owned()
                })?;
            Ok((log.events.len() as u64, closers, log.torn_tail))
        });
    match (&fast, &slow) {
        (Ok(fast), Ok(slow)) => assert_eq!(fast, slow),
        (Err(fast), Err(slow)) => assert_eq!(*fast, slow.as_str()),
        _ => panic!("inspect {fast:?} but the general reader {slow:?}"),
    }
}

#[test]
fn every_fixture_reads_and_inspects_the_same_on_both_paths() {
    for scenario in SCENARIOS {
        for compression in [Compression::Zstd, Compression::None] {
            let (root, path) = fixture_log(scenario, compression);
            let fast = dsh_store::read_typed_log(&path, compression, None).unwrap();
            assert_eq!(Ok(fast.clone()), general(&path, compression, None));
            let dir = tempfile::tempdir().unwrap();
            let copy = dir.path().join("sessions");
            let target = copy.join(path.strip_prefix(&root).unwrap());
            fs::create_dir_all(target.parent().unwrap()).unwrap();
            fs::copy(&path, &target).unwrap();
            assert_inspection_agrees(&copy, &fast.header.id);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn generated_logs_read_the_same_on_both_paths(
        scenario in 0usize..SCENARIOS.len(),
        edits in proptest::collection::vec(edit(), 0..6),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
        encoding in 0u8..3,
        damage in damage(),
    ) {
        let mut events = fixture_values(SCENARIOS[scenario]);
        for edit in &edits {
            apply(&mut events, edit);
        }
        renumber(&mut events);
        let (compression, pack) = match encoding {
            0 => (Compression::Zstd, true),
            1 => (Compression::Zstd, false),
            _ => (Compression::None, true),
        };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("sessions");
        let mut header = LogHeader::new("s", 1);
        header.cwd = Some("/work".into());
        let layout = dsh_store::StoreLayout::new(&root, compression);
        let path = layout.session_file(header.cwd.as_deref(), "s").unwrap();
        let mut writer = LogWriter::create_lazy(&path, format(compression, pack), header);
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (events.len() + 1)).collect();
        cuts.push(0);
        cuts.push(events.len());
        cuts.sort_unstable();
        cuts.dedup();
        for pair in cuts.windows(2) {
            writer.append(&events[pair[0]..pair[1]]).unwrap();
        }
        drop(writer);
        damaged(&path, &damage, compression);
        let _ = assert_readers_agree(&path, compression);
        assert_inspection_agrees(&root, "s");
    }
}

/// A log far larger than the reader's 256 KiB window (and large enough to be decoded on a
/// second thread), read from its file, types exactly what a read of the same bytes held
/// whole in memory types: intact, torn mid-frame, zero-filled, and damaged mid-file, where
/// the verdict needs bytes from windows after the damage.
#[test]
fn a_log_larger_than_the_read_window_reads_as_if_held_whole() {
    let mut events = fixture_values("multi-turn");
    let tail = events.split_off(events.len() - 1);
    // Foreign events with incompressible-enough payloads, appended in many small frames.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in 0..2000 {
        let blob: String = (0..512)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                format!("{:x}", state & 0xf)
            })
            .collect();
        events.push(
            json!({"type": "test/blob", "seq": 0, "time": 1, "ignorable": true,
            "data": {"i": i, "blob": blob}}),
        );
    }
    events.extend(tail);
    renumber(&mut events);
    let damages = [
        Damage::None,
        Damage::Truncate(7),
        Damage::ZeroFill(5000),
        Damage::Flip(usize::MAX / 2),
    ];
    for damage in damages {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("sessions");
        let mut header = LogHeader::new("s", 1);
        header.cwd = Some("/work".into());
        let layout = dsh_store::StoreLayout::new(&root, Compression::Zstd);
        let path = layout.session_file(header.cwd.as_deref(), "s").unwrap();
        let mut writer = LogWriter::create_lazy(&path, format(Compression::Zstd, true), header);
        for batch in events.chunks(3) {
            writer.append(batch).unwrap();
        }
        drop(writer);
        let size = fs::metadata(&path).unwrap().len();
        assert!(size > 512 * 1024, "the log is {size} bytes");
        if let Damage::Flip(_) = damage {
            // Mid-file: the frame the flip lands in is judged with the rest of the file.
            let mut data = fs::read(&path).unwrap();
            let at = data.len() / 2;
            data[at] ^= 0x20;
            fs::write(&path, data).unwrap();
        } else {
            damaged(&path, &damage, Compression::Zstd);
        }
        let show = |read: Result<TypedLog, StoreError>| read.map_err(|e| e.to_string());
        let from_file = show(dsh_store::read_typed_log(&path, Compression::Zstd, None));
        let bytes = fs::read(&path).unwrap();
        let held_whole = show(dsh_store::parse_typed_log(
            &path,
            Compression::Zstd,
            &bytes,
            None,
        ));
        // Compared whole; on a mismatch only the outlines are printed (the logs are large).
        let outline = |read: &Result<TypedLog, String>| match read {
            Ok(log) => format!(
                "{} events, torn tail {:?}, {} bytes",
                log.events.len(),
                log.torn_tail,
                log.file_len
            ),
            Err(error) => error.clone(),
        };
        assert!(
            from_file == held_whole,
            "{damage:?}: from the file {}; held whole {}",
            outline(&from_file),
            outline(&held_whole)
        );
        let general_from_file = read_log(&path, Compression::Zstd, None).map_err(|e| e.to_string());
        let general_whole =
            dsh_store::parse_log(&path, Compression::Zstd, &bytes, None).map_err(|e| e.to_string());
        assert!(
            general_from_file == general_whole,
            "{damage:?}: the general reader differs"
        );
        if let Damage::None = damage {
            assert_eq!(from_file.map(|log| log.events.len()), Ok(events.len()));
        }
    }
}
