//! Keeping credentials away from commands and out of tool output.
//!
//! Two layers:
//! 1. **Child environments.** A spawned command never inherits a variable whose name looks like
//!    a credential ([`is_secret_env_name`]). The rule is deliberately name-based and broad: a
//!    missing variable is an easy fix for a user, a leaked key is not.
//! 2. **Output text.** [`SecretScrubber`] replaces known secret *values* (the ones configured
//!    for the session plus the values of every withheld variable) with `[REDACTED]` in tool
//!    output, in case a command finds them some other way (a config file, `/proc`).

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};

/// Names that are secrets regardless of the suffix rules below.
const KNOWN_SECRET_NAMES: &[&str] = &[
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "DEEPSEEK_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
    "NPM_TOKEN",
    "HF_TOKEN",
    "DOCKER_PASSWORD",
    "API_KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "ACCESS_TOKEN",
    "AUTH_TOKEN",
    "PRIVATE_KEY",
];

/// Name endings that mark a credential (`FOO_API_KEY`, `SLACK_BOT_TOKEN`, ...).
const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_ACCESS_KEY",
    "_PRIVATE_KEY",
    "_CLIENT_SECRET",
    "_CREDENTIALS",
];

/// Fragments that mark a credential wherever they appear in the name.
const SECRET_FRAGMENTS: &[&str] = &["PASSWORD", "PASSWD", "SECRET"];

/// Values shorter than this are never scrubbed from output: replacing `1` or `true` everywhere
/// would mangle output without protecting anything.
pub const MIN_SCRUBBED_SECRET_LEN: usize = 8;

/// The replacement text for a scrubbed value.
pub const REDACTED: &str = "[REDACTED]";

/// Whether an environment variable is withheld from spawned commands.
///
/// The rule, applied to the upper-cased name:
/// - any name in a short list of well-known credentials (`AWS_SECRET_ACCESS_KEY`,
///   `DEEPSEEK_API_KEY`, `OPENAI_API_KEY`, `GITHUB_TOKEN`, `GH_TOKEN`, `NPM_TOKEN`, ...);
/// - any name ending in `_API_KEY`, `_APIKEY`, `_TOKEN`, `_SECRET`, `_SECRET_KEY`,
///   `_ACCESS_KEY`, `_PRIVATE_KEY`, `_CLIENT_SECRET` or `_CREDENTIALS`;
/// - any name containing `PASSWORD`, `PASSWD` or `SECRET`.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    KNOWN_SECRET_NAMES.contains(&upper.as_str())
        || SECRET_SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
        || SECRET_FRAGMENTS
            .iter()
            .any(|fragment| upper.contains(fragment))
}

/// Whether a variable is one of the harness's own `DSH_*` facts, which are re-exported fresh
/// for each command instead of inherited.
fn is_managed_dsh_name(name: &str) -> bool {
    name.starts_with("DSH_")
}

/// The child environment: `base` minus secrets and inherited `DSH_*` variables.
pub fn scrub_child_env(base: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
    base.iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            !is_secret_env_name(&name) && !is_managed_dsh_name(&name)
        })
        .cloned()
        .collect()
}

/// Replaces known secret values in text. Its `Debug` shows how many values it holds, not them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretScrubber {
    /// Longest first, so a secret that contains another is replaced whole.
    values: Vec<String>,
}

impl std::fmt::Debug for SecretScrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretScrubber")
            .field("values", &self.values.len())
            .finish()
    }
}

impl SecretScrubber {
    /// A scrubber for the given values; short and duplicate values are ignored.
    pub fn new<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut values: Vec<String> = values
            .into_iter()
            .map(Into::into)
            .filter(|v| v.len() >= MIN_SCRUBBED_SECRET_LEN)
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Self { values }
    }

    /// Adds the values of every variable in `env` that [`is_secret_env_name`] withholds.
    pub fn with_env_secrets(self, env: &[(OsString, OsString)]) -> Self {
        let from_env = env
            .iter()
            .filter(|(name, _)| is_secret_env_name(&name.to_string_lossy()))
            .filter_map(|(_, value)| value.to_str().map(str::to_owned));
        Self::new(self.values.into_iter().chain(from_env))
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every known secret replaced by [`REDACTED`].
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), REDACTED));
            }
        }
        out
    }
}

/// Convenience for building a base environment in tests and embedders.
pub fn env_pair(name: &str, value: impl AsRef<OsStr>) -> (OsString, OsString) {
    (OsString::from(name), value.as_ref().to_os_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_name_rule() {
        for name in [
            "FOO_API_KEY",
            "deepseek_api_key",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "SLACK_BOT_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "MYSQL_ROOT_PASSWORD",
            "PGPASSWORD",
            "CLIENT_SECRET",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "API_KEY",
        ] {
            assert!(is_secret_env_name(name), "{name} should be withheld");
        }
        for name in [
            "PATH",
            "HOME",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD",
            "LANG",
            "SSH_AUTH_SOCK",
        ] {
            assert!(!is_secret_env_name(name), "{name} should pass through");
        }
    }

    #[test]
    fn child_env_drops_secrets_and_inherited_dsh_facts() {
        let base = vec![
            env_pair("PATH", "/usr/bin"),
            env_pair("FOO_API_KEY", "sk-fake-123456"),
            env_pair("DSH_SESSION_ID", "stale"),
            env_pair("HOME", "/home/u"),
        ];
        assert_eq!(
            scrub_child_env(&base),
            vec![env_pair("PATH", "/usr/bin"), env_pair("HOME", "/home/u")]
        );
    }

    #[test]
    fn scrubber_replaces_env_and_configured_values() {
        let env = vec![
            env_pair("FOO_API_KEY", "sk-fake-123456"),
            env_pair("PATH", "/usr/bin:/bin"),
        ];
        let scrubber = SecretScrubber::new(["configured-secret", "short"]).with_env_secrets(&env);
        assert_eq!(
            scrubber.scrub("key=sk-fake-123456 other=configured-secret short /usr/bin:/bin"),
            "key=[REDACTED] other=[REDACTED] short /usr/bin:/bin"
        );
        assert!(matches!(scrubber.scrub("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn longer_secret_wins_over_its_prefix() {
        let scrubber = SecretScrubber::new(["abcdefgh", "abcdefghijkl"]);
        assert_eq!(scrubber.scrub("abcdefghijkl"), "[REDACTED]");
    }
}
