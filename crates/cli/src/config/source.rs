//! Provenance: where each effective setting came from.

use std::fmt;
use std::path::PathBuf;

/// The layer that decided a value. Later layers win: default < file < env < flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Built into dsh.
    Default,
    /// `settings.toml` at this 1-based line.
    File { line: u32 },
    /// An environment variable.
    Env { var: &'static str },
    /// A command-line flag (with its dashes).
    Flag { flag: &'static str },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File { line } => write!(f, "{}:{line}", super::SETTINGS_FILE),
            Self::Env { var } => write!(f, "env {var}"),
            Self::Flag { flag } => write!(f, "flag {flag}"),
        }
    }
}

/// An effective value and the layer that set it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: Source) -> Self {
        Self { value, source }
    }

    pub fn default_value(value: T) -> Self {
        Self::new(value, Source::Default)
    }

    /// Replaces the value when a later layer has one.
    pub(crate) fn set(&mut self, value: Option<T>, source: Source) {
        if let Some(value) = value {
            *self = Self::new(value, source);
        }
    }
}

/// Where a problem was found, for error messages: unlike [`Source`] a file location names
/// the whole path, so the message can be acted on from any directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    File { path: PathBuf, line: u32 },
    Env { var: &'static str },
    Flag { flag: &'static str },
}

impl Location {
    /// The line, for a location in a file.
    pub fn line(&self) -> Option<u32> {
        match self {
            Self::File { line, .. } => Some(*line),
            _ => None,
        }
    }

    pub(crate) fn of(source: Source, settings_path: &std::path::Path) -> Self {
        match source {
            Source::Default | Source::File { .. } => Self::File {
                path: settings_path.to_path_buf(),
                line: match source {
                    Source::File { line } => line,
                    _ => 0,
                },
            },
            Source::Env { var } => Self::Env { var },
            Source::Flag { flag } => Self::Flag { flag },
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File { path, line } => write!(f, "{}:{line}", path.display()),
            Self::Env { var } => write!(f, "env {var}"),
            Self::Flag { flag } => write!(f, "flag {flag}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_read_like_their_origin() {
        let shown: Vec<String> = [
            Source::Default,
            Source::File { line: 7 },
            Source::Env { var: "DSH_MODEL" },
            Source::Flag { flag: "--model" },
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            shown,
            [
                "default",
                "settings.toml:7",
                "env DSH_MODEL",
                "flag --model"
            ]
        );
    }

    #[test]
    fn later_layers_replace_only_when_they_have_a_value() {
        let mut value = Sourced::default_value(1);
        value.set(None, Source::Env { var: "X" });
        assert_eq!(value, Sourced::default_value(1));
        value.set(Some(2), Source::Flag { flag: "--x" });
        assert_eq!(value, Sourced::new(2, Source::Flag { flag: "--x" }));
    }
}
