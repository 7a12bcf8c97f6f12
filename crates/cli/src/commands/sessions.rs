//! `dsh sessions list|show|verify|repair|fork|export`: the stored sessions, read straight
//! from the store (no runtime is booted, no model is contacted). `dsh sessions compact` is
//! the exception: it boots one to call the model ([`super::compact`]).
//!
//! Ids may be given as unique prefixes (with or without the `session-` prefix). Listing
//! reads the index only; `show`, `verify` and `export` read one log each.

use super::repair;
use super::{exit, stderr_line, GlobalArgs, SessionsCommand, UsageError};
use crate::app::{find_session, open_store, sessions_of, OpenedStore, Runtime};
use crate::config::{load, Env};
use crate::tui::{transcript_lines, Transcript};
use dsh_protocol::SessionId;
use dsh_store::{
    display_cwd, read_log, Compression, SessionPersistence, SessionSummary, StoreError,
};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The store the settings point at (same root and encoding, or the same database, as runs
/// write).
pub(super) struct Store {
    pub backend: OpenedStore,
    pub workspace: PathBuf,
    /// The image attachment store (`$DSH_HOME/attachments/v1`), for export.
    pub attachments: PathBuf,
    /// `$DSH_HOME`, where the search index lives.
    pub home: PathBuf,
}

impl Store {
    fn open(global: &GlobalArgs, env: &dyn Env) -> anyhow::Result<Self> {
        let settings = load(env, &global.overrides())?;
        let backend = open_store(&settings)?;
        // Sessions of a directory that no longer exists (or of another machine) are still
        // listed by the path they recorded.
        let cwd = match &global.cwd {
            Some(cwd) => cwd.clone(),
            None => std::env::current_dir()?,
        };
        let workspace = cwd.canonicalize().unwrap_or(cwd);
        Ok(Self {
            backend,
            workspace,
            attachments: crate::app::attachments_root(&settings),
            home: settings.home.value.clone(),
        })
    }

    /// The store through the persistence seam, whichever backend it is.
    pub fn persistence(&self) -> &dyn SessionPersistence {
        self.backend.persistence()
    }

    pub fn resolve(&self, query: &str) -> anyhow::Result<SessionId> {
        Ok(SessionId::new(find_session(self.persistence(), query)?.id))
    }
}

pub(super) fn sessions(
    global: &GlobalArgs,
    command: &SessionsCommand,
    env: &dyn Env,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    if let SessionsCommand::Migrate { to, workspace } = command {
        // Opens both backends itself, whichever one the settings select.
        return super::migrate::migrate(global, *to, workspace.as_deref(), env, out);
    }
    let store = Store::open(global, env)?;
    match command {
        SessionsCommand::List { all, json, flat } => list(&store, *all, *json, *flat, out),
        SessionsCommand::Show {
            id,
            at: Some(seq),
            context,
            json,
        } => super::memory::show_at(&store, id, *seq, *context, *json, out),
        SessionsCommand::Show { id, json, .. } => show(&store, id, *json, out),
        SessionsCommand::Search {
            query,
            all,
            json,
            limit,
        } => super::memory::search(&store, &query.join(" "), *all, *json, *limit, out),
        SessionsCommand::Reindex => super::memory::reindex(&store, out),
        SessionsCommand::Verify { id, all } => verify(&store, id.as_deref(), *all, out),
        SessionsCommand::Repair { id } => repair::repair(&store, id, out),
        SessionsCommand::Fork { id, at } => {
            let source = store.resolve(id)?;
            let child = Runtime::new_session_id();
            let header = dsh_store::fork_stored(store.persistence(), &source, *at, child)?;
            writeln!(out, "{}", header.id.as_str())?;
            Ok(exit::SUCCESS)
        }
        SessionsCommand::Export { id, output } => export(&store, id, output.as_deref(), out),
        // Boots a runtime (it calls a model), unlike the store-only commands.
        SessionsCommand::Compact { id } => super::compact::compact(global, id, env, out),
        SessionsCommand::Rename { id, title } => super::rename::rename(global, id, title, env, out),
        // Dispatched above, before a store is opened; the same call here keeps the match whole.
        SessionsCommand::Migrate { to, workspace } => {
            super::migrate::migrate(global, *to, workspace.as_deref(), env, out)
        }
    }
}

/// `YYYY-MM-DD HH:MM` (UTC) of an epoch-millisecond time.
pub(super) fn format_time(ms: u64) -> String {
    let secs = ms / 1000;
    let date = crate::persona::civil_date(secs / 86_400);
    let of_day = secs % 86_400;
    format!("{date} {:02}:{:02}", of_day / 3600, (of_day % 3600) / 60)
}

/// `summaries` (newest first) with each delegated child right under its parent, indented
/// one step per level; a child whose parent is not listed stays where it is, unindented.
fn as_tree(summaries: Vec<SessionSummary>) -> Vec<(usize, SessionSummary)> {
    let listed: std::collections::HashSet<String> =
        summaries.iter().map(|s| s.id.clone()).collect();
    let is_root = |s: &SessionSummary| {
        s.parent_session
            .as_ref()
            .is_none_or(|parent| !listed.contains(parent))
    };
    let mut out = Vec::with_capacity(summaries.len());
    let mut stack: Vec<(usize, &SessionSummary)> = summaries
        .iter()
        .filter(|s| is_root(s))
        .rev()
        .map(|s| (0, s))
        .collect();
    while let Some((level, summary)) = stack.pop() {
        out.push((level, summary.clone()));
        // Children oldest first under their parent, as they were started.
        let mut children: Vec<&SessionSummary> = summaries
            .iter()
            .filter(|s| s.parent_session.as_deref() == Some(summary.id.as_str()))
            .collect();
        children.sort_by_key(|s| (s.created_at, s.id.clone()));
        for child in children.into_iter().rev() {
            // A cycle in hand-edited headers must not loop forever.
            if out.len() + stack.len() <= summaries.len() {
                stack.push((level + 1, child));
            }
        }
    }
    out
}

fn list(
    store: &Store,
    all: bool,
    json: bool,
    flat: bool,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let summaries: Vec<SessionSummary> = if all {
        store.persistence().list()?
    } else {
        sessions_of(store.persistence(), &store.workspace)?
    };
    if let Some(problem) = store.backend.files().and_then(|f| f.index_problem()) {
        stderr_line(format_args!(
            "dsh: note: {problem}; listed by reading every session log instead"
        ));
    }
    if json {
        writeln!(out, "{}", serde_json::to_string(&summaries)?)?;
        return Ok(exit::SUCCESS);
    }
    if summaries.is_empty() {
        let place = if all {
            "the store".to_owned()
        } else {
            format!(
                "{} (--all lists every workspace)",
                store.workspace.display()
            )
        };
        stderr_line(format_args!("no stored sessions in {place}"));
        return Ok(exit::SUCCESS);
    }
    let rows: Vec<(usize, SessionSummary)> = if flat {
        summaries.into_iter().map(|s| (0, s)).collect()
    } else {
        as_tree(summaries)
    };
    let width = rows
        .iter()
        .map(|(level, s)| s.id.len() + 2 * level)
        .max()
        .unwrap_or(0);
    writeln!(
        out,
        "{:width$}  {:16}  {:>5}  {:11}  {}",
        "ID",
        "UPDATED (UTC)",
        "TURNS",
        "OUTCOME",
        if all { "WORKSPACE / TITLE" } else { "TITLE" }
    )?;
    for (level, s) in &rows {
        let outcome = match (&s.problem, &s.last_outcome) {
            (Some(_), _) => "unreadable",
            (None, Some(kind)) => kind.as_str(),
            (None, None) => "-",
        };
        let title = s.title.as_deref().unwrap_or("");
        let title = if all {
            format!("{}  {title}", display_cwd(s.cwd.as_deref().unwrap_or("?")))
        } else {
            title.to_owned()
        };
        // A title may be the model's words, a path anyone's: the table shows them
        // terminal-safe (`--json` has them exactly).
        let title = crate::sanitize::sanitize(&title);
        writeln!(
            out,
            "{:width$}  {:16}  {:>5}  {:11}  {}",
            format!("{}{}", "  ".repeat(*level), s.id),
            format_time(s.updated_at),
            s.turns,
            outcome,
            title.trim_end()
        )?;
    }
    Ok(exit::SUCCESS)
}

/// The stored log's header and events as JSON values (packed rows expanded, a torn tail
/// left out), exactly as stored otherwise.
pub(super) fn raw_log(store: &Store, id: &SessionId) -> anyhow::Result<(Value, Vec<Value>)> {
    let files = match &store.backend {
        OpenedStore::Files(files) => files,
        OpenedStore::Postgres(pg) => return Ok(pg.raw_log(id)?),
    };
    let path = files.locate(id)?;
    let compression = Compression::of_path(&path).unwrap_or_default();
    let log = read_log(&path, compression, Some(id.as_str()))?;
    Ok((log.header.to_value(), log.events))
}

fn show(store: &Store, query: &str, json: bool, out: &mut dyn Write) -> anyhow::Result<u8> {
    let id = store.resolve(query)?;
    if json {
        let (header, events) = raw_log(store, &id)?;
        writeln!(out, "{header}")?;
        for event in events {
            writeln!(out, "{event}")?;
        }
        return Ok(exit::SUCCESS);
    }
    let stored = store.persistence().load(&id)?;
    let header = &stored.header;
    writeln!(
        out,
        "session {}  ·  {}  ·  created {} UTC",
        header.id.as_str(),
        display_cwd(header.cwd.as_deref().unwrap_or("?")),
        format_time(header.created_at)
    )?;
    writeln!(out)?;
    let transcript = Transcript::from_events(stored.events.iter().map(|e| &**e));
    for line in transcript_lines(&transcript, terminal_width()) {
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        writeln!(out, "{}", text.trim_end())?;
    }
    writeln!(out)?;
    writeln!(out, "{}", context_line(&stored.events))?;
    if let Some(line) = dsh_modes::goal::status::stored_line(&stored.events) {
        writeln!(out, "{line}")?;
    }
    if let Some(line) = compactions_line(&stored.events) {
        writeln!(out, "{line}")?;
    }
    if let Some(tail) = &stored.torn_tail {
        writeln!(
            out,
            "\n(the log ends in a torn tail at {}; resuming or `dsh sessions repair` cuts it)",
            tail.at
        )?;
    }
    Ok(exit::SUCCESS)
}

/// What the next request of the session would cost, by the token meter (calibrated to the
/// provider's last reported usage when the request would be the same), against the context
/// window the log last recorded.
pub(crate) fn context_line(events: &[std::sync::Arc<dsh_session::SessionEvent>]) -> String {
    let measured = match dsh_compaction::TokenMeter::from_events(events) {
        Ok(meter) => meter.measure(),
        Err(error) => return format!("context: not measurable ({error})"),
    };
    let basis = match measured.baseline {
        dsh_compaction::Baseline::Usage { .. } => "calibrated to provider usage",
        _ => "estimated",
    };
    let target = events.iter().rev().find_map(|event| match &event.data {
        dsh_session::EventData::RequestContext(context) => Some(context),
        _ => None,
    });
    let tokens = measured.total_tokens;
    match target {
        Some(context) => match context.context_window.filter(|w| *w > 0) {
            Some(window) => format!(
                "context: ~{tokens} tokens of {window} ({}%) for {}/{}, {basis}",
                tokens.saturating_mul(100) / window,
                context.provider,
                context.model
            ),
            None => format!(
                "context: ~{tokens} tokens for {}/{} (window unknown), {basis}",
                context.provider, context.model
            ),
        },
        None => format!("context: ~{tokens} tokens (no request yet), {basis}"),
    }
}

/// How many compactions landed and failed (and, after a crash, were left open), or `None`
/// for a session that never compacted.
fn compactions_line(events: &[std::sync::Arc<dsh_session::SessionEvent>]) -> Option<String> {
    let (mut started, mut landed, mut failed) = (0u64, 0u64, 0u64);
    for event in events {
        if event.decode::<dsh_compaction::CompactionStart>().is_some() {
            started += 1;
        } else if let Some(Ok(end)) = event.decode::<dsh_compaction::CompactionEnd>() {
            if end.error.is_some() {
                failed += 1;
            } else {
                landed += 1;
            }
        }
    }
    if started == 0 {
        return None;
    }
    let open = started.saturating_sub(landed + failed);
    let mut line = format!("compactions: {landed} landed, {failed} failed");
    if open > 0 {
        line.push_str(&format!(", {open} interrupted"));
    }
    Some(line)
}

fn terminal_width() -> u16 {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|w| *w >= 20)
        .unwrap_or(100)
}

