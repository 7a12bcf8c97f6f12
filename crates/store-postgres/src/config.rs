//! Where the database is and how to authenticate.

use tokio_postgres::config::Host;

use crate::error::PgStoreError;

/// A parsed connection target. The password comes from the URL, an explicit override
/// (`password_env`), `PGPASSWORD` or `~/.pgpass`, in that order; it is kept only inside
/// the driver's config and never shown.
#[derive(Clone)]
pub struct PgConfig {
    pub(crate) inner: tokio_postgres::Config,
    target: String,
}

impl std::fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConfig")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl PgConfig {
    /// Parses a `postgres://` URL or a `key=value` connection string. `password` (from
    /// `password_env`) overrides one in the URL.
    pub fn parse(url: &str, password: Option<String>) -> Result<PgConfig, PgStoreError> {
        let mut inner: tokio_postgres::Config =
            url.parse()
                .map_err(|e: tokio_postgres::Error| PgStoreError::InvalidUrl {
                    // The driver's parse errors name the offending key, never its value.
                    reason: e.to_string(),
                })?;
        if inner.get_user().is_none() {
            if let Ok(user) = std::env::var("PGUSER").or_else(|_| std::env::var("USER")) {
                inner.user(user);
            }
        }
        if inner.get_dbname().is_none() {
            if let Ok(db) = std::env::var("PGDATABASE") {
                inner.dbname(db);
            }
        }
        let target = describe(&inner);
        let password = password.or_else(|| {
            inner
                .get_password()
                .is_none()
                .then(|| env_password(&inner))
                .flatten()
        });
        if let Some(password) = password {
            inner.password(password);
        }
        if inner.get_application_name().is_none() {
            inner.application_name("dsh");
        }
        Ok(PgConfig { inner, target })
    }

    /// `user@host:port/dbname`, never the password: what messages name.
    pub fn target(&self) -> &str {
        &self.target
    }
}

fn describe(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "{}@{host}:{port}/{}",
        config.get_user().unwrap_or("?"),
        config.get_dbname().unwrap_or("?")
    )
}

/// `PGPASSWORD`, else the first matching `~/.pgpass` (or `PGPASSFILE`) line.
fn env_password(config: &tokio_postgres::Config) -> Option<String> {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        _ => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let db = config.get_dbname().unwrap_or("");
    let user = config.get_user().unwrap_or("");
    pgpass_lookup(&text, &[&host, &port, db, user])
}

/// The password of the first `host:port:db:user:password` line matching `wanted`
/// (`*` matches anything; `\:` and `\\` are escapes).
fn pgpass_lookup(text: &str, wanted: &[&str; 4]) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() != 5 {
            continue;
        }
        if fields[..4]
            .iter()
            .zip(wanted)
            .all(|(field, want)| field == "*" || field == want)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(field)) = (chars.next(), fields.last_mut()) {
                    field.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_never_shows_the_password() {
        let config =
            PgConfig::parse("postgres://alice:s3cret@db.example:6543/dsh", None).expect("parses");
        assert_eq!(config.target(), "alice@db.example:6543/dsh");
        assert!(!format!("{config:?}").contains("s3cret"));
    }

    #[test]
    fn bad_urls_are_refused_without_echoing_them() {
        let err =
            PgConfig::parse("postgres://alice:s3cret@host:notaport/db", None).expect_err("refused");
        assert_eq!(err.code(), "PG_STORE_URL_INVALID");
        assert!(!err.to_string().contains("s3cret"));
    }

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let text = "# comment\nother:5432:*:*:no\nlocalhost:5432:*:bob:pa\\:ss\n";
        assert_eq!(
            pgpass_lookup(text, &["localhost", "5432", "dsh", "bob"]).as_deref(),
            Some("pa:ss")
        );
        assert_eq!(
            pgpass_lookup(text, &["localhost", "5432", "dsh", "eve"]),
            None
        );
    }
}
