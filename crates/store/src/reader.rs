//! Reading a stored log back: lenient with content, strict with damage.
//!
//! Records are carried as JSON values, so event types and fields this build does not know
//! survive. What a crash can leave behind (a half-written line, an incomplete frame, zero
//! fill, a seq gap after a lost write) is a *torn tail*: it is dropped, but only when no
//! later record holds a `turn/end` — damage before a committed turn end cannot come from a
//! crash, so it is reported as corruption instead of being silently cut away.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::chunk_rows::{self, Unpacked};
use crate::error::{FrameLocation, RecordLocation, StoreError};
use crate::frames::{self, FramesEnd};
use crate::header::{HeaderError, LogHeader};
use crate::paths::Compression;

/// A log as read from disk, ready to be repaired and resumed.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredLog {
    pub path: PathBuf,
    pub compression: Compression,
    pub header: LogHeader,
    /// Every event of the durable prefix with packed rows expanded; `events[i].seq == i`.
    pub events: Vec<Value>,
    /// What a crash left after the durable prefix, if anything.
    pub torn_tail: Option<TornTail>,
    /// The file's length when it was read.
    pub file_len: u64,
}

impl StoredLog {
    /// The seq the next appended event must carry.
    pub fn next_seq(&self) -> u64 {
        self.events.len() as u64
    }

    /// The file length at which appends continue once the torn tail (if any) is cut off.
    pub fn durable_len(&self) -> u64 {
        self.torn_tail
            .as_ref()
            .map_or(self.file_len, |tail| tail.truncate_to)
    }
}

/// The incomplete end of a log left by a crash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    pub reason: TornReason,
    /// The first record that was dropped.
    pub at: RecordLocation,
    /// Cut the file to this many bytes before appending again.
    pub truncate_to: u64,
    /// Events from this seq on were decoded from the zstd frame being cut; they are part of
    /// the durable prefix and must be written again after the cut. Equals the event count
    /// when nothing has to be rewritten.
    pub rewrite_from: u64,
}

/// Why a tail was judged torn.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TornReason {
    /// A line that is not a JSON object with a string `type`.
    UnparsableRecord,
    /// The file ends inside a line (plain) — the write that made it never completed.
    IncompleteLine,
    /// The file ends inside a zstd frame.
    IncompleteFrame,
    /// Only zero bytes follow the last frame.
    ZeroFill,
    /// A record does not continue the seq sequence.
    SeqGap { expected: u64, found: Option<u64> },
}

impl TornReason {
    fn describe(&self) -> String {
        match self {
            TornReason::UnparsableRecord => "unparsable record".into(),
            TornReason::IncompleteLine => "incomplete final line".into(),
            TornReason::IncompleteFrame => "incomplete zstd frame".into(),
            TornReason::ZeroFill => "zero-filled tail".into(),
            TornReason::SeqGap {
                expected,
                found: Some(found),
            } => format!("seq gap: expected seq {expected}, found {found}"),
            TornReason::SeqGap {
                expected,
                found: None,
            } => format!("seq gap: expected seq {expected}, found a record without one"),
        }
    }
}

/// One stored line and where it sits.
struct Line<'a> {
    text: &'a [u8],
    at: RecordLocation,
    /// Where the file is cut if this line is the first one dropped.
    cut_at: u64,
    /// Terminated by `\n`, or the last line of a complete (checksummed) frame.
    whole: bool,
    /// Ended by the end of the data inside an incomplete frame.
    in_incomplete_frame: bool,
}

