//! The zstd container: a file is a concatenation of independent, checksummed frames.
//!
//! The header line gets a frame of its own so that listing decodes a few hundred bytes, not
//! the whole log; every durable append batch is one more frame, so a crash mid-append can
//! only damage the last frame, and the frames before it stay readable.
//!
//! Reading hands the frames to a visitor one at a time, so a log's decoded text (a full
//! copy of it, 2–4× the file) is never held whole: the reader types a frame's lines and
//! lets its text go. A small log is decoded frame by frame into one reused buffer on the
//! reader's thread; a large one on a second thread, a few batches of ~128 KiB of text ahead
//! of the reader (at most four held), so zstd and the typed parse run side by side, and
//! that thread does some of the reader's work itself when it gets too far ahead
//! ([`FrameWork`], `pipeline`).

use std::io::{self, Read};

use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};
use zstd::zstd_safe::{self, CParameter, DCtx, ParamSwitch};

use crate::error::FrameLocation;

mod input;
mod pipeline;

pub(crate) use input::{Compressed, ReadWindow, WINDOW_BYTES};
use pipeline::{has_second_core, visit_frames_pipelined, AheadRule, PIPELINE_MIN_BYTES};

/// Compression level of a large frame: the zstd default, cheap and effective on JSON.
const LEVEL: i32 = 3;
const OUT_CHUNK: usize = 64 * 1024;

/// Text size below which a frame is written for fast reading rather than for size.
///
/// A frame is one durable batch, and most batches are small (a step writes three of about
/// a kilobyte). Decoding a small frame is mostly reading the entropy tables it carries, not
/// decoding data: on a 10k-event log of 3,000 frames, the literals' Huffman tables alone
/// took nearly half of the zstd time. So a small frame stores its literals raw, at level 1
/// (fewer sequences, fewer custom tables); a batch that does not compress at all is stored
/// as it is. On the read-path bench's 10k-event log that decodes 3.3× as fast (7.8 → 2.4
/// ms) and is a quarter larger (1.25 → 1.56 MB). From this size on, the tables are a small
/// share of the decoding and the text (a large tool result, a file read) is most of the
/// log's bytes, so the frame is written at the default level with its literals coded.
/// Either way it is a plain zstd frame any reader decodes, the original's included, and
/// logs written before read as they always did (docs/performance.md, "Session read path",
/// stop 32).
const SMALL_FRAME_TEXT: usize = 16 * 1024;

/// How a frame of this many bytes of text is compressed: (level, literals compressed).
fn frame_parameters(text_len: usize) -> (i32, ParamSwitch) {
    if text_len < SMALL_FRAME_TEXT {
        (1, ParamSwitch::Disable)
    } else {
        (LEVEL, ParamSwitch::Auto)
    }
}

thread_local! {
    /// One compression context per writing thread, kept between batches: creating one
    /// (allocating and clearing its tables) cost more than compressing a step's small
    /// batch. Its level and literal mode are set for each frame ([`frame_parameters`]);
    /// the same text always gives the same bytes.
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Compresses `text` into one checksummed frame.
pub(crate) fn encode_frame(text: &[u8]) -> io::Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(io::Error::other)?;
        let compressor = match slot.as_mut() {
            Some(compressor) => compressor,
            None => {
                let mut compressor = zstd::bulk::Compressor::new(LEVEL)?;
                compressor.set_parameter(CParameter::ChecksumFlag(true))?;
                slot.insert(compressor)
            }
        };
        let (level, literals) = frame_parameters(text.len());
        compressor.set_compression_level(level)?;
        // A speed knob, never a reason to lose a batch: a zstd library that refuses it (a
        // system one built without zstd's experimental parameters) still writes a valid
        // frame, with its literals coded as before.
        let _ = compressor.set_parameter(CParameter::LiteralCompressionMode(literals));
        compressor.compress(text)
    })
}

/// How the byte stream after the last decoded frame looks.
#[derive(Debug, PartialEq)]
pub(crate) enum FramesEnd {
    /// The file ends exactly after a complete frame (or inside the last, incomplete one).
    Clean,
    /// Only zero bytes follow: space a crash left allocated but never wrote.
    ZeroFilled { offset: u64 },
    /// A frame does not decode: bad magic, bad block or checksum mismatch.
    Damaged {
        location: FrameLocation,
        message: String,
    },
}

