//! The two-thread read: a scoped thread decodes a large log's frames into batches of text
//! a few batches ahead of the reader, and spends the time it would wait for the reader on
//! the reader's frame work (see [`FrameWork`]).

use std::io;

use super::{
    visit_frames_with, Compressed, DecodedFrame, FrameDecoder, FrameLocation, FrameWork, FramesEnd,
};

/// Whether a second core is there to decode on. Asked once per process: on Linux the
/// answer reads the cgroup's CPU quota files, which no log read should repeat.
pub(super) fn has_second_core() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// Compressed size from which a log is decoded on a second thread: below it, starting the
/// thread costs about what decoding on the reader's own thread does.
pub(super) const PIPELINE_MIN_BYTES: usize = 128 * 1024;

/// Decoded text handed over per batch: small logs' frames are a few hundred bytes each,
/// and one hand-over per frame would cost more than it saves.
const BATCH_TEXT_BYTES: usize = 128 * 1024;

/// Batches in flight between the threads; with the one being filled and the one being
/// read, at most four batches of text are held at once.
const BATCHES_IN_FLIGHT: usize = 2;

/// When the decoding thread does the frame work: for a batch it cannot hand over yet
/// (the production rule), or for every batch (tests, so the work's results are always used).
#[derive(Clone, Copy)]
pub(super) enum AheadRule {
    WhenBehind,
    #[cfg(test)]
    Always,
}

impl AheadRule {
    pub(super) fn always(self) -> bool {
        match self {
            AheadRule::WhenBehind => false,
            #[cfg(test)]
            AheadRule::Always => true,
        }
    }
}

/// Decoded frames gathered for one hand-over.
struct Batch<D> {
    text: Vec<u8>,
    /// Each frame's location, span of `text` and completeness.
    frames: Vec<(std::ops::Range<usize>, FrameLocation, bool)>,
    /// The frame work's results, one per frame, when it was done for this batch.
    done: Vec<Option<D>>,
}

impl<D> Default for Batch<D> {
    fn default() -> Self {
        Batch {
            text: Vec::new(),
            frames: Vec::new(),
            done: Vec::new(),
        }
    }
}

impl<D> Batch<D> {
    /// Does `work` for every complete frame of the batch.
    fn work_ahead(&mut self, work: &impl FrameWork<Done = D>) {
        self.done = self
            .frames
            .iter()
            .map(|(span, _, complete)| {
                let text = self.text.get(span.clone()).unwrap_or_default();
                complete.then(|| work.work(text))
            })
            .collect();
    }
}

enum HandOver<D> {
    Frames(Batch<D>),
    End(io::Result<FramesEnd>),
}

/// [`visit_frames_working`](super::visit_frames_working) as a two-stage pipeline: a scoped thread decodes the frames into
/// batches, the caller's thread visits them. On two cores the zstd work (about a third of
/// reading a log) leaves the reader's path, and the frame work the decoding thread does
/// while it waits for the reader leaves it too. If the thread cannot be started, the frames
/// are decoded inline.
pub(super) fn visit_frames_pipelined<W: FrameWork>(
    data: impl Compressed + Send,
    work: &W,
    ahead: AheadRule,
    mut visit: impl FnMut(DecodedFrame<'_>, Option<W::Done>),
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
        let (send, receive) = mpsc::sync_channel::<HandOver<W::Done>>(BATCHES_IN_FLIGHT);
        let (recycle, reuse) = mpsc::channel::<Batch<W::Done>>();
        let decoder = std::thread::Builder::new()
            .name("dsh-zstd-read".into())
            .spawn_scoped(scope, move || {
                if let Some(data) = take(input) {
                    decode_batches(data, work, ahead, &send, &reuse)
                }
            });
        if decoder.is_err() {
            return match take(input) {
                Some(data) => {
                    visit_frames_with(FrameDecoder::new(true)?, data, |frame| visit(frame, None))
                }
                None => Err(io::Error::other("cannot start the zstd decoding thread")),
            };
        }
        for handed in receive {
            match handed {
                HandOver::Frames(mut batch) => {
                    let mut done = std::mem::take(&mut batch.done).into_iter();
                    for (span, location, complete) in &batch.frames {
                        visit(
                            DecodedFrame {
                                location: *location,
                                text: batch.text.get(span.clone()).unwrap_or_default(),
                                complete: *complete,
                            },
                            done.next().flatten(),
                        );
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

/// The decoding stage: every frame into batches, then the end. A batch the reader has no
/// room for yet gets the frame work done before it is handed over.
fn decode_batches<W: FrameWork>(
    data: impl Compressed,
    work: &W,
    ahead: AheadRule,
    send: &std::sync::mpsc::SyncSender<HandOver<W::Done>>,
    reuse: &std::sync::mpsc::Receiver<Batch<W::Done>>,
) {
    use std::sync::mpsc::TrySendError;
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
    // A send fails only when the reader is gone; it then drops everything anyway.
    let hand_over = |mut batch: Batch<W::Done>| {
        if ahead.always() {
            batch.work_ahead(work);
        }
        let _ = match send.try_send(HandOver::Frames(batch)) {
            Err(TrySendError::Full(HandOver::Frames(mut batch))) => {
                if batch.done.is_empty() {
                    batch.work_ahead(work);
                }
                send.send(HandOver::Frames(batch))
            }
            _ => Ok(()),
        };
    };
    let mut batch = fresh();
    let end = FrameDecoder::new(true).and_then(|decoder| {
        visit_frames_with(decoder, data, |frame| {
            let start = batch.text.len();
            batch.text.extend_from_slice(frame.text);
            batch
                .frames
                .push((start..batch.text.len(), frame.location, frame.complete));
            if batch.text.len() >= BATCH_TEXT_BYTES {
                hand_over(std::mem::replace(&mut batch, fresh()));
            }
        })
    });
    if !batch.frames.is_empty() {
        hand_over(batch);
    }
    let _ = send.send(HandOver::End(end));
}