fn verify(
    store: &Store,
    query: Option<&str>,
    all: bool,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let ids: Vec<SessionId> = match (query, all) {
        (Some(query), false) => vec![store.resolve(query)?],
        (None, true) => store
            .persistence()
            .list()?
            .into_iter()
            .map(|s| SessionId::new(s.id))
            .collect(),
        _ => return Err(UsageError("give a session id, or --all".into()).into()),
    };
    let mut corrupt = 0usize;
    for (i, id) in ids.iter().enumerate() {
        let last = i + 1 == ids.len();
        let inspected = match store.backend.files() {
            // Verify exits right after the last session: freeing its events one by one
            // would cost about a quarter of reading them, and the exit returns the memory
            // anyway. The others are dropped, so `--all` stays bounded by one session.
            Some(files) if last => files.inspect_into(id, std::mem::forget),
            _ => store.persistence().inspect(id),
        };
        match inspected {
            Ok(inspection) if !inspection.needs_repair() => writeln!(
                out,
                "ok       {}  {} events  {}",
                id.as_str(),
                inspection.events,
                inspection.path.display()
            )?,
            Ok(inspection) => {
                let mut what = Vec::new();
                if let Some(tail) = &inspection.torn_tail {
                    what.push(format!("a torn tail from {} ({})", tail.at, tail.reason));
                }
                if !inspection.pending_closers.is_empty() {
                    what.push(format!(
                        "a turn left open ({} closing events owed)",
                        inspection.pending_closers.len()
                    ));
                }
                writeln!(
                    out,
                    "repair   {}  {}: {}; resuming it or `dsh sessions repair {}` fixes this",
                    id.as_str(),
                    inspection.path.display(),
                    what.join(" and "),
                    id.as_str()
                )?;
            }
            Err(error) => {
                corrupt += 1;
                writeln!(out, "CORRUPT  {}  {}", id.as_str(), describe(&error))?;
            }
        }
    }
    if corrupt > 0 {
        stderr_line(format_args!(
            "dsh: {corrupt} of {} session logs are damaged",
            ids.len()
        ));
        return Ok(exit::FAILURE);
    }
    Ok(exit::SUCCESS)
}

