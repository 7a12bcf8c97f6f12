//! Lossless JSON checks.
//!
//! The log stores JSON, and anything the model sees must be rebuilt from the log exactly. A
//! value is *lossless* when serializing and parsing it again yields the same value: finite
//! numbers only, and no negative zero (which JSON text cannot tell from zero once parsed by
//! most readers).

use serde::Serialize;
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
    fn non_finite_floats_are_not_representable() {
        assert!(
            to_lossless_value(&f64::NAN).is_err()
                || to_lossless_value(&f64::NAN) == Ok(Value::Null)
        );
    }
}
