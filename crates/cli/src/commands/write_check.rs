//! Noticing that stdout could not be written.
//!
//! `dsh run` keeps going when its output fails (the log is the record, not the screen), and
//! a final flush is easy to drop on the floor, so an answer written to a full disk
//! (`> /dev/full`) used to exit 0 with nothing saved. [`CheckedWrite`] remembers the first
//! failure of the stream it wraps; the command reports it and exits 1 at the end.
//!
//! A closed pipe is not a failure here: the reader stopped on purpose (`dsh ... | head`).
//! It is remembered apart, so that a command whose output went nowhere stops quietly.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

/// The first write error of a stream, shared between the writer and whoever checks it.
#[derive(Clone, Debug, Default)]
pub struct WriteFailure(Arc<Mutex<Outcome>>);

#[derive(Debug, Default)]
struct Outcome {
    first: Option<String>,
    reader_gone: bool,
}

impl WriteFailure {
    fn outcome(&self) -> std::sync::MutexGuard<'_, Outcome> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What went wrong, if anything did.
    pub fn get(&self) -> Option<String> {
        self.outcome().first.clone()
    }

    /// Whether the reader closed the pipe (`dsh sessions list | head -1`): not a failure,
    /// but the output stopped there.
    pub fn reader_gone(&self) -> bool {
        self.outcome().reader_gone
    }

    fn record(&self, error: &io::Error) {
        let mut outcome = self.outcome();
        match error.kind() {
            io::ErrorKind::BrokenPipe => outcome.reader_gone = true,
            io::ErrorKind::Interrupted => {}
            _ => {
                if outcome.first.is_none() {
                    outcome.first = Some(error.to_string());
                }
            }
        }
    }
}

/// A writer that records its first failure in a [`WriteFailure`] (and still returns it).
#[derive(Debug)]
pub struct CheckedWrite<W> {
    inner: W,
    failure: WriteFailure,
}

impl<W: Write> CheckedWrite<W> {
    pub fn new(inner: W, failure: WriteFailure) -> Self {
        Self { inner, failure }
    }
}

impl<W: Write> Write for CheckedWrite<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.inner
            .write(bytes)
            .inspect_err(|e| self.failure.record(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().inspect_err(|e| self.failure.record(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::from(self.0))
        }
    }

    #[test]
    fn the_first_failure_is_kept_and_a_closed_pipe_is_not_one() {
        let failure = WriteFailure::default();
        let mut out = CheckedWrite::new(Vec::new(), failure.clone());
        out.write_all(b"fine").unwrap();
        assert_eq!(failure.get(), None);

        let mut full = CheckedWrite::new(Failing(io::ErrorKind::StorageFull), failure.clone());
        assert!(full.write_all(b"x").is_err());
        let mut other =
            CheckedWrite::new(Failing(io::ErrorKind::PermissionDenied), failure.clone());
        assert!(other.flush().is_err());
        assert_eq!(
            failure.get(),
            Some(io::Error::from(io::ErrorKind::StorageFull).to_string())
        );

        let piped = WriteFailure::default();
        let mut closed = CheckedWrite::new(Failing(io::ErrorKind::BrokenPipe), piped.clone());
        assert!(!piped.reader_gone());
        assert!(closed.write_all(b"x").is_err());
        assert_eq!(piped.get(), None);
        assert!(piped.reader_gone());
    }
}
