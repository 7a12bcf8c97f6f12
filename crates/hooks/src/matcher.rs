//! Group matchers: everything, a literal list, or an unanchored regex.
//!
//! Claude Code dialect: a pattern made only of `[A-Za-z0-9_|]` is a list of exact names split
//! on `|` (`Edit|Write`); anything else is a regex (`mcp__fs__.*`, `^Bash$`). Codex: every
//! pattern is a regex. Absent, `""` and `"*"` match everything. Regexes use Rust syntax, which
//! agrees with JavaScript's on the patterns hooks use (no look-around, no back-references).

use crate::config::Dialect;
use regex_automata::meta::Regex;

#[derive(Clone, Debug)]
pub enum Matcher {
    All,
    Literal(Vec<String>),
    Regex(Regex),
}

impl Matcher {
    /// Compiles `pattern`; the error is the regex compiler's message.
    pub fn compile(dialect: Dialect, pattern: Option<&str>) -> Result<Self, String> {
        let pattern = match pattern {
            None | Some("") | Some("*") => return Ok(Self::All),
            Some(pattern) => pattern,
        };
        let literal = pattern
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|');
        if dialect == Dialect::ClaudeCode && literal {
            return Ok(Self::Literal(
                pattern.split('|').map(str::to_owned).collect(),
            ));
        }
        Regex::new(pattern)
            .map(Self::Regex)
            .map_err(|error| error.to_string())
    }

    pub fn matches_all(&self) -> bool {
        matches!(self, Self::All)
    }

    /// Whether the subject (or, for a tool, one of its names) matches.
    pub fn matches(&self, names: &[&str]) -> bool {
        match self {
            Self::All => true,
            Self::Literal(list) => names.iter().any(|name| list.iter().any(|l| l == name)),
            Self::Regex(regex) => names.iter().any(|name| regex.is_match(*name)),
        }
    }
}
