//! Argument rules: how the raw argument text a model produced becomes a value, and the small
//! JSON-Schema subset every call is checked against before any hook sees it.
//!
//! The checks are deliberately basic (types, required, properties, items, enum, const,
//! `additionalProperties: false`): enough to give the model a precise message about what it
//! got wrong, without pulling in a full validator. Keywords outside the subset are ignored.

use serde_json::{Map, Value};

/// Parses a tool call's raw argument text: the empty string is `{}`, valid JSON is its value,
/// anything else stays the raw string (and then fails the object check with a clear message).
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// Checks `args` against a tool's parameter schema. The error names the offending property
/// and what was expected, phrased for the model.
pub fn validate_arguments(schema: &Value, args: &Value) -> Result<(), String> {
    if !args.is_object() {
        return Err(format!(
            "the arguments must be a JSON object, got {}",
            describe(args)
        ));
    }
    check(schema, args, "")
}

/// Everything wrong with a call's arguments for a known tool, phrased for the model:
/// schema violations, values that would not survive the log, and the tool's own checks.
pub(crate) fn argument_problem(
    tool: &str,
    schema: &Value,
    raw: &str,
    args: &Value,
    extra: impl FnOnce(&Value) -> Result<(), String>,
) -> Option<String> {
    let problem = validate_arguments(schema, args)
        .and_then(|()| dsh_protocol::json::check_lossless(args).map_err(|e| e.to_string()))
        .and_then(|()| extra(args))
        .err()?;
    let mut message = format!("Invalid arguments for tool \"{tool}\": {problem}");
    if args.is_string() {
        if let Err(error) = serde_json::from_str::<Value>(raw) {
            message.push_str(&format!(" (the argument text is not valid JSON: {error})"));
        }
    }
    Some(message)
}

/// Checks that a parameter schema is usable: a JSON object schema whose `properties` is an
/// object and whose `required` lists strings.
pub(crate) fn check_parameters_schema(schema: &Value) -> Result<(), String> {
    let Value::Object(map) = schema else {
        return Err("the parameter schema must be a JSON object".into());
    };
    match map.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        _ => return Err("the parameter schema must have \"type\": \"object\"".into()),
    }
    if let Some(properties) = map.get("properties") {
        if !properties.is_object() {
            return Err("\"properties\" must be an object".into());
        }
    }
    if let Some(required) = map.get("required") {
        let ok = required
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string));
        if !ok {
            return Err("\"required\" must be an array of property names".into());
        }
    }
    Ok(())
}

fn check(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let Value::Object(schema) = schema else {
        return Ok(()); // `true`/`false` or junk sub-schemas: outside the subset
    };
    if let Some(expected) = schema.get("type") {
        let matches = match expected {
            Value::String(kind) => type_matches(kind, value),
            Value::Array(kinds) => kinds
                .iter()
                .filter_map(Value::as_str)
                .any(|kind| type_matches(kind, value)),
            _ => true,
        };
        if !matches {
            return Err(format!(
                "{} must be {}, got {}",
                place(path),
                expected_type(expected),
                describe(value)
            ));
        }
    }
    if let Some(constant) = schema.get("const") {
        if constant != value {
            return Err(format!("{} must be {constant}", place(path)));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            let listed: Vec<String> = options.iter().map(Value::to_string).collect();
            return Err(format!(
                "{} must be one of {}, got {value}",
                place(path),
                listed.join(", ")
            ));
        }
    }
    match value {
        Value::Object(fields) => check_object(schema, fields, path),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}/{index}"))?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_object(
    schema: &Map<String, Value>,
    fields: &Map<String, Value>,
    path: &str,
) -> Result<(), String> {
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                return Err(format!(
                    "missing required property \"{}\"",
                    join(path, name).trim_start_matches('/')
                ));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in fields {
        match properties.and_then(|props| props.get(name)) {
            Some(field_schema) => check(field_schema, field, &join(path, name))?,
            None => {
                if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                    let known: Vec<&str> = properties
                        .map(|props| props.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return Err(format!(
                        "unknown property \"{}\" (allowed: {})",
                        join(path, name).trim_start_matches('/'),
                        known.join(", ")
                    ));
                }
            }
        }
    }
    Ok(())
}

