//! Searches: the best event of each matching session, and matching events of one session.
//!
//! Ranking is bounded. BM25 costs a lookup per matching row, and a word nearly every
//! session holds matches tens of thousands of rows; ranking them all took 100–200 ms over
//! 10k sessions. A search therefore ranks at most [`WINDOW_ROWS`] matching rows, newest
//! first (rowid order, which FTS5 walks without reading rows: a session's key is in the
//! rowid's high bits, and keys grow as sessions are first indexed), and at most
//! [`ROWS_PER_SESSION`] of each session, so one long session cannot fill the window. It
//! keeps the best row of each session and reads snippets and session rows only for the
//! sessions it returns. A query that matches fewer rows (anything selective) is ranked
//! exactly; for one that matches more, sessions whose every match is older than the window
//! are not returned, which for words that common means the most recent sessions win over
//! equally weak older ones.
//!
//! The window is one statement. FTS5's `bm25()` works out each phrase's document frequency
//! the first time a statement calls it, by walking the phrase's whole doclist: for a word
//! in every row that walk, not the rows ranked, is most of a search, and it is paid once per
//! statement (reading the window in batches paid it once a batch). So the statement walks
//! every match newest first and asks [`WINDOW_FN`] (a function of this connection that counts
//! the window and each session's share) before it computes a row's rank: rows past a
//! session's share or past the window cost a doclist step, not a BM25. Only a run of
//! [`SKIP_RUN`] rows of sessions that gave their share (one very long session) starts a new
//! statement below that session's rows.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::functions::FunctionFlags;
use rusqlite::{params, Connection, OptionalExtension};

use super::{
    from_sql, rowid_range, scope_token, session_row, to_sql, EventFilter, EventHit, MemoryIndex,
    SessionFilter, SessionHit, SEQ_BITS, SEQ_MASK, SESSION_COLUMNS,
};
use crate::error::MemoryError;
use crate::query::fts_expression;
use crate::text::one_line;

/// Matching rows a session search ranks at most (the newest ones).
pub const WINDOW_ROWS: usize = 1_500;
/// Matching rows of one session a search ranks at most (its newest ones).
pub const ROWS_PER_SESSION: usize = 8;
/// Rows of sessions that gave their share, in a row, after which the search starts a new
/// statement below that session (a doclist step each, against a new statement's
/// document-frequency walk).
const SKIP_RUN: usize = 4_096;
/// The SQL function the window statement asks whether a row is ranked.
pub const WINDOW_FN: &str = "dsh_memory_window_take";

/// The newest matches below `?15` (with every filter that can be checked per row), newest
/// first; the rank is NULL for a row the window does not take.
const SESSIONS_SQL: &str = "
    SELECT rowid,
           CASE WHEN dsh_memory_window_take(rowid >> 32) THEN bm25(events, 1.0, 0.0) END
    FROM events
    WHERE events MATCH ?1 AND rowid < ?15
      AND (?2 IS NULL OR rowid >> 32 IS NOT (SELECT key FROM sessions WHERE id = ?2))
      AND (?3 IS NULL OR (rowid & 4294967295) >= ?3)
      AND (?4 IS NULL OR (rowid & 4294967295) <= ?4)
      AND (?5 IS NULL OR time >= ?5)
      AND (?6 IS NULL OR time <= ?6)
      AND (?7 IS NULL OR type IN (SELECT value FROM json_each(?7)))
      AND (?8 IS NULL OR surface IN (SELECT value FROM json_each(?8)))
      AND (?9 IS NULL OR rowid >> 32 IN (
          SELECT key FROM sessions
          WHERE (?10 IS NULL OR id IN (SELECT value FROM json_each(?10)))
            AND (?11 IS NULL OR created_at >= ?11)
            AND (?12 IS NULL OR created_at <= ?12)
            AND (?13 IS NULL OR parent IN (SELECT value FROM json_each(?13))
                 OR (?14 AND parent IS NULL))))
    ORDER BY rowid DESC";

/// Matching events of one session (a rowid range), best first.
const EVENTS_SQL: &str = "
SELECT rowid, bm25(events, 1.0, 0.0) AS r
FROM events
WHERE events MATCH ?1 AND rowid BETWEEN ?2 AND ?3
  AND (?4 IS NULL OR time >= ?4)
  AND (?5 IS NULL OR time <= ?5)
  AND (?6 IS NULL OR type IN (SELECT value FROM json_each(?6)))
  AND (?7 IS NULL OR surface IN (SELECT value FROM json_each(?7)))
ORDER BY r, rowid
LIMIT ?8";

