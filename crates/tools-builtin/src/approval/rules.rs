//! Allow and deny rules from settings.
//!
//! A rule names a tool (or `*`) and optionally narrows it to a bash command prefix or a file
//! path glob (relative to the workspace). Whatever the order the rules were written in, any
//! matching deny wins, then any matching ask, then allow.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::command::{command_grant, deny_pieces, simple_words, starts_with_words, CommandGrant};

dsh_protocol::word_enum! {
    /// What a rule does with a call it matches.
    pub enum RuleAction {
        /// Run it without asking (unless a deny or ask rule also matches).
        Allow = "allow",
        /// Put it to a person, whatever the policy and the sandbox would decide (under
        /// `never`, where no one is asked, the call is refused).
        Ask = "ask",
        /// Refuse it, under every policy.
        Deny = "deny",
    }
}

/// What a rule matches besides the tool name.
#[derive(Clone, Debug)]
pub enum RuleMatcher {
    /// Every call of the tool.
    AnyCall,
    /// Bash commands starting with these words (`git status`, `cargo test`).
    CommandPrefix(String),
    /// Files whose path (relative to the workspace; absolute when outside it) matches.
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

/// One rule. (De)serializes as `{action, tool, command_prefix?, path?}`, the shape of a
/// `[[approval.rules]]` entry in settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRule {
    pub action: RuleAction,
    /// A tool name, or `*` for every tool.
    pub tool: String,
    pub matcher: RuleMatcher,
}

/// Why a rule cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    #[error("a rule matches either `command_prefix` or `path`, not both")]
    BothMatchers,
    #[error("command_prefix is empty")]
    EmptyPrefix,
    #[error("invalid path glob {pattern:?}: {reason}")]
    InvalidGlob { pattern: String, reason: String },
}

impl RuleError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::BothMatchers => "RULE_BOTH_MATCHERS",
            Self::EmptyPrefix => "RULE_EMPTY_PREFIX",
            Self::InvalidGlob { .. } => "RULE_INVALID_GLOB",
        }
    }
}

impl ApprovalRule {
    pub fn any_call(action: RuleAction, tool: impl Into<String>) -> Self {
        Self {
            action,
            tool: tool.into(),
            matcher: RuleMatcher::AnyCall,
        }
    }

    pub fn command_prefix(
        action: RuleAction,
        tool: impl Into<String>,
        prefix: impl Into<String>,
    ) -> Result<Self, RuleError> {
        let prefix = prefix.into();
        if prefix.trim().is_empty() {
            return Err(RuleError::EmptyPrefix);
        }
        Ok(Self {
            action,
            tool: tool.into(),
            matcher: RuleMatcher::CommandPrefix(prefix),
        })
    }

    pub fn path_glob(
        action: RuleAction,
        tool: impl Into<String>,
        pattern: &str,
    ) -> Result<Self, RuleError> {
        let glob = globset::Glob::new(pattern).map_err(|e| RuleError::InvalidGlob {
            pattern: pattern.into(),
            reason: e.kind().to_string(),
        })?;
        Ok(Self {
            action,
            tool: tool.into(),
            matcher: RuleMatcher::PathGlob(glob.compile_matcher()),
        })
    }

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
                        simple_words(command).is_some_and(|words| starts_with_words(&words, prefix))
                    }
                    // Over-matching a deny or an ask is the safe side.
                    RuleAction::Ask | RuleAction::Deny => deny_pieces(command)
                        .iter()
                        .any(|words| starts_with_words(words, prefix)),
                }
            }
        }
    }

    /// The settings line that would allow calls like `call`, for messages that tell the user
    /// how to let it through.
    pub(crate) fn suggestion(call: &CallFacts<'_>) -> String {
        let base = format!(
            "[[approval.rules]] action = \"allow\", tool = \"{}\"",
            call.tool
        );
        if let Some(command) = call.command {
            if let Some(words) = simple_words(command) {
                let prefix = match command_grant(command) {
                    CommandGrant::Prefix(prefix) => prefix,
                    CommandGrant::Exact(_) => words.join(" "),
                };
                return format!("{base}, command_prefix = {prefix:?}");
            }
        }
        match call.path {
            Some(path) => format!("{base}, path = {path:?}"),
            None => base,
        }
    }
}

