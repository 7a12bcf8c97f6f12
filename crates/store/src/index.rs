//! The listing index: what a session picker needs, without decoding any log.
//!
//! Listing must stay fast with thousands of sessions (the original decoded every log and
//! stalled its UI), so each log gets a small summary in `<root>/index.jsonl`. The index is
//! a cache, never the truth: an entry records the size and modification time of the log it
//! was computed from, listing compares them with a `stat` of the log, and only a missing or
//! stale entry is recomputed from the log itself. Writers keep every log's entry current in
//! memory after each batch, and append it to the file (no sync: a lost entry is just stale)
//! when what a listing shows besides the log's growth changed (a new log, a turn started or
//! ended, a title), when the last line for that log is a second old, and when the session is
//! released; a step's three checkpoints in between cost no file operations here. A process
//! that dies in between leaves an entry that no longer matches its log's size, which the
//! next listing recomputes, as after any crash. Later lines win, and a listing that had to
//! refresh anything rewrites the file compactly.

use std::collections::{HashMap, HashSet};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, UNIX_EPOCH};

use dsh_session::{EventData, SessionEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::StoreError;
use crate::header::LogHeader;
use crate::paths::{Compression, StoreLayout};
use crate::reader;
use crate::regular_file::{read_regular_file, ReadFileError};

/// File name of the index under the store root.
pub const INDEX_FILE: &str = "index.jsonl";
const INDEX_TAG: &str = "dsh-session-index";
const INDEX_VERSION: u64 = 1;
/// Titles are for pickers; the full prompt stays in the log.
const TITLE_MAX_CHARS: usize = 200;

/// What a listing shows about one stored session.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    /// The workspace the session ran in.
    pub cwd: Option<String>,
    /// The session's latest `session/title` (a model title, a rename), else the first prompt a
    /// person typed; cut to a couple of hundred characters.
    pub title: Option<String>,
    pub created_at: u64,
    /// Time of the last stored event (epoch ms); the creation time for an empty log.
    pub updated_at: u64,
    /// Turns started.
    pub turns: u64,
    pub events: u64,
    /// Bytes on disk.
    pub size: u64,
    /// `kind` of the last `turn/end` reason (`completed`, `interrupted`, …).
    pub last_outcome: Option<String>,
    /// The session that started this one (a delegated child's parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Nesting depth of a delegated child (absent for a top-level session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation_depth: Option<u64>,
    /// Set when the log could not be read; the summary then comes from the header alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl SessionSummary {
    fn from_header(header: &LogHeader) -> Self {
        SessionSummary {
            id: header.id.clone(),
            cwd: header.cwd.clone(),
            created_at: header.created_at,
            updated_at: header.created_at,
            parent_session: header.parent_session.clone(),
            delegation_depth: (header.delegation_depth > 0).then_some(header.delegation_depth),
            ..SessionSummary::default()
        }
    }

    /// A summary folded from a log's events before its header was known, completed with
    /// the header. [`apply`](Self::apply) sets only the fields kept from `self` here, and
    /// `updated_at` only through `max`, so this equals folding after
    /// [`from_header`](Self::from_header); a field `apply` comes to set belongs here too.
    fn under_header(self, header: &LogHeader) -> Self {
        let base = SessionSummary::from_header(header);
        SessionSummary {
            updated_at: base.updated_at.max(self.updated_at),
            events: self.events,
            turns: self.turns,
            title: self.title,
            last_outcome: self.last_outcome,
            ..base
        }
    }

    /// Folds one stored event into the summary.
    pub(crate) fn apply(&mut self, event: &Value) {
        self.events += 1;
        if let Some(time) = event.get("time").and_then(Value::as_u64) {
            self.updated_at = self.updated_at.max(time);
        }
        let data = event.get("data");
        match event.get("type").and_then(Value::as_str) {
            Some("turn/start") => self.turns += 1,
            Some("turn/end") => {
                self.last_outcome = data
                    .and_then(|d| d.pointer("/reason/kind"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            // The latest `session/title` wins over everything (a model title, a rename).
            Some("session/title") => {
                if let Some(title) = data
                    .and_then(|d| d.get("title"))
                    .and_then(Value::as_str)
                    .map(|t| t.chars().take(TITLE_MAX_CHARS).collect::<String>())
                    .filter(|t| !t.trim().is_empty())
                {
                    self.title = Some(title);
                }
            }
            Some("user/message") if self.title.is_none() => {
                let typed_by_user = data
                    .and_then(|d| d.pointer("/source/kind"))
                    .and_then(Value::as_str)
                    == Some("user");
                if typed_by_user {
                    self.title = data.and_then(prompt_title);
                }
            }
            _ => {}
        }
    }
}

impl SessionSummary {
    /// [`apply`](Self::apply) for a typed event. Only the few types a summary looks into
    /// are converted to JSON; the rest (nearly every event) just count.
    pub fn apply_event(&mut self, event: &SessionEvent) {
        match &event.data {
            EventData::TurnStart(_) | EventData::TurnEnd(_) | EventData::UserMessage(_) => {
                match serde_json::to_value(event) {
                    Ok(value) => self.apply(&value),
                    Err(_) => self.count(event.time),
                }
            }
            EventData::Other { type_name, .. } if type_name == "session/title" => {
                match serde_json::to_value(event) {
                    Ok(value) => self.apply(&value),
                    Err(_) => self.count(event.time),
                }
            }
            _ => self.count(event.time),
        }
    }

    fn count(&mut self, time: u64) {
        self.events += 1;
        self.updated_at = self.updated_at.max(time);
    }
}

fn prompt_title(message: &Value) -> Option<String> {
    let blocks = message.get("content")?.as_array()?;
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let joined = text.join(" ");
    let title: String = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    let title: String = title.chars().take(TITLE_MAX_CHARS).collect();
    (!title.is_empty()).then_some(title)
}

/// A summary plus the state of the log it was computed from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "IndexLine")]
struct IndexEntry {
    /// The log's path relative to the root, `/`-separated.
    path: String,
    mtime_ns: u64,
    #[serde(flatten)]
    summary: SessionSummary,
}

/// An index line as read: [`IndexEntry`] spelled out flat. Reading a `flatten`ed struct
/// buffers every field first, which made loading the index of a large store the slowest
/// part of a listing.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexLine {
    path: String,
    mtime_ns: u64,
    id: String,
    cwd: Option<String>,
    title: Option<String>,
    created_at: u64,
    updated_at: u64,
    turns: u64,
    events: u64,
    size: u64,
    last_outcome: Option<String>,
    #[serde(default)]
    parent_session: Option<String>,
    #[serde(default)]
    delegation_depth: Option<u64>,
    #[serde(default)]
    problem: Option<String>,
}

impl From<IndexLine> for IndexEntry {
    fn from(line: IndexLine) -> Self {
        IndexEntry {
            path: line.path,
            mtime_ns: line.mtime_ns,
            summary: SessionSummary {
                id: line.id,
                cwd: line.cwd,
                title: line.title,
                created_at: line.created_at,
                updated_at: line.updated_at,
                turns: line.turns,
                events: line.events,
                size: line.size,
                last_outcome: line.last_outcome,
                parent_session: line.parent_session,
                delegation_depth: line.delegation_depth,
                problem: line.problem,
            },
        }
    }
}

/// Size and modification time: what tells a fresh entry from a stale one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogStamp {
    pub size: u64,
    pub mtime_ns: u64,
}

impl LogStamp {
    pub(crate) fn of(path: &Path) -> std::io::Result<LogStamp> {
        Ok(Self::from_metadata(&fs::metadata(path)?))
    }

    pub(crate) fn from_metadata(meta: &fs::Metadata) -> LogStamp {
        // Platforms without modification times read as "always stale".
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        LogStamp {
            size: meta.len(),
            mtime_ns,
        }
    }
}

/// The listing index of one store root.
#[derive(Debug)]
pub struct SessionIndex {
    layout: StoreLayout,
    /// Loaded on first use; keyed by relative log path.
    entries: Mutex<Option<HashMap<String, IndexEntry>>>,
    /// Entry lines appended since the file was last written whole.
    appended_lines: AtomicUsize,
    /// Per log (relative path): when its entry was last written as a line, and whether the
    /// entry changed since. Locked after `entries`.
    lines: Mutex<HashMap<String, LineState>>,
    /// Why the index file cannot be used, once that is known; listings then scan every log.
    problem: Mutex<Option<String>>,
}

/// The file is rewritten once superseded lines could outnumber live ones several times.
const COMPACT_AFTER_LINES: usize = 1000;

/// How long a growing log's entry may stay unwritten (see the module docs).
const LINE_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug)]
struct LineState {
    written_at: Instant,
    /// The entry in memory is newer than the last line written for it.
    behind: bool,
}

