//! The record scan: a log's lines fed one at a time, header first, with the torn-tail and
//! damage judgement made as they come.
//!
//! Lines arrive frame by frame (or, for a plain log, straight from the file's bytes) and
//! are decoded the moment they arrive, so the decoded text of a zstd log is never held
//! whole. The verdict is the one a reader holding every line would reach: a damaged zstd
//! frame wins over anything found in the lines before it (lines keep being counted after
//! the first error so its location is right), and a torn record is only a torn tail when no
//! later line holds a committed `turn/end`.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::{holds_turn_end, LineDecoder, LineError, LogShell, TornReason, TornTail};
use crate::error::{FrameLocation, RecordLocation, StoreError};
use crate::frames::{
    self, Compressed, DecodedFrame, FrameWork, FramesEnd, NoWork, ReadWindow, WINDOW_BYTES,
};
use crate::header::{HeaderError, LogHeader};
use crate::paths::Compression;

/// One stored line and where it sits.
pub(super) struct Line<'a> {
    pub text: &'a [u8],
    pub at: RecordLocation,
    /// Where the file is cut if this line is the first one dropped.
    pub cut_at: u64,
    /// Terminated by `\n`, or the last line of a complete (checksummed) frame.
    pub whole: bool,
    /// Ended by the end of the data inside an incomplete frame.
    pub in_incomplete_frame: bool,
}