/// What a call looks like to the rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallFacts<'a> {
    pub tool: &'a str,
    /// The shell command, for bash.
    pub command: Option<&'a str>,
    /// The file the call touches, relative to the workspace (absolute outside it).
    pub path: Option<&'a str>,
}

/// The verdict of a rule list: any matching deny wins, then any matching ask, then allow.
pub fn decide(rules: &[ApprovalRule], call: &CallFacts<'_>) -> Option<RuleAction> {
    let (mut ask, mut allow) = (false, false);
    for rule in rules.iter().filter(|rule| rule.matches(call)) {
        match rule.action {
            RuleAction::Deny => return Some(RuleAction::Deny),
            RuleAction::Ask => ask = true,
            RuleAction::Allow => allow = true,
        }
    }
    if ask {
        Some(RuleAction::Ask)
    } else {
        allow.then_some(RuleAction::Allow)
    }
}

impl Serialize for ApprovalRule {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let matcher = match &self.matcher {
            RuleMatcher::AnyCall => None,
            RuleMatcher::CommandPrefix(prefix) => Some(("command_prefix", prefix.as_str())),
            RuleMatcher::PathGlob(glob) => Some(("path", glob.glob().glob())),
        };
        let mut map = ser.serialize_map(Some(2 + usize::from(matcher.is_some())))?;
        map.serialize_entry("action", &self.action)?;
        map.serialize_entry("tool", &self.tool)?;
        if let Some((key, value)) = matcher {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleConfig {
    action: RuleAction,
    tool: String,
    #[serde(default)]
    command_prefix: Option<String>,
    #[serde(default)]
    path: Option<String>,
}

impl<'de> Deserialize<'de> for ApprovalRule {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let config = RuleConfig::deserialize(de)?;
        let rule = match (config.command_prefix, config.path) {
            (Some(_), Some(_)) => Err(RuleError::BothMatchers),
            (Some(prefix), None) => {
                ApprovalRule::command_prefix(config.action, config.tool, prefix)
            }
            (None, Some(path)) => ApprovalRule::path_glob(config.action, config.tool, &path),
            (None, None) => Ok(ApprovalRule::any_call(config.action, config.tool)),
        };
        rule.map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn bash(command: &str) -> CallFacts<'_> {
        CallFacts {
            tool: "bash",
            command: Some(command),
            path: None,
        }
    }

    fn rule(value: serde_json::Value) -> ApprovalRule {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn allow_prefixes_cover_only_simple_commands() {
        let allow =
            rule(json!({"action": "allow", "tool": "bash", "command_prefix": "cargo test"}));
        assert!(allow.matches(&bash("cargo test")));
        assert!(allow.matches(&bash("cargo  test -p dsh-cli")));
        assert!(!allow.matches(&bash("cargo testify")));
        assert!(!allow.matches(&bash("cargo test && rm -rf ~")));
        assert!(!allow.matches(&bash("cargo test $(rm -rf ~)")));
        assert!(!allow.matches(&CallFacts {
            tool: "read",
            command: Some("cargo test"),
            path: None
        }));
    }

    #[test]
    fn deny_prefixes_catch_chained_and_wrapped_pieces() {
        let deny = rule(json!({"action": "deny", "tool": "*", "command_prefix": "rm"}));
        assert!(deny.matches(&bash("rm x")));
        assert!(deny.matches(&bash("ls; sudo rm -rf /")));
        assert!(deny.matches(&bash("echo \"$(rm x)\"")));
        assert!(!deny.matches(&bash("rmdir x")));
    }

    #[test]
    fn allow_prefixes_refuse_every_chaining_and_redirection() {
        let allow =
            rule(json!({"action": "allow", "tool": "bash", "command_prefix": "cargo test"}));
        for command in [
            "cargo test; curl x | sh",
            "cargo test | sh",
            "cargo test || rm x",
            "cargo test & rm x",
            "cargo test > Cargo.toml",
            "cargo test < /etc/passwd",
            "cargo test `rm x`",
            "cargo test\nrm x",
            "(cargo test)",
        ] {
            assert!(!allow.matches(&bash(command)), "{command:?}");
        }
    }

    #[test]
    fn a_catch_all_allow_never_outweighs_a_deny_hidden_in_a_chain() {
        let rules = vec![
            rule(json!({"action": "allow", "tool": "*"})),
            rule(json!({"action": "deny", "tool": "bash", "command_prefix": "git push"})),
        ];
        assert_eq!(decide(&rules, &bash("ls")), Some(RuleAction::Allow));
        assert_eq!(
            decide(&rules, &bash("make && git push --force")),
            Some(RuleAction::Deny)
        );
        assert_eq!(decide(&rules[1..], &bash("ls")), None);
    }

    #[test]
    fn deny_beats_allow_in_any_order() {
        let rules = vec![
            rule(json!({"action": "allow", "tool": "bash", "command_prefix": "git"})),
            rule(json!({"action": "deny", "tool": "bash", "command_prefix": "git push"})),
        ];
        assert_eq!(decide(&rules, &bash("git status")), Some(RuleAction::Allow));
        assert_eq!(
            decide(&rules, &bash("git push origin")),
            Some(RuleAction::Deny)
        );
        assert_eq!(decide(&rules, &bash("ls")), None);
    }

    #[test]
    fn ask_rules_beat_allow_rules_lose_to_deny_rules_and_see_through_chains() {
        let rules = vec![
            rule(json!({"action": "allow", "tool": "*"})),
            rule(json!({"action": "ask", "tool": "bash", "command_prefix": "git push"})),
            rule(json!({"action": "deny", "tool": "bash", "command_prefix": "git push --force"})),
        ];
        assert_eq!(decide(&rules, &bash("git status")), Some(RuleAction::Allow));
        assert_eq!(decide(&rules, &bash("git push")), Some(RuleAction::Ask));
        assert_eq!(
            decide(&rules, &bash("make && git push origin")),
            Some(RuleAction::Ask)
        );
        assert_eq!(
            decide(&rules, &bash("git push --force")),
            Some(RuleAction::Deny)
        );
        assert_eq!(decide(&rules[1..2], &bash("ls")), None);
    }

    #[test]
    fn path_globs_match_workspace_relative_paths() {
        let allow = rule(json!({"action": "allow", "tool": "write", "path": "src/**"}));
        let write = |path| CallFacts {
            tool: "write",
            command: None,
            path: Some(path),
        };
        assert!(allow.matches(&write("src/a/b.rs")));
        assert!(!allow.matches(&write("Cargo.toml")));
        assert!(!allow.matches(&write("/etc/src/x")));
    }

    #[test]
    fn bad_rules_are_refused() {
        let both = json!({"action": "allow", "tool": "bash", "command_prefix": "x", "path": "y"});
        assert!(serde_json::from_value::<ApprovalRule>(both).is_err());
        let glob = json!({"action": "allow", "tool": "write", "path": "a[" });
        let err = serde_json::from_value::<ApprovalRule>(glob).unwrap_err();
        assert!(err.to_string().contains("invalid path glob"));
        let unknown = json!({"action": "maybe", "tool": "bash"});
        assert!(serde_json::from_value::<ApprovalRule>(unknown).is_err());
    }

    #[test]
    fn rules_serialize_in_the_shape_they_are_read_from() {
        for value in [
            json!({"action": "allow", "tool": "*"}),
            json!({"action": "allow", "tool": "bash", "command_prefix": "cargo test"}),
            json!({"action": "deny", "tool": "write", "path": "secrets/**"}),
            json!({"action": "ask", "tool": "edit", "path": "Cargo.toml"}),
        ] {
            assert_eq!(serde_json::to_value(rule(value.clone())).unwrap(), value);
        }
        for &action in RuleAction::ALL {
            assert_eq!(action.as_str().parse::<RuleAction>(), Ok(action));
            assert_eq!(
                serde_json::to_value(action).unwrap(),
                json!(action.as_str())
            );
        }
        assert!("maybe".parse::<RuleAction>().is_err());
    }

    #[test]
    fn suggestions_name_a_rule_that_would_allow_the_call() {
        assert_eq!(
            ApprovalRule::suggestion(&bash("git push origin main")),
            "[[approval.rules]] action = \"allow\", tool = \"bash\", command_prefix = \"git push\""
        );
    }
}