/// Whether a listing would show more than the log's growth (its size, event count and
/// last-event time) between two summaries of one log.
fn shows_more_than_growth(before: &SessionSummary, after: &SessionSummary) -> bool {
    before.turns != after.turns
        || before.title != after.title
        || before.last_outcome != after.last_outcome
        || before.problem != after.problem
}

impl SessionIndex {
    pub fn new(layout: StoreLayout) -> Self {
        SessionIndex {
            layout,
            entries: Mutex::new(None),
            appended_lines: AtomicUsize::new(0),
            lines: Mutex::new(HashMap::new()),
            problem: Mutex::new(None),
        }
    }

    fn file(&self) -> PathBuf {
        self.layout.root().join(INDEX_FILE)
    }

    fn relative(&self, log: &Path) -> Option<String> {
        let rel = log.strip_prefix(self.layout.root()).ok()?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        Some(parts.join("/"))
    }

    fn lock(&self) -> MutexGuard<'_, Option<HashMap<String, IndexEntry>>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn loaded<'a>(
        &self,
        guard: &'a mut MutexGuard<'_, Option<HashMap<String, IndexEntry>>>,
    ) -> &'a mut HashMap<String, IndexEntry> {
        guard.get_or_insert_with(|| match load_entries(&self.file()) {
            Ok(entries) => entries,
            Err(err) => {
                self.set_problem(err.to_string());
                HashMap::new()
            }
        })
    }

    fn set_problem(&self, problem: String) {
        tracing::warn!(%problem, "the session index is unusable; listing reads the logs");
        *self.problem.lock().unwrap_or_else(PoisonError::into_inner) = Some(problem);
    }

    /// Why the index file could not be read or written, if it could not: listings are then
    /// computed from the logs themselves (slower, but complete), and a surface may say so.
    pub fn problem(&self) -> Option<String> {
        self.problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn lock_lines(&self) -> MutexGuard<'_, HashMap<String, LineState>> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`write_compact`], remembering a failure that will not go away by itself.
    fn rewrite(&self, entries: &HashMap<String, IndexEntry>) {
        // Every entry is in the new file, so none is behind any more.
        let now = Instant::now();
        for state in self.lock_lines().values_mut() {
            *state = LineState {
                written_at: now,
                behind: false,
            };
        }
        if let Err(err) = write_compact(&self.file(), entries) {
            match err {
                IndexWriteError::NotRegular(problem) => self.set_problem(problem),
                IndexWriteError::Io(err) => tracing::debug!(%err, "session index not rewritten"),
            }
        }
    }

    /// Records a durable append: `appended` went to `log`, which now has `stamp`, and had
    /// `size_before` bytes before. An entry that does not match `size_before` is stale and is
    /// dropped instead (the next listing recomputes it).
    #[cfg(test)]
    pub(crate) fn record_append(
        &self,
        log: &Path,
        header: &LogHeader,
        size_before: Option<u64>,
        appended: &[Value],
        stamp: LogStamp,
    ) {
        self.record_append_with(log, header, size_before, stamp, |summary| {
            appended.iter().for_each(|event| summary.apply(event))
        });
    }

    /// [`record_append`](Self::record_append) for typed events.
    pub(crate) fn record_append_events(
        &self,
        log: &Path,
        header: &LogHeader,
        size_before: Option<u64>,
        appended: &[Arc<SessionEvent>],
        stamp: LogStamp,
    ) {
        self.record_append_with(log, header, size_before, stamp, |summary| {
            appended.iter().for_each(|event| summary.apply_event(event))
        });
    }

    fn record_append_with(
        &self,
        log: &Path,
        header: &LogHeader,
        size_before: Option<u64>,
        stamp: LogStamp,
        fold: impl FnOnce(&mut SessionSummary),
    ) {
        let Some(rel) = self.relative(log) else {
            return;
        };
        let mut guard = self.lock();
        let entries = self.loaded(&mut guard);
        let (mut summary, new_log) = match (entries.remove(&rel), size_before) {
            (Some(entry), Some(before)) if entry.summary.size == before => (entry.summary, false),
            (_, None) => (SessionSummary::from_header(header), true),
            _ => {
                self.lock_lines().remove(&rel);
                return;
            }
        };
        let shown_before = (!new_log).then(|| summary.clone());
        fold(&mut summary);
        summary.size = stamp.size;
        let now = Instant::now();
        let due = {
            let lines = self.lock_lines();
            shown_before
                .as_ref()
                .is_none_or(|before| shows_more_than_growth(before, &summary))
                || lines
                    .get(&rel)
                    .is_none_or(|line| now.duration_since(line.written_at) >= LINE_INTERVAL)
        };
        let entry = IndexEntry {
            path: rel.clone(),
            mtime_ns: stamp.mtime_ns,
            summary,
        };
        entries.insert(rel.clone(), entry);
        if !due {
            if let Some(line) = self.lock_lines().get_mut(&rel) {
                line.behind = true;
            }
            return;
        }
        self.lock_lines().insert(
            rel.clone(),
            LineState {
                written_at: now,
                behind: false,
            },
        );
        let appended = self.appended_lines.fetch_add(1, Ordering::Relaxed) + 1;
        if appended > COMPACT_AFTER_LINES.max(4 * entries.len()) {
            self.appended_lines.store(0, Ordering::Relaxed);
            self.rewrite(entries);
        } else if let Some(entry) = entries.get(&rel) {
            self.append_line(entry);
        }
    }

    /// Appends the entry of `log` if the file is behind it (its session is being released).
    pub(crate) fn write_behind(&self, log: &Path) {
        let Some(rel) = self.relative(log) else {
            return;
        };
        let mut guard = self.lock();
        let entries = self.loaded(&mut guard);
        let behind = self
            .lock_lines()
            .remove(&rel)
            .is_some_and(|line| line.behind);
        if let Some(entry) = entries.get(&rel).filter(|_| behind) {
            self.appended_lines.fetch_add(1, Ordering::Relaxed);
            self.append_line(entry);
        }
    }

    /// Appends every entry the file is behind (the store is going away).
    fn write_all_behind(&self) {
        let mut guard = self.lock();
        let Some(entries) = guard.as_mut() else {
            return;
        };
        let behind: Vec<String> = self
            .lock_lines()
            .drain()
            .filter(|(_, line)| line.behind)
            .map(|(rel, _)| rel)
            .collect();
        for rel in behind {
            if let Some(entry) = entries.get(&rel) {
                self.append_line(entry);
            }
        }
    }

    /// Forgets what the index knows about a log (it was rewritten or repaired).
    pub(crate) fn invalidate(&self, log: &Path) {
        if let Some(rel) = self.relative(log) {
            self.loaded(&mut self.lock()).remove(&rel);
            self.lock_lines().remove(&rel);
        }
    }

    /// The workspace a session's log lives in, if the index knows the session.
    pub(crate) fn cwd_of(&self, id: &str) -> Option<Option<String>> {
        let mut guard = self.lock();
        let entries = self.loaded(&mut guard);
        entries
            .values()
            .find(|e| e.summary.id == id)
            .map(|e| e.summary.cwd.clone())
    }

    fn append_line(&self, entry: &IndexEntry) {
        let path = self.file();
        let result = (|| -> std::io::Result<()> {
            let mut options = OpenOptions::new();
            options.create(true).append(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                // Never wait on a FIFO in the index's place (opening one to write blocks
                // until a reader comes); a FIFO is refused below anyway.
                options.mode(0o600).custom_flags(libc::O_NONBLOCK);
            }
            let mut file = options.open(&path)?;
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            let mut text = Vec::new();
            if meta.len() == 0 {
                text.extend(index_tag_line());
            }
            serde_json::to_writer(&mut text, entry)?;
            text.push(b'\n');
            file.write_all(&text)
        })();
        if let Err(err) = result {
            // The index is a cache: failing to update it costs a refresh, not data.
            tracing::debug!(path = %path.display(), %err, "session index not updated");
        }
    }

    /// Lists every stored session, newest first, without opening logs whose entry is fresh.
    pub fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let logs = crate::discover::discover_logs(&self.layout)?;
        let found = logs.len();
        let mut guard = self.lock();
        let entries = self.loaded(&mut guard);
        let mut changed = false;
        for log in &logs {
            let (rel, stamp) = (&log.rel, log.stamp);
            let fresh = entries
                .get(rel.as_str())
                .is_some_and(|e| e.summary.size == stamp.size && e.mtime_ns == stamp.mtime_ns);
            if !fresh {
                let path = log.path(self.layout.root());
                let summary = summarize_log(&path, log.compression, stamp);
                entries.insert(
                    rel.clone(),
                    IndexEntry {
                        path: rel.clone(),
                        mtime_ns: stamp.mtime_ns,
                        summary,
                    },
                );
                changed = true;
            }
        }
        // Every log found has an entry now, so only a surplus means entries of logs that
        // are gone.
        if entries.len() > found {
            let seen: HashSet<&str> = logs.iter().map(|log| log.rel.as_str()).collect();
            entries.retain(|rel, _| seen.contains(rel.as_str()));
            changed = true;
        }
        if changed {
            self.appended_lines.store(0, Ordering::Relaxed);
            self.rewrite(entries);
        }
        let mut summaries: Vec<SessionSummary> =
            entries.values().map(|e| e.summary.clone()).collect();
        summaries.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(summaries)
    }
}