/// A store error with the file (and line) first, for verify's report.
fn describe(error: &StoreError) -> String {
    format!("{error} [{}]", error.code())
}

fn export(
    store: &Store,
    query: &str,
    output: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let id = store.resolve(query)?;
    let (header, events) = raw_log(store, &id)?;
    let mut text = String::new();
    for value in std::iter::once(&header).chain(events.iter()) {
        text.push_str(&value.to_string());
        text.push('\n');
    }
    let images = logged_images(&events);
    match output {
        Some(path) if path == Path::new("-") => {
            out.write_all(text.as_bytes())?;
            if !images.is_empty() {
                stderr_line(format_args!(
                    "dsh: note: the session references {} image(s) kept in {}; the export holds \
                     their references only (export to a file to copy them alongside)",
                    images.len(),
                    store.attachments.display()
                ));
            }
        }
        _ => {
            let path = output
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(format!("{}.dsh-session.jsonl", id.as_str())));
            std::fs::write(&path, text)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            writeln!(out, "{}", path.display())?;
            stderr_line(format_args!(
                "exported {} events of {}",
                events.len(),
                id.as_str()
            ));
            if !images.is_empty() {
                export_images(&store.attachments, &images, &path)?;
            }
        }
    }
    Ok(exit::SUCCESS)
}

