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
use crate::frames::FrameWork;
use crate::header::LogHeader;
use crate::paths::Compression;
use crate::reader::{
    decode_value_line, parse_records_working, Ahead, LineError, LogBytes, LogShell, TornReason,
    TornTail,
};
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

pub(crate) fn parse_typed(
    path: &Path,
    compression: Compression,
    data: LogBytes<'_>,
    expected_id: Option<&str>,
) -> Result<(TypedLog, Option<SessionError>), StoreError> {
    let mut events = Vec::new();
    let (shell, refused) = scan_typed(path, compression, data, expected_id, &mut events)?;
    let mut log = typed_shell(path, compression, shell);
    log.events = events;
    Ok((log, refused))
}

/// [`read_typed`] handing the events to `sink` as they are typed; the log comes back
/// without them. Resume and inspection pass a [`dsh_session::SeedLog`], which validates
/// each event while the file is still being decoded.
pub(crate) fn read_typed_into(
    path: &Path,
    compression: Compression,
    expected_id: Option<&str>,
    sink: &mut impl Extend<Arc<SessionEvent>>,
) -> Result<(TypedLog, Option<SessionError>), StoreError> {
    let (shell, refused) = scan_typed_file(path, compression, expected_id, sink)?;
    Ok((typed_shell(path, compression, shell), refused))
}

/// A typed log of what the scan found, its events not yet in it.
fn typed_shell(path: &Path, compression: Compression, shell: LogShell) -> TypedLog {
    TypedLog {
        path: path.to_owned(),
        compression,
        header: shell.header,
        events: Vec::new(),
        torn_tail: shell.torn_tail,
        file_len: shell.file_len,
    }
}

/// Reads a log's durable prefix into `sink`, event by event in seq order, instead of into
/// a `Vec`: the listing index folds each event into a summary and drops it, so summarizing
/// a log holds one frame's events at a time, not the whole session. Checks and the refused
/// event are as in [`read_typed`]; on an error, `sink` has seen a prefix of the events.
pub(crate) fn scan_typed_file(
    path: &Path,
    compression: Compression,
    expected_id: Option<&str>,
    sink: &mut impl Extend<Arc<SessionEvent>>,
) -> Result<(LogShell, Option<SessionError>), StoreError> {
    scan_typed(path, compression, LogBytes::open(path)?, expected_id, sink)
}

fn scan_typed(
    path: &Path,
    compression: Compression,
    data: LogBytes<'_>,
    expected_id: Option<&str>,
    sink: &mut impl Extend<Arc<SessionEvent>>,
) -> Result<(LogShell, Option<SessionError>), StoreError> {
    let mut refused = None;
    // Lines the decoding thread typed ahead, for the frame being scanned.
    let ahead = std::cell::RefCell::new(TypedAhead::default());
    let shell = parse_records_working(
        path,
        compression,
        data,
        expected_id,
        Ahead {
            work: &TypeLines,
            arrive: &mut |text, done| ahead.borrow_mut().arrive(text, done),
        },
        &mut |text, next_seq| {
            let typed = ahead
                .borrow_mut()
                .take(text)
                .unwrap_or_else(|| type_line(text));
            admit(typed, text, next_seq, sink, &mut refused)
        },
    )?;
    Ok((shell, refused))
}

/// A line typed on its own, before its place in the log is known.
pub(crate) enum TypedLine {
    /// A packed row's events.
    Run(Vec<Arc<SessionEvent>>),
    /// One event of a usual shape.
    One(Arc<SessionEvent>),
    /// Anything else: decoded the general way when its turn comes.
    Unusual,
}

/// Types a line on the fast path alone. A pure function of the text, so it gives the same
/// on whichever thread it runs.
pub(crate) fn type_line(text: &[u8]) -> TypedLine {
    match leading_type(text) {
        Some(record_type) if chunk_rows::is_packed_row_type(record_type) => {
            typed_rows::unpack_line(text).map_or(TypedLine::Unusual, TypedLine::Run)
        }
        Some(_) => SessionEvent::from_json_slice(text)
            .map_or(TypedLine::Unusual, |event| TypedLine::One(Arc::new(event))),
        None => TypedLine::Unusual,
    }
}