impl Drop for SessionIndex {
    fn drop(&mut self) {
        self.write_all_behind();
    }
}

fn index_tag_line() -> Vec<u8> {
    format!("{{\"type\":\"{INDEX_TAG}\",\"version\":{INDEX_VERSION}}}\n").into_bytes()
}

/// The largest index file read: far more than the summaries of any real store (a few
/// hundred bytes each), far less than what would hurt to hold in memory.
const INDEX_MAX_BYTES: u64 = 256 << 20;

/// Reads the index file. A missing file or unparsable lines just mean "no entry" (the index
/// is rebuilt from the logs and rewritten); a path that cannot hold the index (a directory,
/// a FIFO, a device, an enormous file) is an error worth telling the person about.
fn load_entries(file: &Path) -> Result<HashMap<String, IndexEntry>, ReadFileError> {
    let mut entries = HashMap::new();
    let text = match read_regular_file(file, INDEX_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(err) if err.is_not_found() => return Ok(entries),
        Err(err @ (ReadFileError::NotRegular { .. } | ReadFileError::TooLarge { .. })) => {
            return Err(err)
        }
        Err(err) => {
            tracing::debug!(%err, "session index not read");
            return Ok(entries);
        }
    };
    let Ok(text) = String::from_utf8(text) else {
        return Ok(entries);
    };
    let mut lines = text.lines();
    let tagged = lines
        .next()
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| v["type"] == INDEX_TAG && v["version"] == INDEX_VERSION);
    if !tagged {
        return Ok(entries);
    }
    for line in lines {
        if let Ok(entry) = serde_json::from_str::<IndexEntry>(line) {
            entries.insert(entry.path.clone(), entry);
        }
    }
    Ok(entries)
}

