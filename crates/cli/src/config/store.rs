//! `[store]`: where sessions are stored, read from the settings file and the environment.
//!
//! ```toml
//! [store]
//! backend = "postgres"                      # files (default) | postgres
//! url = "postgres://dsh@db.internal/dsh"    # or DSH_DATABASE_URL, which overrides it
//! password_env = "DSH_DB_PASSWORD"          # else the URL's, PGPASSWORD or ~/.pgpass
//! ```
//!
//! The URL may hold a password, so it is kept as a [`DatabaseUrl`], which only shows itself
//! masked ([`mask_url`]); errors name the setting and where it was set, never its value.

use super::error::ConfigError;
use super::reader::{At, Doc, Entries};
use super::source::{Location, Source, Sourced};
use super::tree::Node;
use std::path::Path;

/// The keys `[store]` accepts.
pub(crate) const KEYS: &[&str] = &["backend", "url", "password_env"];

/// The environment variable that overrides `[store] url`.
pub const DATABASE_URL_ENV: &str = "DSH_DATABASE_URL";

dsh_protocol::word_enum! {
    /// Which backend stores sessions.
    #[derive(Default)]
    pub enum StoreBackend {
        /// JSONL/zstd logs under `$DSH_HOME/sessions` (the original's format).
        #[default]
        Files = "files",
        /// A PostgreSQL database (`crates/store-postgres`, docs/postgres.md).
        Postgres = "postgres",
    }
}

/// A connection URL that may hold a password: its `Debug` and [`masked`](Self::masked) form
/// hide it; only [`expose`](Self::expose) gives the text, for the driver.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    /// The URL as written, for the database driver only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with any password replaced by `<hidden>`.
    pub fn masked(&self) -> String {
        mask_url(&self.0)
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DatabaseUrl({:?})", self.masked())
    }
}

/// What `[store]` said, with lines. Absent keys are `None`.
#[derive(Debug, Default)]
pub(crate) struct StoreLayer {
    pub backend: Option<At<StoreBackend>>,
    pub url: Option<At<String>>,
    pub password_env: Option<At<String>>,
}

/// The effective `[store]` settings.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreSettings {
    pub backend: Sourced<StoreBackend>,
    /// `[store] url` or `DSH_DATABASE_URL`; `None` when neither is set.
    pub url: Sourced<Option<DatabaseUrl>>,
    /// The variable holding the database password (its name, never the password).
    pub password_env: Sourced<Option<String>>,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            backend: Sourced::default_value(StoreBackend::Files),
            url: Sourced::default_value(None),
            password_env: Sourced::default_value(None),
        }
    }
}

impl StoreSettings {
    /// Where the URL came from, as an error message names it: `[store] url
    /// (settings.toml:3)` or `DSH_DATABASE_URL`.
    pub fn url_origin(&self) -> String {
        match self.url.source {
            Source::Env { var } => format!("{var} (which overrides [store] url)"),
            Source::File { line } => format!("[store] url ({}:{line})", super::SETTINGS_FILE),
            _ => format!("[store] url (or {DATABASE_URL_ENV})"),
        }
    }

    /// Where the password comes from, as an error message names it.
    pub fn password_origin(&self) -> String {
        match &self.password_env.value {
            Some(var) => format!("the variable {var} named by [store] password_env"),
            None => "the URL, PGPASSWORD or ~/.pgpass".to_owned(),
        }
    }

    /// The PostgreSQL row's config, or why there is none.
    pub fn postgres_config(&self) -> Option<serde_json::Value> {
        let url = self.url.value.as_ref()?;
        Some(serde_json::json!({
            "url": url.expose(),
            "passwordEnv": self.password_env.value,
        }))
    }
}

fn get<'a>(entries: &'a Entries, name: &str) -> Option<&'a Node> {
    entries.iter().find(|(k, _)| k.name == name).map(|(_, v)| v)
}

/// Reads the `[store]` table.
pub(crate) fn read(doc: &Doc<'_>, node: &Node) -> Result<StoreLayer, ConfigError> {
    let table = doc.table("store", node)?;
    doc.check_keys("store", table, KEYS)?;
    let mut layer = StoreLayer::default();
    if let Some(node) = get(table, "backend") {
        layer.backend = Some(doc.word("store.backend", node)?);
    }
    if let Some(node) = get(table, "url") {
        // Never echo the value: it may hold a password.
        let url = doc.string("store.url", node)?;
        if url.value.trim().is_empty() {
            return Err(doc.invalid(&node.span, "store.url", "a non-empty string", "\"\"".into()));
        }
        layer.url = Some(url);
    }
    if let Some(node) = get(table, "password_env") {
        let var = doc.text("store.password_env", node)?;
        if var.value.contains('=') || var.value.contains('\0') {
            return Err(doc.invalid(
                &node.span,
                "store.password_env",
                "the name of an environment variable (not its value)",
                "a value containing `=`".into(),
            ));
        }
        layer.password_env = Some(var);
    }
    Ok(layer)
}

