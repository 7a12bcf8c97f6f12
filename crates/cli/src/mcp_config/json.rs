//! The `mcpServers` JSON convention (Claude Code's `.mcp.json`, Cursor's `mcp.json`).
//!
//! ```json
//! { "mcpServers": {
//!     "fs":  { "command": "npx", "args": ["-y", "server-filesystem", "/repo"], "env": { "ROOT": "${HOME}/x" } },
//!     "web": { "type": "http", "url": "https://h/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" } } } }
//! ```
//!
//! `command` means stdio; `type: "http"` (or `"streamable-http"`, or a bare `url`) means
//! Streamable HTTP; `type: "sse"` is refused (dsh has no SSE transport). `${VAR}` and
//! `${VAR:-default}` are expanded in `command`, `args`, `env`, `url` and `headers` from the
//! launch environment. Keys dsh has no use for (`description`, `timeout`, ...) are ignored, so
//! a file written for another tool loads unchanged. A syntax error skips the file; a bad
//! entry skips that server; each is one [`McpProblem`] with file, line and key.

use super::expand::expand;
use super::model::{sanitize_name, McpProblem, McpServer, Scope, Transport};
use crate::config::Env;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::path::Path;

/// What one file yielded: its servers in file order and its problems.
#[derive(Debug, Default)]
pub struct JsonFile {
    pub servers: Vec<McpServer>,
    pub problems: Vec<McpProblem>,
}

/// Reads the text of a `mcpServers` file at `path`.
pub fn read(path: &Path, text: &str, scope: Scope, env: &dyn Env) -> JsonFile {
    let mut file = JsonFile::default();
    let at = |offset: usize, key: &str, message: String| McpProblem {
        path: path.to_path_buf(),
        line: line_of(text, offset),
        key: key.to_owned(),
        message,
    };
    let top: BTreeMap<String, &RawValue> = match serde_json::from_str(text) {
        Ok(top) => top,
        Err(error) => {
            file.problems.push(McpProblem {
                path: path.to_path_buf(),
                line: u32::try_from(error.line()).unwrap_or(u32::MAX).max(1),
                key: String::new(),
                message: format!("invalid JSON ({error}); the file is skipped"),
            });
            return file;
        }
    };
    let Some(servers) = top.get("mcpServers") else {
        return file;
    };
    let entries: Vec<(String, &RawValue)> = match ordered_object(servers.get()) {
        Some(entries) => entries,
        None => {
            file.problems.push(at(
                offset(text, servers),
                "mcpServers",
                "expected an object of servers by name; the file is skipped".into(),
            ));
            return file;
        }
    };
    for (key, raw) in entries {
        match server(path, text, &key, raw, scope, env) {
            Ok(server) => file.servers.push(server),
            Err(problem) => file.problems.push(problem),
        }
    }
    file
}