/// Why the index was not rewritten.
enum IndexWriteError {
    /// Something other than a file is in the index's place; retrying will not help.
    NotRegular(String),
    Io(std::io::Error),
}

/// Writes the whole index to a temp file and renames it into place. Nothing is left behind
/// when that fails, and nothing is even written when a directory holds the index's name (a
/// rename onto it can never succeed).
fn write_compact(
    file: &Path,
    entries: &HashMap<String, IndexEntry>,
) -> Result<(), IndexWriteError> {
    if let Ok(meta) = fs::symlink_metadata(file) {
        if meta.is_dir() {
            return Err(IndexWriteError::NotRegular(format!(
                "the session index {} is a directory, not a file",
                file.display()
            )));
        }
    }
    let mut sorted: Vec<&IndexEntry> = entries.values().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut text = index_tag_line();
    for entry in sorted {
        serde_json::to_writer(&mut text, entry)
            .map_err(|e| IndexWriteError::Io(std::io::Error::other(e)))?;
        text.push(b'\n');
    }
    let temp = file.with_extension(format!("jsonl.{}.tmp", std::process::id()));
    let mut options = OpenOptions::new();
    options.create(true).write(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&temp)
        .and_then(|mut f| f.write_all(&text))
        .and_then(|()| fs::rename(&temp, file));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.map_err(IndexWriteError::Io)
}