/// One decoded frame, as handed to a [`visit_frames_working`] visitor.
#[derive(Debug)]
pub(crate) struct DecodedFrame<'a> {
    pub location: FrameLocation,
    /// The decoded text (all of it, or as much as an incomplete frame yielded). It lives
    /// in a buffer the next frame reuses.
    pub text: &'a [u8],
    /// False for a final frame the file ends inside of.
    pub complete: bool,
}

/// [`visit_frames_working`] without frame work.
#[cfg(test)]
pub(crate) fn visit_frames(
    data: impl Compressed + Send,
    mut visit: impl FnMut(DecodedFrame<'_>),
) -> io::Result<FramesEnd> {
    visit_frames_working(data, &NoWork, |frame, _| visit(frame))
}

/// Work on a complete frame's text that the decoding thread may do ahead of the reader.
///
/// Reading a large log runs zstd on a second thread and the typed parse on the reader's, and
/// the parse is the longer of the two (about 9.6 against 7.3 ms for a 10k-event log here):
/// the decoding thread would spend a quarter of the read waiting for the reader. A
/// `FrameWork` lets it spend that time on the reader's behalf. It must be a pure function
/// of the text, since whether it runs for a given frame depends on timing: the decoding
/// thread does it only for a batch it cannot hand over yet (the reader is behind), and the
/// visitor is then given the result beside the frame (`None` otherwise).
pub(crate) trait FrameWork: Sync {
    type Done: Send;

    fn work(&self, text: &[u8]) -> Self::Done;
}

/// No work ahead: the frames only.
pub(crate) struct NoWork;

impl FrameWork for NoWork {
    type Done = ();

    fn work(&self, _: &[u8]) {}
}

/// Decodes every frame of a log in order, handing each to `visit`, and stops at the first
/// damage; returns how the data after the last frame looks.
///
/// A large log is decoded on a second thread while the caller's thread takes the text it
/// has already got; the visitor sees the same frames, in the same order, either way. That
/// thread does `work` for the frames of a batch the caller has no room for yet, and the
/// visitor gets the result beside such a frame.
pub(crate) fn visit_frames_working<W: FrameWork>(
    data: impl Compressed + Send,
    work: &W,
    mut visit: impl FnMut(DecodedFrame<'_>, Option<W::Done>),
) -> io::Result<FramesEnd> {
    #[cfg(test)]
    if FORCE_AHEAD.get() {
        return visit_frames_pipelined(data, work, AheadRule::Always, visit);
    }
    if data.size_hint() >= PIPELINE_MIN_BYTES && has_second_core() {
        return visit_frames_pipelined(data, work, AheadRule::WhenBehind, visit);
    }
    visit_frames_with(FrameDecoder::new(true)?, data, |frame| visit(frame, None))
}

#[cfg(test)]
thread_local! {
    static FORCE_AHEAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every read on this thread pipelined and its frame work done ahead for
/// every batch, whatever the log's size: the work's results are then always used.
#[cfg(test)]
pub(crate) fn forcing_work_ahead<T>(f: impl FnOnce() -> T) -> T {
    FORCE_AHEAD.set(true);
    let out = f();
    FORCE_AHEAD.set(false);
    out
}

fn visit_frames_with(
    mut decoder: FrameDecoder,
    mut data: impl Compressed,
    mut visit: impl FnMut(DecodedFrame<'_>),
) -> io::Result<FramesEnd> {
    let mut text = Vec::new();
    let mut index = 0u64;
    let mut pos = 0usize;
    loop {
        let rest = data.rest(pos);
        if rest.is_empty() {
            if data.more(pos)? {
                continue;
            }
            return Ok(FramesEnd::Clean);
        }
        let location = FrameLocation {
            index,
            offset: pos as u64,
        };
        if rest.iter().all(|b| *b == 0) {
            if data.more(pos)? {
                continue;
            }
            return Ok(FramesEnd::ZeroFilled {
                offset: location.offset,
            });
        }
        // Only the end of the log makes a frame incomplete, and a frame that does not
        // decode may just need the bytes after the window (for the zero-fill judgement).
        let judged = data.at_end();
        // A frame that runs past the window is not decoded until it is all there.
        if !judged && zstd_safe::find_frame_compressed_size(rest).map_or(true, |n| n > rest.len()) {
            data.more(pos)?;
            continue;
        }
        let capacity = text.capacity();
        let frame = match decoder.decode(rest, &mut text)? {
            Ok(frame) if frame.complete || judged => frame,
            Ok(_) | Err(_) if !judged => {
                // Undo the attempt, buffer size included: how zstd words a damaged frame
                // depends on the room it had, and the verdict must not depend on windows.
                text.clear();
                text.shrink_to(capacity);
                data.more(pos)?;
                continue;
            }
            Ok(frame) => frame,
            Err(message) => {
                // An append torn by a power loss can leave the start of its frame followed
                // by blocks the filesystem allocated but never wrote: that is a torn frame
                // and zero fill, not damage.
                if let Some(zeros_at) = torn_before_zeros(decoder.streaming()?, rest, &mut text)? {
                    visit(DecodedFrame {
                        location,
                        text: &text,
                        complete: false,
                    });
                    return Ok(FramesEnd::ZeroFilled {
                        offset: (pos + zeros_at) as u64,
                    });
                }
                return Ok(FramesEnd::Damaged { location, message });
            }
        };
        visit(DecodedFrame {
            location,
            text: &text,
            complete: frame.complete,
        });
        pos += frame.consumed;
        index += 1;
    }
}

/// The most output space reserved ahead on the word of a frame header or a size guess.
const MAX_RESERVE: usize = 64 << 20;

/// How one frame decoded from the start of some bytes.
struct FrameText {
    /// Bytes of input the frame took (all of them when it is incomplete).
    consumed: usize,
    /// False when the input ended inside the frame.
    complete: bool,
}

/// One decompression context reused for every frame of a file.
///
/// A complete frame that declares its size (every frame dsh and the original write) is
/// decoded in one call straight into the output buffer; anything else (a frame the file
/// ends inside of, a frame that does not decode, one without a declared size) goes through
/// the streaming decoder, which tells how far an incomplete frame got and why a bad one
/// fails.
struct FrameDecoder {
    whole: DCtx<'static>,
    /// Whether complete frames take the one-call path (only tests turn it off, to check
    /// both paths agree).
    one_call: bool,
    /// Made on first need: a healthy log never needs it.
    streaming: Option<Decoder<'static>>,
}

impl FrameDecoder {
    fn new(one_call: bool) -> io::Result<Self> {
        let whole = DCtx::try_create()
            .ok_or_else(|| io::Error::other("cannot allocate a zstd decompression context"))?;
        Ok(FrameDecoder {
            whole,
            one_call,
            streaming: None,
        })
    }

    fn streaming(&mut self) -> io::Result<&mut Decoder<'static>> {
        if self.streaming.is_none() {
            self.streaming = Some(Decoder::new()?);
        }
        self.streaming
            .as_mut()
            .ok_or_else(|| io::Error::other("no zstd stream decoder"))
    }

    /// Decodes the frame at the start of `data` into `text` (replacing what it held);
    /// `Ok(Err(message))` when it does not decode, and then `text` is left empty.
    fn decode(&mut self, data: &[u8], text: &mut Vec<u8>) -> io::Result<Result<FrameText, String>> {
        text.clear();
        if self.one_call {
            if let Some(frame) = self.decode_whole(data, text) {
                return Ok(Ok(frame));
            }
        }
        text.clear();
        decode_frame(self.streaming()?, data, text)
    }

    /// The one-call path: `None` unless the frame is complete, declares its size and
    /// decodes (checksum included) to exactly that size.
    fn decode_whole(&mut self, data: &[u8], text: &mut Vec<u8>) -> Option<FrameText> {
        let consumed = zstd_safe::find_frame_compressed_size(data).ok()?;
        let frame = data.get(..consumed)?;
        let declared = zstd_safe::get_frame_content_size(frame).ok()??;
        let declared = usize::try_from(declared)
            .ok()
            .filter(|n| *n <= MAX_RESERVE)?;
        text.reserve(declared);
        let produced = self.whole.decompress(text, frame).ok()?;
        (produced == declared && text.len() == declared).then_some(FrameText {
            consumed,
            complete: true,
        })
    }
}

/// Decodes the frame at the start of `data`, appending its text to `text`;
/// `Ok(Err(message))` when it does not decode, and then `text` is left as it was.
fn decode_frame(
    decoder: &mut Decoder<'_>,
    data: &[u8],
    text: &mut Vec<u8>,
) -> io::Result<Result<FrameText, String>> {
    decoder.reinit()?;
    let start = text.len();
    // The header says how big the frame is (ours always do); trust it only so far.
    let declared = zstd::zstd_safe::get_frame_content_size(data)
        .ok()
        .flatten()
        .map_or(OUT_CHUNK, |n| usize::try_from(n).unwrap_or(MAX_RESERVE));
    text.reserve(declared.clamp(1, MAX_RESERVE));
    let mut consumed = 0usize;
    loop {
        if text.capacity() == text.len() {
            text.reserve(OUT_CHUNK);
        }
        let room = text.capacity() - text.len();
        let mut input = InBuffer::around(&data[consumed..]);
        let before = text.len();
        let mut output = OutBuffer::around_pos(text, before);
        let remaining = match decoder.run(&mut input, &mut output) {
            Ok(remaining) => remaining,
            Err(err) => {
                text.truncate(start);
                return Ok(Err(err.to_string()));
            }
        };
        let produced = output.pos() - before;
        consumed += input.pos();
        if remaining == 0 {
            return Ok(Ok(FrameText {
                consumed,
                complete: true,
            }));
        }
        // All input consumed and the output space not filled: the decoder is waiting for
        // bytes the file does not have.
        if consumed == data.len() && produced < room {
            return Ok(Ok(FrameText {
                consumed,
                complete: false,
            }));
        }
    }
}

/// When `data` (a frame that does not decode) ends in zeros and what precedes them is the
/// unfinished start of a frame, that frame's text is appended to `text` and where the
/// zeros begin is returned.
fn torn_before_zeros(
    decoder: &mut Decoder<'_>,
    data: &[u8],
    text: &mut Vec<u8>,
) -> io::Result<Option<usize>> {
    let written = data
        .iter()
        .rposition(|b| *b != 0)
        .map_or(0, |last| last + 1);
    if written == data.len() {
        return Ok(None);
    }
    let start = text.len();
    Ok(match decode_frame(decoder, &data[..written], text)? {
        Ok(frame) if !frame.complete => Some(written),
        Ok(_) => {
            text.truncate(start);
            None
        }
        Err(_) => None,
    })
}

/// Decodes only as much of the first frame as it takes to see its first line.
///
/// Returns the decoded bytes (ending with the first `\n` when there is one) and whether
/// the frame was complete or the line was found; listing uses this to avoid reading logs.
pub(crate) fn decode_first_line(reader: &mut impl Read) -> io::Result<(Vec<u8>, bool)> {
    let mut decoder = Decoder::new()?;
    let mut input = vec![0u8; 16 * 1024];
    let mut out = vec![0u8; OUT_CHUNK];
    let mut text = Vec::new();
    loop {
        let read = reader.read(&mut input)?;
        if read == 0 {
            return Ok((text, false));
        }
        let mut consumed = 0;
        while consumed < read {
            let mut in_buf = InBuffer::around(&input[consumed..read]);
            let mut out_buf = OutBuffer::around(&mut out[..]);
            let remaining = decoder.run(&mut in_buf, &mut out_buf)?;
            consumed += in_buf.pos();
            let produced = out_buf.pos();
            text.extend_from_slice(&out[..produced]);
            if let Some(newline) = text.iter().position(|b| *b == b'\n') {
                text.truncate(newline + 1);
                return Ok((text, true));
            }
            if remaining == 0 {
                return Ok((text, true));
            }
            if in_buf.pos() == 0 && produced == 0 {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests;
