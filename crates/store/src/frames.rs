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
//! of the reader (at most four held), so zstd and the typed parse run side by side.

use std::io::{self, Read};

use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};
use zstd::zstd_safe::{self, CParameter, DCtx};

use crate::error::FrameLocation;

mod input;

pub(crate) use input::{Compressed, ReadWindow, WINDOW_BYTES};

/// Compression level of new frames; the zstd default, cheap and effective on JSON.
const LEVEL: i32 = 3;
const OUT_CHUNK: usize = 64 * 1024;

thread_local! {
    /// One compression context per writing thread, kept between batches: creating one
    /// (allocating and clearing its tables) cost more than compressing a step's small
    /// batch. The frames are the same bytes either way (same level and parameters).
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

/// One decoded frame, as handed to a [`visit_frames`] visitor.
#[derive(Debug)]
pub(crate) struct DecodedFrame<'a> {
    pub location: FrameLocation,
    /// The decoded text (all of it, or as much as an incomplete frame yielded). It lives
    /// in a buffer the next frame reuses.
    pub text: &'a [u8],
    /// False for a final frame the file ends inside of.
    pub complete: bool,
}

/// Decodes every frame of a log in order, handing each to `visit`, and stops at the first
/// damage; returns how the data after the last frame looks.
///
/// A large log is decoded on a second thread while the caller's thread takes the text it
/// has already got (see [`visit_frames_pipelined`]); the visitor sees the same frames, in
/// the same order, either way.
pub(crate) fn visit_frames(
    data: impl Compressed + Send,
    visit: impl FnMut(DecodedFrame<'_>),
) -> io::Result<FramesEnd> {
    if data.size_hint() >= PIPELINE_MIN_BYTES && has_second_core() {
        return visit_frames_pipelined(data, visit);
    }
    visit_frames_with(FrameDecoder::new(true)?, data, visit)
}

/// Whether a second core is there to decode on. Asked once per process: on Linux the
/// answer reads the cgroup's CPU quota files, which no log read should repeat.
fn has_second_core() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// Compressed size from which a log is decoded on a second thread: below it, starting the
/// thread costs about what decoding on the reader's own thread does.
const PIPELINE_MIN_BYTES: usize = 128 * 1024;

/// Decoded text handed over per batch: small logs' frames are a few hundred bytes each,
/// and one hand-over per frame would cost more than it saves.
const BATCH_TEXT_BYTES: usize = 128 * 1024;

/// Batches in flight between the threads; with the one being filled and the one being
/// read, at most four batches of text are held at once.
const BATCHES_IN_FLIGHT: usize = 2;

/// Decoded frames gathered for one hand-over.
#[derive(Default)]
struct Batch {
    text: Vec<u8>,
    /// Each frame's location, span of `text` and completeness.
    frames: Vec<(FrameLocation, std::ops::Range<usize>, bool)>,
}

enum HandOver {
    Frames(Batch),
    End(io::Result<FramesEnd>),
}

/// [`visit_frames`] as a two-stage pipeline: a scoped thread decodes the frames into
/// batches, the caller's thread visits them. On two cores the zstd work (about a third of
/// reading a log) leaves the reader's path. If the thread cannot be started, the frames
/// are decoded inline.
fn visit_frames_pipelined(
    data: impl Compressed + Send,
    mut visit: impl FnMut(DecodedFrame<'_>),
) -> io::Result<FramesEnd> {
    use std::sync::{mpsc, Mutex};
    // The thread takes the input from here; if it cannot be started, the input is still
    // here to be decoded inline.
    fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
        slot.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
    let input = Mutex::new(Some(data));
    let input = &input;
    std::thread::scope(|scope| {
        let (send, receive) = mpsc::sync_channel::<HandOver>(BATCHES_IN_FLIGHT);
        let (recycle, reuse) = mpsc::channel::<Batch>();
        let decoder = std::thread::Builder::new()
            .name("dsh-zstd-read".into())
            .spawn_scoped(scope, move || {
                if let Some(data) = take(input) {
                    decode_batches(data, &send, &reuse)
                }
            });
        if decoder.is_err() {
            return match take(input) {
                Some(data) => visit_frames_with(FrameDecoder::new(true)?, data, visit),
                None => Err(io::Error::other("cannot start the zstd decoding thread")),
            };
        }
        for handed in receive {
            match handed {
                HandOver::Frames(batch) => {
                    for (location, span, complete) in &batch.frames {
                        visit(DecodedFrame {
                            location: *location,
                            text: batch.text.get(span.clone()).unwrap_or_default(),
                            complete: *complete,
                        });
                    }
                    // The decoder may have finished already; then the batch is dropped.
                    let _ = recycle.send(batch);
                }
                HandOver::End(end) => return end,
            }
        }
        Err(io::Error::other("the zstd decoding thread stopped early"))
    })
}

/// The decoding stage: every frame into batches, then the end.
fn decode_batches(
    data: impl Compressed,
    send: &std::sync::mpsc::SyncSender<HandOver>,
    reuse: &std::sync::mpsc::Receiver<Batch>,
) {
    let fresh = || {
        reuse
            .try_recv()
            .map(|mut batch| {
                batch.text.clear();
                batch.frames.clear();
                batch
            })
            .unwrap_or_default()
    };
    let mut batch = fresh();
    // A send fails only when the reader is gone; it then drops everything anyway.
    let end = FrameDecoder::new(true).and_then(|decoder| {
        visit_frames_with(decoder, data, |frame| {
            let start = batch.text.len();
            batch.text.extend_from_slice(frame.text);
            batch
                .frames
                .push((frame.location, start..batch.text.len(), frame.complete));
            if batch.text.len() >= BATCH_TEXT_BYTES {
                let full = std::mem::replace(&mut batch, fresh());
                let _ = send.send(HandOver::Frames(full));
            }
        })
    });
    if !batch.frames.is_empty() {
        let _ = send.send(HandOver::Frames(batch));
    }
    let _ = send.send(HandOver::End(end));
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
mod tests {
    use super::*;

    /// A frame as the visitor saw it, kept.
    struct Frame {
        location: FrameLocation,
        text: Vec<u8>,
        complete: bool,
    }

    /// Every frame and the end.
    struct Decoded {
        frames: Vec<Frame>,
        end: FramesEnd,
    }

    impl Decoded {
        fn text_of<'a>(&self, frame: &'a Frame) -> &'a [u8] {
            &frame.text
        }
    }

    fn decode_frames(data: &[u8]) -> io::Result<Decoded> {
        let mut frames = Vec::new();
        let end = visit_frames(data, |frame| {
            frames.push(Frame {
                location: frame.location,
                text: frame.text.to_vec(),
                complete: frame.complete,
            })
        })?;
        Ok(Decoded { frames, end })
    }

    fn file_of(frames: &[&[u8]]) -> Vec<u8> {
        frames
            .iter()
            .flat_map(|f| encode_frame(f).unwrap())
            .collect()
    }

    #[test]
    fn decodes_concatenated_frames_with_their_offsets() {
        let first = encode_frame(b"header\n").unwrap();
        let data = file_of(&[b"header\n", b"a\nb\n"]);
        let decoded = decode_frames(&data).unwrap();
        assert_eq!(decoded.end, FramesEnd::Clean);
        let summary: Vec<_> = decoded
            .frames
            .iter()
            .map(|f| {
                (
                    f.location.index,
                    f.location.offset,
                    decoded.text_of(f).to_vec(),
                    f.complete,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (0, 0, b"header\n".to_vec(), true),
                (1, first.len() as u64, b"a\nb\n".to_vec(), true),
            ]
        );
    }

    /// `data` cut at each of `cuts`, with a bit flipped there, and cut there then
    /// zero-filled past its end.
    fn damaged(data: &[u8], cuts: impl IntoIterator<Item = usize>) -> Vec<Vec<u8>> {
        let mut variants = Vec::new();
        for at in cuts {
            variants.push(data[..at].to_vec());
            let mut flipped = data.to_vec();
            flipped[at] ^= 0x40;
            variants.push(flipped);
            let mut zeros = data[..at].to_vec();
            zeros.resize(data.len() + 64, 0);
            variants.push(zeros);
        }
        variants
    }

    /// Every frame's text and completeness, and the end, as a comparable value.
    fn outline(decoder: FrameDecoder, data: impl Compressed) -> String {
        let mut frames = Vec::new();
        let end = visit_frames_with(decoder, data, |frame| {
            frames.push((frame.location, frame.text.to_vec(), frame.complete))
        });
        format!("{frames:?} {end:?}")
    }

    #[test]
    fn the_one_call_path_agrees_with_the_streaming_decoder() {
        let text: Vec<u8> = (0..3000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let data = file_of(&[b"h\n", &text, b"a\nb\n", b"", b"tail\n"]);
        let mut variants = vec![data.clone()];
        variants.extend(damaged(&data, (1..data.len()).step_by(7)));
        // A frame without a declared size takes the streaming path either way.
        let mut unsized_frame = zstd::stream::raw::Encoder::new(3).unwrap();
        let mut out = vec![0u8; 256];
        let mut output = OutBuffer::around(&mut out[..]);
        let mut input = InBuffer::around(b"no size\n".as_slice());
        unsized_frame.run(&mut input, &mut output).unwrap();
        unsized_frame.finish(&mut output, true).unwrap();
        let produced = output.pos();
        let mut with_unsized = file_of(&[b"h\n"]);
        with_unsized.extend_from_slice(&out[..produced]);
        variants.push(with_unsized);
        for data in &variants {
            let fast = outline(FrameDecoder::new(true).unwrap(), data.as_slice());
            let streaming = outline(FrameDecoder::new(false).unwrap(), data.as_slice());
            assert_eq!(fast, streaming);
        }
    }

    /// The same outline through the two-thread pipeline.
    fn pipelined_outline(data: impl Compressed + Send) -> String {
        let mut frames = Vec::new();
        let end = visit_frames_pipelined(data, |frame| {
            frames.push((frame.location, frame.text.to_vec(), frame.complete))
        });
        format!("{frames:?} {end:?}")
    }

    #[test]
    fn the_pipeline_hands_over_every_frame_as_decoded_inline() {
        // Enough frames of enough text for several batches, then every kind of end.
        let texts: Vec<Vec<u8>> = (0..400)
            .map(|f| {
                (0..60)
                    .flat_map(|i| {
                        format!("frame {f} line {i} {}\n", "x".repeat(f % 17)).into_bytes()
                    })
                    .collect()
            })
            .collect();
        let refs: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
        let data = file_of(&refs);
        assert!(data.len() > PIPELINE_MIN_BYTES / 8);
        let mut variants = vec![data.clone(), Vec::new()];
        variants.extend(damaged(
            &data,
            [data.len() / 3, data.len() - 9, data.len() - 1],
        ));
        for data in &variants {
            let inline = outline(FrameDecoder::new(true).unwrap(), data.as_slice());
            assert_eq!(pipelined_outline(data.as_slice()), inline);
            // Read from a file a window at a time, as logs are.
            let window = ReadWindow::new(data.as_slice(), data.len(), 1000);
            assert_eq!(pipelined_outline(window), inline);
        }
    }

    #[test]
    fn frames_carry_a_checksum() {
        let frame = encode_frame(b"x\n").unwrap();
        // frame header descriptor byte: bit 2 is the content checksum flag
        assert_eq!(frame[4] & 0b100, 0b100);
    }

    #[test]
    fn an_incomplete_final_frame_keeps_what_decoded() {
        let text: Vec<u8> = (0..2000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let mut data = file_of(&[b"h\n", &text]);
        data.truncate(data.len() - 6);
        let decoded = decode_frames(&data).unwrap();
        assert_eq!(decoded.end, FramesEnd::Clean);
        let last = &decoded.frames[1];
        assert!(!last.complete);
        assert!(text.starts_with(decoded.text_of(last)));
    }

    #[test]
    fn damage_and_zero_fill_are_told_apart() {
        let mut data = file_of(&[b"h\n", b"a\n"]);
        let second = encode_frame(b"h\n").unwrap().len();
        let clean_len = data.len();
        data.extend_from_slice(&[0; 64]);
        assert_eq!(
            decode_frames(&data).unwrap().end,
            FramesEnd::ZeroFilled {
                offset: clean_len as u64
            }
        );
        let mut damaged = file_of(&[b"h\n", b"abcdef\n"]);
        let last = damaged.len() - 5;
        damaged[last] ^= 0x40;
        match decode_frames(&damaged).unwrap().end {
            FramesEnd::Damaged { location, .. } => {
                assert_eq!((location.index, location.offset), (1, second as u64))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_torn_final_frame_followed_by_zeros_is_torn_not_damaged() {
        let text: Vec<u8> = (0..2000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let whole = file_of(&[b"h\n", &text]);
        let second = encode_frame(b"h\n").unwrap().len();
        // the first half of the last frame reached the disk, the rest of its blocks did not
        let cut = second + (whole.len() - second) / 2;
        let mut data = whole[..cut].to_vec();
        data.resize(whole.len() + 512, 0);
        let decoded = decode_frames(&data).unwrap();
        assert!(
            matches!(decoded.end, FramesEnd::ZeroFilled { offset } if offset <= cut as u64),
            "{:?}",
            decoded.end
        );
        let last = &decoded.frames[1];
        assert_eq!(
            (last.location.offset, last.complete),
            (second as u64, false)
        );
        assert!(text.starts_with(decoded.text_of(last)));
        // zeros after bytes that cannot start a frame are still damage
        let mut garbage = whole.clone();
        garbage.extend_from_slice(b"not a frame");
        garbage.resize(garbage.len() + 512, 0);
        assert!(matches!(
            decode_frames(&garbage).unwrap().end,
            FramesEnd::Damaged { location, .. } if location.offset == whole.len() as u64
        ));
    }

    #[test]
    fn first_line_decoding_stops_early() {
        let data = file_of(&[b"{\"type\":\"session\"}\n", b"rest\n"]);
        let (line, found) = decode_first_line(&mut data.as_slice()).unwrap();
        assert_eq!((line, found), (b"{\"type\":\"session\"}\n".to_vec(), true));
        let (partial, found) = decode_first_line(&mut &data[..5]).unwrap();
        assert_eq!((partial, found), (Vec::new(), false));
    }
}
