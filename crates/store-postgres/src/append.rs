//! The append transaction: one commit per batch, the seq checked under the session row's
//! lock, and a retry after an uncertain failure recognising its own committed rows.

use dsh_session::SessionHeader;
use dsh_store::paths::{project_dir_key, NO_CWD_DIR};
use dsh_store::{SessionSummary, StoreError};
use tokio_postgres::Client;

use crate::backend::{backend_error, log_path};

/// The insert of a new session's row.
pub(crate) struct NewRow {
    workspace_key: String,
    workspace_path: Option<String>,
    header: String,
    parent: Option<String>,
    depth: Option<i64>,
    created_at: i64,
}

pub(crate) fn new_row(header: &SessionHeader) -> Result<NewRow, StoreError> {
    let text = serde_json::to_string(header).map_err(|e| StoreError::InvalidSession {
        source: dsh_session::SessionError::InvalidHeader {
            reason: e.to_string(),
        },
    })?;
    Ok(NewRow {
        workspace_key: workspace_key(header.cwd.as_deref()),
        workspace_path: header.cwd.clone(),
        header: text,
        parent: header
            .parent_session
            .as_ref()
            .map(|p| p.as_str().to_owned()),
        depth: header.delegation_depth.filter(|d| *d > 0).map(|d| d as i64),
        created_at: header.created_at as i64,
    })
}

/// The same key the file backend names a workspace's directory with.
fn workspace_key(cwd: Option<&str>) -> String {
    match cwd {
        Some(cwd) => project_dir_key(cwd),
        None => NO_CWD_DIR.to_owned(),
    }
}

/// One append's rows, column by column.
pub(crate) struct Batch {
    pub(crate) first_seq: u64,
    pub(crate) seqs: Vec<i64>,
    pub(crate) types: Vec<String>,
    pub(crate) times: Vec<i64>,
    pub(crate) datas: Vec<String>,
}

/// The append transaction: create the row if new, check the seq under the row lock, insert
/// the events, update the summary, commit. `replay` lets a retry after an uncertain
/// failure find its own rows already committed.
pub(crate) async fn append_tx(
    client: &Client,
    key: &str,
    create: Option<NewRow>,
    batch: &Batch,
    summary: &SessionSummary,
    replay: bool,
) -> Result<(), StoreError> {
    let Batch {
        first_seq,
        seqs,
        types,
        times,
        datas,
    } = batch;
    let first_seq = *first_seq;
    let failed = backend_error("append");
    client.batch_execute("BEGIN").await.map_err(&failed)?;
    let result = async {
        if let Some(row) = &create {
            client
                .execute(
                    "INSERT INTO dsh_sessions (id, workspace_key, workspace_path, header, \
                     parent_session, delegation_depth, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (id) DO NOTHING",
                    &[
                        &key,
                        &row.workspace_key,
                        &row.workspace_path,
                        &row.header,
                        &row.parent,
                        &row.depth,
                        &row.created_at,
                    ],
                )
                .await
                .map_err(&failed)?;
        }
        let stored: i64 = client
            .query_one(
                "SELECT next_seq FROM dsh_sessions WHERE id = $1 FOR UPDATE",
                &[&key],
            )
            .await
            .map_err(&failed)?
            .get(0);
        let stored = stored.max(0) as u64;
        if stored != first_seq {
            if replay
                && stored >= first_seq + seqs.len() as u64
                && already_stored(client, key, seqs, datas).await?
            {
                return Ok(false);
            }
            return Err(StoreError::SeqMismatch {
                path: log_path(key),
                expected: stored,
                found: first_seq,
            });
        }
        client
            .execute(
                "INSERT INTO dsh_events (session_id, seq, type, time, data) \
                 SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[])",
                &[&key, &seqs, &types, &times, &datas],
            )
            .await
            .map_err(&failed)?;
        let next = (first_seq + seqs.len() as u64) as i64;
        client
            .execute(
                "UPDATE dsh_sessions SET next_seq = $2, title = $3, updated_at = $4, \
                 turns = $5, events = $6, size = $7, last_outcome = $8 WHERE id = $1",
                &[
                    &key,
                    &next,
                    &summary.title,
                    &(summary.updated_at as i64),
                    &(summary.turns as i64),
                    &(summary.events as i64),
                    &(summary.size as i64),
                    &summary.last_outcome,
                ],
            )
            .await
            .map_err(&failed)?;
        Ok(true)
    }
    .await;
    match result {
        Ok(true) => client.batch_execute("COMMIT").await.map_err(&failed),
        Ok(false) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Ok(())
        }
        Err(err) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(err)
        }
    }
}

/// Whether exactly these rows are stored already (a retry of a commit whose
/// acknowledgement was lost with the connection).
async fn already_stored(
    client: &Client,
    key: &str,
    seqs: &[i64],
    datas: &[String],
) -> Result<bool, StoreError> {
    let (Some(first), Some(last)) = (seqs.first(), seqs.last()) else {
        return Ok(true);
    };
    let rows = client
        .query(
            "SELECT data FROM dsh_events WHERE session_id = $1 AND seq BETWEEN $2 AND $3 \
             ORDER BY seq",
            &[&key, first, last],
        )
        .await
        .map_err(backend_error("append"))?;
    Ok(rows.len() == datas.len()
        && rows
            .iter()
            .zip(datas)
            .all(|(row, data)| row.get::<_, &str>(0) == data))
}