/// Merges the file's `[store]` with `DSH_DATABASE_URL` and checks that a PostgreSQL backend
/// has a URL.
pub(crate) fn resolve(
    layer: &StoreLayer,
    env_url: Option<String>,
    settings_path: &Path,
) -> Result<StoreSettings, ConfigError> {
    let file = |line: u32| Source::File { line };
    let mut settings = StoreSettings::default();
    if let Some(backend) = &layer.backend {
        settings.backend = Sourced::new(backend.value, file(backend.line));
    }
    if let Some(url) = &layer.url {
        settings.url = Sourced::new(Some(DatabaseUrl::new(url.value.clone())), file(url.line));
    }
    if let Some(url) = env_url {
        settings.url = Sourced::new(
            Some(DatabaseUrl::new(url)),
            Source::Env {
                var: DATABASE_URL_ENV,
            },
        );
    }
    if let Some(var) = &layer.password_env {
        settings.password_env = Sourced::new(Some(var.value.clone()), file(var.line));
    }
    if settings.backend.value == StoreBackend::Postgres && settings.url.value.is_none() {
        return Err(ConfigError::Inconsistent {
            at: Location::of(settings.backend.source, settings_path),
            key: "store.url".into(),
            message: format!(
                "`backend = \"postgres\"` needs the database: set [store] url, or \
                 {DATABASE_URL_ENV}"
            ),
        });
    }
    Ok(settings)
}

/// `url` with its password hidden: the `user:password@` of a `postgres://` URL, a
/// `password=` query parameter, or a `password=` key of a `key=value` connection string.
pub fn mask_url(url: &str) -> String {
    const HIDDEN: &str = "<hidden>";
    if let Some(rest) = url
        .strip_prefix("postgres://")
        .map(|r| ("postgres://", r))
        .or_else(|| {
            url.strip_prefix("postgresql://")
                .map(|r| ("postgresql://", r))
        })
    {
        let (scheme, rest) = rest;
        // The authority ends at the first `/` or `?`; its userinfo at the last `@` in it.
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let authority = match authority.rfind('@') {
            Some(at) => {
                let (userinfo, host) = authority.split_at(at);
                match userinfo.find(':') {
                    Some(colon) => format!("{}:{HIDDEN}{host}", &userinfo[..colon]),
                    None => authority.to_owned(),
                }
            }
            None => authority.to_owned(),
        };
        let tail = match tail.split_once('?') {
            Some((path, query)) => {
                let query: Vec<String> = query
                    .split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                            format!("{key}={HIDDEN}")
                        }
                        _ => pair.to_owned(),
                    })
                    .collect();
                format!("{path}?{}", query.join("&"))
            }
            None => tail.to_owned(),
        };
        return format!("{scheme}{authority}{tail}");
    }
    // A key=value string: hide the value of `password` (quoted or not).
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(start) = find_key(rest, "password") {
        out.push_str(&rest[..start]);
        let after = &rest[start + "password".len()..];
        let trimmed = after.trim_start();
        let Some(value) = trimmed.strip_prefix('=') else {
            out.push_str("password");
            rest = after;
            continue;
        };
        let value = value.trim_start();
        let end = if let Some(quoted) = value.strip_prefix('\'') {
            let mut end = quoted.len();
            let mut escaped = false;
            for (i, c) in quoted.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '\'' if !escaped => {
                        end = i + 1;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            1 + end.min(quoted.len())
        } else {
            value.find(char::is_whitespace).unwrap_or(value.len())
        };
        out.push_str("password=");
        out.push_str(HIDDEN);
        rest = &value[end.min(value.len())..];
    }
    out.push_str(rest);
    out
}

/// The byte offset of `key` in `text` at the start of a `key=value` word.
fn find_key(text: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(key) {
        let at = from + found;
        let before_ok = at == 0 || text[..at].ends_with(char::is_whitespace);
        let after = text[at + key.len()..].trim_start();
        if before_ok && after.starts_with('=') {
            return Some(at);
        }
        from = at + key.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_in_every_url_form() {
        let cases = [
            (
                "postgres://alice:s3cret@db:5432/dsh",
                "postgres://alice:<hidden>@db:5432/dsh",
            ),
            (
                "postgresql://alice:p@ss@db/dsh?sslmode=disable&password=s3cret",
                "postgresql://alice:<hidden>@db/dsh?sslmode=disable&password=<hidden>",
            ),
            ("postgres://alice@db/dsh", "postgres://alice@db/dsh"),
            (
                "host=db user=alice password=s3cret dbname=dsh",
                "host=db user=alice password=<hidden> dbname=dsh",
            ),
            (
                "host=db password = 'se cret\\'x' dbname=dsh",
                "host=db password=<hidden> dbname=dsh",
            ),
        ];
        for (url, masked) in cases {
            assert_eq!(mask_url(url), masked, "{url}");
            assert!(!format!("{:?}", DatabaseUrl::new(url)).contains("cret"));
        }
    }
}
