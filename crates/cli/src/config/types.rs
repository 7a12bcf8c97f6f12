//! The value types of settings: closed word lists and model entries. Approval rules are
//! `dsh_tools_builtin::approval::ApprovalRule`, the type the approval plugin decides with.

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
        /// Never ask: calls that would need approval run (deny rules still apply; meant for
        /// full access).
        Never = "never",
        /// Allow rules decide; anything they do not cover is asked, as under `ask`, so
        /// nothing is refused for want of a rule (the approval plugin's meaning, see
        /// `dsh_tools_builtin::ApprovalPolicy::Auto`).
        Auto = "auto",
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
