//! One JSON-RPC frame: what it is (request, notification, response) and the error object.

use serde_json::{json, Map, Value};

/// The JSON-RPC error codes dsh answers with.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The ACP SDK's `Invalid params: <detail>`.
    pub fn invalid_params(detail: impl std::fmt::Display) -> Self {
        Self::new(code::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }

    /// The ACP SDK's `Internal error: <detail>`.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(code::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }

    /// The ACP SDK's method-not-found error, quotes and all.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            format!("\"Method not found\": {method}"),
        )
        .with_data(json!({ "method": method }))
    }

    pub fn to_value(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.code.into());
        error.insert("message".into(), self.message.clone().into());
        if let Some(data) = &self.data {
            error.insert("data".into(), data.clone());
        }
        Value::Object(error)
    }

    fn from_value(value: &Value) -> Self {
        Self {
            code: value
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or(code::INTERNAL_ERROR),
            message: value
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("error without a message")
                .to_owned(),
            data: value.get("data").cloned(),
        }
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// A parsed frame. `params` is `Value::Null` when absent.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        result: Result<Value, RpcError>,
    },
}

/// Why a line is not a frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Malformed {
    /// Not JSON, or JSON that is not an object: nothing to answer (no id to answer to).
    NotJson(String),
    /// An object with an id that is not a valid request: answered with `Invalid request`.
    InvalidRequest { id: Value, why: &'static str },
    /// An object without an id that is neither a notification nor a response.
    Unanswerable(&'static str),
}

/// Classifies one line. A request's id must be a string or a number.
pub fn parse(line: &[u8]) -> Result<Incoming, Malformed> {
    let value: Value =
        serde_json::from_slice(line).map_err(|e| Malformed::NotJson(e.to_string()))?;
    let Value::Object(mut object) = value else {
        return Err(Malformed::NotJson("the frame is not a JSON object".into()));
    };
    let id = object.remove("id");
    let method = object.remove("method");
    let params = object.remove("params").unwrap_or(Value::Null);
    match (id, method) {
        (Some(id), Some(method)) => {
            if !(id.is_string() || id.is_number()) {
                return Err(Malformed::InvalidRequest {
                    id: Value::Null,
                    why: "id must be a string or a number",
                });
            }
            match method {
                Value::String(method) => Ok(Incoming::Request { id, method, params }),
                _ => Err(Malformed::InvalidRequest {
                    id,
                    why: "method must be a string",
                }),
            }
        }
        (None, Some(Value::String(method))) => Ok(Incoming::Notification { method, params }),
        (None, Some(_)) => Err(Malformed::Unanswerable("method must be a string")),
        (Some(id), None) => {
            let result = match (object.remove("result"), object.remove("error")) {
                (_, Some(error)) => Err(RpcError::from_value(&error)),
                (Some(result), None) => Ok(result),
                (None, None) => Ok(Value::Null),
            };
            Ok(Incoming::Response { id, result })
        }
        (None, None) => Err(Malformed::Unanswerable("a frame needs a method or an id")),
    }
}

/// The bytes of a response frame.
pub fn response(id: &Value, result: Result<Value, RpcError>) -> Vec<u8> {
    let frame = match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}),
    };
    encode(&frame)
}

/// The bytes of a notification or request frame.
pub fn message(id: Option<u64>, method: &str, params: Value) -> Vec<u8> {
    let frame = match id {
        Some(id) => json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        None => json!({"jsonrpc": "2.0", "method": method, "params": params}),
    };
    encode(&frame)
}

/// Compact JSON (never a raw newline: strings escape theirs).
fn encode(frame: &Value) -> Vec<u8> {
    // Serializing a `Value` cannot fail: every key is a string.
    serde_json::to_vec(frame).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_classified_by_id_and_method() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}"#),
            Ok(Incoming::Request {
                id: json!(1),
                method: "initialize".into(),
                params: json!({"a": 1})
            })
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"session/cancel"}"#),
            Ok(Incoming::Notification {
                method: "session/cancel".into(),
                params: Value::Null
            })
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no"}}"#),
            Ok(Incoming::Response {
                id: json!("x"),
                result: Err(RpcError::new(-1, "no"))
            })
        );
        assert!(matches!(parse(b"{not json"), Err(Malformed::NotJson(_))));
        assert!(matches!(parse(b"[1,2]"), Err(Malformed::NotJson(_))));
        assert_eq!(
            parse(br#"{"id":3,"method":7}"#),
            Err(Malformed::InvalidRequest {
                id: json!(3),
                why: "method must be a string"
            })
        );
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0"}"#),
            Err(Malformed::Unanswerable(_))
        ));
    }

    #[test]
    fn encoded_frames_are_one_line() {
        let bytes = message(None, "x", json!({"text": "a\nb"}));
        assert!(!bytes.contains(&b'\n'));
    }
}
