//! A job's streamed output: bounded in memory, spilled to a file past the cap, read by an
//! offset that only moves forward.
//!
//! The stream is one sequence of bytes numbered from 0. Memory holds the newest bytes
//! `[mem_start, total)` (at most `memory_limit` of them). Once the stream outgrows the cap a
//! spill file receives every byte from 0 on, up to `spill_limit`; bytes past that are counted
//! but kept in memory only while they fit. A read starts at the cursor, returns at most
//! `read_limit` bytes from whichever store holds them, and moves the cursor past exactly what
//! it returned, so no byte is returned twice. Bytes that neither store holds any more are
//! skipped with a marker naming how many, and where the full output is.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Sizes of one job's output store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimits {
    /// Bytes kept in memory (the newest ones).
    pub memory_limit: usize,
    /// The spill file stops growing here.
    pub spill_limit: u64,
    /// At most this many bytes per read.
    pub read_limit: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            memory_limit: 1 << 20,
            spill_limit: 256 << 20,
            read_limit: 32 << 10,
        }
    }
}

pub(crate) struct JobOutput {
    limits: OutputLimits,
    spill_dir: PathBuf,
    prefix: String,
    memory: Vec<u8>,
    /// Stream offset of `memory[0]`.
    mem_start: u64,
    total: u64,
    cursor: u64,
    spill: Option<Spill>,
}

struct Spill {
    path: PathBuf,
    file: Option<File>,
    /// Bytes `[0, written)` are in the file.
    written: u64,
    error: Option<String>,
}

/// One read's result.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub text: String,
    /// Bytes left after this read (the next read continues there).
    pub remaining: u64,
}

impl JobOutput {
    pub(crate) fn new(limits: OutputLimits, spill_dir: &Path, prefix: &str) -> Self {
        Self {
            limits,
            spill_dir: spill_dir.to_path_buf(),
            prefix: prefix.to_owned(),
            memory: Vec::new(),
            mem_start: 0,
            total: 0,
            cursor: 0,
            spill: None,
        }
    }

    pub(crate) fn spill_path(&self) -> Option<&Path> {
        self.spill.as_ref().map(|s| s.path.as_path())
    }

    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    pub(crate) fn append(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.spill.is_none() && self.memory.len() + bytes.len() > self.limits.memory_limit {
            self.start_spill();
        }
        if let Some(spill) = &mut self.spill {
            spill.write(bytes, self.limits.spill_limit);
        }
        self.memory.extend_from_slice(bytes);
        self.total += bytes.len() as u64;
        let excess = self.memory.len().saturating_sub(self.limits.memory_limit);
        if excess > 0 {
            self.memory.drain(..excess);
            self.mem_start += excess as u64;
        }
    }

