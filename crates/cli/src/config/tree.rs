//! A TOML document as a tree that remembers where every key and value sits in the file.
//!
//! `toml::Value` forgets positions, and serde's `deny_unknown_fields` can neither name the
//! full dotted key nor suggest a correction. So the settings file is first read into this
//! tree (speaking toml's span protocol), then validated by hand in [`super::file`], which can
//! point at the exact line of each problem.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::ops::Range;

/// The private key toml uses to pass a datetime through serde as a one-entry map.
const DATETIME_KEY: &str = "$__toml_private_datetime";

/// A value with the byte range it came from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub span: Range<usize>,
    pub value: Value,
}

/// A table key with the byte range of its name.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Key {
    pub name: String,
    pub span: Range<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    String(String),
    Integer(i64),
    Float(f64),
    Boolean(bool),
    Datetime,
    Array(Vec<Node>),
    /// Entries in file order.
    Table(Vec<(Key, Node)>),
}

impl Value {
    /// How a person would name this kind of value in an error message.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::String(_) => "a string",
            Self::Integer(_) => "an integer",
            Self::Float(_) => "a float",
            Self::Boolean(_) => "a boolean",
            Self::Datetime => "a datetime",
            Self::Array(_) => "an array",
            Self::Table(_) => "a table",
        }
    }
}

/// Marks a span the deserializer did not report (implicit tables such as `providers` in
/// `[providers.local]`); [`fill_spans`] replaces it with the nearest enclosing position.
const UNKNOWN: Range<usize> = usize::MAX..usize::MAX;

/// Parses TOML text; a syntax error keeps toml's message and byte span.
pub(crate) fn parse(text: &str) -> Result<Node, toml::de::Error> {
    let root: Positioned = toml::from_str(text)?;
    let mut node = root.into_node();
    fill_spans(&mut node, 0..0);
    Ok(node)
}

fn fill_spans(node: &mut Node, fallback: Range<usize>) {
    if node.span == UNKNOWN {
        node.span = fallback;
    }
    let here = node.span.clone();
    match &mut node.value {
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| fill_spans(item, here.clone())),
        Value::Table(entries) => {
            for (key, value) in entries {
                if key.span == UNKNOWN {
                    key.span = if value.span == UNKNOWN {
                        here.clone()
                    } else {
                        value.span.clone()
                    };
                }
                fill_spans(value, key.span.clone());
            }
        }
        _ => {}
    }
}

/// The 1-based line holding byte `offset` of `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> u32 {
    let end = offset.min(text.len());
    let newlines = text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    u32::try_from(newlines + 1).unwrap_or(u32::MAX)
}

/// A value with its span when the deserializer reports one.
///
/// `toml::Spanned` cannot be used here: it fails outright on implicit tables (which have no
/// span) and on datetimes. So this speaks the same private struct protocol `Spanned` uses
/// (`serde_spanned` 0.6, which toml 0.8 pins) and falls back to a plain value.
struct Positioned {
    span: Option<Range<usize>>,
    value: Value,
}

impl Positioned {
    fn into_node(self) -> Node {
        Node {
            span: self.span.unwrap_or(UNKNOWN),
            value: self.value,
        }
    }
}

const SPANNED_NAME: &str = "$__serde_spanned_private_Spanned";
const SPANNED_START: &str = "$__serde_spanned_private_start";
const SPANNED_END: &str = "$__serde_spanned_private_end";
const SPANNED_VALUE: &str = "$__serde_spanned_private_value";
const SPANNED_FIELDS: &[&str] = &[SPANNED_START, SPANNED_END, SPANNED_VALUE];

impl<'de> Deserialize<'de> for Positioned {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, PositionedVisitor)
    }
}

struct PositionedVisitor;

impl PositionedVisitor {
    fn plain(value: Value) -> Positioned {
        Positioned { span: None, value }
    }
}

