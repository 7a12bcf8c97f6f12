//! Closed word sets: values written as one fixed word in settings files, environment
//! variables, flags, plugin configs and logs (`read-only`, `ask`, `max_tokens`, ...).
//!
//! [`word_enum!`](crate::word_enum) declares such an enum from one list of
//! `Variant = "word"` pairs, in the crate that owns the concept. Serde, [`FromStr`],
//! [`Display`](fmt::Display) and the [`Word`] lists are all generated from that list, so
//! adding, dropping or respelling a value is a change in one place. Surfaces build their
//! parsers over [`Word`] (the CLI lists [`Word::WORDS`] in `--help` and in its settings
//! errors), which keeps command-line crates out of the library crates.

use std::fmt;
use std::str::FromStr;

/// An enum whose values are fixed words. Implemented by [`word_enum!`](crate::word_enum).
pub trait Word:
    Copy + Eq + fmt::Debug + fmt::Display + FromStr<Err = UnknownWord> + Send + Sync + 'static
{
    /// Every value, in documentation order.
    const ALL: &'static [Self];
    /// The words of [`Word::ALL`], in the same order.
    const WORDS: &'static [&'static str];

    /// The word this value is written as.
    fn as_str(self) -> &'static str;
}

/// A word that names no value of the enum.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {found:?}; expected {}", one_of(expected))]
pub struct UnknownWord {
    /// The enum's name.
    pub kind: &'static str,
    pub found: String,
    /// The valid words.
    pub expected: &'static [&'static str],
}

impl UnknownWord {
    /// The stable error code.
    pub fn code(&self) -> &'static str {
        "UNKNOWN_WORD"
    }
}

/// `one of "a", "b"`: how error messages list the valid words.
pub fn one_of(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|word| format!("{word:?}")).collect();
    format!("one of {}", quoted.join(", "))
}

/// [`one_of`] the words of `T`.
pub fn expected<T: Word>() -> String {
    one_of(T::WORDS)
}

/// Declares an enum written as fixed words, with serde, `FromStr`, `Display` and [`Word`].
///
/// ```
/// dsh_protocol::word_enum! {
///     /// How loud.
///     #[derive(Default)]
///     pub enum Volume {
///         /// Nothing at all.
///         Off = "off",
///         #[default]
///         Normal = "normal",
///     }
/// }
/// assert_eq!("off".parse::<Volume>(), Ok(Volume::Off));
/// assert_eq!(Volume::default().to_string(), "normal");
/// ```
///
/// The enum derives `Clone, Copy, Debug, PartialEq, Eq, Hash` and serde's `Serialize` and
/// `Deserialize` (each variant renamed to its word, so serde's messages name the valid
/// words); the calling crate needs `serde` with `derive` as a dependency. Further derives
/// (`Default` with a `#[default]` variant) go on the enum as usual.
#[macro_export]
macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $word)] $variant,)+
        }

        impl $name {
            /// Every value, in documentation order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];
            /// The words of `ALL`, in the same order.
            pub const WORDS: &'static [&'static str] = &[$($word,)+];

            /// The word this value is written as.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }
        }

        impl $crate::words::Word for $name {
            const ALL: &'static [$name] = $name::ALL;
            const WORDS: &'static [&'static str] = $name::WORDS;

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::words::UnknownWord;

            fn from_str(word: &str) -> ::std::result::Result<Self, Self::Err> {
                match word {
                    $($word => Ok($name::$variant),)+
                    _ => Err($crate::words::UnknownWord {
                        kind: stringify!($name),
                        found: word.to_owned(),
                        expected: $name::WORDS,
                    }),
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    crate::word_enum! {
        /// A test vocabulary.
        #[derive(Default)]
        enum Mode {
            ReadOnly = "read-only",
            #[default]
            Write = "write",
        }
    }

    #[test]
    fn every_form_uses_the_one_list() {
        for mode in Mode::ALL {
            assert_eq!(mode.as_str().parse::<Mode>(), Ok(*mode));
            assert_eq!(mode.to_string(), mode.as_str());
            assert_eq!(
                serde_json::to_value(mode).unwrap(),
                serde_json::json!(mode.as_str())
            );
        }
        assert_eq!(Mode::WORDS, ["read-only", "write"]);
        assert_eq!(<Mode as Word>::ALL, Mode::ALL);
        assert_eq!(Mode::default(), Mode::Write);
        let parsed: Mode = serde_json::from_str("\"read-only\"").unwrap();
        assert_eq!(parsed, Mode::ReadOnly);
    }

    #[test]
    fn unknown_words_list_the_valid_ones() {
        let error = "readonly".parse::<Mode>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown Mode \"readonly\"; expected one of \"read-only\", \"write\""
        );
        assert_eq!(error.code(), "UNKNOWN_WORD");
        assert_eq!(expected::<Mode>(), "one of \"read-only\", \"write\"");
        let serde_error = serde_json::from_str::<Mode>("\"readonly\"").unwrap_err();
        assert_eq!(
            serde_error.to_string(),
            "unknown variant `readonly`, expected `read-only` or `write` at line 1 column 10"
        );
    }
}