fn type_matches(kind: &str, value: &Value) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        _ => true, // unknown type names are outside the subset
    }
}

fn expected_type(expected: &Value) -> String {
    match expected {
        Value::String(kind) => article(kind),
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .map(article)
            .collect::<Vec<_>>()
            .join(" or "),
        other => other.to_string(),
    }
}

fn article(kind: &str) -> String {
    match kind {
        "object" | "array" | "integer" => format!("an {kind}"),
        "null" => "null".into(),
        _ => format!("a {kind}"),
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer".into(),
        Value::Number(_) => "a number".into(),
        Value::String(text) => {
            let shown: String = text.chars().take(60).collect();
            let more = if text.chars().count() > 60 { "..." } else { "" };
            format!("the string {:?}{more}", shown)
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn join(path: &str, name: &str) -> String {
    format!("{path}/{name}")
}

fn place(path: &str) -> String {
    if path.is_empty() {
        "the arguments".into()
    } else {
        format!("property \"{}\"", path.trim_start_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_rules() {
        assert_eq!(parse_arguments(""), json!({}));
        assert_eq!(parse_arguments("  "), json!({}));
        assert_eq!(parse_arguments("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(parse_arguments("[1]"), json!([1]));
        assert_eq!(parse_arguments("{\"a\":"), json!("{\"a\":"));
    }

    fn schema() -> Value {
        json!({"type": "object",
               "properties": {
                   "path": {"type": "string"},
                   "limit": {"type": "integer"},
                   "mode": {"enum": ["a", "b"]},
                   "tags": {"type": "array", "items": {"type": "string"}},
                   "opt": {"type": ["string", "null"]},
                   "nested": {"type": "object", "required": ["x"], "additionalProperties": false,
                              "properties": {"x": {"type": "boolean"}}}
               },
               "required": ["path"]})
    }

    #[test]
    fn messages_name_the_problem() {
        let cases = [
            (
                json!("oops"),
                "the arguments must be a JSON object, got the string \"oops\"",
            ),
            (
                json!([1]),
                "the arguments must be a JSON object, got an array",
            ),
            (json!({}), "missing required property \"path\""),
            (
                json!({"path": 3}),
                "property \"path\" must be a string, got an integer",
            ),
            (
                json!({"path": "p", "limit": 1.5}),
                "property \"limit\" must be an integer, got a number",
            ),
            (
                json!({"path": "p", "mode": "c"}),
                "property \"mode\" must be one of \"a\", \"b\", got \"c\"",
            ),
            (
                json!({"path": "p", "tags": ["x", 1]}),
                "property \"tags/1\" must be a string, got an integer",
            ),
            (
                json!({"path": "p", "opt": 1}),
                "property \"opt\" must be a string or null, got an integer",
            ),
            (
                json!({"path": "p", "nested": {}}),
                "missing required property \"nested/x\"",
            ),
            (
                json!({"path": "p", "nested": {"x": true, "y": 1}}),
                "unknown property \"nested/y\" (allowed: x)",
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(
                validate_arguments(&schema(), &args),
                Err(expected.to_string()),
                "{args}"
            );
        }
        let ok = json!({"path": "p", "limit": 2.0, "mode": "a", "tags": [], "opt": null, "extra": 1,
                        "nested": {"x": false}});
        assert_eq!(validate_arguments(&schema(), &ok), Ok(()));
    }

    #[test]
    fn parameter_schemas_are_checked() {
        assert!(check_parameters_schema(&schema()).is_ok());
        assert!(check_parameters_schema(&json!({"type": "object"})).is_ok());
        assert!(check_parameters_schema(&json!({"type": "string"})).is_err());
        assert!(check_parameters_schema(&json!({"properties": {}})).is_err());
        assert!(check_parameters_schema(&json!([])).is_err());
        assert!(check_parameters_schema(&json!({"type": "object", "properties": 1})).is_err());
        assert!(check_parameters_schema(&json!({"type": "object", "required": [1]})).is_err());
    }
}