/// What the window of the running search has taken: rows in all, and rows per session key.
#[derive(Debug, Default)]
pub(super) struct Window {
    taken: usize,
    per_session: HashMap<i64, usize>,
}

/// The window, shared by the connection's [`WINDOW_FN`] and the search that resets it.
pub(super) type SharedWindow = Arc<Mutex<Window>>;

impl Window {
    /// Takes a row of session `key` if the window and the session's share have room.
    fn take(&mut self, key: i64) -> bool {
        if self.taken >= WINDOW_ROWS {
            return false;
        }
        let share = self.per_session.entry(key).or_insert(0);
        if *share >= ROWS_PER_SESSION {
            return false;
        }
        *share += 1;
        self.taken += 1;
        true
    }
}

fn lock_window(window: &Mutex<Window>) -> std::sync::MutexGuard<'_, Window> {
    window.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers [`WINDOW_FN`] on `conn` (direct use only: no trigger or view can call it).
pub(super) fn register_window(conn: &Connection, window: SharedWindow) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        WINDOW_FN,
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DIRECTONLY,
        move |ctx| Ok(lock_window(&window).take(ctx.get::<i64>(0)?)),
    )
}

/// A JSON array for `json_each`, or NULL for no filter.
fn json_list(values: Option<&Vec<String>>) -> Option<String> {
    values.map(|v| serde_json::Value::from(v.clone()).to_string())
}

