//! Lossless JSON checks.
//!
//! The log stores JSON, and anything the model sees must be rebuilt from the log exactly. A
//! value is *lossless* when serializing and parsing it again yields the same value: finite
//! numbers only, and no negative zero (which JSON text cannot tell from zero once parsed by
//! most readers).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// Why a value is not lossless JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LosslessError {
    /// A JSON-pointer-like path to the offending value (`/content/0/text`).
    pub path: String,
    pub reason: &'static str,
}

impl fmt::Display for LosslessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "value at {path} is not lossless JSON: {}", self.reason)
    }
}

impl std::error::Error for LosslessError {}

/// Checks that `value` round-trips through JSON text unchanged.
pub fn check_lossless(value: &Value) -> Result<(), LosslessError> {
    fn walk(value: &Value, path: &mut String) -> Result<(), LosslessError> {
        match value {
            Value::Number(n) => {
                if let Some(f) = n.as_f64() {
                    if !f.is_finite() {
                        return Err(LosslessError {
                            path: path.clone(),
                            reason: "non-finite number",
                        });
                    }
                    if f == 0.0 && f.is_sign_negative() && n.is_f64() {
                        return Err(LosslessError {
                            path: path.clone(),
                            reason: "negative zero",
                        });
                    }
                }
                Ok(())
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&i.to_string());
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let len = path.len();
                    path.push('/');
                    path.push_str(key);
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
        }
    }
    walk(value, &mut String::new())
}

/// Serializes `value` and checks the result is lossless.
pub fn to_lossless_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, LosslessError> {
    let value = serde_json::to_value(value).map_err(|_| LosslessError {
        path: String::new(),
        reason: "not representable as JSON",
    })?;
    check_lossless(&value)?;
    Ok(value)
}

/// A free-form JSON payload kept as its text (`tool/result.meta`).
///
/// Reading a log builds no `Value` tree for it (an ordered map per object, allocated and freed
/// for every event): the text is checked once for what [`check_lossless`] refuses, carried,
/// compared, and written back verbatim. [`RawJson::to_value`] parses it where a reader needs
/// the structure.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// The payload of `value`, as compact JSON text.
    pub fn from_value(value: &Value) -> Self {
        // Serializing a `Value` cannot fail (its keys are strings); `null` is unreachable.
        Self(serde_json::value::to_raw_value(value).unwrap_or_default())
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The payload parsed into a `Value`.
    pub fn to_value(&self) -> Value {
        // The text was valid JSON when it was read or made, so this parse succeeds.
        serde_json::from_str(self.text()).unwrap_or(Value::Null)
    }

    /// [`check_lossless`] on the text, without building the value: the only number JSON
    /// text can hold that does not survive a round trip is a negative zero (`-0`, `-0.0`,
    /// `-1e-400`); non-finite numbers are refused by the parser already.
    pub fn check_lossless(&self) -> Result<(), LosslessError> {
        if has_negative_zero(self.text().as_bytes()) {
            // Rare: walk the value for the error's path.
            check_lossless(&self.to_value())?;
            return Err(LosslessError {
                path: String::new(),
                reason: "negative zero",
            });
        }
        Ok(())
    }
}

/// Whether valid JSON `text` holds a number that parses to negative zero.
fn has_negative_zero(text: &[u8]) -> bool {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                // Skip the string: to the first quote not escaped.
                i += 1;
                while i < text.len() {
                    match text[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                i += 1;
            }
            b'-' => {
                let start = i;
                i += 1;
                while i < text.len()
                    && matches!(text[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                if number_is_negative_zero(&text[start..i]) {
                    return true;
                }
            }
            _ => i += 1,
        }
    }
    false
}

/// `token` is a JSON number starting with `-`.
fn number_is_negative_zero(token: &[u8]) -> bool {
    let exponent = token.iter().position(|b| matches!(b, b'e' | b'E'));
    let mantissa = &token[1..exponent.unwrap_or(token.len())];
    if mantissa.iter().all(|b| matches!(b, b'0' | b'.')) {
        return true;
    }
    // A nonzero mantissa reaches zero only through an exponent far below zero.
    match exponent {
        Some(e) if token.get(e + 1) == Some(&b'-') => std::str::from_utf8(token)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_some_and(|f| f == 0.0),
        _ => false,
    }
}

impl From<Value> for RawJson {
    fn from(value: Value) -> Self {
        Self::from_value(&value)
    }
}

impl PartialEq for RawJson {
    /// Equal text, or text of equal values (`{"a": 1}` and `{"a":1}` are one payload).
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text() || self.to_value() == other.to_value()
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn negative_zero_is_refused_with_its_path() {
        let err = check_lossless(&json!({"a": [1, -0.0]})).unwrap_err();
        assert_eq!(err.path, "/a/1");
        assert!(check_lossless(&json!({"a": [1, 0.0, -1.5, "x", null]})).is_ok());
    }

    #[test]
    fn raw_json_finds_every_negative_zero_the_value_walk_finds() {
        for (text, lossless) in [
            (r#"{"a":[1,-0.0]}"#, false),
            (r#"{"a":-0}"#, false),
            (r#"[-0e5]"#, false),
            (r#"[-0.000E-3]"#, false),
            (r#"[-1e-400]"#, false),
            (r#"[-1e-300, -0.5, -10, 0, 0.0, 1e-400]"#, true),
            (r#"{"-0":"-0.0","s":"a\\\"-0"}"#, true),
            (r#"{"k":"\\","n":-0}"#, false),
            (r#"-0"#, false),
            (r#""x""#, true),
        ] {
            let raw: RawJson = serde_json::from_str(text).unwrap();
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(raw.check_lossless().is_ok(), lossless, "{text}");
            assert_eq!(check_lossless(&value).is_ok(), lossless, "{text}");
        }
        let raw: RawJson = serde_json::from_str(r#"{"a":[1,-0.0]}"#).unwrap();
        assert_eq!(raw.check_lossless().unwrap_err().path, "/a/1");
    }

    #[test]
    fn raw_json_keeps_its_text_and_compares_by_value() {
        let raw: RawJson = serde_json::from_str(r#"{"b":1,"a":[true,null]}"#).unwrap();
        assert_eq!(raw.text(), r#"{"b":1,"a":[true,null]}"#);
        assert_eq!(serde_json::to_string(&raw).unwrap(), raw.text());
        assert_eq!(raw.to_value(), json!({"b": 1, "a": [true, null]}));
        let spaced: RawJson = serde_json::from_str(r#"{"b": 1, "a": [true, null]}"#).unwrap();
        assert_eq!(raw, spaced);
        assert_eq!(raw, RawJson::from(json!({"b": 1, "a": [true, null]})));
        assert_ne!(raw, RawJson::from(json!({"b": 2, "a": [true, null]})));
        // Read from a `Value` (the general log reader's input) as well as from text.
        let from_value = RawJson::deserialize(&json!({"b": 1, "a": [true, null]})).unwrap();
        assert_eq!(from_value.text(), raw.text());
    }

    #[test]
    fn non_finite_floats_are_not_representable() {
        assert!(
            to_lossless_value(&f64::NAN).is_err()
                || to_lossless_value(&f64::NAN) == Ok(Value::Null)
        );
    }
}
