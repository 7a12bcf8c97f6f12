//! The line-by-line scan against the reader it replaced, which decoded every frame into
//! one text, split every line out and only then judged them: the same events, torn tail
//! and error on every fixture and on many damaged variants of them.

use std::path::Path;
use std::sync::Arc;

use dsh_session::SessionEvent;

use super::*;
use crate::frames::{self, FramesEnd};
use crate::header::HeaderError;
use crate::typed_log::decode_typed_line;

/// One frame of [`Decoded`].
struct DecodedFrame {
    location: FrameLocation,
    range: std::ops::Range<usize>,
    complete: bool,
}

/// Every frame's text back to back, as the old reader held it.
struct Decoded {
    text: Vec<u8>,
    frames: Vec<DecodedFrame>,
    end: FramesEnd,
}

impl Decoded {
    fn text_of(&self, frame: &DecodedFrame) -> &[u8] {
        &self.text[frame.range.clone()]
    }
}

fn decode_frames(data: &[u8]) -> io::Result<Decoded> {
    let mut text = Vec::new();
    let mut frames = Vec::new();
    let end = frames::visit_frames(data, |frame| {
        let start = text.len();
        text.extend_from_slice(frame.text);
        frames.push(DecodedFrame {
            location: frame.location,
            range: start..text.len(),
            complete: frame.complete,
        });
    })?;
    Ok(Decoded { text, frames, end })
}

/// One stored line and where it sits.
struct OldLine<'a> {
    text: &'a [u8],
    at: RecordLocation,
    /// Where the file is cut if this line is the first one dropped.
    cut_at: u64,
    /// Terminated by `\n`, or the last line of a complete (checksummed) frame.
    whole: bool,
    /// Ended by the end of the data inside an incomplete frame.
    in_incomplete_frame: bool,
}

fn old_split_lines<'a>(
    text: &'a [u8],
    first_line: u64,
    frame: Option<FrameLocation>,
    base_offset: u64,
    complete_container: bool,
    out: &mut Vec<OldLine<'a>>,
) -> u64 {
    let mut start = 0usize;
    let mut line = first_line;
    while start < text.len() {
        let (end, terminated) = match text[start..].iter().position(|b| *b == b'\n') {
            Some(i) => (start + i, true),
            None => (text.len(), false),
        };
        let slice = &text[start..end];
        if !slice.iter().all(u8::is_ascii_whitespace) {
            out.push(OldLine {
                text: slice,
                at: RecordLocation { line, frame },
                cut_at: frame.map_or(base_offset + start as u64, |f| f.offset),
                whole: terminated || (frame.is_some() && complete_container),
                in_incomplete_frame: frame.is_some() && !complete_container,
            });
        }
        line += 1;
        start = end + 1;
    }
    // The number the next line gets.
    line
}

