//! Reading a log straight into typed events: the resume path.
//!
//! [`read_log`](crate::read_log) yields `serde_json::Value` records, which is what tools
//! that must carry anything need. Resuming needs typed events, and building a `Value` per
//! event first (then converting, then freeing it) was most of the time a resume took. This
//! reader shares the general one's framing, header checks and torn-tail judgement, and
//! decodes each line directly: packed rows and events of the usual shapes on a fast path,
//! every other line exactly as the general reader does.
//!
//! One difference is deliberate and harmless: the typed reader skips fields of known event
//! types that this build does not model without checking they are well-formed JSON numbers
//! and strings (the general reader builds a `Value` of them, and fails on e.g. `1e999`).
//! Such a field can only come from a foreign writer, never from a crash.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_session::{SessionError, SessionEvent};

use crate::chunk_rows;
use crate::error::StoreError;
use crate::header::LogHeader;
use crate::paths::Compression;
use crate::reader::{decode_value_line, parse_records, LineError, LogBytes, TornReason, TornTail};
use crate::typed_rows;

/// A log as read from disk, its events typed.
#[derive(Clone, Debug, PartialEq)]
pub struct TypedLog {
    pub path: PathBuf,
    pub compression: Compression,
    pub header: LogHeader,
    /// Every event of the durable prefix; `events[i].seq == i`.
    pub events: Vec<Arc<SessionEvent>>,
    /// What a crash left after the durable prefix, if anything.
    pub torn_tail: Option<TornTail>,
    /// The file's length when it was read.
    pub file_len: u64,
}

impl TypedLog {
    /// The seq the next appended event must carry.
    pub fn next_seq(&self) -> u64 {
        self.events.len() as u64
    }
}

/// Reads and checks a whole log into typed events (see [`read_log`](crate::read_log) for
/// what is checked). An event the session model refuses is [`StoreError::Rejected`].
pub fn read_typed_log(
    path: &Path,
    compression: Compression,
    expected_id: Option<&str>,
) -> Result<TypedLog, StoreError> {
    refuse(path, read_typed(path, compression, expected_id)?)
}

/// Parses log bytes already in memory (see [`read_typed_log`]).
pub fn parse_typed_log(
    path: &Path,
    compression: Compression,
    data: &[u8],
    expected_id: Option<&str>,
) -> Result<TypedLog, StoreError> {
    refuse(
        path,
        parse_typed(path, compression, LogBytes::memory(data), expected_id)?,
    )
}

/// The log, or the first event the session model refused in it.
fn refuse(
    path: &Path,
    (log, refused): (TypedLog, Option<SessionError>),
) -> Result<TypedLog, StoreError> {
    match refused {
        Some(source) => Err(StoreError::Rejected {
            path: path.to_owned(),
            source,
        }),
        None => Ok(log),
    }
}

/// Parses a log; an event the session model refuses does not stop the parse (damage
/// found later still wins, as it does when typing after a general read) but is returned
/// beside the log, first one only. The log's events then stop short of it.
pub(crate) fn read_typed(
    path: &Path,
    compression: Compression,
    expected_id: Option<&str>,
) -> Result<(TypedLog, Option<SessionError>), StoreError> {
    parse_typed(path, compression, LogBytes::open(path)?, expected_id)
}

fn parse_typed(
    path: &Path,
    compression: Compression,
    data: LogBytes<'_>,
    expected_id: Option<&str>,
) -> Result<(TypedLog, Option<SessionError>), StoreError> {
    let mut events = Vec::new();
    let mut refused = None;
    let shell = parse_records(
        path,
        compression,
        data,
        expected_id,
        &mut |text, next_seq| decode_typed_line(text, next_seq, &mut events, &mut refused),
    )?;
    let log = TypedLog {
        path: path.to_owned(),
        compression,
        header: shell.header,
        events,
        torn_tail: shell.torn_tail,
        file_len: shell.file_len,
    };
    Ok((log, refused))
}

/// The `type` of a record written the usual way (`{"type":"…"` first, no escapes).
fn leading_type(text: &[u8]) -> Option<&str> {
    let rest = text.strip_prefix(br#"{"type":""#)?;
    let end = rest.iter().position(|b| *b == b'"' || *b == b'\\')?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

pub(crate) fn decode_typed_line(
    text: &[u8],
    next_seq: u64,
    events: &mut Vec<Arc<SessionEvent>>,
    refused: &mut Option<SessionError>,
) -> Result<u64, LineError> {
    let gap = |found: u64| {
        LineError::Torn(TornReason::SeqGap {
            expected: next_seq,
            found: Some(found),
        })
    };
    match leading_type(text) {
        Some(record_type) if chunk_rows::is_packed_row_type(record_type) => {
            if let Some(run) = typed_rows::unpack_line(text) {
                let first = run.first().map_or(next_seq, |e| e.seq);
                if first != next_seq {
                    return Err(gap(first));
                }
                let count = run.len() as u64;
                events.extend(run);
                return Ok(count);
            }
        }
        Some(_) => {
            if let Ok(event) = SessionEvent::from_json_slice(text) {
                if event.seq != next_seq {
                    return Err(gap(event.seq));
                }
                events.push(Arc::new(event));
                return Ok(1);
            }
        }
        None => {}
    }
    // Anything unusual: decode exactly as the general reader does, then type.
    let mut values = Vec::new();
    let count = decode_value_line(text, next_seq, &mut values)?;
    for value in &values {
        match SessionEvent::from_value(value) {
            Ok(event) if refused.is_none() => events.push(Arc::new(event)),
            Ok(_) => {}
            Err(err) => {
                refused.get_or_insert(err);
            }
        }
    }
    Ok(count)
}
