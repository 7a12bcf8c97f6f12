//! `dsh sessions search|reindex` and `dsh sessions show ID --at SEQ`: the memory index
//! (`$DSH_HOME/memory/index.sqlite`, see docs/memory.md) from the shell.
//!
//! Each command first catches the index up with the logs (only what changed is read), so a
//! hit is never older than the store; an unreadable index is rebuilt, with a note.

use super::sessions::{format_time, Store};
use super::{exit, stderr_line};
use dsh_memory::index::{MARK_END, MARK_START};
use dsh_memory::{EventFilter, MemoryIndex, SessionFilter, SessionHit, INDEX_FILE};
use dsh_store::{display_cwd, recorded_cwd};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

/// Where the index lives under `$DSH_HOME`.
pub fn index_path(home: &std::path::Path) -> PathBuf {
    home.join("memory").join(INDEX_FILE)
}

/// Opens the index and catches it up with the store, reporting what the person should know.
fn open_synced(store: &Store) -> anyhow::Result<MemoryIndex> {
    let path = index_path(&store.home);
    let (index, notice) = MemoryIndex::open(&path)?;
    if let Some(notice) = notice {
        stderr_line(format_args!("dsh: note: {notice}"));
    }
    let report = index.sync(store.persistence())?;
    if !report.unreadable.is_empty() {
        stderr_line(format_args!(
            "dsh: note: {} session log(s) could not be read and are searched as last indexed \
             (`dsh sessions verify --all` names the damage): {}",
            report.unreadable.len(),
            report.unreadable.join("; ")
        ));
    }
    Ok(index)
}