impl MemoryIndex {
    /// The best-matching event of each matching session, best sessions first (see the
    /// module docs for how much is ranked).
    pub fn search(
        &self,
        query: &str,
        filter: &SessionFilter,
        events: &EventFilter,
        limit: usize,
    ) -> Result<Vec<SessionHit>, MemoryError> {
        let words = fts_expression(query)?;
        let expression = match &filter.cwd {
            Some(cwd) => format!("text : ({words}) AND scope : {}", scope_token(cwd)),
            None => format!("text : ({words})"),
        };
        let parents: Option<Vec<String>> = filter
            .parents
            .as_ref()
            .map(|p| p.iter().flatten().cloned().collect());
        let roots = filter
            .parents
            .as_ref()
            .is_some_and(|p| p.iter().any(Option::is_none));
        let by_session = filter.ids.is_some()
            || filter.created_from.is_some()
            || filter.created_to.is_some()
            || filter.parents.is_some();
        let conn = self.conn()?;
        *lock_window(&self.window) = Window::default();
        let mut stmt = conn.prepare_cached(SESSIONS_SQL).map_err(self.err())?;
        // Per session key: the best (rank, rowid).
        let mut sessions: HashMap<i64, (f64, i64)> = HashMap::new();
        let mut ranked = 0;
        let mut below = i64::MAX;
        'window: loop {
            let mut rows = stmt
                .query(params![
                    expression,
                    filter.exclude,
                    events.seq_from.map(to_sql),
                    events.seq_to.map(to_sql),
                    events.time_from.map(to_sql),
                    events.time_to.map(to_sql),
                    json_list(events.types.as_ref()),
                    json_list(events.surfaces.as_ref()),
                    by_session.then_some(1),
                    json_list(filter.ids.as_ref()),
                    filter.created_from.map(to_sql),
                    filter.created_to.map(to_sql),
                    json_list(parents.as_ref()),
                    roots,
                    below,
                ])
                .map_err(self.err())?;
            let mut passed = 0;
            while let Some(row) = rows.next().map_err(self.err())? {
                let rowid: i64 = row.get(0).map_err(self.err())?;
                match row.get::<_, Option<f64>>(1).map_err(self.err())? {
                    Some(rank) => {
                        passed = 0;
                        let best = sessions
                            .entry(rowid >> SEQ_BITS)
                            .or_insert((f64::INFINITY, rowid));
                        if rank < best.0 {
                            *best = (rank, rowid);
                        }
                        ranked += 1;
                        if ranked >= WINDOW_ROWS {
                            break 'window;
                        }
                    }
                    None => {
                        passed += 1;
                        if passed >= SKIP_RUN {
                            // One session's rows past its share: go on below them.
                            below = rowid_range(rowid >> SEQ_BITS).0;
                            continue 'window;
                        }
                    }
                }
            }
            break;
        }
        drop(stmt);
        let mut best: Vec<(i64, f64, i64)> = sessions
            .into_iter()
            .map(|(key, (rank, rowid))| (key, rank, rowid))
            .collect();
        best.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        let mut chosen = Vec::with_capacity(limit.min(best.len()));
        for (key, rank, rowid) in best {
            if chosen.len() >= limit {
                break;
            }
            let row = conn
                .prepare_cached(&format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions WHERE key = ?1"
                ))
                .and_then(|mut stmt| stmt.query_row([key], session_row).optional())
                .map_err(self.err())?;
            // The workspace's token matched; its recorded path must too (a hash collision).
            if let Some(row) = row.filter(|r| filter.cwd.is_none() || r.cwd == filter.cwd) {
                chosen.push((row, rowid, rank));
            }
        }
        let ranked: Vec<(i64, f64)> = chosen
            .iter()
            .map(|(_, rowid, rank)| (*rowid, *rank))
            .collect();
        let mut events = events_at(&conn, &expression, &ranked).map_err(self.err())?;
        let hits = chosen
            .into_iter()
            .filter_map(|(session, rowid, _)| {
                events
                    .remove(&rowid)
                    .map(|event| SessionHit { session, event })
            })
            .collect();
        Ok(hits)
    }

    /// Matching events of one session, best first.
    pub fn search_events(
        &self,
        session: &str,
        query: &str,
        filter: &EventFilter,
        limit: usize,
    ) -> Result<Vec<EventHit>, MemoryError> {
        let expression = format!("text : ({})", fts_expression(query)?);
        let conn = self.conn()?;
        let key: Option<i64> = conn
            .query_row("SELECT key FROM sessions WHERE id = ?1", [session], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        let Some(key) = key else {
            return Ok(Vec::new());
        };
        let (first, last) = rowid_range(key);
        let seq =
            |bound: Option<u64>, default: i64| bound.map_or(default, |s| to_sql(s).min(SEQ_MASK));
        let from = first | seq(filter.seq_from, 0);
        let to = first | seq(filter.seq_to, SEQ_MASK);
        let mut stmt = conn.prepare_cached(EVENTS_SQL).map_err(self.err())?;
        let rows: Vec<(i64, f64)> = stmt
            .query_map(
                params![
                    expression,
                    from,
                    to.min(last),
                    filter.time_from.map(to_sql),
                    filter.time_to.map(to_sql),
                    json_list(filter.types.as_ref()),
                    json_list(filter.surfaces.as_ref()),
                    to_sql(limit as u64),
                ],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(self.err())?
            .collect::<Result<_, _>>()
            .map_err(self.err())?;
        drop(stmt);
        let mut events = events_at(&conn, &expression, &rows).map_err(self.err())?;
        Ok(rows
            .iter()
            .filter_map(|(rowid, _)| events.remove(rowid))
            .collect())
    }
}

/// The events at `rows` (rowid, rank) with their snippets for `expression`, by rowid.
///
/// One statement for all of them: every statement with a `MATCH` sets up the expression
/// again (a seek of every term in every segment, most of a millisecond on a large index),
/// which once per hit was most of a search with two common words. The statement walks the
/// matches between the lowest and the highest rowid asked for (the hits come from the
/// window just walked, or are few) and makes a snippet only for the rows asked for; `+rowid`
/// keeps that list out of FTS5's plan, which would otherwise run the match once per rowid.
fn events_at(
    conn: &Connection,
    expression: &str,
    rows: &[(i64, f64)],
) -> rusqlite::Result<HashMap<i64, EventHit>> {
    let (Some(low), Some(high)) = (
        rows.iter().map(|r| r.0).min(),
        rows.iter().map(|r| r.0).max(),
    ) else {
        return Ok(HashMap::new());
    };
    let ranks: HashMap<i64, f64> = rows.iter().copied().collect();
    let wanted = serde_json::Value::from(rows.iter().map(|r| r.0).collect::<Vec<_>>()).to_string();
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, type, turn, time, surface, snippet(events, 0, char(2), char(3), '…', 16)
         FROM events WHERE events MATCH ?1 AND rowid BETWEEN ?2 AND ?3
           AND +rowid IN (SELECT value FROM json_each(?4))",
    )?;
    let found = stmt.query_map(params![expression, low, high, wanted], |r| {
        let rowid: i64 = r.get(0)?;
        Ok((
            rowid,
            EventHit {
                seq: from_sql(rowid & SEQ_MASK),
                event_type: r.get(1)?,
                turn: from_sql(r.get(2)?),
                time: from_sql(r.get(3)?),
                surface: r.get(4)?,
                snippet: one_line(&r.get::<_, String>(5)?),
                rank: ranks.get(&rowid).copied().unwrap_or_default(),
            },
        ))
    })?;
    found.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sql_shifts_match_the_rowid_layout() {
        // The statements spell the layout out as literals (`>> 32`, `& 4294967295`).
        assert_eq!(SEQ_BITS, 32);
        assert_eq!(SEQ_MASK, 4_294_967_295);
    }
}
