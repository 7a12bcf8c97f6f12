//! Configuration errors. Each one says where (file and line, env var or flag), which key,
//! and what would have been accepted, so it can be fixed without reading the docs.

use super::source::Location;
use std::fmt;
use std::path::PathBuf;

/// Why the configuration could not be loaded. Nothing starts on any of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot locate the dsh home directory: set DSH_HOME or HOME")]
    NoHome,
    /// The settings file exists but cannot be used: unreadable, not a regular file (a FIFO,
    /// a device such as `/dev/zero`), or larger than [`super::SETTINGS_MAX_BYTES`].
    #[error("{}: cannot read the settings file: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("{}:{line}: invalid TOML: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: u32,
        message: String,
    },
    #[error("{at}: unknown key `{key}`{hint}")]
    UnknownKey {
        at: Location,
        key: String,
        hint: KeyHint,
    },
    #[error("{at}: `{key}`: expected {expected}, found {found}")]
    InvalidValue {
        at: Location,
        key: String,
        expected: String,
        found: String,
    },
    /// A value of the right type that does not fit with the rest (a missing required key,
    /// an unknown provider route, a plugin row that cannot be applied).
    #[error("{at}: `{key}`: {message}")]
    Inconsistent {
        at: Location,
        key: String,
        message: String,
    },
}

impl ConfigError {
    /// A stable code for scripts and logs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoHome => "NO_HOME",
            Self::Unreadable { .. } => "SETTINGS_UNREADABLE",
            Self::Syntax { .. } => "SETTINGS_SYNTAX",
            Self::UnknownKey { .. } => "UNKNOWN_KEY",
            Self::InvalidValue { .. } => "INVALID_VALUE",
            Self::Inconsistent { .. } => "INCONSISTENT_SETTING",
        }
    }
}

/// What an unknown-key error suggests instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyHint {
    /// A known key close enough to be the intended one.
    DidYouMean(String),
    /// The keys accepted at that place.
    Expected(Vec<String>),
}

impl fmt::Display for KeyHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DidYouMean(name) => write!(f, "; did you mean `{name}`?"),
            Self::Expected(names) if names.is_empty() => f.write_str("; no keys are accepted here"),
            Self::Expected(names) => {
                f.write_str("; expected one of ")?;
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{name}`")?;
                }
                Ok(())
            }
        }
    }
}

impl KeyHint {
    /// The closest of `known` to `typed`, or the whole list when nothing is close.
    pub(crate) fn for_key(typed: &str, known: &[&str]) -> Self {
        match closest(typed, known) {
            Some(name) => Self::DidYouMean(name.to_owned()),
            None => Self::Expected(known.iter().map(|k| (*k).to_owned()).collect()),
        }
    }
}

/// The candidate within a small edit distance of `typed` (a third of its length, at least
/// one edit), preferring the nearest and then the earliest listed.
pub(crate) fn closest<'a>(typed: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (typed.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edit_distance(&typed.to_lowercase(), &c.to_lowercase()), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            let cost = usize::from(ca != *cb);
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + cost);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_close_or_absent() {
        let known = ["policy", "rules"];
        assert_eq!(closest("polcy", &known), Some("policy"));
        assert_eq!(closest("Rules", &known), Some("rules"));
        assert_eq!(closest("timeout", &known), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn hints_render_as_sentences() {
        assert_eq!(
            KeyHint::for_key("polcy", &["policy", "rules"]).to_string(),
            "; did you mean `policy`?"
        );
        assert_eq!(
            KeyHint::for_key("zzz", &["policy", "rules"]).to_string(),
            "; expected one of `policy`, `rules`"
        );
    }
}
