//! Searches: the best event of each matching session, and matching events of one session.
//!
//! Ranking is bounded. BM25 costs a lookup per matching row, and a word nearly every
//! session holds matches tens of thousands of rows; ranking them all took 100–200 ms over
//! 10k sessions. A search therefore ranks at most [`WINDOW_ROWS`] matching rows, newest
//! first (rowid order, which FTS5 walks without reading rows: a session's key is in the
//! rowid's high bits, and keys grow as sessions are first indexed), and at most
//! [`ROWS_PER_SESSION`] of each session: it reads [`BATCH_ROWS`] at a time, and once a
//! session has given its share the next batch starts below that session's rowid range, so
//! one long session cannot fill the window. It keeps the best row of each session and
//! reads snippets and session rows only for the sessions it returns. A query that matches
//! fewer rows (anything selective) is ranked exactly; for one that matches more, sessions
//! whose every match is older than the window are not returned, which for words that
//! common means the most recent sessions win over equally weak older ones.

use std::collections::HashMap;

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
/// Rows read per query of a session search.
const BATCH_ROWS: usize = 500;

/// One batch of the newest matches below `?15` (with every filter that can be checked per
/// row).
const SESSIONS_SQL: &str = "
    SELECT rowid, bm25(events, 1.0, 0.0)
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
    ORDER BY rowid DESC
    LIMIT ?16";

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
        let mut stmt = conn.prepare_cached(SESSIONS_SQL).map_err(self.err())?;
        // Per session key: rows ranked, and the best (rank, rowid).
        let mut sessions: HashMap<i64, (usize, f64, i64)> = HashMap::new();
        let mut ranked = 0;
        let mut below = i64::MAX;
        while ranked < WINDOW_ROWS {
            let batch: Vec<(i64, f64)> = stmt
                .query_map(
                    params![
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
                        to_sql(BATCH_ROWS.min(WINDOW_ROWS - ranked) as u64),
                    ],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(self.err())?
                .collect::<Result<_, _>>()
                .map_err(self.err())?;
            let Some(&(last, _)) = batch.last() else {
                break;
            };
            let full = batch.len() == BATCH_ROWS.min(WINDOW_ROWS - ranked);
            ranked += batch.len();
            for (rowid, rank) in batch {
                let entry = sessions
                    .entry(rowid >> SEQ_BITS)
                    .or_insert((0, f64::INFINITY, rowid));
                if entry.0 < ROWS_PER_SESSION {
                    entry.0 += 1;
                    if rank < entry.1 {
                        (entry.1, entry.2) = (rank, rowid);
                    }
                }
            }
            if !full {
                break;
            }
            // A session that gave its share is skipped whole: the next batch starts below
            // its rowid range.
            let key = last >> SEQ_BITS;
            below = if sessions.get(&key).is_some_and(|s| s.0 >= ROWS_PER_SESSION) {
                rowid_range(key).0
            } else {
                last
            };
        }
        drop(stmt);
        let mut best: Vec<(i64, f64, i64)> = sessions
            .into_iter()
            .map(|(key, (_, rank, rowid))| (key, rank, rowid))
            .collect();
        best.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        let mut hits = Vec::with_capacity(limit.min(best.len()));
        for (key, rank, rowid) in best {
            if hits.len() >= limit {
                break;
            }
            let row = conn
                .query_row(
                    &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE key = ?1"),
                    [key],
                    session_row,
                )
                .optional()
                .map_err(self.err())?;
            // The workspace's token matched; its recorded path must too (a hash collision).
            let Some(row) = row.filter(|r| filter.cwd.is_none() || r.cwd == filter.cwd) else {
                continue;
            };
            let Some(event) = event_at(&conn, &expression, rowid, rank).map_err(self.err())? else {
                continue;
            };
            hits.push(SessionHit {
                session: row,
                event,
            });
        }
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
        let mut hits = Vec::with_capacity(rows.len());
        for (rowid, rank) in rows {
            if let Some(event) = event_at(&conn, &expression, rowid, rank).map_err(self.err())? {
                hits.push(event);
            }
        }
        Ok(hits)
    }
}

/// The event at `rowid` with its snippet for `expression`.
fn event_at(
    conn: &Connection,
    expression: &str,
    rowid: i64,
    rank: f64,
) -> rusqlite::Result<Option<EventHit>> {
    let mut stmt = conn.prepare_cached(
        "SELECT type, turn, time, surface, snippet(events, 0, char(2), char(3), '…', 16)
         FROM events WHERE events MATCH ?1 AND rowid = ?2",
    )?;
    stmt.query_row(params![expression, rowid], |r| {
        Ok(EventHit {
            seq: from_sql(rowid & SEQ_MASK),
            event_type: r.get(0)?,
            turn: from_sql(r.get(1)?),
            time: from_sql(r.get(2)?),
            surface: r.get(3)?,
            snippet: one_line(&r.get::<_, String>(4)?),
            rank,
        })
    })
    .optional()
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
