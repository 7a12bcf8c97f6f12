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
use crate::frames;
use crate::header::{HeaderError, LogHeader};
use crate::paths::Compression;

mod scan;
pub(crate) use scan::{parse_records, parse_records_working, Ahead, LogBytes};

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

/// What a person reads: "incomplete zstd frame", "seq gap: expected seq 7, found 9".
impl std::fmt::Display for TornReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TornReason::UnparsableRecord => f.write_str("unparsable record"),
            TornReason::IncompleteLine => f.write_str("incomplete final line"),
            TornReason::IncompleteFrame => f.write_str("incomplete zstd frame"),
            TornReason::ZeroFill => f.write_str("zero-filled tail"),
            TornReason::SeqGap {
                expected,
                found: Some(found),
            } => write!(f, "seq gap: expected seq {expected}, found {found}"),
            TornReason::SeqGap {
                expected,
                found: None,
            } => write!(
                f,
                "seq gap: expected seq {expected}, found a record without one"
            ),
        }
    }
}

/// Reads and checks a whole log.
///
/// `expected_id`, when given, must match the header id (the path was derived from it).
pub fn read_log(
    path: &Path,
    compression: Compression,
    expected_id: Option<&str>,
) -> Result<StoredLog, StoreError> {
    parse_log_bytes(path, compression, LogBytes::open(path)?, expected_id)
}

/// Parses log bytes already in memory (see [`read_log`]).
pub fn parse_log(
    path: &Path,
    compression: Compression,
    data: &[u8],
    expected_id: Option<&str>,
) -> Result<StoredLog, StoreError> {
    parse_log_bytes(path, compression, LogBytes::memory(data), expected_id)
}

fn parse_log_bytes(
    path: &Path,
    compression: Compression,
    data: LogBytes<'_>,
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

fn compression_frame0(compression: Compression) -> Option<FrameLocation> {
    match compression {
        Compression::Zstd => Some(FrameLocation {
            index: 0,
            offset: 0,
        }),
        Compression::None => None,
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

#[cfg(test)]
mod tests;
