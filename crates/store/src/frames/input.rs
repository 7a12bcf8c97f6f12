//! Where the frame decoder's compressed bytes come from: a log already in memory, or a
//! file read a window at a time.
//!
//! Reading a log used to load the whole file before decoding it; at 100k events that copy
//! (12 MB) was a sixth of the reader's peak memory, and it bought nothing, since frames are
//! decoded front to back. A file is now read in windows. A frame that runs past the window,
//! and anything that does not decode, asks for more bytes before it is judged, so every
//! verdict (incomplete frame, zero fill, damage) is reached on exactly the bytes a whole read
//! would have given: only a frame the file really ends inside is incomplete.

use std::io::{self, Read};

/// Bytes read per refill of a [`ReadWindow`]: enough that a refill is rare next to the
/// frames it holds (a step's frame is a few KiB), small beside any long log.
pub(crate) const WINDOW_BYTES: usize = 256 * 1024;

/// The compressed bytes of a log, consumed front to back.
///
/// Positions are absolute offsets in the log. Bytes before the position last passed to
/// [`more`](Compressed::more) may be gone.
pub(crate) trait Compressed {
    /// The bytes in memory from `pos` on.
    fn rest(&self, pos: usize) -> &[u8];
    /// Whether [`rest`](Compressed::rest) runs to the end of the log.
    fn at_end(&self) -> bool;
    /// Brings more of the log into memory, letting go of the bytes before `pos`. False at
    /// the end, when nothing more can come; then [`at_end`](Compressed::at_end) holds.
    fn more(&mut self, pos: usize) -> io::Result<bool>;
    /// The log's size as far as it is known up front (to choose how to decode it).
    fn size_hint(&self) -> usize;
}

/// A log held whole in memory.
impl Compressed for &[u8] {
    fn rest(&self, pos: usize) -> &[u8] {
        self.get(pos..).unwrap_or_default()
    }

    fn at_end(&self) -> bool {
        true
    }

    fn more(&mut self, _pos: usize) -> io::Result<bool> {
        Ok(false)
    }

    fn size_hint(&self) -> usize {
        self.len()
    }
}

impl<C: Compressed + ?Sized> Compressed for &mut C {
    fn rest(&self, pos: usize) -> &[u8] {
        (**self).rest(pos)
    }

    fn at_end(&self) -> bool {
        (**self).at_end()
    }

    fn more(&mut self, pos: usize) -> io::Result<bool> {
        (**self).more(pos)
    }

    fn size_hint(&self) -> usize {
        (**self).size_hint()
    }
}

/// A log read from `reader` a window at a time; memory is one window plus the frame being
/// decoded (a frame larger than the window doubles it until the frame fits).
pub(crate) struct ReadWindow<R> {
    reader: R,
    /// The log's bytes from offset `base` on, as far as they have been read.
    buf: Vec<u8>,
    base: usize,
    /// Bytes asked for per refill, at least.
    window: usize,
    end: bool,
    size_hint: usize,
}

impl<R: Read> ReadWindow<R> {
    /// A window over `reader`, whose size is expected to be `size_hint`, refilled `window`
    /// bytes at a time (at least one).
    pub(crate) fn new(reader: R, size_hint: usize, window: usize) -> Self {
        Self {
            reader,
            buf: Vec::new(),
            base: 0,
            window: window.max(1),
            end: false,
            size_hint,
        }
    }

    /// Reads everything that is left, into a buffer sized for the expected length (a
    /// plain log's lines are its text, so it is held whole; growing by windows could leave
    /// twice its size allocated).
    pub(crate) fn read_to_end(&mut self) -> io::Result<()> {
        let expected = self.size_hint.saturating_sub(self.read_len());
        // One byte more, so a log that did not grow meets its end without a reallocation.
        // Only a hint: if it cannot be reserved, the read grows the buffer as it goes.
        let _ = self.buf.try_reserve_exact(expected.saturating_add(1));
        self.reader.read_to_end(&mut self.buf)?;
        self.end = true;
        Ok(())
    }

    /// How many bytes have been read: the log's length once the end is reached.
    pub(crate) fn read_len(&self) -> usize {
        self.base + self.buf.len()
    }
}

impl<R: Read> Compressed for ReadWindow<R> {
    fn rest(&self, pos: usize) -> &[u8] {
        self.buf
            .get(pos.saturating_sub(self.base)..)
            .unwrap_or_default()
    }

    fn at_end(&self) -> bool {
        self.end
    }

    fn more(&mut self, pos: usize) -> io::Result<bool> {
        if self.end {
            return Ok(false);
        }
        let done = pos.saturating_sub(self.base).min(self.buf.len());
        self.buf.drain(..done);
        self.base += done;
        // At least as much again as is held, so a frame larger than the window is read in
        // a number of refills logarithmic in its size, not linear.
        let start = self.buf.len();
        self.buf.resize(start + self.window.max(start), 0);
        let mut filled = start;
        while filled < self.buf.len() {
            match self.reader.read(&mut self.buf[filled..]) {
                Ok(0) => {
                    self.end = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => {
                    self.buf.truncate(filled);
                    return Err(err);
                }
            }
        }
        self.buf.truncate(filled);
        Ok(filled > start)
    }

    fn size_hint(&self) -> usize {
        self.size_hint
    }
}
