//! Compositions: which compiled-in plugins to mount, in what order, with what config.
//!
//! A composition is an ordered list of rows. Configuration layers (defaults, user file,
//! project file, command line) patch rows by id; `mount` then validates every enabled row's
//! config before applying any of them, so a typo never leaves a half-mounted harness.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Context;
use crate::error::KernelError;
use crate::fiber::Fiber;
use crate::plugin::Plugin;

/// One plugin instance to mount.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Unique within the composition; names the plugin's fiber and error messages.
    pub id: String,
    /// The plugin's [`Plugin::NAME`].
    pub plugin: String,
    /// Deserialized into the plugin's `Config`. TOML callers convert to JSON first.
    #[serde(default)]
    pub config: Value,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
}

impl Row {
    /// An enabled row.
    pub fn new(id: impl Into<String>, plugin: impl Into<String>, config: Value) -> Row {
        Row {
            id: id.into(),
            plugin: plugin.into(),
            config,
            disabled: false,
        }
    }
}

/// An ordered list of rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Composition {
    pub rows: Vec<Row>,
}

/// One edit a later configuration layer makes to a composition.
#[derive(Debug, Clone, PartialEq)]
pub enum PatchOp {
    /// Replace the row's whole config.
    Replace {
        id: String,
        config: Value,
    },
    /// Insert a new row after `after` (at the end when `None`).
    Insert {
        row: Row,
        after: Option<String>,
    },
    Disable {
        id: String,
    },
    Enable {
        id: String,
    },
}

impl Composition {
    fn position(&self, id: &str) -> Result<usize, KernelError> {
        self.rows
            .iter()
            .position(|r| r.id == id)
            .ok_or_else(|| KernelError::UnknownRow { id: id.to_string() })
    }

    /// Applies `ops` in order. All or nothing: on error the composition is unchanged.
    pub fn patch(&mut self, ops: impl IntoIterator<Item = PatchOp>) -> Result<(), KernelError> {
        let mut next = self.clone();
        for op in ops {
            match op {
                PatchOp::Replace { id, config } => {
                    let i = next.position(&id)?;
                    next.rows[i].config = config;
                }
                PatchOp::Insert { row, after } => {
                    if next.rows.iter().any(|r| r.id == row.id) {
                        return Err(KernelError::DuplicateRow { id: row.id });
                    }
                    let at = match after {
                        Some(after) => next.position(&after)? + 1,
                        None => next.rows.len(),
                    };
                    next.rows.insert(at, row);
                }
                PatchOp::Disable { id } => {
                    let i = next.position(&id)?;
                    next.rows[i].disabled = true;
                }
                PatchOp::Enable { id } => {
                    let i = next.position(&id)?;
                    next.rows[i].disabled = false;
                }
            }
        }
        *self = next;
        Ok(())
    }
}

/// A validated row, ready to apply.
type Prepared = Box<dyn FnOnce(&Context, &str) -> Result<Fiber, KernelError>>;
/// Validates a row's config for one plugin type; `Err` is the config error message.
type Prepare = fn(&Value) -> Result<Prepared, String>;

/// The compiled-in plugins a composition may name.
#[derive(Default)]
pub struct PluginTable {
    entries: HashMap<&'static str, Prepare>,
}

impl std::fmt::Debug for PluginTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<_> = self.entries.keys().collect();
        names.sort();
        f.debug_struct("PluginTable")
            .field("plugins", &names)
            .finish()
    }
}

impl PluginTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `P` under `P::NAME` (replacing an earlier plugin of the same name).
    pub fn with<P: Plugin>(mut self) -> Self {
        self.entries.insert(P::NAME, prepare::<P>);
        self
    }

    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    /// Plugin names, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<_> = self.entries.keys().copied().collect();
        names.sort_unstable();
        names
    }
}

fn prepare<P: Plugin>(config: &Value) -> Result<Prepared, String> {
    let config: P::Config = decode_config::<P::Config>(config)?;
    Ok(Box::new(move |ctx: &Context, id: &str| {
        ctx.load_plugin::<P>(id, config)
    }))
}

/// Deserializes a row config. A missing (`null`) config means "all defaults", so it is
/// retried as `{}`. Errors name the offending field: serde names missing and unknown
/// fields itself, and for type errors the path is recovered from the line serde reports
/// in a pretty-printed copy of the value.
fn decode_config<C: serde::de::DeserializeOwned>(config: &Value) -> Result<C, String> {
    if config.is_null() {
        if let Ok(c) = serde_json::from_value::<C>(Value::Null) {
            return Ok(c);
        }
        return decode_config(&Value::Object(serde_json::Map::new()));
    }
    let pretty = serde_json::to_string_pretty(config).map_err(|e| e.to_string())?;
    serde_json::from_str::<C>(&pretty).map_err(|e| {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full);
        match field_path(&pretty, e.line()) {
            Some(path) if !path.is_empty() => format!("field `{path}`: {message}"),
            _ => message.to_string(),
        }
    })
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn is_closer(line: &str) -> bool {
    matches!(line.trim_start().chars().next(), Some('}' | ']'))
}