/// The reader as it was before the scan went line by line: every frame decoded into one
/// text, every line split out, then judged. Kept as the oracle the scan must agree with.
fn whole_file_parse_records(
    path: &Path,
    compression: Compression,
    data: &[u8],
    expected_id: Option<&str>,
    decode: &mut LineDecoder<'_>,
) -> Result<LogShell, StoreError> {
    let corrupt = |at: RecordLocation, reason: String| StoreError::Corruption {
        path: path.to_owned(),
        at,
        reason,
    };
    let decoded;
    let mut lines = Vec::new();
    let mut end_tail = None;
    match compression {
        Compression::None => {
            old_split_lines(data, 1, None, 0, false, &mut lines);
        }
        Compression::Zstd => {
            decoded = decode_frames(data)
                .map_err(|e| StoreError::io("decode zstd frames of", path, e))?;
            let mut next_line = 1;
            for frame in &decoded.frames {
                let loc = Some(frame.location);
                let before = lines.len();
                let text = decoded.text_of(frame);
                next_line = old_split_lines(text, next_line, loc, 0, frame.complete, &mut lines);
                if !frame.complete {
                    // Even when every decoded line is whole, the frame is unverified and
                    // must be cut and its records written again.
                    let first = lines.get(before).map_or(next_line, |l| l.at.line);
                    end_tail.get_or_insert((frame.location, first, TornReason::IncompleteFrame));
                }
            }
            match &decoded.end {
                FramesEnd::Clean => {}
                FramesEnd::ZeroFilled { offset } => {
                    let location = FrameLocation {
                        index: decoded.frames.len() as u64,
                        offset: *offset,
                    };
                    end_tail.get_or_insert((location, next_line, TornReason::ZeroFill));
                }
                FramesEnd::Damaged { location, message } => {
                    let at = RecordLocation {
                        line: next_line,
                        frame: Some(*location),
                    };
                    return Err(corrupt(
                        at,
                        format!("zstd frame does not decode: {message}"),
                    ));
                }
            }
        }
    }

    let header_at = RecordLocation {
        line: 1,
        frame: compression_frame0(compression),
    };
    let Some(first) = lines.first() else {
        return Err(corrupt(header_at, "the log has no header".into()));
    };
    if !first.whole || first.in_incomplete_frame {
        return Err(corrupt(first.at, "the header line is incomplete".into()));
    }
    let header_value: Value = serde_json::from_slice(first.text)
        .map_err(|e| corrupt(first.at, format!("the header does not parse: {e}")))?;
    let header = LogHeader::from_value(header_value).map_err(|e| match e {
        HeaderError::Malformed(reason) => corrupt(first.at, reason),
        HeaderError::Unsupported(version) => StoreError::UnsupportedFormat {
            path: path.to_owned(),
            version,
        },
    })?;
    if let Some(expected) = expected_id {
        if header.id != expected {
            return Err(corrupt(
                first.at,
                format!(
                    "the header names session {:?}, but the path belongs to {expected:?}",
                    header.id
                ),
            ));
        }
    }

    let mut next_seq = 0u64;
    // first seq decoded from the current zstd frame, to know what a cut must rewrite
    let mut frame_first_seq: Option<(u64, u64)> = None;
    let mut torn: Option<(usize, TornReason)> = None;
    for (i, line) in lines.iter().enumerate().skip(1) {
        if let Some(frame) = line.at.frame {
            if frame_first_seq.is_none_or(|(index, _)| index != frame.index) {
                frame_first_seq = Some((frame.index, next_seq));
            }
        }
        if !line.whole {
            let reason = if line.in_incomplete_frame {
                TornReason::IncompleteFrame
            } else {
                TornReason::IncompleteLine
            };
            torn = Some((i, reason));
            break;
        }
        match decode(line.text, next_seq) {
            Ok(count) => next_seq += count,
            Err(LineError::Torn(reason)) => {
                torn = Some((i, reason));
                break;
            }
            Err(LineError::Corrupt(reason)) => return Err(corrupt(line.at, reason)),
        }
    }

    let file_len = data.len() as u64;
    let torn_tail = match torn {
        Some((i, reason)) => {
            let line = &lines[i];
            if let Some(later) = lines[i + 1..].iter().find(|l| holds_turn_end(l.text)) {
                return Err(corrupt(
                    line.at,
                    format!("{} before a committed turn/end at {}", reason, later.at),
                ));
            }
            Some(cut_tail(line, reason, &frame_first_seq, next_seq))
        }
        None => end_tail.map(|(frame, line, reason)| {
            let rewrite_from = match frame_first_seq {
                Some((index, first)) if index == frame.index => first,
                _ => next_seq,
            };
            TornTail {
                reason,
                at: RecordLocation {
                    line,
                    frame: Some(frame),
                },
                truncate_to: frame.offset,
                rewrite_from,
            }
        }),
    };
    if let Some(tail) = &torn_tail {
        if tail.at.frame.is_some_and(|f| f.index == 0) {
            return Err(corrupt(
                tail.at,
                format!("{} inside the header frame", tail.reason),
            ));
        }
    }
    Ok(LogShell {
        header,
        torn_tail,
        file_len,
    })
}

fn cut_tail(
    line: &OldLine<'_>,
    reason: TornReason,
    frame_first_seq: &Option<(u64, u64)>,
    event_count: u64,
) -> TornTail {
    let rewrite_from = match (line.at.frame, frame_first_seq) {
        (Some(frame), Some((index, first))) if frame.index == *index => *first,
        _ => event_count,
    };
    TornTail {
        reason,
        at: line.at,
        truncate_to: line.cut_at,
        rewrite_from,
    }
}