fn split_lines<'a>(
    text: &'a [u8],
    first_line: u64,
    frame: Option<FrameLocation>,
    base_offset: u64,
    complete_container: bool,
    out: &mut Vec<Line<'a>>,
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
            out.push(Line {
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

/// Reads and checks a whole log.
///
/// `expected_id`, when given, must match the header id (the path was derived from it).
pub fn read_log(
    path: &Path,
    compression: Compression,
    expected_id: Option<&str>,
) -> Result<StoredLog, StoreError> {
    let data = std::fs::read(path).map_err(|e| StoreError::io("read", path, e))?;
    parse_log(path, compression, &data, expected_id)
}

/// Parses log bytes already in memory (see [`read_log`]).
pub fn parse_log(
    path: &Path,
    compression: Compression,
    data: &[u8],
    expected_id: Option<&str>,
) -> Result<StoredLog, StoreError> {
    let mut events = Vec::new();
    let shell = parse_records(
        path,
        compression,
        data,
        expected_id,
        &mut |text, next_seq| decode_value_line(text, next_seq, &mut events),
    )?;
    Ok(StoredLog {
        path: path.to_owned(),
        compression,
        header: shell.header,
        events,
        torn_tail: shell.torn_tail,
        file_len: shell.file_len,
    })
}

/// Why a record line does not continue the log.
pub(crate) enum LineError {
    /// The line starts a torn tail (if nothing after it commits a turn).
    Torn(TornReason),
    /// The line is damaged in a way no crash produces.
    Corrupt(String),
}

/// Decodes one record line whose first event must carry the given seq, appending its
/// events to the decoder's own list; returns how many it appended.
pub(crate) type LineDecoder<'a> = dyn FnMut(&[u8], u64) -> Result<u64, LineError> + 'a;

/// What [`parse_records`] finds besides the events (which the decoder collected).
pub(crate) struct LogShell {
    pub header: LogHeader,
    pub torn_tail: Option<TornTail>,
    pub file_len: u64,
}

/// The general decoder: a record is any JSON object with a string `type`; packed rows are
/// expanded; every event must continue the seq sequence.
pub(crate) fn decode_value_line(
    text: &[u8],
    next_seq: u64,
    events: &mut Vec<Value>,
) -> Result<u64, LineError> {
    let record = match serde_json::from_slice::<Value>(text) {
        Ok(record @ Value::Object(_)) if record.get("type").is_some_and(Value::is_string) => record,
        _ => return Err(LineError::Torn(TornReason::UnparsableRecord)),
    };
    let decoded = match chunk_rows::unpack(record) {
        Ok(Unpacked::Event(event)) => vec![event],
        Ok(Unpacked::Run(run)) => run,
        Err(reason) => return Err(LineError::Corrupt(reason)),
    };
    let mut count = 0;
    for event in decoded {
        let expected = next_seq + count;
        let found = event.get("seq").and_then(Value::as_u64);
        if found != Some(expected) {
            // Rows hold contiguous seqs, so only a line's first event can miss.
            return Err(LineError::Torn(TornReason::SeqGap { expected, found }));
        }
        events.push(event);
        count += 1;
    }
    Ok(count)
}

/// Splits a log into records, checks its header and judges damage; the records' events are
/// handed to `decode` in order.
pub(crate) fn parse_records(
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
            split_lines(data, 1, None, 0, false, &mut lines);
        }
        Compression::Zstd => {
            decoded = frames::decode_frames(data)
                .map_err(|e| StoreError::io("decode zstd frames of", path, e))?;
            let mut next_line = 1;
            for frame in &decoded.frames {
                let loc = Some(frame.location);
                let before = lines.len();
                let text = decoded.text_of(frame);
                next_line = split_lines(text, next_line, loc, 0, frame.complete, &mut lines);
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
                    format!(
                        "{} before a committed turn/end at {}",
                        reason.describe(),
                        later.at
                    ),
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
                format!("{} inside the header frame", tail.reason.describe()),
            ));
        }
    }
    Ok(LogShell {
        header,
        torn_tail,
        file_len,
    })
}

fn compression_frame0(compression: Compression) -> Option<FrameLocation> {
    match compression {
        Compression::Zstd => Some(FrameLocation {
            index: 0,
            offset: 0,
        }),
        Compression::None => None,
    }
}

fn cut_tail(
    line: &Line<'_>,
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

/// Whether a stored line is (or, if unparsable, visibly contains) a `turn/end` record.
fn holds_turn_end(text: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(text) {
        Ok(value) => value.get("type").and_then(Value::as_str) == Some("turn/end"),
        // Inside a JSON string the quotes would be escaped, so this only matches structure.
        Err(_) => text
            .windows(br#""type":"turn/end""#.len())
            .any(|w| w == br#""type":"turn/end""#),
    }
}

/// Reads only the header of a log: one line, or the first zstd frame.
pub fn read_header(path: &Path, compression: Compression) -> Result<LogHeader, StoreError> {
    let mut file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
    let at = RecordLocation {
        line: 1,
        frame: compression_frame0(compression),
    };
    let corrupt = |reason: String| StoreError::Corruption {
        path: path.to_owned(),
        at,
        reason,
    };
    let (line, whole) = match compression {
        Compression::Zstd => frames::decode_first_line(&mut file).map_err(|e| match e.kind() {
            io::ErrorKind::Other | io::ErrorKind::InvalidData => {
                corrupt(format!("the header frame does not decode: {e}"))
            }
            _ => StoreError::io("read", path, e),
        })?,
        Compression::None => {
            let mut line = Vec::new();
            // A header is small; the cap keeps a garbage file from being read whole.
            BufReader::new(&mut file)
                .take(1 << 20)
                .read_until(b'\n', &mut line)
                .map_err(|e| StoreError::io("read", path, e))?;
            let whole = line.ends_with(b"\n");
            (line, whole)
        }
    };
    if !whole {
        return Err(corrupt("the header line is incomplete".into()));
    }
    let value: Value = serde_json::from_slice(&line)
        .map_err(|e| corrupt(format!("the header does not parse: {e}")))?;
    LogHeader::from_value(value).map_err(|e| match e {
        HeaderError::Malformed(reason) => corrupt(reason),
        HeaderError::Unsupported(version) => StoreError::UnsupportedFormat {
            path: path.to_owned(),
            version,
        },
    })
}
