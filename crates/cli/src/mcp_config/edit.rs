//! `dsh mcp add` / `dsh mcp remove`: edits `[mcp_servers.NAME]` in settings.toml, keeping every
//! other byte of the file (comments, order, spacing) as it was. Written atomically.

use super::model::is_server_name;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

/// A server to add.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewServer {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Why settings.toml was not changed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("{name:?} is not a server name (1 to 32 letters, digits, `_` and `-`)")]
    BadName { name: String },
    #[error("{}: invalid TOML, so it is not changed: {message}", path.display())]
    Syntax { path: PathBuf, message: String },
    #[error("{}: `mcp_servers` is not a table", path.display())]
    NotATable { path: PathBuf },
    #[error("{}: server `{name}` already exists; `dsh mcp remove {name}` first", path.display())]
    Exists { path: PathBuf, name: String },
    #[error("{}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
}

fn load(path: &Path) -> Result<(String, DocumentMut), EditError> {
    let text = match dsh_store::read_regular_text(path, crate::config::SETTINGS_MAX_BYTES) {
        Ok(text) => text,
        Err(error) if error.is_not_found() => String::new(),
        Err(error) => {
            return Err(EditError::Io {
                path: path.to_path_buf(),
                reason: error.reason(),
            })
        }
    };
    let doc = text
        .parse::<DocumentMut>()
        .map_err(|error| EditError::Syntax {
            path: path.to_path_buf(),
            message: error.message().trim().replace('\n', "; "),
        })?;
    Ok((text, doc))
}

/// Adds `[mcp_servers.NAME]` to the settings file at `path` (created when missing).
pub fn add_server(path: &Path, name: &str, server: &NewServer) -> Result<(), EditError> {
    if !is_server_name(name) {
        return Err(EditError::BadName { name: name.into() });
    }
    let (_, mut doc) = load(path)?;
    let root = doc.as_table_mut();
    if !root.contains_key("mcp_servers") {
        let mut table = Table::new();
        table.set_implicit(true);
        root.insert("mcp_servers", Item::Table(table));
    }
    let Some(servers) = root.get_mut("mcp_servers").and_then(Item::as_table_mut) else {
        return Err(EditError::NotATable {
            path: path.to_path_buf(),
        });
    };
    if servers.contains_key(name) {
        return Err(EditError::Exists {
            path: path.to_path_buf(),
            name: name.into(),
        });
    }
    let mut table = Table::new();
    let pairs = |pairs: &[(String, String)]| {
        let mut inline = InlineTable::new();
        for (k, v) in pairs {
            inline.insert(k, v.as_str().into());
        }
        toml_edit::value(inline)
    };
    match server {
        NewServer::Stdio { command, args, env } => {
            table.insert("command", toml_edit::value(command.as_str()));
            if !args.is_empty() {
                let array: Array = args.iter().map(String::as_str).collect();
                table.insert("args", toml_edit::value(array));
            }
            if !env.is_empty() {
                table.insert("env", pairs(env));
            }
        }
        NewServer::Http { url, headers } => {
            table.insert("url", toml_edit::value(url.as_str()));
            if !headers.is_empty() {
                table.insert("headers", pairs(headers));
            }
        }
    }
    servers.insert(name, Item::Table(table));
    write(path, &doc.to_string())
}

/// Removes `[mcp_servers.NAME]`; returns whether it was there.
pub fn remove_server(path: &Path, name: &str) -> Result<bool, EditError> {
    let (text, mut doc) = load(path)?;
    if text.is_empty() {
        return Ok(false);
    }
    let root = doc.as_table_mut();
    let Some(servers) = root
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
    else {
        return Ok(false);
    };
    if servers.remove(name).is_none() {
        return Ok(false);
    }
    if servers.is_empty() {
        root.remove("mcp_servers");
    }
    write(path, &doc.to_string())?;
    Ok(true)
}

fn write(path: &Path, text: &str) -> Result<(), EditError> {
    let io = |error: std::io::Error| EditError::Io {
        path: path.to_path_buf(),
        reason: error.to_string(),
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io)?;
    let temp = dir.join(format!(".settings.toml.{}.tmp", std::process::id()));
    let written = fs::File::create(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| fs::rename(&temp, path))
        .and_then(|()| fs::File::open(dir)?.sync_all());
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.map_err(io)
}