/// What a parse yields, comparable: the header, the events as values or typed, the torn
/// tail, or the error's text.
type Outcome = Result<
    (
        LogHeader,
        Vec<Value>,
        Vec<Arc<SessionEvent>>,
        Option<TornTail>,
    ),
    String,
>;

/// A whole-log reader: the scan, or the old whole-file one.
type RecordsFn = fn(
    &Path,
    Compression,
    &[u8],
    Option<&str>,
    &mut LineDecoder<'_>,
) -> Result<LogShell, StoreError>;

fn parse_with(records: RecordsFn, compression: Compression, data: &[u8]) -> (Outcome, Outcome) {
    let path = Path::new("/logs/session.jsonl");
    let mut values = Vec::new();
    let general = records(path, compression, data, None, &mut |text, next_seq| {
        decode_value_line(text, next_seq, &mut values)
    })
    .map(|shell| (shell.header, values, Vec::new(), shell.torn_tail))
    .map_err(|e| format!("{}: {e}", e.code()));
    let mut events = Vec::new();
    let mut refused = None;
    let typed = records(path, compression, data, None, &mut |text, next_seq| {
        decode_typed_line(text, next_seq, &mut events, &mut refused)
    })
    .map(|shell| {
        let refused = refused
            .map(|e| vec![Value::String(e.to_string())])
            .unwrap_or_default();
        (shell.header, refused, events, shell.torn_tail)
    })
    .map_err(|e| format!("{}: {e}", e.code()));
    (general, typed)
}

/// The scan over a log held in memory.
fn in_memory(
    path: &Path,
    compression: Compression,
    data: &[u8],
    expected_id: Option<&str>,
    decode: &mut LineDecoder<'_>,
) -> Result<LogShell, StoreError> {
    parse_records(
        path,
        compression,
        LogBytes::memory(data),
        expected_id,
        decode,
    )
}

/// The scan reading the log `W` bytes at a time, as it reads files: frames straddle the
/// windows, and every judgement must wait for the bytes it needs.
fn windowed<const W: usize>(
    path: &Path,
    compression: Compression,
    data: &[u8],
    expected_id: Option<&str>,
    decode: &mut LineDecoder<'_>,
) -> Result<LogShell, StoreError> {
    let window = frames::ReadWindow::new(data, data.len(), W);
    parse_records(
        path,
        compression,
        LogBytes::Read(window),
        expected_id,
        decode,
    )
}

#[track_caller]
fn assert_scan_agrees(compression: Compression, data: &[u8], what: &str) {
    let whole = parse_with(whole_file_parse_records, compression, data);
    let readers: [(&str, RecordsFn); 4] = [
        ("in memory", in_memory),
        ("1-byte window", windowed::<1>),
        ("7-byte window", windowed::<7>),
        ("4 KiB window", windowed::<4096>),
    ];
    for (how, records) in readers {
        let scan = parse_with(records, compression, data);
        assert_eq!(scan.0, whole.0, "general reader, {how}, {what}");
        assert_eq!(scan.1, whole.1, "typed reader, {how}, {what}");
    }
    if compression == Compression::Zstd {
        let ahead = frames::forcing_work_ahead(|| typed_read(data));
        assert_eq!(ahead, whole.1, "typed reader, lines typed ahead, {what}");
    }
}

/// The typed reader itself (`read_typed_log`'s parse) over a log in memory.
fn typed_read(data: &[u8]) -> Outcome {
    let path = Path::new("/logs/session.jsonl");
    crate::typed_log::parse_typed(path, Compression::Zstd, LogBytes::memory(data), None)
        .map(|(log, refused)| {
            let refused = refused
                .map(|e| vec![Value::String(e.to_string())])
                .unwrap_or_default();
            (log.header, refused, log.events, log.torn_tail)
        })
        .map_err(|e| format!("{}: {e}", e.code()))
}