/// Hands every non-blank line of `text` to `visit`; returns the number the next line gets.
pub(super) fn split_lines(
    text: &[u8],
    first_line: u64,
    frame: Option<FrameLocation>,
    complete_container: bool,
    visit: &mut dyn FnMut(Line<'_>),
) -> u64 {
    let mut start = 0usize;
    let mut line = first_line;
    while start < text.len() {
        let (end, terminated) = match memchr::memchr(b'\n', &text[start..]) {
            Some(i) => (start + i, true),
            None => (text.len(), false),
        };
        let slice = &text[start..end];
        if !slice.iter().all(u8::is_ascii_whitespace) {
            visit(Line {
                text: slice,
                at: RecordLocation { line, frame },
                cut_at: frame.map_or(start as u64, |f| f.offset),
                whole: terminated || (frame.is_some() && complete_container),
                in_incomplete_frame: frame.is_some() && !complete_container,
            });
        }
        line += 1;
        start = end + 1;
    }
    line
}

/// How far the scan has got.
enum Stage {
    /// No line seen yet.
    Header,
    /// Decoding events.
    Events(LogHeader),
    /// A record started a torn tail; later lines are only searched for a `turn/end`.
    Torn(LogHeader, TornTail),
    /// The log is damaged; later lines are only counted.
    Failed(StoreError),
}

/// The scan's state between lines.
struct RecordScan<'a, 'd> {
    path: &'a Path,
    expected_id: Option<&'a str>,
    decode: &'a mut LineDecoder<'d>,
    stage: Stage,
    next_seq: u64,
    /// The current zstd frame's index and the first seq decoded from it, to know what a
    /// cut must rewrite.
    frame_first_seq: Option<(u64, u64)>,
}

impl RecordScan<'_, '_> {
    fn corrupt(&self, at: RecordLocation, reason: String) -> StoreError {
        StoreError::Corruption {
            path: self.path.to_owned(),
            at,
            reason,
        }
    }

    fn line(&mut self, line: Line<'_>) {
        let stage = std::mem::replace(&mut self.stage, Stage::Header);
        self.stage = match stage {
            Stage::Header => match self.header(&line) {
                Ok(header) => Stage::Events(header),
                Err(error) => Stage::Failed(error),
            },
            Stage::Events(header) => self.event_line(header, &line),
            Stage::Torn(_, tail) if holds_turn_end(line.text) => Stage::Failed(self.corrupt(
                tail.at,
                format!("{} before a committed turn/end at {}", tail.reason, line.at),
            )),
            other => other,
        };
    }

    fn header(&self, first: &Line<'_>) -> Result<LogHeader, StoreError> {
        if !first.whole || first.in_incomplete_frame {
            return Err(self.corrupt(first.at, "the header line is incomplete".into()));
        }
        let header_value: Value = serde_json::from_slice(first.text)
            .map_err(|e| self.corrupt(first.at, format!("the header does not parse: {e}")))?;
        let header = LogHeader::from_value(header_value).map_err(|e| match e {
            HeaderError::Malformed(reason) => self.corrupt(first.at, reason),
            HeaderError::Unsupported(version) => StoreError::UnsupportedFormat {
                path: self.path.to_owned(),
                version,
            },
        })?;
        if let Some(expected) = self.expected_id {
            if header.id != expected {
                return Err(self.corrupt(
                    first.at,
                    format!(
                        "the header names session {:?}, but the path belongs to {expected:?}",
                        header.id
                    ),
                ));
            }
        }
        Ok(header)
    }

    fn event_line(&mut self, header: LogHeader, line: &Line<'_>) -> Stage {
        if let Some(frame) = line.at.frame {
            if self
                .frame_first_seq
                .is_none_or(|(index, _)| index != frame.index)
            {
                self.frame_first_seq = Some((frame.index, self.next_seq));
            }
        }
        if !line.whole {
            let reason = if line.in_incomplete_frame {
                TornReason::IncompleteFrame
            } else {
                TornReason::IncompleteLine
            };
            return Stage::Torn(header, self.cut_tail(line, reason));
        }
        match (self.decode)(line.text, self.next_seq) {
            Ok(count) => {
                self.next_seq += count;
                Stage::Events(header)
            }
            Err(LineError::Torn(reason)) => Stage::Torn(header, self.cut_tail(line, reason)),
            Err(LineError::Corrupt(reason)) => Stage::Failed(self.corrupt(line.at, reason)),
        }
    }

    fn cut_tail(&self, line: &Line<'_>, reason: TornReason) -> TornTail {
        let rewrite_from = match (line.at.frame, self.frame_first_seq) {
            (Some(frame), Some((index, first))) if frame.index == index => first,
            _ => self.next_seq,
        };
        TornTail {
            reason,
            at: line.at,
            truncate_to: line.cut_at,
            rewrite_from,
        }
    }

    /// The verdict once every line is in; `end_tail` is what the container's end left
    /// (an incomplete or zero-filled final frame).
    fn finish(
        self,
        header_at: RecordLocation,
        end_tail: Option<(FrameLocation, u64, TornReason)>,
        file_len: u64,
    ) -> Result<LogShell, StoreError> {
        let (header, torn_tail) = match self.stage {
            Stage::Failed(error) => return Err(error),
            Stage::Header => {
                return Err(StoreError::Corruption {
                    path: self.path.to_owned(),
                    at: header_at,
                    reason: "the log has no header".into(),
                })
            }
            Stage::Torn(header, tail) => (header, Some(tail)),
            Stage::Events(header) => {
                let tail = end_tail.map(|(frame, line, reason)| {
                    let rewrite_from = match self.frame_first_seq {
                        Some((index, first)) if index == frame.index => first,
                        _ => self.next_seq,
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
                });
                (header, tail)
            }
        };
        if let Some(tail) = &torn_tail {
            if tail.at.frame.is_some_and(|f| f.index == 0) {
                return Err(StoreError::Corruption {
                    path: self.path.to_owned(),
                    at: tail.at,
                    reason: format!("{} inside the header frame", tail.reason),
                });
            }
        }
        Ok(LogShell {
            header,
            torn_tail,
            file_len,
        })
    }
}

/// The bytes of a log: already in memory, or read as they are decoded.
pub(crate) enum LogBytes<'a, R = std::fs::File> {
    Memory(&'a [u8]),
    /// A zstd log is read a window at a time; a plain one is read whole (its lines are
    /// its text, so holding them is the floor anyway).
    Read(ReadWindow<R>),
}

impl<'a> LogBytes<'a> {
    /// A log held in memory.
    pub(crate) fn memory(data: &'a [u8]) -> Self {
        LogBytes::Memory(data)
    }

    /// The log at `path`, opened to be read as it is decoded.
    pub(crate) fn open(path: &Path) -> Result<Self, StoreError> {
        let file = std::fs::File::open(path).map_err(|e| StoreError::io("read", path, e))?;
        let size = file
            .metadata()
            .map_err(|e| StoreError::io("read", path, e))?
            .len();
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        Ok(LogBytes::Read(ReadWindow::new(file, size, WINDOW_BYTES)))
    }
}

/// Splits a log into records, checks its header and judges damage; the records' events are
/// handed to `decode` in order.
pub(crate) fn parse_records<R: Read + Send>(
    path: &Path,
    compression: Compression,
    data: LogBytes<'_, R>,
    expected_id: Option<&str>,
    decode: &mut LineDecoder<'_>,
) -> Result<LogShell, StoreError> {
    let ahead = Ahead {
        work: &NoWork,
        arrive: &mut |_, _| {},
    };
    parse_records_working(path, compression, data, expected_id, ahead, decode)
}

/// Frame work for the decoding thread to do ahead (see [`FrameWork`]), and where its
/// results go: `arrive` gets each zstd frame's text, with the work's result when it was
/// done for that frame, just before the frame's lines go to the decoder.
pub(crate) struct Ahead<'a, W: FrameWork> {
    pub work: &'a W,
    pub arrive: &'a mut Arrive<'a, W::Done>,
}

/// Takes a frame's text, and the frame work's result if it was done for it.
pub(crate) type Arrive<'a, D> = dyn FnMut(&[u8], Option<D>) + 'a;

/// [`parse_records`] with frame work done ahead where the decoding thread has time for it.
pub(crate) fn parse_records_working<R: Read + Send, W: FrameWork>(
    path: &Path,
    compression: Compression,
    data: LogBytes<'_, R>,
    expected_id: Option<&str>,
    ahead: Ahead<'_, W>,
    decode: &mut LineDecoder<'_>,
) -> Result<LogShell, StoreError> {
    let Ahead { work, arrive } = ahead;
    let mut scan = RecordScan {
        path,
        expected_id,
        decode,
        stage: Stage::Header,
        next_seq: 0,
        frame_first_seq: None,
    };
    let Compression::Zstd = compression else {
        let mut window;
        let data = match data {
            LogBytes::Memory(data) => data,
            LogBytes::Read(read) => {
                window = read;
                window
                    .read_to_end()
                    .map_err(|e| StoreError::io("read", path, e))?;
                window.rest(0)
            }
        };
        split_lines(data, 1, None, false, &mut |line| scan.line(line));
        let header_at = RecordLocation {
            line: 1,
            frame: None,
        };
        return scan.finish(header_at, None, data.len() as u64);
    };
    let mut next_line = 1;
    let mut frames_seen = 0u64;
    let mut end_tail = None;
    let mut on_frame = |frame: DecodedFrame<'_>, done: Option<W::Done>| {
        frames_seen += 1;
        arrive(frame.text, done);
        let mut first_line = None;
        next_line = split_lines(
            frame.text,
            next_line,
            Some(frame.location),
            frame.complete,
            &mut |line| {
                first_line.get_or_insert(line.at.line);
                scan.line(line);
            },
        );
        if !frame.complete {
            // Even when every decoded line is whole, the frame is unverified and must be
            // cut and its records written again.
            let first = first_line.unwrap_or(next_line);
            end_tail.get_or_insert((frame.location, first, TornReason::IncompleteFrame));
        }
    };
    let (end, file_len) = match data {
        LogBytes::Memory(data) => (
            frames::visit_frames_working(data, work, &mut on_frame),
            data.len(),
        ),
        LogBytes::Read(mut window) => (
            frames::visit_frames_working(&mut window, work, &mut on_frame),
            window.read_len(),
        ),
    };
    let file_len = file_len as u64;
    let end = end.map_err(|e| StoreError::io("decode zstd frames of", path, e))?;
    match end {
        FramesEnd::Clean => {}
        FramesEnd::ZeroFilled { offset } => {
            let location = FrameLocation {
                index: frames_seen,
                offset,
            };
            end_tail.get_or_insert((location, next_line, TornReason::ZeroFill));
        }
        FramesEnd::Damaged { location, message } => {
            // No crash damages a frame: this wins over whatever the lines before it said.
            return Err(StoreError::Corruption {
                path: path.to_owned(),
                at: RecordLocation {
                    line: next_line,
                    frame: Some(location),
                },
                reason: format!("zstd frame does not decode: {message}"),
            });
        }
    }
    let header_at = RecordLocation {
        line: 1,
        frame: Some(FrameLocation {
            index: 0,
            offset: 0,
        }),
    };
    scan.finish(header_at, end_tail, file_len)
}