/// Recomputes a summary from the log itself (the slow path).
fn summarize_log(path: &Path, compression: Compression, stamp: LogStamp) -> SessionSummary {
    // Typed reading is several times faster; a log it refuses is summarized the general way.
    // Each event is folded as it is read and dropped, so a summary never holds the session.
    let mut folded = SessionSummary::default();
    if let Ok((shell, None)) =
        crate::typed_log::scan_typed_file(path, compression, None, &mut Fold(&mut folded))
    {
        return SessionSummary {
            size: stamp.size,
            ..folded.under_header(&shell.header)
        };
    }
    summarize_log_general(path, compression, stamp)
}

/// Folds the events a typed scan hands over into a summary.
struct Fold<'a>(&'a mut SessionSummary);

impl Extend<Arc<SessionEvent>> for Fold<'_> {
    fn extend<I: IntoIterator<Item = Arc<SessionEvent>>>(&mut self, events: I) {
        for event in events {
            self.0.apply_event(&event);
        }
    }
}

/// [`summarize_log`] over `Value` records: any log that parses at all gets a summary.
fn summarize_log_general(path: &Path, compression: Compression, stamp: LogStamp) -> SessionSummary {
    let mut summary = match reader::read_log(path, compression, None) {
        Ok(log) => {
            let mut summary = SessionSummary::from_header(&log.header);
            for event in &log.events {
                summary.apply(event);
            }
            summary
        }
        Err(err) => {
            let problem = Some(format!("{}: {err}", err.code()));
            match reader::read_header(path, compression) {
                Ok(header) => SessionSummary {
                    problem,
                    ..SessionSummary::from_header(&header)
                },
                Err(_) => SessionSummary {
                    id: path
                        .parent()
                        .and_then(Path::file_name)
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    problem,
                    ..SessionSummary::default()
                },
            }
        }
    };
    summary.size = stamp.size;
    summary
}

#[cfg(test)]
mod tests;