fn fixture_lines(scenario: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/dsh-0.1.0")
        .join(scenario)
        .join("jsonl/sessions/--home-user-project--");
    let session = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let text = std::fs::read(session.join("session.jsonl")).unwrap();
    text.split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// The fixture's lines as zstd frames of `per_frame` lines (the header alone first).
fn framed(lines: &[Vec<u8>], per_frame: usize) -> Vec<u8> {
    let mut data = frames::encode_frame(&lines[0]).unwrap();
    for batch in lines[1..].chunks(per_frame) {
        data.extend(frames::encode_frame(&batch.concat()).unwrap());
    }
    data
}

/// Damaged variants of a log: cut at many points, zero-filled, garbage-tailed (with and
/// without a committed turn end after it), a garbage line in the middle, bytes flipped.
fn variants(compression: Compression, data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![("intact".to_owned(), data.to_vec())];
    // Cuts and flips spread over the file, and more of both near its end, where a crash
    // leaves them (a test in debug builds parses each variant four times).
    let near_end = data.len().saturating_sub(300);
    let spread = (1..12).map(|i| data.len() * i / 12);
    let tail = (1..12).map(|i| near_end + (data.len() - near_end) * i / 12);
    let points: std::collections::BTreeSet<usize> =
        spread.chain(tail).filter(|at| *at < data.len()).collect();
    for at in &points {
        out.push((format!("cut at {at}"), data[..*at].to_vec()));
        let mut flipped = data.to_vec();
        flipped[*at] ^= 0x20;
        out.push((format!("flip at {at}"), flipped));
    }
    let mut zeros = data.to_vec();
    zeros.resize(data.len() + 300, 0);
    out.push(("zero fill".into(), zeros));
    let turn_end = br#"{"type":"turn/end","seq":999999,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
    let tails: [&[u8]; 3] = [
        b"{not json at all\n",
        &[b"{not json at all\n".as_slice(), turn_end, b"\n"].concat(),
        &[b"{\"type\":\"x\"}\n".as_slice(), turn_end, b"\n"].concat(),
    ];
    for (i, tail) in tails.iter().enumerate() {
        let mut garbage = data.to_vec();
        match compression {
            Compression::None => garbage.extend_from_slice(tail),
            Compression::Zstd => garbage.extend(frames::encode_frame(tail).unwrap()),
        }
        out.push((format!("garbage tail {i}"), garbage));
    }
    let mut raw_garbage = data.to_vec();
    raw_garbage.extend_from_slice(b"not a frame");
    raw_garbage.resize(raw_garbage.len() + 512, 0);
    out.push(("raw garbage then zeros".into(), raw_garbage));
    out
}

#[test]
fn the_scan_agrees_with_the_whole_file_reader_on_every_fixture_and_its_damage() {
    for scenario in [
        "text",
        "bash",
        "read-edit",
        "multi-turn",
        "retry",
        "parallel-tools",
    ] {
        let lines = fixture_lines(scenario);
        let plain = lines.concat();
        for (what, data) in variants(Compression::None, &plain) {
            assert_scan_agrees(
                Compression::None,
                &data,
                &format!("{scenario} plain, {what}"),
            );
        }
        // A garbage line in the middle: before a committed turn end, so corrupt.
        let mut middle = lines.clone();
        middle.insert(lines.len() / 2, b"{garbage\n".to_vec());
        assert_scan_agrees(Compression::None, &middle.concat(), "garbage mid-log");
        for per_frame in [1, 1000] {
            let data = framed(&lines, per_frame);
            for (what, data) in variants(Compression::Zstd, &data) {
                let what = format!("{scenario} zstd, {per_frame} lines a frame, {what}");
                assert_scan_agrees(Compression::Zstd, &data, &what);
            }
            let data = framed(&middle, per_frame);
            assert_scan_agrees(Compression::Zstd, &data, "garbage mid-log, framed");
        }
    }
}

#[test]
fn empty_and_headerless_logs_agree() {
    for compression in [Compression::None, Compression::Zstd] {
        assert_scan_agrees(compression, b"", "empty");
    }
    assert_scan_agrees(Compression::None, b"\n \n", "blank lines");
    let blank = frames::encode_frame(b"\n\n").unwrap();
    assert_scan_agrees(Compression::Zstd, &blank, "a blank frame");
}