/// Every image reference a raw log holds (`{"type": "image", "attachment": {...}}` at any
/// depth), each once, in order of appearance.
fn logged_images(events: &[Value]) -> Vec<dsh_attachments::ImageRef> {
    fn walk(value: &Value, out: &mut Vec<dsh_attachments::ImageRef>) {
        match value {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some("image") {
                    let image = map
                        .get("attachment")
                        .and_then(dsh_attachments::ImageRef::from_value);
                    if let Some(image) = image {
                        if !out.contains(&image) {
                            out.push(image);
                        }
                    }
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    events.iter().for_each(|event| walk(event, &mut out));
    out
}

/// Copies the images an exported log references into `<file>.attachments/objects/...`, the
/// store's own layout, so the export travels whole: on another machine, copy that `objects`
/// directory into `$DSH_HOME/attachments/v1`.
fn export_images(
    root: &Path,
    images: &[dsh_attachments::ImageRef],
    file: &Path,
) -> anyhow::Result<()> {
    let mut name = file.as_os_str().to_owned();
    name.push(".attachments");
    let target = PathBuf::from(name);
    let source = dsh_attachments::LocalImageStore::new(root, Default::default());
    let mut copied = 0;
    for image in images {
        let Some(hex) = image.digest() else { continue };
        let from = source.object_path(hex);
        let to = target.join("objects").join(&hex[..2]).join(hex);
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        }
        match std::fs::copy(&from, &to) {
            Ok(_) => copied += 1,
            Err(error) => stderr_line(format_args!(
                "dsh: warning: image {} is not in {} ({error}); the export names it only",
                image.short_id(),
                root.display()
            )),
        }
    }
    stderr_line(format_args!(
        "exported {copied} image(s) to {} (copy its objects/ into $DSH_HOME/attachments/v1 \
         where the log is imported)",
        target.display()
    ));
    Ok(())
}
