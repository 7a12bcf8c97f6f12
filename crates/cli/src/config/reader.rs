//! Typed reads from the positioned TOML tree, each failing with the file, line and full key.

use super::error::{ConfigError, KeyHint};
use super::source::Location;
use super::tree::{line_of, Key, Node, Value};
use dsh_protocol::words::{self, Word};
use std::ops::Range;
use std::path::Path;

/// A value read from the file and the line it sits on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct At<T> {
    pub value: T,
    pub line: u32,
}

pub(crate) type Entries = [(Key, Node)];

/// The settings file being validated.
pub(crate) struct Doc<'a> {
    pub path: &'a Path,
    pub text: &'a str,
}

impl Doc<'_> {
    pub fn line(&self, span: &Range<usize>) -> u32 {
        line_of(self.text, span.start)
    }

    pub fn at(&self, span: &Range<usize>) -> Location {
        Location::File {
            path: self.path.to_path_buf(),
            line: self.line(span),
        }
    }

    pub fn invalid(
        &self,
        span: &Range<usize>,
        key: &str,
        expected: &str,
        found: String,
    ) -> ConfigError {
        ConfigError::InvalidValue {
            at: self.at(span),
            key: key.to_owned(),
            expected: expected.to_owned(),
            found,
        }
    }

    pub fn inconsistent(&self, span: &Range<usize>, key: &str, message: String) -> ConfigError {
        ConfigError::Inconsistent {
            at: self.at(span),
            key: key.to_owned(),
            message,
        }
    }

    /// Refuses any key of `entries` not in `allowed`, suggesting the closest allowed one.
    pub fn check_keys(
        &self,
        prefix: &str,
        entries: &Entries,
        allowed: &[&str],
    ) -> Result<(), ConfigError> {
        for (key, _) in entries {
            if !allowed.contains(&key.name.as_str()) {
                return Err(ConfigError::UnknownKey {
                    at: self.at(&key.span),
                    key: join(prefix, &key.name),
                    hint: KeyHint::for_key(&key.name, allowed),
                });
            }
        }
        Ok(())
    }

    pub fn table<'n>(&self, key: &str, node: &'n Node) -> Result<&'n Entries, ConfigError> {
        match &node.value {
            Value::Table(entries) => Ok(entries),
            other => Err(self.invalid(&node.span, key, "a table", found(other))),
        }
    }

    pub fn array<'n>(&self, key: &str, node: &'n Node) -> Result<&'n [Node], ConfigError> {
        match &node.value {
            Value::Array(items) => Ok(items),
            other => Err(self.invalid(&node.span, key, "an array", found(other))),
        }
    }

    pub fn string(&self, key: &str, node: &Node) -> Result<At<String>, ConfigError> {
        match &node.value {
            Value::String(text) => Ok(At {
                value: text.clone(),
                line: self.line(&node.span),
            }),
            other => Err(self.invalid(&node.span, key, "a string", found(other))),
        }
    }

    /// A string that must not be blank.
    pub fn text(&self, key: &str, node: &Node) -> Result<At<String>, ConfigError> {
        let text = self.string(key, node)?;
        if text.value.trim().is_empty() {
            return Err(self.invalid(&node.span, key, "a non-empty string", "\"\"".into()));
        }
        Ok(text)
    }

    pub fn boolean(&self, key: &str, node: &Node) -> Result<At<bool>, ConfigError> {
        match &node.value {
            Value::Boolean(b) => Ok(At {
                value: *b,
                line: self.line(&node.span),
            }),
            other => Err(self.invalid(&node.span, key, "true or false", found(other))),
        }
    }

    /// A whole number greater than zero.
    pub fn positive(&self, key: &str, node: &Node) -> Result<At<u64>, ConfigError> {
        match &node.value {
            Value::Integer(n) if *n > 0 => Ok(At {
                value: n.unsigned_abs(),
                line: self.line(&node.span),
            }),
            other => Err(self.invalid(
                &node.span,
                key,
                "a whole number greater than 0",
                found(other),
            )),
        }
    }

    /// A whole number, zero included.
    pub fn whole(&self, key: &str, node: &Node) -> Result<At<u64>, ConfigError> {
        match &node.value {
            Value::Integer(n) if *n >= 0 => Ok(At {
                value: n.unsigned_abs(),
                line: self.line(&node.span),
            }),
            other => Err(self.invalid(&node.span, key, "a whole number (0 or more)", found(other))),
        }
    }

    /// A fraction in (0, 1]: a float, or the integer 1.
    pub fn ratio(&self, key: &str, node: &Node) -> Result<At<f64>, ConfigError> {
        let value = match &node.value {
            Value::Float(x) => Some(*x),
            Value::Integer(1) => Some(1.0),
            _ => None,
        };
        match value {
            Some(x) if x > 0.0 && x <= 1.0 => Ok(At {
                value: x,
                line: self.line(&node.span),
            }),
            _ => Err(self.invalid(
                &node.span,
                key,
                "a number greater than 0 and at most 1",
                found(&node.value),
            )),
        }
    }

    /// One of a closed word set; a wrong value is answered with the list of valid words.
    pub fn word<T: Word>(&self, key: &str, node: &Node) -> Result<At<T>, ConfigError> {
        let wrong = || self.invalid(&node.span, key, &words::expected::<T>(), found(&node.value));
        let text = self.string(key, node).map_err(|_| wrong())?;
        match text.value.parse::<T>() {
            Ok(value) => Ok(At {
                value,
                line: text.line,
            }),
            Err(_) => Err(wrong()),
        }
    }

    /// An array of non-empty strings.
    pub fn strings(&self, key: &str, node: &Node) -> Result<Vec<String>, ConfigError> {
        let items = self.array(key, node).map_err(|_| {
            self.invalid(&node.span, key, "an array of strings", found(&node.value))
        })?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| Ok(self.text(&format!("{key}[{i}]"), item)?.value))
            .collect()
    }
}

