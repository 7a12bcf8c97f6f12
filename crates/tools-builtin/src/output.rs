//! Keeping big outputs out of the model's context: caps, previews and spill files.
//!
//! Output that fits under the inline limit is returned whole. Anything larger is written in
//! full to a file in the session's spill directory and the model gets a preview — the head and
//! the tail, which is where commands print what they are doing and how they ended — plus the
//! file's path so it can `read` or `grep` the rest.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Creates a new spill file (mode 0600) named `<prefix>-<uuid>.txt` in `dir`.
pub(crate) fn create_spill_file(dir: &Path, prefix: &str) -> io::Result<(PathBuf, File)> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{prefix}-{}.txt", uuid::Uuid::new_v4()));
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    Ok((path, file))
}

/// Writes `text` to a new spill file and returns its path.
pub(crate) fn spill_text(dir: &Path, prefix: &str, text: &str) -> io::Result<PathBuf> {
    let (path, mut file) = create_spill_file(dir, prefix)?;
    file.write_all(text.as_bytes())?;
    file.flush()?;
    Ok(path)
}

/// The longest prefix of `s` that is at most `max` bytes and ends on a char boundary.
pub(crate) fn floor_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The longest suffix of `s` that is at most `max` bytes and starts on a char boundary.
pub(crate) fn ceil_boundary_suffix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// `s` cut to at most `max` characters, and whether it was cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((idx, _)) => (&s[..idx], true),
        None => (s, false),
    }
}

/// Sizes that govern one collector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CollectorLimits {
    /// Output up to this many bytes is returned inline, whole.
    pub inline: usize,
    /// Bytes of the head kept for a preview.
    pub head: usize,
    /// Bytes of the tail kept for a preview.
    pub tail: usize,
    /// The spill file stops growing here; the rest is counted but not stored.
    pub spill_max: u64,
}

/// Collects a stream of bytes, spilling to disk once it outgrows the inline limit.
pub(crate) struct OutputCollector {
    limits: CollectorLimits,
    spill_dir: PathBuf,
    spill_prefix: &'static str,
    /// Everything so far while under the inline limit; afterwards only the head.
    buffer: Vec<u8>,
    /// The most recent bytes once spilling (trimmed lazily to `tail`).
    tail: Vec<u8>,
    total: u64,
    spill: Option<Spill>,
}

struct Spill {
    path: PathBuf,
    file: Option<File>,
    written: u64,
    error: Option<String>,
}

/// What a collector produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CollectedOutput {
    /// The text for the model: everything, or a head/tail preview with a marker line.
    pub text: String,
    /// Total bytes received.
    pub total_bytes: u64,
    /// Whether `text` is a preview rather than the whole output.
    pub truncated: bool,
    /// Where the full output was saved, when it was spilled.
    pub spill_path: Option<PathBuf>,
    /// Whether the spill file itself hit its cap (or failed) and is incomplete.
    pub spill_incomplete: bool,
}