impl<'de> Visitor<'de> for PositionedVisitor {
    type Value = Positioned;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Positioned, E> {
        ValueVisitor.visit_bool(v).map(Self::plain)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Positioned, E> {
        ValueVisitor.visit_i64(v).map(Self::plain)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Positioned, E> {
        ValueVisitor.visit_u64(v).map(Self::plain)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Positioned, E> {
        ValueVisitor.visit_f64(v).map(Self::plain)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Positioned, E> {
        ValueVisitor.visit_str(v).map(Self::plain)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Positioned, A::Error> {
        ValueVisitor.visit_seq(seq).map(Self::plain)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Positioned, A::Error> {
        let Some(first) = map.next_key::<RawKey>()? else {
            return Ok(Self::plain(Value::Table(Vec::new())));
        };
        if first.span.is_some() || first.name != SPANNED_START {
            // An ordinary table (or datetime) the deserializer gave no span for.
            return table_from(first, map).map(Self::plain);
        }
        let start = map.next_value::<usize>()?;
        let mut end = None;
        let mut value = None;
        while let Some(field) = map.next_key::<String>()? {
            match field.as_str() {
                SPANNED_END => end = Some(map.next_value::<usize>()?),
                SPANNED_VALUE => value = Some(map.next_value::<Value>()?),
                _ => return Err(de::Error::custom("unexpected field in a spanned value")),
            }
        }
        match (end, value) {
            (Some(end), Some(value)) => Ok(Positioned {
                span: Some(start..end),
                value,
            }),
            _ => Err(de::Error::custom("incomplete spanned value")),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Boolean(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Integer(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        i64::try_from(v)
            .map(Value::Integer)
            .map_err(|_| E::custom("integer out of range"))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Positioned>()? {
            items.push(item.into_node());
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        match map.next_key::<RawKey>()? {
            None => Ok(Value::Table(Vec::new())),
            Some(first) => table_from(first, map),
        }
    }
}

/// Reads a table whose first key was already taken, or toml's datetime marker map.
fn table_from<'de, A: MapAccess<'de>>(first: RawKey, mut map: A) -> Result<Value, A::Error> {
    if first.span.is_none() && first.name == DATETIME_KEY {
        // The datetime's text follows; its content is irrelevant to settings.
        let _: de::IgnoredAny = map.next_value()?;
        return Ok(Value::Datetime);
    }
    let mut entries = Vec::new();
    let mut key = Some(first);
    while let Some(RawKey { name, span }) = key {
        let value = map.next_value::<Positioned>()?;
        entries.push((
            Key {
                name,
                span: span.unwrap_or(UNKNOWN),
            },
            value.into_node(),
        ));
        key = map.next_key::<RawKey>()?;
    }
    Ok(Value::Table(entries))
}

/// A table key with its span when the deserializer offers one.
///
/// Like [`Positioned`], for keys: implicit keys and toml's datetime marker come without a
/// span.
struct RawKey {
    name: String,
    span: Option<Range<usize>>,
}

impl<'de> Deserialize<'de> for RawKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, RawKeyVisitor)
    }
}

struct RawKeyVisitor;

impl<'de> Visitor<'de> for RawKeyVisitor {
    type Value = RawKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawKey, E> {
        Ok(RawKey {
            name: v.to_owned(),
            span: None,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawKey, A::Error> {
        let mut start = None;
        let mut end = None;
        let mut name = None;
        while let Some(field) = map.next_key::<String>()? {
            match field.as_str() {
                SPANNED_START => start = Some(map.next_value::<usize>()?),
                SPANNED_END => end = Some(map.next_value::<usize>()?),
                SPANNED_VALUE => name = Some(map.next_value::<String>()?),
                _ => return Err(de::Error::custom("unexpected field in a spanned key")),
            }
        }
        match (start, end, name) {
            (Some(start), Some(end), Some(name)) => Ok(RawKey {
                name,
                span: Some(start..end),
            }),
            _ => Err(de::Error::custom("incomplete spanned key")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(node: &Node) -> &[(Key, Node)] {
        match &node.value {
            Value::Table(entries) => entries,
            other => panic!("not a table: {other:?}"),
        }
    }

    #[test]
    fn keys_and_values_keep_their_lines() {
        let text =
            "# comment\n[model]\nprovider = \"p\"\n\n[[plugins]]\nid = \"x\"\nwhen = 1979-05-27\n";
        let root = parse(text).unwrap();
        let entries = table(&root);
        assert_eq!(entries[0].0.name, "model");
        assert_eq!(line_of(text, entries[0].0.span.start), 2);
        let model = table(&entries[0].1);
        assert_eq!(model[0].0.name, "provider");
        assert_eq!(line_of(text, model[0].0.span.start), 3);
        assert_eq!(model[0].1.value, Value::String("p".into()));
        let Value::Array(plugins) = &entries[1].1.value else {
            panic!("plugins is not an array")
        };
        let row = table(&plugins[0]);
        assert_eq!(line_of(text, row[0].0.span.start), 6);
        assert_eq!(row[1].1.value, Value::Datetime);
    }

    #[test]
    fn syntax_errors_carry_a_span() {
        let text = "[model]\nprovider = \n";
        let error = parse(text).unwrap_err();
        let span = error.span().unwrap();
        assert_eq!(line_of(text, span.start), 2);
    }
}
