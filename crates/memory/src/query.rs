//! A person's or a model's query as an FTS5 expression that can never be a syntax error.
//!
//! Queries are literal, as in the original: every whitespace-separated word becomes a quoted
//! FTS5 string (inner quotes doubled), and the words are ANDed. So `foo AND bar`, `"x`,
//! `a:b`, `(`, `*` and `NEAR(` are searched as text, never parsed as operators.

use crate::error::MemoryError;

/// Words kept from one query; more add nothing but cost.
const MAX_WORDS: usize = 32;

/// The FTS5 MATCH expression for `query`.
pub fn fts_expression(query: &str) -> Result<String, MemoryError> {
    let words: Vec<String> = query
        .split_whitespace()
        .filter(|word| word.chars().any(char::is_alphanumeric))
        .take(MAX_WORDS)
        .map(|word| format!("\"{}\"", word.replace('"', "\"\"")))
        .collect();
    if words.is_empty() {
        return Err(MemoryError::InvalidInput(
            "the query has no words to search for (letters or digits)".into(),
        ));
    }
    Ok(words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_quotes_are_literal() {
        assert_eq!(
            fts_expression(r#"foo AND "bar NEAR( a:b"#).unwrap(),
            r#""foo" "AND" """bar" "NEAR(" "a:b""#
        );
    }

    #[test]
    fn a_query_of_punctuation_is_a_clear_error() {
        let err = fts_expression(" ( * \" ").unwrap_err();
        assert_eq!(err.code(), "MEMORY_INVALID_INPUT");
    }
}