impl OutputCollector {
    pub fn new(limits: CollectorLimits, spill_dir: &Path, spill_prefix: &'static str) -> Self {
        Self {
            limits,
            spill_dir: spill_dir.to_path_buf(),
            spill_prefix,
            buffer: Vec::new(),
            tail: Vec::new(),
            total: 0,
            spill: None,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.spill.is_none() {
            self.buffer.extend_from_slice(bytes);
            if self.buffer.len() > self.limits.inline {
                self.start_spill();
            }
            return;
        }
        self.write_spill(bytes);
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > self.limits.tail.saturating_mul(2).max(4096) {
            let cut = self.tail.len() - self.limits.tail;
            self.tail.drain(..cut);
        }
    }

    fn start_spill(&mut self) {
        let everything = std::mem::take(&mut self.buffer);
        let mut spill = match create_spill_file(&self.spill_dir, self.spill_prefix) {
            Ok((path, file)) => Spill {
                path,
                file: Some(file),
                written: 0,
                error: None,
            },
            Err(err) => Spill {
                path: PathBuf::new(),
                file: None,
                written: 0,
                error: Some(err.to_string()),
            },
        };
        write_capped(&mut spill, &everything, self.limits.spill_max);
        self.spill = Some(spill);
        let head_len = everything.len().min(self.limits.head);
        self.buffer = everything[..head_len].to_vec();
        let tail_start = everything.len().saturating_sub(self.limits.tail);
        self.tail = everything[tail_start.max(head_len)..].to_vec();
    }

    fn write_spill(&mut self, bytes: &[u8]) {
        if let Some(spill) = self.spill.as_mut() {
            write_capped(spill, bytes, self.limits.spill_max);
        }
    }

    /// Finishes collection. `scrub` is applied to the returned text and, when the output was
    /// spilled, to the spill file as well.
    pub fn finish(mut self, scrub: impl Fn(&str) -> String) -> CollectedOutput {
        let Some(mut spill) = self.spill.take() else {
            return CollectedOutput {
                text: scrub(&String::from_utf8_lossy(&self.buffer)),
                total_bytes: self.total,
                truncated: false,
                spill_path: None,
                spill_incomplete: false,
            };
        };
        if let Some(mut file) = spill.file.take() {
            if let Err(err) = file.flush() {
                spill.error.get_or_insert(err.to_string());
            }
        }
        if spill.error.is_none() {
            if let Err(err) = rescrub_file(&spill.path, &scrub) {
                spill.error = Some(err.to_string());
            }
        }
        let head = String::from_utf8_lossy(&self.buffer);
        let head = floor_boundary(&head, self.limits.head).to_string();
        let tail_bytes = &self.tail[self.tail.len().saturating_sub(self.limits.tail)..];
        let tail = String::from_utf8_lossy(tail_bytes);
        let tail = ceil_boundary_suffix(&tail, self.limits.tail).to_string();
        let omitted = self.total.saturating_sub((head.len() + tail.len()) as u64);
        let incomplete = spill.error.is_some() || spill.written < self.total;
        let where_saved = match &spill.error {
            Some(err) => format!("the full output could not be saved: {err}"),
            None if incomplete => format!(
                "the first {} bytes were saved to {}",
                spill.written,
                spill.path.display()
            ),
            None => format!("full output saved to {}", spill.path.display()),
        };
        let marker = format!(
            "\n[output truncated: {} bytes total, {omitted} bytes omitted here; {where_saved}]\n",
            self.total
        );
        CollectedOutput {
            text: scrub(&format!("{head}{marker}{tail}")),
            total_bytes: self.total,
            truncated: true,
            spill_path: spill.error.is_none().then_some(spill.path),
            spill_incomplete: incomplete,
        }
    }
}

fn write_capped(spill: &mut Spill, bytes: &[u8], cap: u64) {
    let Some(file) = spill.file.as_mut() else {
        return;
    };
    let room = cap.saturating_sub(spill.written);
    let take = (bytes.len() as u64).min(room) as usize;
    if take == 0 {
        return;
    }
    match file.write_all(&bytes[..take]) {
        Ok(()) => spill.written += take as u64,
        Err(err) => {
            spill.error = Some(err.to_string());
            spill.file = None;
        }
    }
}

/// Applies the scrubber to a finished spill file, rewriting it only when something changed.
fn rescrub_file(path: &Path, scrub: &impl Fn(&str) -> String) -> io::Result<()> {
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let scrubbed = scrub(&text);
    if scrubbed != text {
        std::fs::write(path, scrubbed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn limits() -> CollectorLimits {
        CollectorLimits {
            inline: 20,
            head: 5,
            tail: 6,
            spill_max: 1 << 20,
        }
    }

    #[test]
    fn small_output_is_returned_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = OutputCollector::new(limits(), dir.path(), "t");
        c.push(b"hello ");
        c.push(b"world");
        let out = c.finish(|s| s.to_string());
        assert_eq!(
            out,
            CollectedOutput {
                text: "hello world".into(),
                total_bytes: 11,
                truncated: false,
                spill_path: None,
                spill_incomplete: false
            }
        );
    }

    #[test]
    fn large_output_spills_with_head_and_tail_preview() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = OutputCollector::new(limits(), dir.path(), "t");
        let all: String = (0..40).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        for chunk in all.as_bytes().chunks(7) {
            c.push(chunk);
        }
        let out = c.finish(|s| s.to_string());
        let path = out.spill_path.clone().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), all);
        assert_eq!(
            out.text,
            format!(
                "abcde\n[output truncated: 40 bytes total, 29 bytes omitted here; full output saved to {}]\nijklmn",
                path.display()
            )
        );
        assert!(out.truncated && !out.spill_incomplete);
    }

    #[test]
    fn spill_cap_marks_the_file_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = OutputCollector::new(
            CollectorLimits {
                inline: 4,
                head: 2,
                tail: 2,
                spill_max: 8,
            },
            dir.path(),
            "t",
        );
        c.push(b"0123456789abcdef");
        let out = c.finish(|s| s.to_string());
        assert!(out.spill_incomplete);
        assert_eq!(
            std::fs::read_to_string(out.spill_path.unwrap()).unwrap(),
            "01234567"
        );
        assert!(out.text.contains("the first 8 bytes were saved to"));
    }

    #[test]
    fn scrubbing_applies_to_preview_and_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = OutputCollector::new(limits(), dir.path(), "t");
        c.push(b"SECRETSECRET and more and more text SECRETSECRET");
        let out = c.finish(|s| s.replace("SECRETSECRET", "[R]"));
        let saved = std::fs::read_to_string(out.spill_path.unwrap()).unwrap();
        assert_eq!(saved, "[R] and more and more text [R]");
    }

    #[test]
    fn boundaries_respect_utf8() {
        assert_eq!(floor_boundary("héllo", 2), "h");
        assert_eq!(ceil_boundary_suffix("hé", 1), "");
        assert_eq!(truncate_chars("héllo", 2), ("hé", true));
        assert_eq!(truncate_chars("hé", 2), ("hé", false));
    }
}
