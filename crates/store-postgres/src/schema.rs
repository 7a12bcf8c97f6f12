//! The schema the binary manages: numbered migrations, each applied once, in order, in one
//! transaction under a transaction-level advisory lock, so machines starting together
//! neither race nor apply a step twice.

use tokio_postgres::Client;

use crate::error::PgStoreError;

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i32 = 1;

/// The advisory lock key every migrating process takes (an arbitrary constant: "dsh" + 1).
const MIGRATION_LOCK: i64 = 0x0064_7368_0001;

const MIGRATIONS: &[(i32, &str)] = &[(
    1,
    "CREATE TABLE dsh_sessions (
        id              text PRIMARY KEY,
        workspace_key   text NOT NULL,
        workspace_path  text,
        header          text NOT NULL,
        parent_session  text,
        delegation_depth bigint,
        title           text,
        created_at      bigint NOT NULL,
        updated_at      bigint NOT NULL,
        turns           bigint NOT NULL DEFAULT 0,
        events          bigint NOT NULL DEFAULT 0,
        size            bigint NOT NULL DEFAULT 0,
        last_outcome    text,
        next_seq        bigint NOT NULL DEFAULT 0
     );
     CREATE INDEX dsh_sessions_by_updated ON dsh_sessions (updated_at DESC);
     CREATE INDEX dsh_sessions_by_workspace ON dsh_sessions (workspace_key, updated_at DESC);
     CREATE TABLE dsh_events (
        session_id  text NOT NULL REFERENCES dsh_sessions (id),
        seq         bigint NOT NULL,
        type        text NOT NULL,
        time        bigint NOT NULL,
        data        text NOT NULL,
        PRIMARY KEY (session_id, seq)
     );
     -- Append-only: rows are never changed or removed by dsh.
     CREATE FUNCTION dsh_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
        RAISE EXCEPTION 'dsh_events is append-only';
     END $$;
     CREATE TRIGGER dsh_events_append_only BEFORE UPDATE OR DELETE ON dsh_events
        FOR EACH ROW EXECUTE FUNCTION dsh_events_append_only();",
)];

/// What [`migrate`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationReport {
    /// The version found before migrating (0 for an empty database).
    pub from: i32,
    /// The version now.
    pub to: i32,
}

impl MigrationReport {
    /// Whether any migration ran.
    pub fn applied(&self) -> bool {
        self.from != self.to
    }
}

/// Brings the database to [`SCHEMA_VERSION`], or refuses one that is newer.
pub(crate) async fn migrate(
    client: &Client,
    target: &str,
) -> Result<MigrationReport, PgStoreError> {
    let failed = |version: i32| {
        let target = target.to_owned();
        move |e: tokio_postgres::Error| PgStoreError::Migration {
            target,
            version,
            reason: crate::backend::describe_pg(&e),
        }
    };
    client
        .batch_execute(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock({MIGRATION_LOCK});
             CREATE TABLE IF NOT EXISTS dsh_schema_migrations (
                version integer PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
             );"
        ))
        .await
        .map_err(failed(0))?;
    let result = apply(client, target).await;
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    let ended = client.batch_execute(end).await;
    let report = result?;
    ended.map_err(failed(SCHEMA_VERSION))?;
    Ok(report)
}

async fn apply(client: &Client, target: &str) -> Result<MigrationReport, PgStoreError> {
    let row = client
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM dsh_schema_migrations",
            &[],
        )
        .await
        .map_err(|e| PgStoreError::Migration {
            target: target.to_owned(),
            version: 0,
            reason: crate::backend::describe_pg(&e),
        })?;
    let from: i32 = row.get(0);
    if from > SCHEMA_VERSION {
        return Err(PgStoreError::SchemaTooNew {
            target: target.to_owned(),
            found: from,
            known: SCHEMA_VERSION,
        });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > from) {
        let failed = |e: tokio_postgres::Error| PgStoreError::Migration {
            target: target.to_owned(),
            version: *version,
            reason: crate::backend::describe_pg(&e),
        };
        client.batch_execute(sql).await.map_err(failed)?;
        client
            .execute(
                "INSERT INTO dsh_schema_migrations (version) VALUES ($1)",
                &[version],
            )
            .await
            .map_err(failed)?;
    }
    Ok(MigrationReport {
        from,
        to: SCHEMA_VERSION,
    })
}
