//! The value types of settings: closed word lists, model entries and approval rules.

use std::fmt;

/// Declares an enum whose values are written as fixed words in settings, env vars and flags.
macro_rules! word_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in documentation order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The word written in settings.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The value written as `word`, if any.
            pub fn from_word(word: &str) -> Option<Self> {
                match word {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// `one of "a", "b"`, for error messages.
            pub(crate) fn expected() -> String {
                let words: Vec<String> =
                    Self::ALL.iter().map(|v| format!("\"{}\"", v.as_str())).collect();
                format!("one of {}", words.join(", "))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl clap::ValueEnum for $name {
            fn value_variants<'a>() -> &'a [Self] {
                Self::ALL
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(self.as_str()))
            }
        }
    };
}

word_enum! {
    /// Which file writes are confined (reads and network are never confined).
    SandboxMode {
        /// No writes except `/dev/null`.
        ReadOnly = "read-only",
        /// Writes inside the workspace and the temp areas.
        WorkspaceWrite = "workspace-write",
        /// No confinement.
        DangerFullAccess = "danger-full-access",
    }
}

word_enum! {
    /// When a person is asked before a call that needs approval runs.
    ApprovalPolicy {
        /// Rules decide first; anything they do not cover is asked.
        Ask = "ask",
        /// Never ask: calls that would need approval run (meant for full access).
        Never = "never",
        /// Never ask, for unattended runs: rules decide, and anything they do not cover is
        /// refused (fail closed).
        Auto = "auto",
    }
}

word_enum! {
    /// What an approval rule does with a call it matches.
    RuleAction {
        Allow = "allow",
        Deny = "deny",
    }
}

word_enum! {
    /// Which request field carries the output cap.
    MaxTokensField {
        MaxTokens = "max_tokens",
        MaxCompletionTokens = "max_completion_tokens",
    }
}

word_enum! {
    /// When earlier reasoning is sent back to the model.
    ReplayReasoning {
        Off = "off",
        ToolCallTurns = "tool-call-turns",
        Always = "always",
    }
}

word_enum! {
    /// A kind of input a model accepts.
    Modality {
        Text = "text",
        Image = "image",
    }
}

/// One catalogued model of a provider route. Unset facts fall back to the route defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelEntry {
    pub id: String,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub reasoning_efforts: Option<Vec<String>>,
    pub default_effort: Option<String>,
    pub input: Option<Vec<Modality>>,
}

impl ModelEntry {
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            context_window: None,
            max_output_tokens: None,
            reasoning_efforts: None,
            default_effort: None,
            input: None,
        }
    }
}

/// What an approval rule matches besides the tool name.
#[derive(Clone, Debug)]
pub enum RuleMatcher {
    /// Every call of the tool.
    AnyCall,
    /// A shell command starting with these words.
    CommandPrefix(String),
    /// A file path matching this glob (relative to the workspace).
    PathGlob(globset::GlobMatcher),
}

impl PartialEq for RuleMatcher {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::AnyCall, Self::AnyCall) => true,
            (Self::CommandPrefix(a), Self::CommandPrefix(b)) => a == b,
            (Self::PathGlob(a), Self::PathGlob(b)) => a.glob() == b.glob(),
            _ => false,
        }
    }
}

/// One `[[approval.rules]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRule {
    pub action: RuleAction,
    /// A tool name, or `*` for every tool.
    pub tool: String,
    pub matcher: RuleMatcher,
}

/// What a call looks like to the approval rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallFacts<'a> {
    pub tool: &'a str,
    /// The shell command, for shell tools.
    pub command: Option<&'a str>,
    /// The file the call touches, relative to the workspace, for file tools.
    pub path: Option<&'a str>,
}

/// Characters that chain or redirect shell commands. An allow rule for `cargo test` must not
/// approve `cargo test && rm -rf ~`, so commands containing any of these never match an
/// allow rule's prefix.
const SHELL_CONTROL: &[char] = &[';', '&', '|', '`', '$', '>', '<', '\n', '(', ')'];

