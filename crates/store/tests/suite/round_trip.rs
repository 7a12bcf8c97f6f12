//! Write-then-read in every format: what goes in comes out, including what this build does
//! not understand.

use dsh_store::{read_header, read_log, Compression, LogHeader, LogWriter};
use serde_json::Value;

use super::common::{
    both_formats, completed_turn, fixture_log, format, write_log, zstd_frames, SCENARIOS,
};

#[test]
fn events_round_trip_in_every_format() {
    for format in both_formats() {
        let dir = tempfile::tempdir().unwrap();
        let first = completed_turn(0, 1);
        let second = completed_turn(7, 2);
        let path = write_log(dir.path(), format, "s-1", &[first.clone(), second.clone()]);
        let log = read_log(&path, format.compression, Some("s-1")).unwrap();
        assert_eq!(log.events, [first, second].concat(), "{format:?}");
        assert_eq!(log.torn_tail, None);
        assert_eq!(log.next_seq(), 14);
        let mut expected_header = LogHeader::new("s-1", 1);
        expected_header.cwd = Some("/work".into());
        assert_eq!(log.header, expected_header);
        assert_eq!(
            read_header(&path, format.compression).unwrap(),
            expected_header
        );
    }
}

#[test]
fn zstd_logs_hold_a_header_frame_and_one_frame_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let batches = [
        completed_turn(0, 1),
        completed_turn(7, 2),
        completed_turn(14, 3),
    ];
    let path = write_log(dir.path(), format(Compression::Zstd, true), "s", &batches);
    let frames = zstd_frames(&std::fs::read(&path).unwrap());
    assert_eq!(frames.len(), 4);
    assert_eq!(
        frames[0],
        "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1,\"cwd\":\"/work\",\"delegationDepth\":0}\n"
    );
    // the four deltas of each turn are one packed row: start, row, plugin event, end
    for frame in &frames[1..] {
        let types: Vec<String> = frame
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(
            types,
            ["turn/start", "text-chunks", "acme/thing", "turn/end"]
        );
    }
}

#[test]
fn appends_continue_after_reopening() {
    for format in both_formats() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), format, "s", &[completed_turn(0, 1)]);
        let log = read_log(&path, format.compression, Some("s")).unwrap();
        let mut writer = LogWriter::open(&log, format.pack_chunks).unwrap();
        assert_eq!(writer.next_seq(), 7);
        writer.append(&completed_turn(7, 2)).unwrap();
        drop(writer);
        let log = read_log(&path, format.compression, Some("s")).unwrap();
        assert_eq!(
            log.events,
            [completed_turn(0, 1), completed_turn(7, 2)].concat()
        );
    }
}

#[test]
fn fixture_events_round_trip_through_the_writer() {
    for scenario in SCENARIOS {
        let (_, source) = fixture_log(scenario, Compression::Zstd);
        let original = read_log(&source, Compression::Zstd, None).unwrap();
        for format in both_formats() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(format.compression.file_name());
            let mut writer = LogWriter::create_lazy(&path, format, original.header.clone());
            for batch in original.events.chunks(10) {
                writer.append(batch).unwrap();
            }
            let copy = read_log(&path, format.compression, Some(&original.header.id)).unwrap();
            assert_eq!(copy.header, original.header, "{scenario}");
            assert_eq!(copy.events, original.events, "{scenario} {format:?}");
        }
    }
}
