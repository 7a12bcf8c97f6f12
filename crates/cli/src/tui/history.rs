//! Prompt history kept across sessions: `$DSH_HOME/history.jsonl`, one JSON string per line
//! (so a multi-line prompt stays one entry), appended as prompts are sent.
//!
//! Appends are plain writes without fsync: a crash may lose the last line, never the file.
//! Reading keeps the newest [`MAX_ENTRIES`]; when the file holds twice that, it is rewritten
//! with only those (through a temporary file and a rename), so it stays bounded. Entries are
//! stored as typed: a secret pasted into a prompt is in the history file too (it is in the
//! session log as well), which is why the file is created readable by its owner only.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Entries kept (and recalled).
pub const MAX_ENTRIES: usize = 1000;

/// Prompts longer than this are not recorded (a pasted log is not worth recalling).
pub const MAX_ENTRY_BYTES: usize = 16 * 1024;

/// The file name under `$DSH_HOME`.
pub const FILE_NAME: &str = "history.jsonl";

/// The history file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryFile {
    path: PathBuf,
}

impl HistoryFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file in `home` (`$DSH_HOME`).
    pub fn in_home(home: &Path) -> Self {
        Self::new(home.join(FILE_NAME))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The newest [`MAX_ENTRIES`] entries, oldest first; nothing when there is no file.
    /// Lines that are not a JSON string (a torn last line) are skipped. Compacts the file
    /// when it has grown past twice the bound.
    pub fn load(&self) -> io::Result<Vec<String>> {
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let mut entries = std::collections::VecDeque::new();
        let mut lines = 0usize;
        for line in BufReader::new(file).lines() {
            let line = line?;
            lines += 1;
            if let Ok(entry) = serde_json::from_str::<String>(&line) {
                if entries.len() == MAX_ENTRIES {
                    entries.pop_front();
                }
                entries.push_back(entry);
            }
        }
        let entries: Vec<String> = entries.into();
        if lines > 2 * MAX_ENTRIES {
            self.rewrite(&entries)?;
        }
        Ok(entries)
    }

    /// Appends one entry (skipped when over [`MAX_ENTRY_BYTES`]).
    pub fn append(&self, entry: &str) -> io::Result<()> {
        if entry.len() > MAX_ENTRY_BYTES {
            return Ok(());
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut line = serde_json::to_string(entry).map_err(io::Error::other)?;
        line.push('\n');
        let mut file = private(OpenOptions::new().create(true).append(true)).open(&self.path)?;
        // One write, so concurrent dsh processes interleave whole lines.
        file.write_all(line.as_bytes())
    }

    fn rewrite(&self, entries: &[String]) -> io::Result<()> {
        let temp = self.path.with_extension("jsonl.tmp");
        let mut out = String::new();
        for entry in entries {
            out.push_str(&serde_json::to_string(entry).map_err(io::Error::other)?);
            out.push('\n');
        }
        let mut file =
            private(OpenOptions::new().create(true).write(true).truncate(true)).open(&temp)?;
        file.write_all(out.as_bytes())?;
        drop(file);
        std::fs::rename(&temp, &self.path)
    }
}

#[cfg(unix)]
fn private(options: &mut OpenOptions) -> &mut OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    options.mode(0o600)
}

#[cfg(not(unix))]
fn private(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// The entries in memory and where browsing them stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    entries: Vec<String>,
    /// The entry shown while browsing with Up/Down.
    at: Option<usize>,
    /// What was typed before browsing started (Down past the newest brings it back).
    draft: String,
}

impl History {
    pub fn new(entries: Vec<String>) -> Self {
        Self {
            entries,
            ..Self::default()
        }
    }

    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Records a sent prompt; `false` when it repeats the newest entry (not recorded again).
    pub fn push(&mut self, entry: &str) -> bool {
        self.at = None;
        if self.entries.last().map(String::as_str) == Some(entry) {
            return false;
        }
        if self.entries.len() == MAX_ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push(entry.to_owned());
        true
    }

    /// Stops browsing (the text was edited or sent).
    pub fn reset(&mut self) {
        self.at = None;
    }

    /// Up: the entry before the one shown (the newest when not browsing), given the text
    /// now typed; `None` at the oldest.
    pub fn older(&mut self, typed: &str) -> Option<&str> {
        let at = match self.at {
            None => {
                self.draft = typed.to_owned();
                self.entries.len().checked_sub(1)?
            }
            Some(at) => at.checked_sub(1)?,
        };
        self.at = Some(at);
        self.entries.get(at).map(String::as_str)
    }

    /// Down: the entry after the one shown, or the draft past the newest; `None` when not
    /// browsing.
    pub fn newer(&mut self) -> Option<&str> {
        let at = self.at?;
        if at + 1 < self.entries.len() {
            self.at = Some(at + 1);
            return self.entries.get(at + 1).map(String::as_str);
        }
        self.at = None;
        Some(&self.draft)
    }

    /// Ctrl-R: the newest entry containing `query` older than `before` (an index; all
    /// entries when `None`), with its index.
    pub fn search(&self, query: &str, before: Option<usize>) -> Option<(usize, &str)> {
        let end = before.unwrap_or(self.entries.len()).min(self.entries.len());
        self.entries[..end]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, entry)| entry.contains(query))
            .map(|(i, entry)| (i, entry.as_str()))
    }
}

/// A Ctrl-R search in progress.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistorySearch {
    pub query: String,
    /// The index of the entry found, if any.
    pub found: Option<usize>,
    /// The text typed before the search, restored when it is cancelled.
    pub original: String,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn browsing_goes_back_and_returns_to_the_draft() {
        let mut history = History::new(vec!["one".into(), "two".into()]);
        assert_eq!(history.newer(), None, "not browsing");
        assert_eq!(history.older("dra"), Some("two"));
        assert_eq!(history.older("two"), Some("one"));
        assert_eq!(history.older("one"), None, "the oldest");
        assert_eq!(history.newer(), Some("two"));
        assert_eq!(history.newer(), Some("dra"));
        assert_eq!(history.newer(), None);
        assert!(history.push("three"));
        assert!(!history.push("three"), "a repeat is not recorded");
        assert_eq!(history.search("t", None), Some((2, "three")));
        assert_eq!(history.search("t", Some(2)), Some((1, "two")));
        assert_eq!(history.search("t", Some(1)), None);
    }

    #[test]
    fn the_file_keeps_multi_line_entries_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let file = HistoryFile::in_home(&dir.path().join("home"));
        assert_eq!(file.load().unwrap(), Vec::<String>::new());
        file.append("first\nsecond line").unwrap();
        file.append(&"x".repeat(MAX_ENTRY_BYTES + 1)).unwrap();
        // A torn line from a crash is skipped.
        let mut raw = OpenOptions::new().append(true).open(file.path()).unwrap();
        raw.write_all(b"\"torn").unwrap();
        raw.write_all(b"\n").unwrap();
        assert_eq!(file.load().unwrap(), ["first\nsecond line"]);
        for i in 0..2 * MAX_ENTRIES {
            file.append(&format!("entry {i}")).unwrap();
        }
        let entries = file.load().unwrap();
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(
            entries.last().unwrap(),
            &format!("entry {}", 2 * MAX_ENTRIES - 1)
        );
        let lines = std::fs::read_to_string(file.path())
            .unwrap()
            .lines()
            .count();
        assert_eq!(lines, MAX_ENTRIES, "compacted on load");
    }
}