/// The object key a pretty-printed line starts with, if any.
fn key_of(line: &str) -> Option<String> {
    let t = line.trim_start();
    if !t.starts_with('"') {
        return None;
    }
    let mut escaped = false;
    for (i, ch) in t.char_indices().skip(1) {
        match ch {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => {
                return t[i + 1..]
                    .starts_with(": ")
                    .then(|| serde_json::from_str::<String>(&t[..=i]).ok())
                    .flatten();
            }
            _ => escaped = false,
        }
    }
    None
}

/// Reconstructs the JSON path (`a.b[2].c`) of the value on 1-based `line` of a
/// `to_string_pretty` rendering, by walking up the indentation.
fn field_path(pretty: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = pretty.lines().collect();
    let mut p = line.checked_sub(1)?;
    if is_closer(lines.get(p)?) {
        // Errors reported at a closing bracket (e.g. a missing field) belong to the
        // container opened on the nearest line above with the same indentation.
        let d = indent_of(lines[p]);
        p = (0..p).rev().find(|&i| indent_of(lines[i]) == d)?;
    }
    let mut segments: Vec<String> = Vec::new();
    loop {
        let d = indent_of(lines[p]);
        if d == 0 {
            break;
        }
        let opener = (0..p).rev().find(|&i| indent_of(lines[i]) < d)?;
        match key_of(lines[p]) {
            Some(key) => segments.push(format!(".{key}")),
            None => {
                let index = (opener + 1..p)
                    .filter(|&i| indent_of(lines[i]) == d && !is_closer(lines[i]))
                    .count();
                segments.push(format!("[{index}]"));
            }
        }
        p = opener;
    }
    let path: String = segments.into_iter().rev().collect();
    Some(path.trim_start_matches('.').to_string())
}

/// Mounts every enabled row of `composition` under `ctx`, in order, and returns each row's
/// fiber. All configs are validated first; if a plugin then fails to apply, the rows
/// already mounted are disposed (newest first) and the error is returned.
pub fn mount(
    ctx: &Context,
    table: &PluginTable,
    composition: &Composition,
) -> Result<Vec<(String, Fiber)>, KernelError> {
    let mut prepared = Vec::new();
    for row in composition.rows.iter().filter(|r| !r.disabled) {
        let prepare =
            table
                .entries
                .get(row.plugin.as_str())
                .ok_or_else(|| KernelError::UnknownPlugin {
                    id: row.id.clone(),
                    plugin: row.plugin.clone(),
                })?;
        let ready = prepare(&row.config).map_err(|message| KernelError::InvalidConfig {
            id: row.id.clone(),
            plugin: row.plugin.clone(),
            message,
        })?;
        prepared.push((row.id.clone(), ready));
    }
    let mut mounted: Vec<(String, Fiber)> = Vec::new();
    for (id, ready) in prepared {
        match ready(ctx, &id) {
            Ok(fiber) => mounted.push((id, fiber)),
            Err(e) => {
                for (_, fiber) in mounted.iter().rev() {
                    fiber.dispose();
                }
                return Err(e);
            }
        }
    }
    Ok(mounted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Clone, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        port: u16,
    }

    #[derive(Debug, Clone, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Cfg {
        name: String,
        #[serde(default)]
        servers: Vec<Inner>,
        #[serde(default)]
        limits: HashMap<String, u32>,
    }

    fn msg(v: Value) -> String {
        decode_config::<Cfg>(&v).unwrap_err()
    }

    #[test]
    fn config_errors_name_the_field() {
        assert_eq!(msg(json!({})), "missing field `name`");
        assert_eq!(
            msg(json!({"name": 3})),
            "field `name`: invalid type: integer `3`, expected a string"
        );
        assert_eq!(
            msg(json!({"name": "a", "servers": [{"port": 1}, {"port": "x"}]})),
            "field `servers[1].port`: invalid type: string \"x\", expected u16"
        );
        assert_eq!(
            msg(json!({"name": "a", "servers": [{"port": 1}, {}]})),
            "field `servers[1]`: missing field `port`"
        );
        assert_eq!(
            msg(json!({"name": "a", "limits": {"a \"q\"": -1}})),
            "field `limits.a \"q\"`: invalid value: integer `-1`, expected u32"
        );
        assert!(
            msg(json!({"name": "a", "nmae": 1})).starts_with("field `nmae`: unknown field `nmae`")
        );
    }

    #[test]
    fn null_config_means_defaults() {
        #[derive(Debug, Clone, Deserialize, Default, PartialEq)]
        #[serde(default)]
        struct D {
            x: u32,
        }
        assert_eq!(decode_config::<D>(&Value::Null).unwrap(), D::default());
        decode_config::<()>(&Value::Null).unwrap();
    }
}