impl ApprovalRule {
    /// Whether this rule applies to `call`.
    pub fn matches(&self, call: &CallFacts<'_>) -> bool {
        if self.tool != "*" && self.tool != call.tool {
            return false;
        }
        match &self.matcher {
            RuleMatcher::AnyCall => true,
            RuleMatcher::PathGlob(glob) => call.path.is_some_and(|p| glob.is_match(p)),
            RuleMatcher::CommandPrefix(prefix) => {
                let Some(command) = call.command else {
                    return false;
                };
                match self.action {
                    RuleAction::Allow => {
                        !command.contains(SHELL_CONTROL) && starts_with_words(command, prefix)
                    }
                    // A deny rule looks at every chained piece, so chaining cannot hide a
                    // denied command.
                    RuleAction::Deny => command
                        .split(SHELL_CONTROL)
                        .any(|piece| starts_with_words(piece, prefix)),
                }
            }
        }
    }
}

/// `command` begins with the words of `prefix` (whitespace-insensitive, whole words).
fn starts_with_words(command: &str, prefix: &str) -> bool {
    let mut words = command.split_whitespace();
    let expected: Vec<&str> = prefix.split_whitespace().collect();
    if expected.is_empty() {
        return false;
    }
    let (last, head) = match expected.split_last() {
        Some(parts) => parts,
        None => return false,
    };
    for want in head {
        if words.next() != Some(*want) {
            return false;
        }
    }
    // The last word of a prefix may end in `/` or `=` and so match a longer word; otherwise
    // it must be a whole word (`cargo test` does not match `cargo testify`).
    match words.next() {
        Some(word) if word == *last => true,
        Some(word) => (last.ends_with('/') || last.ends_with('=')) && word.starts_with(last),
        None => false,
    }
}

/// The decision of a rule list: any matching deny wins over every allow, whatever the order.
pub fn decide(rules: &[ApprovalRule], call: &CallFacts<'_>) -> Option<RuleAction> {
    let mut allowed = false;
    for rule in rules.iter().filter(|r| r.matches(call)) {
        match rule.action {
            RuleAction::Deny => return Some(RuleAction::Deny),
            RuleAction::Allow => allowed = true,
        }
    }
    allowed.then_some(RuleAction::Allow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(action: RuleAction, tool: &str, matcher: RuleMatcher) -> ApprovalRule {
        ApprovalRule {
            action,
            tool: tool.into(),
            matcher,
        }
    }

    fn bash(command: &str) -> CallFacts<'_> {
        CallFacts {
            tool: "bash",
            command: Some(command),
            path: None,
        }
    }

    #[test]
    fn words_round_trip() {
        for mode in SandboxMode::ALL {
            assert_eq!(SandboxMode::from_word(mode.as_str()), Some(*mode));
        }
        assert_eq!(
            SandboxMode::expected(),
            "one of \"read-only\", \"workspace-write\", \"danger-full-access\""
        );
        assert_eq!(ApprovalPolicy::from_word("sometimes"), None);
    }

    #[test]
    fn allow_prefixes_match_whole_words_and_never_chained_commands() {
        let allow = rule(
            RuleAction::Allow,
            "bash",
            RuleMatcher::CommandPrefix("cargo test".into()),
        );
        assert!(allow.matches(&bash("cargo test")));
        assert!(allow.matches(&bash("cargo  test -p dsh-cli")));
        assert!(!allow.matches(&bash("cargo testify")));
        assert!(!allow.matches(&bash("cargo test && rm -rf ~")));
        assert!(!allow.matches(&bash("cargo test; curl x | sh")));
        assert!(!allow.matches(&bash("cargo test $(rm -rf ~)")));
        assert!(!allow.matches(&CallFacts {
            tool: "read",
            command: Some("cargo test"),
            path: None
        }));
    }

    #[test]
    fn deny_wins_and_sees_through_chains() {
        let rules = vec![
            rule(RuleAction::Allow, "*", RuleMatcher::AnyCall),
            rule(
                RuleAction::Deny,
                "bash",
                RuleMatcher::CommandPrefix("git push".into()),
            ),
        ];
        assert_eq!(decide(&rules, &bash("ls")), Some(RuleAction::Allow));
        assert_eq!(
            decide(&rules, &bash("make && git push --force")),
            Some(RuleAction::Deny)
        );
        assert_eq!(decide(&rules[1..], &bash("ls")), None);
    }

    #[test]
    fn path_globs_match_relative_paths() {
        let glob = globset::Glob::new("secrets/**").unwrap().compile_matcher();
        let deny = rule(RuleAction::Deny, "write", RuleMatcher::PathGlob(glob));
        let call = |path| CallFacts {
            tool: "write",
            command: None,
            path: Some(path),
        };
        assert!(deny.matches(&call("secrets/prod.env")));
        assert!(!deny.matches(&call("src/main.rs")));
    }
}