/// `prefix.name`, or `name` at the top level.
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}.{name}")
    }
}

/// How a found value is named in "expected X, found Y": strings and scalars are quoted
/// literally, composite values by kind.
pub(crate) fn found(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text:?}"),
        Value::Integer(n) => format!("{} ({n})", value.kind()),
        Value::Float(x) => format!("{} ({x})", value.kind()),
        Value::Boolean(b) => format!("{} ({b})", value.kind()),
        other => other.kind().to_owned(),
    }
}

/// A TOML value as JSON (plugin configs are JSON-shaped). Datetimes and non-finite floats
/// have no JSON form and are refused.
pub(crate) fn to_json(
    doc: &Doc<'_>,
    key: &str,
    node: &Node,
) -> Result<serde_json::Value, ConfigError> {
    use serde_json::Value as Json;
    Ok(match &node.value {
        Value::String(text) => Json::String(text.clone()),
        Value::Integer(n) => Json::from(*n),
        Value::Boolean(b) => Json::Bool(*b),
        Value::Float(x) => match serde_json::Number::from_f64(*x) {
            Some(number) => Json::Number(number),
            None => {
                return Err(doc.invalid(&node.span, key, "a finite number", found(&node.value)))
            }
        },
        Value::Datetime => {
            return Err(doc.invalid(
                &node.span,
                key,
                "a string, number, boolean, array or table",
                "a datetime".into(),
            ))
        }
        Value::Array(items) => Json::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| to_json(doc, &format!("{key}[{i}]"), item))
                .collect::<Result<_, _>>()?,
        ),
        Value::Table(entries) => Json::Object(
            entries
                .iter()
                .map(|(k, v)| Ok((k.name.clone(), to_json(doc, &join(key, &k.name), v)?)))
                .collect::<Result<_, ConfigError>>()?,
        ),
    })
}