fn server(
    path: &Path,
    text: &str,
    key: &str,
    raw: &RawValue,
    scope: Scope,
    env: &dyn Env,
) -> Result<McpServer, McpProblem> {
    let prefix = format!("mcpServers.{key}");
    let problem = |raw: &RawValue, field: &str, message: String| McpProblem {
        path: path.to_path_buf(),
        line: line_of(text, offset(text, raw)),
        key: if field.is_empty() {
            prefix.clone()
        } else {
            format!("{prefix}.{field}")
        },
        message: format!("{message}; server `{key}` is skipped"),
    };
    let fields: BTreeMap<String, &RawValue> = serde_json::from_str(raw.get())
        .map_err(|_| problem(raw, "", "expected an object".into()))?;
    let name = sanitize_name(key);
    if name.is_empty() {
        return Err(problem(raw, "", "a server needs a non-empty name".into()));
    }
    let string = |field: &str| -> Result<Option<String>, McpProblem> {
        let Some(raw) = fields.get(field) else {
            return Ok(None);
        };
        let value: String = serde_json::from_str(raw.get()).map_err(|_| {
            problem(
                raw,
                field,
                format!("expected a string, found {}", raw.get()),
            )
        })?;
        expand(&value, env)
            .map(Some)
            .map_err(|message| problem(raw, field, message))
    };
    let strings = |field: &str| -> Result<Vec<String>, McpProblem> {
        let Some(raw) = fields.get(field) else {
            return Ok(Vec::new());
        };
        let values: Vec<String> = serde_json::from_str(raw.get())
            .map_err(|_| problem(raw, field, "expected an array of strings".into()))?;
        values
            .iter()
            .map(|v| expand(v, env).map_err(|message| problem(raw, field, message)))
            .collect()
    };
    let map = |field: &str| -> Result<BTreeMap<String, String>, McpProblem> {
        let Some(raw) = fields.get(field) else {
            return Ok(BTreeMap::new());
        };
        let values: BTreeMap<String, String> = serde_json::from_str(raw.get())
            .map_err(|_| problem(raw, field, "expected an object of string values".into()))?;
        values
            .into_iter()
            .map(|(k, v)| {
                expand(&v, env)
                    .map(|v| (k, v))
                    .map_err(|message| problem(raw, field, message))
            })
            .collect()
    };
    let kind = match fields.get("type") {
        Some(raw) => Some((
            raw,
            serde_json::from_str::<String>(raw.get())
                .map_err(|_| problem(raw, "type", "expected a string".into()))?,
        )),
        None => None,
    };
    let command = string("command")?;
    let url = string("url")?;
    let transport = match (kind.as_ref().map(|(r, k)| (*r, k.as_str())), command, url) {
        (Some((raw, "sse")), _, _) => {
            return Err(problem(
                raw,
                "type",
                "transport `sse` is not supported (dsh speaks stdio and Streamable HTTP; \
                 most servers also serve Streamable HTTP: use `\"type\": \"http\"` with its \
                 endpoint URL)"
                    .into(),
            ))
        }
        (None | Some((_, "stdio")), Some(command), _) => {
            if command.trim().is_empty() {
                return Err(problem(raw, "command", "must not be empty".into()));
            }
            Transport::Stdio {
                command,
                args: strings("args")?,
                env: map("env")?,
                cwd: string("cwd")?.filter(|c| !c.is_empty()).map(Into::into),
            }
        }
        (None | Some((_, "http" | "streamable-http" | "streamableHttp")), None, Some(url)) => {
            if let Err(found) = crate::config::check_url(&url) {
                let at = fields.get("url").copied().unwrap_or(raw);
                return Err(problem(
                    at,
                    "url",
                    format!("expected {}, found {found}", crate::config::URL_EXPECTED),
                ));
            }
            Transport::Http {
                url,
                headers: map("headers")?,
                bearer_token_env_var: None,
            }
        }
        (Some((raw, "stdio")), None, _) => {
            return Err(problem(
                raw,
                "command",
                "a stdio server needs `command`".into(),
            ))
        }
        (Some((raw, "http" | "streamable-http" | "streamableHttp")), _, None) => {
            return Err(problem(raw, "url", "an http server needs `url`".into()))
        }
        (None, None, None) => {
            return Err(problem(
                raw,
                "",
                "needs `command` (stdio) or `url` (http)".into(),
            ))
        }
        (Some((raw, other)), _, _) => {
            return Err(problem(
                raw,
                "type",
                format!("unknown transport {other:?} (expected \"stdio\" or \"http\")"),
            ))
        }
    };
    let mut server = McpServer::new(name, transport, scope, path.display().to_string());
    server.line = line_of(text, offset(text, raw));
    Ok(server)
}

/// The entries of a JSON object in file order (`BTreeMap` would sort them), or `None` when
/// the text is not an object.
fn ordered_object(text: &str) -> Option<Vec<(String, &RawValue)>> {
    struct Ordered<'a>(Vec<(String, &'a RawValue)>);
    impl<'de: 'a, 'a> serde::Deserialize<'de> for Ordered<'a> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<'a>(std::marker::PhantomData<&'a ()>);
            impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
                type Value = Ordered<'a>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Self::Value, A::Error> {
                    let mut entries = Vec::new();
                    while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                        entries.push(entry);
                    }
                    Ok(Ordered(entries))
                }
            }
            d.deserialize_map(V(std::marker::PhantomData))
        }
    }
    serde_json::from_str::<Ordered<'_>>(text).ok().map(|o| o.0)
}

/// Byte offset of a borrowed raw value inside `text` (0 when it is not borrowed from it).
fn offset(text: &str, raw: &RawValue) -> usize {
    let start = text.as_ptr() as usize;
    let at = raw.get().as_ptr() as usize;
    at.checked_sub(start)
        .filter(|&o| o <= text.len())
        .unwrap_or(0)
}

fn line_of(text: &str, offset: usize) -> u32 {
    crate::config::line_of(text, offset)
}