/// `5m`, `3h`, `2d` ago.
fn age(ms: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let secs = now.saturating_sub(ms) / 1000;
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// A snippet for a terminal (matches in bold) or a pipe (matches as `**word**`), each piece
/// made terminal-safe: a log may hold any bytes a tool once printed.
fn highlighted(snippet: &str, bold: bool) -> String {
    let (on, off) = if bold {
        ("\u{1b}[1m", "\u{1b}[22m")
    } else {
        ("**", "**")
    };
    let mut out = String::new();
    for (i, piece) in snippet.split([MARK_START, MARK_END]).enumerate() {
        if i > 0 {
            out.push_str(if i % 2 == 1 { on } else { off });
        }
        out.push_str(&crate::sanitize::sanitize(piece));
    }
    out
}

pub(super) fn search(
    store: &Store,
    query: &str,
    all: bool,
    json: bool,
    limit: usize,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    if query.trim().is_empty() {
        stderr_line(
            "dsh: sessions search needs words to find, e.g. `dsh sessions search flaky test`",
        );
        return Ok(exit::USAGE);
    }
    let index = open_synced(store)?;
    let filter = SessionFilter {
        cwd: (!all).then(|| recorded_cwd(&store.workspace)),
        ..SessionFilter::default()
    };
    let hits = match index.search(query, &filter, &EventFilter::default(), limit.max(1)) {
        Ok(hits) => hits,
        Err(err) if err.code() == "MEMORY_INVALID_INPUT" => {
            stderr_line(format_args!("dsh: {err}"));
            return Ok(exit::USAGE);
        }
        Err(err) => return Err(err.into()),
    };
    if json {
        let rows: Vec<_> = hits.iter().map(hit_json).collect();
        writeln!(out, "{}", serde_json::to_string(&rows)?)?;
        return Ok(exit::SUCCESS);
    }
    if hits.is_empty() {
        let place = if all {
            "any stored session".to_owned()
        } else {
            format!(
                "the sessions of {} (--all searches every workspace)",
                store.workspace.display()
            )
        };
        stderr_line(format_args!("no match for \"{query}\" in {place}"));
        return Ok(exit::SUCCESS);
    }
    let bold = std::io::stdout().is_terminal();
    for hit in &hits {
        let title = hit.session.title.as_deref().unwrap_or("(untitled)");
        let place = if all {
            format!(
                "  {}",
                display_cwd(hit.session.cwd.as_deref().unwrap_or("?"))
            )
        } else {
            String::new()
        };
        writeln!(
            out,
            "{}  {} ago  turn {}  seq {}  {}{}",
            hit.session.id,
            age(hit.event.time),
            hit.event.turn,
            hit.event.seq,
            crate::sanitize::sanitize(title),
            crate::sanitize::sanitize(&place)
        )?;
        writeln!(
            out,
            "    {}: {}",
            hit.event.event_type,
            highlighted(&hit.event.snippet, bold)
        )?;
    }
    if let Some(first) = hits.first() {
        stderr_line(format_args!(
            "open a hit with `dsh sessions show {} --at {}`",
            first.session.id, first.event.seq
        ));
    }
    Ok(exit::SUCCESS)
}

fn hit_json(hit: &SessionHit) -> serde_json::Value {
    json!({
        "sessionId": hit.session.id,
        "title": hit.session.title,
        "cwd": hit.session.cwd,
        "createdAt": hit.session.created_at,
        "updatedAt": hit.session.updated_at,
        "seq": hit.event.seq,
        "type": hit.event.event_type,
        "turn": hit.event.turn,
        "time": hit.event.time,
        "surface": hit.event.surface,
        "snippet": highlighted(&hit.event.snippet, false),
        "rank": hit.event.rank,
    })
}

pub(super) fn reindex(store: &Store, out: &mut dyn Write) -> anyhow::Result<u8> {
    let path = index_path(&store.home);
    let (index, notice) = MemoryIndex::open(&path)?;
    if let Some(notice) = notice {
        stderr_line(format_args!("dsh: note: {notice}"));
    }
    index.clear()?;
    let report = index.sync(store.persistence())?;
    index.checkpoint()?;
    let stats = index.stats()?;
    writeln!(
        out,
        "indexed {} events of {} sessions into {} ({} KiB)",
        report.events_indexed,
        report.sessions,
        path.display(),
        stats.bytes / 1024
    )?;
    if !report.unreadable.is_empty() {
        stderr_line(format_args!(
            "dsh: note: {} session log(s) could not be read: {}",
            report.unreadable.len(),
            report.unreadable.join("; ")
        ));
        return Ok(exit::FAILURE);
    }
    Ok(exit::SUCCESS)
}

pub(super) fn show_at(
    store: &Store,
    query: &str,
    seq: u64,
    context: u64,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let id = store.resolve(query)?;
    let stored = store.persistence().load(&id)?;
    let Some(last) = stored.events.last().map(|e| e.seq) else {
        anyhow::bail!("session {} has no events", id.as_str());
    };
    if seq > last {
        anyhow::bail!(
            "session {} has events 0..={last}; there is no event {seq}",
            id.as_str()
        );
    }
    let window = stored
        .events
        .iter()
        .filter(|e| e.seq + context >= seq && e.seq <= seq + context);
    if json {
        for event in window {
            writeln!(out, "{}", serde_json::to_string(event.as_ref())?)?;
        }
        return Ok(exit::SUCCESS);
    }
    writeln!(
        out,
        "session {}  ·  {}  ·  created {} UTC  ·  events {}..={} of 0..={last}",
        id.as_str(),
        display_cwd(stored.header.cwd.as_deref().unwrap_or("?")),
        format_time(stored.header.created_at),
        seq.saturating_sub(context),
        (seq + context).min(last)
    )?;
    for event in window {
        let marker = if event.seq == seq { ">" } else { " " };
        let text = dsh_memory::text::event_text(event)
            .map(|t| dsh_memory::text::clip(&t, 600))
            .unwrap_or_default();
        writeln!(
            out,
            "{marker} {:>5}  {:<20}  {}",
            event.seq,
            event.type_name(),
            crate::sanitize::sanitize(&dsh_memory::text::one_line(&text))
        )?;
    }
    writeln!(
        out,
        "\nresume it with `dsh --resume {}`, or fork from here with `dsh sessions fork {} --at SEQ`",
        id.as_str(),
        id.as_str()
    )?;
    Ok(exit::SUCCESS)
}