/// The frame work of the typed read: every line of a complete frame typed on the decoding
/// thread, each with its offset in the frame's text.
struct TypeLines;

impl FrameWork for TypeLines {
    type Done = Vec<(usize, TypedLine)>;

    fn work(&self, text: &[u8]) -> Self::Done {
        let mut typed = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
            let line = &text[start..end];
            if !line.iter().all(u8::is_ascii_whitespace) {
                typed.push((start, type_line(line)));
            }
            start = end + 1;
        }
        typed
    }
}

/// The typed-ahead lines of the frame being scanned, matched to the scan's lines by where
/// they start in the frame's text.
struct TypedAhead {
    /// Where the frame's text starts in memory.
    frame_start: usize,
    /// The frame's lines typed ahead, in order, the next one to be scanned first.
    lines: std::iter::Peekable<std::vec::IntoIter<(usize, TypedLine)>>,
}

impl Default for TypedAhead {
    fn default() -> Self {
        TypedAhead {
            frame_start: 0,
            lines: Vec::new().into_iter().peekable(),
        }
    }
}

impl TypedAhead {
    fn arrive(&mut self, frame_text: &[u8], done: Option<Vec<(usize, TypedLine)>>) {
        self.frame_start = frame_text.as_ptr() as usize;
        self.lines = done.unwrap_or_default().into_iter().peekable();
    }

    /// The typed-ahead form of the line `text` (a slice of the current frame's text).
    fn take(&mut self, text: &[u8]) -> Option<TypedLine> {
        let offset = (text.as_ptr() as usize).checked_sub(self.frame_start)?;
        // Lines the scan does not decode (the header) are passed over.
        while self.lines.next_if(|(at, _)| *at < offset).is_some() {}
        self.lines
            .next_if(|(at, _)| *at == offset)
            .map(|(_, typed)| typed)
    }
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

/// The typed reader's line decoder without lines typed ahead (the reader tests compare the
/// scan with the old whole-file reader through it).
#[cfg(test)]
pub(crate) fn decode_typed_line(
    text: &[u8],
    next_seq: u64,
    events: &mut Vec<Arc<SessionEvent>>,
    refused: &mut Option<SessionError>,
) -> Result<u64, LineError> {
    admit(type_line(text), text, next_seq, events, refused)
}

/// Adds a typed line's events to the log once their seqs are checked; an unusual line is
/// decoded exactly as the general reader does, then typed.
fn admit(
    typed: TypedLine,
    text: &[u8],
    next_seq: u64,
    events: &mut impl Extend<Arc<SessionEvent>>,
    refused: &mut Option<SessionError>,
) -> Result<u64, LineError> {
    let gap = |found: u64| {
        LineError::Torn(TornReason::SeqGap {
            expected: next_seq,
            found: Some(found),
        })
    };
    match typed {
        TypedLine::Run(run) => {
            let first = run.first().map_or(next_seq, |e| e.seq);
            if first != next_seq {
                return Err(gap(first));
            }
            let count = run.len() as u64;
            events.extend(run);
            return Ok(count);
        }
        TypedLine::One(event) => {
            if event.seq != next_seq {
                return Err(gap(event.seq));
            }
            events.extend([event]);
            return Ok(1);
        }
        TypedLine::Unusual => {}
    }
    let mut values = Vec::new();
    let count = decode_value_line(text, next_seq, &mut values)?;
    for value in &values {
        match SessionEvent::from_value(value) {
            Ok(event) if refused.is_none() => events.extend([Arc::new(event)]),
            Ok(_) => {}
            Err(err) => {
                refused.get_or_insert(err);
            }
        }
    }
    Ok(count)
}
