//! What a crash leaves is dropped; what a crash cannot explain is reported.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use dsh_store::{read_header, read_log, Compression, LogWriter, StoreError, TornReason};
use serde_json::json;

use super::common::{completed_turn, format, plugin_event, turn_end, turn_start, write_log};

fn append_bytes(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn corruption_line(err: StoreError) -> u64 {
    match err {
        StoreError::Corruption { at, .. } => at.line,
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn a_half_written_line_is_a_torn_tail_and_is_cut_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let fmt = format(Compression::None, false);
    let path = write_log(
        dir.path(),
        fmt,
        "s",
        &[vec![turn_start(0, 1), plugin_event(1)]],
    );
    let good_len = fs::metadata(&path).unwrap().len();
    append_bytes(&path, br#"{"type":"turn/end","seq":2,"ti"#);
    let log = read_log(&path, Compression::None, Some("s")).unwrap();
    assert_eq!(log.events, vec![turn_start(0, 1), plugin_event(1)]);
    let tail = log.torn_tail.clone().unwrap();
    assert_eq!(tail.reason, TornReason::IncompleteLine);
    assert_eq!(
        (tail.at.line, tail.truncate_to, tail.rewrite_from),
        (4, good_len, 2)
    );
    let mut writer = LogWriter::open(&log, false).unwrap();
    writer.append(&[turn_end(2, 1)]).unwrap();
    let log = read_log(&path, Compression::None, Some("s")).unwrap();
    assert_eq!(
        log.events,
        vec![turn_start(0, 1), plugin_event(1), turn_end(2, 1)]
    );
    assert_eq!(log.torn_tail, None);
}

#[test]
fn an_incomplete_final_frame_keeps_its_complete_records() {
    let dir = tempfile::tempdir().unwrap();
    let fmt = format(Compression::Zstd, true);
    let first = completed_turn(0, 1);
    // a big open-turn batch, so that a cut frame still yields whole lines
    let mut second = vec![turn_start(7, 2)];
    // more than one 128 KiB zstd block, so a cut frame still yields whole lines
    for seq in 8..4000 {
        second.push(plugin_event(seq));
    }
    let path = write_log(dir.path(), fmt, "s", &[first.clone(), second.clone()]);
    let full = fs::read(&path).unwrap();
    let single = write_log(
        &dir.path().join("x"),
        fmt,
        "s",
        std::slice::from_ref(&first),
    );
    let frame_start = fs::metadata(&single).unwrap().len();
    let cut = frame_start as usize + (full.len() - frame_start as usize) / 2;
    fs::write(&path, &full[..cut]).unwrap();

    let log = read_log(&path, Compression::Zstd, Some("s")).unwrap();
    let tail = log.torn_tail.clone().unwrap();
    assert_eq!(tail.reason, TornReason::IncompleteFrame);
    assert_eq!((tail.truncate_to, tail.rewrite_from), (frame_start, 7));
    let kept = log.events.len();
    assert!(kept > 8 && kept < 4000, "kept {kept}");
    assert_eq!(
        log.events[..],
        [first, second[..kept - 7].to_vec()].concat()[..]
    );

    // reopening cuts the frame and writes its surviving records again
    let writer = LogWriter::open(&log, true).unwrap();
    assert_eq!(writer.next_seq(), kept as u64);
    drop(writer);
    let again = read_log(&path, Compression::Zstd, Some("s")).unwrap();
    assert_eq!(again.events, log.events);
    assert_eq!(again.torn_tail, None);
}

#[test]
fn a_half_written_final_frame_then_zero_fill_is_a_torn_tail() {
    // A power loss mid-append can leave the start of the last frame followed by blocks the
    // filesystem allocated but never wrote.
    let dir = tempfile::tempdir().unwrap();
    let fmt = format(Compression::Zstd, true);
    let first = completed_turn(0, 1);
    let mut second = vec![turn_start(7, 2)];
    for seq in 8..4000 {
        second.push(plugin_event(seq));
    }
    let path = write_log(dir.path(), fmt, "s", &[first.clone(), second]);
    let full = fs::read(&path).unwrap();
    let single = write_log(
        &dir.path().join("x"),
        fmt,
        "s",
        std::slice::from_ref(&first),
    );
    let frame_start = fs::metadata(&single).unwrap().len();
    let cut = frame_start as usize + (full.len() - frame_start as usize) / 2;
    let mut torn = full[..cut].to_vec();
    torn.resize(full.len(), 0);
    fs::write(&path, &torn).unwrap();

    let log = read_log(&path, Compression::Zstd, Some("s")).unwrap();
    let tail = log.torn_tail.clone().unwrap();
    assert_eq!(tail.reason, TornReason::IncompleteFrame);
    assert_eq!((tail.truncate_to, tail.rewrite_from), (frame_start, 7));
    assert!(log.events.len() > 8, "kept {}", log.events.len());

    let writer = LogWriter::open(&log, true).unwrap();
    drop(writer);
    let again = read_log(&path, Compression::Zstd, Some("s")).unwrap();
    assert_eq!(again.events, log.events);
    assert_eq!(again.torn_tail, None);
}

#[test]
fn a_cut_header_only_frame_tail_yields_an_incomplete_frame() {
    let dir = tempfile::tempdir().unwrap();
    let fmt = format(Compression::Zstd, false);
    let path = write_log(
        dir.path(),
        fmt,
        "s",
        &[vec![turn_start(0, 1)], vec![plugin_event(1)]],
    );
    let data = fs::read(&path).unwrap();
    fs::write(&path, &data[..data.len() - 3]).unwrap();
    let log = read_log(&path, Compression::Zstd, Some("s")).unwrap();
    let tail = log.torn_tail.unwrap();
    assert_eq!(tail.reason, TornReason::IncompleteFrame);
    // the checksum is missing, so even whole lines of that frame are written again
    assert_eq!(tail.rewrite_from, 1);
}

#[test]
fn a_bit_flip_in_an_early_frame_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let fmt = format(Compression::Zstd, true);
    let batches = [
        completed_turn(0, 1),
        completed_turn(7, 2),
        completed_turn(14, 3),
    ];
    let path = write_log(dir.path(), fmt, "s", &batches);
    let header_only = write_log(&dir.path().join("h"), fmt, "s", &[completed_turn(0, 1)]);
    let first_batch_end = fs::metadata(&header_only).unwrap().len() as usize;
    let mut data = fs::read(&path).unwrap();
    data[first_batch_end - 6] ^= 0x01;
    fs::write(&path, &data).unwrap();
    let err = read_log(&path, Compression::Zstd, Some("s")).unwrap_err();
    assert_eq!(err.code(), "SESSION_PERSISTENCE_CORRUPTION");
    match err {
        StoreError::Corruption { at, path: p, .. } => {
            assert_eq!(at.frame.unwrap().index, 1);
            assert_eq!(p, path);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn zero_fill_after_the_last_frame_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(
        dir.path(),
        format(Compression::Zstd, true),
        "s",
        &[completed_turn(0, 1)],
    );
    let len = fs::metadata(&path).unwrap().len();
    append_bytes(&path, &[0; 4096]);
    let log = read_log(&path, Compression::Zstd, Some("s")).unwrap();
    assert_eq!(log.events, completed_turn(0, 1));
    let tail = log.torn_tail.unwrap();
    assert_eq!((tail.reason, tail.truncate_to), (TornReason::ZeroFill, len));
}

#[test]
fn damage_before_a_committed_turn_end_is_corruption() {
    for compression in [Compression::None, Compression::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let fmt = format(compression, false);
        let path = write_log(dir.path(), fmt, "s", &[vec![turn_start(0, 1)]]);
        let mut tail = b"\"not a record\"\n".to_vec();
        tail.extend(format!("{}\n", turn_end(1, 1)).bytes());
        match compression {
            Compression::None => append_bytes(&path, &tail),
            Compression::Zstd => append_bytes(&path, &zstd::bulk::compress(&tail, 3).unwrap()),
        }
        let err = read_log(&path, compression, Some("s")).unwrap_err();
        assert_eq!(corruption_line(err), 3, "{compression:?}");
    }
}

#[test]
fn an_unparsable_last_record_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(
        dir.path(),
        format(Compression::None, false),
        "s",
        &[vec![turn_start(0, 1)]],
    );
    append_bytes(&path, b"not json\n{\"type\":\"acme/late\",\"seq\":1}\n");
    let log = read_log(&path, Compression::None, Some("s")).unwrap();
    assert_eq!(log.events, vec![turn_start(0, 1)]);
    assert_eq!(log.torn_tail.unwrap().reason, TornReason::UnparsableRecord);
}

#[test]
fn a_seq_gap_is_torn_at_the_end_and_corrupt_before_a_turn_end() {
    let dir = tempfile::tempdir().unwrap();
    let fmt = format(Compression::None, false);
    let path = write_log(dir.path(), fmt, "s", &[vec![turn_start(0, 1)]]);
    let line = |v: serde_json::Value| format!("{v}\n").into_bytes();
    append_bytes(&path, &line(plugin_event(2)));
    let log = read_log(&path, Compression::None, Some("s")).unwrap();
    assert_eq!(log.events, vec![turn_start(0, 1)]);
    assert_eq!(
        log.torn_tail.unwrap().reason,
        TornReason::SeqGap {
            expected: 1,
            found: Some(2)
        }
    );
    append_bytes(&path, &line(turn_end(3, 1)));
    let err = read_log(&path, Compression::None, Some("s")).unwrap_err();
    assert_eq!(corruption_line(err), 3);
}

#[test]
fn a_malformed_packed_row_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_log(
        dir.path(),
        format(Compression::None, false),
        "s",
        &[vec![turn_start(0, 1)]],
    );
    let row = json!({"type": "text-chunks", "seq0": 1, "time0": 5,
                     "data": {"turn": 1, "step": 1, "index": 0, "dt": [], "texts": ["a", "b"]}});
    append_bytes(&path, format!("{row}\n").as_bytes());
    let err = read_log(&path, Compression::None, Some("s")).unwrap_err();
    assert_eq!(corruption_line(err), 3);
}

#[test]
fn headers_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    fs::write(
        &path,
        "{\"type\":\"session\",\"version\":1,\"id\":\"s\",\"createdAt\":1}\n",
    )
    .unwrap();
    for err in [
        read_log(&path, Compression::None, Some("s")).unwrap_err(),
        read_header(&path, Compression::None).unwrap_err(),
    ] {
        assert_eq!(err.code(), "SESSION_FORMAT_UNSUPPORTED");
        assert!(err.to_string().contains("version 1"), "{err}");
    }
    let path = write_log(
        dir.path(),
        format(Compression::Zstd, true),
        "s",
        &[vec![turn_start(0, 1)]],
    );
    let err = read_log(&path, Compression::Zstd, Some("other")).unwrap_err();
    assert_eq!(corruption_line(err), 1);
    let missing = read_log(&dir.path().join("nope"), Compression::None, None).unwrap_err();
    assert_eq!(missing.code(), "SESSION_PERSISTENCE_IO");
}
