//! `${VAR}` and `${VAR:-default}` in `mcpServers` values (Claude Code's interpolation).

use crate::config::Env;

/// Expands every `${NAME}` / `${NAME:-default}` in `text` from `env`. A `$` not followed by
/// `{` is kept as written. An unset (or empty, for `:-`) variable takes the default; one with
/// no default is an error naming it.
pub fn expand(text: &str, env: &dyn Env) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let body = &rest[start + 2..];
        let Some(end) = body.find('}') else {
            return Err(format!("`${{` without a closing `}}` in {text:?}"));
        };
        let inner = &body[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if !is_var_name(name) {
            return Err(format!("`${{{inner}}}` is not a variable reference"));
        }
        let value = match env.get(name).map(std::ffi::OsString::into_string) {
            Some(Ok(value)) => Some(value),
            Some(Err(_)) => return Err(format!("environment variable `{name}` is not UTF-8")),
            None => None,
        };
        match (value.filter(|v| !v.is_empty() || default.is_none()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "environment variable `{name}` is not set (write `${{{name}:-default}}` for a fallback)"
                ))
            }
        }
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