    fn start_spill(&mut self) {
        let path = self
            .spill_dir
            .join(format!("job-{}-{}.txt", self.prefix, uuid::Uuid::new_v4()));
        let opened = std::fs::create_dir_all(&self.spill_dir).and_then(|()| {
            OpenOptions::new()
                .write(true)
                .read(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
        });
        let mut spill = match opened {
            Ok(file) => Spill {
                path,
                file: Some(file),
                written: 0,
                error: None,
            },
            Err(e) => Spill {
                path,
                file: None,
                written: 0,
                error: Some(e.to_string()),
            },
        };
        // Memory still holds the stream from byte 0 here: nothing was dropped before spilling.
        let head = std::mem::take(&mut self.memory);
        spill.write(&head, self.limits.spill_limit);
        self.memory = head;
        self.spill = Some(spill);
    }

    /// Reads from the cursor. `live` holds back a trailing incomplete UTF-8 sequence, which
    /// the next read returns whole.
    pub(crate) fn read(&mut self, live: bool) -> Result<Chunk, String> {
        let mut text = String::new();
        if self.cursor < self.mem_start {
            let in_file = self.spill.as_ref().map_or(0, |s| s.written);
            if self.cursor >= in_file {
                let skipped = self.mem_start - self.cursor;
                text.push_str(&self.dropped_marker(skipped));
                self.cursor = self.mem_start;
            } else {
                let end = in_file.min(self.mem_start);
                let want = (end - self.cursor).min(self.limits.read_limit as u64) as usize;
                let bytes = self.read_file(self.cursor, want)?;
                let at_end = self.cursor + bytes.len() as u64 == self.total;
                let take = utf8_cut(&bytes, at_end && !live);
                text.push_str(&String::from_utf8_lossy(&bytes[..take]));
                self.cursor += take as u64;
                return Ok(Chunk {
                    text,
                    remaining: self.total - self.cursor,
                });
            }
        }
        let from = (self.cursor - self.mem_start) as usize;
        let available = &self.memory[from.min(self.memory.len())..];
        let want = available.len().min(self.limits.read_limit);
        let at_end = want == available.len();
        let take = utf8_cut(&available[..want], at_end && !live);
        text.push_str(&String::from_utf8_lossy(&available[..take]));
        self.cursor += take as u64;
        Ok(Chunk {
            text,
            remaining: self.total - self.cursor,
        })
    }

    fn read_file(&self, offset: u64, len: usize) -> Result<Vec<u8>, String> {
        let Some(spill) = &self.spill else {
            return Ok(Vec::new());
        };
        let mut file = File::open(&spill.path).map_err(|e| e.to_string())?;
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; len];
        let mut filled = 0;
        while filled < len {
            match file.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        buf.truncate(filled);
        Ok(buf)
    }

    fn dropped_marker(&self, skipped: u64) -> String {
        match &self.spill {
            Some(Spill {
                error: Some(error), ..
            }) => format!(
                "[{skipped} bytes of output were dropped from memory; the spill file could not \
                 be written: {error}]\n"
            ),
            Some(spill) => format!(
                "[{skipped} bytes of output were dropped from memory; the spill file stopped at \
                 {} bytes: {}]\n",
                spill.written,
                spill.path.display()
            ),
            None => format!("[{skipped} bytes of output were dropped from memory]\n"),
        }
    }
}

impl Spill {
    fn write(&mut self, bytes: &[u8], limit: u64) {
        let room = limit.saturating_sub(self.written);
        let take = (bytes.len() as u64).min(room) as usize;
        if take == 0 {
            return;
        }
        let Some(file) = &mut self.file else {
            return;
        };
        match file.write_all(&bytes[..take]) {
            Ok(()) => self.written += take as u64,
            Err(e) => {
                self.error = Some(e.to_string());
                self.file = None;
            }
        }
    }
}

/// How many bytes of `bytes` to return: all of it, less a trailing incomplete UTF-8
/// sequence unless `whole` (the stream ended, so nothing will complete it).
fn utf8_cut(bytes: &[u8], whole: bool) -> usize {
    if whole {
        return bytes.len();
    }
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        // `error_len() == None`: the input ended inside a sequence.
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => {
            // Invalid bytes somewhere: cut before a trailing partial sequence only.
            let tail_start = bytes.len().saturating_sub(3);
            (tail_start..bytes.len())
                .find(|&i| {
                    let b = bytes[i];
                    b >= 0xC0
                        && std::str::from_utf8(&bytes[i..]).is_err_and(|e| e.error_len().is_none())
                })
                .unwrap_or(bytes.len())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn small(dir: &Path) -> JobOutput {
        JobOutput::new(
            OutputLimits {
                memory_limit: 8,
                spill_limit: 20,
                read_limit: 5,
            },
            dir,
            "t",
        )
    }

    /// Reads until nothing is left, concatenating (markers included).
    fn drain(out: &mut JobOutput, live: bool) -> String {
        let mut all = String::new();
        loop {
            let chunk = out.read(live).unwrap();
            all.push_str(&chunk.text);
            if chunk.remaining == 0 || chunk.text.is_empty() {
                return all;
            }
        }
    }

    #[test]
    fn reads_return_every_byte_once_across_memory_and_spill() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = small(dir.path());
        out.append(b"abc");
        assert_eq!(out.read(true).unwrap().text, "abc");
        assert_eq!(out.read(true).unwrap().text, "");
        out.append(b"defghijklmnop");
        assert!(out.spill_path().is_some());
        assert_eq!(drain(&mut out, true), "defghijklmnop");
        assert_eq!(out.read(true).unwrap(), Chunk::default());
    }

    #[test]
    fn bytes_past_the_spill_cap_are_skipped_with_a_marker_never_repeated() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = small(dir.path());
        out.append(&[b'x'; 30]);
        out.append(b"tail");
        let all = drain(&mut out, false);
        let path = out.spill_path().unwrap().display().to_string();
        assert_eq!(
            all,
            format!(
                "{}[6 bytes of output were dropped from memory; the spill file stopped at 20 \
                 bytes: {path}]\nxxxxtail",
                "x".repeat(20)
            )
        );
    }

    #[test]
    fn a_split_utf8_character_waits_for_its_last_byte_while_live() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = JobOutput::new(OutputLimits::default(), dir.path(), "t");
        let euro = "€".as_bytes();
        out.append(&[b'a', euro[0], euro[1]]);
        assert_eq!(out.read(true).unwrap().text, "a");
        out.append(&euro[2..]);
        assert_eq!(out.read(true).unwrap().text, "€");
    }
}
