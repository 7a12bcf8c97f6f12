//! Hand-written `Deserialize` for the internally tagged unions on the session read path.
//!
//! serde's derive reads an internally tagged enum (`#[serde(tag = "type")]`) by buffering the
//! whole object into its private `Content` tree, looking for the tag, and deserializing the
//! variant again from the buffer; enums with an `#[serde(untagged)]` catch-all buffer twice.
//! Every chunk, block and message source of a long session paid that, which made it one of the
//! largest shares of reading a log. The impls here read the same inputs to the same values:
//!
//! - [`StreamChunk`](crate::StreamChunk) and [`FinishReason`](crate::FinishReason) (no
//!   catch-all): when the tag is the object's first key, which every writer of ours and the
//!   original's does, the variant's fields are read straight from the input; otherwise the
//!   object is replayed, first key included, into the derived reader of a private mirror of
//!   the enum (`#[serde(remote)]`), which buffers as before.
//! - [`ContentBlock`](crate::ContentBlock) and [`MessageSource`](crate::MessageSource) (with
//!   an `Other` catch-all that keeps unknown objects verbatim): a failed variant must become
//!   `Other` holding the whole object, so the entries are collected once as JSON values (known
//!   keys without allocating) and the variant is built from them by moving, with the derived
//!   reader's rules written out: unknown keys ignored, duplicate keys, missing or mistyped
//!   fields and unknown tags give `Other`.
//!
//! The array form serde also accepts for internally tagged enums (`["text", "hi"]`) goes to
//! the mirrors' derived readers in both cases. Integer tags are variant indexes where the
//! derived reader took them so: always for the catch-all unions (they read from serde's buffer),
//! never from JSON text or a `serde_json::Value` for the others. Serialization stays derived.

mod content;
mod source;
mod stream;
#[cfg(test)]
mod tests;

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use std::fmt;

/// The first key of an object: the tag, or any other key (kept for the replay).
pub(crate) enum FirstKey {
    Tag,
    Other(String),
}

/// Reads an object's first key, telling the tag apart without allocating for it.
pub(crate) struct FirstKeySeed(pub &'static str);

impl<'de> DeserializeSeed<'de> for FirstKeySeed {
    type Value = FirstKey;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<FirstKey, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for FirstKeySeed {
    type Value = FirstKey;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<FirstKey, E> {
        Ok(if v == self.0 {
            FirstKey::Tag
        } else {
            FirstKey::Other(v.to_owned())
        })
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<FirstKey, E> {
        Ok(if v == self.0 {
            FirstKey::Tag
        } else {
            FirstKey::Other(v)
        })
    }
}

/// A map whose first key was already read: yields that key again, then the rest.
pub(crate) struct Replay<A> {
    pub first: Option<String>,
    pub rest: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(key) => seed.deserialize(key.into_deserializer()).map(Some),
            None => self.rest.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.rest.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.rest
            .size_hint()
            .map(|n| n + usize::from(self.first.is_some()))
    }
}

/// Declares the tag words of one enum: a `Copy` enum read through `deserialize_identifier`
/// like serde's variant identifiers (a known name, or a variant index; anything else is the
/// derived reader's `unknown variant` / `invalid value` error).
macro_rules! tag_words {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $name {
            $($variant,)+
        }

        impl $name {
            pub(crate) const WORDS: &'static [&'static str] = &[$($word),+];
            const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The variant named `word`.
            pub(crate) fn from_word(word: &str) -> Option<Self> {
                match word {
                    $($word => Some(Self::$variant),)+
                    _ => None,
                }
            }

            /// The variant with this declaration index.
            pub(crate) fn from_index(index: u64) -> Option<Self> {
                usize::try_from(index).ok().and_then(|i| Self::ALL.get(i).copied())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                        f.write_str("variant identifier")
                    }
                    fn visit_u64<E: ::serde::de::Error>(self, v: u64) -> Result<$name, E> {
                        $name::from_index(v).ok_or_else(|| {
                            E::invalid_value(
                                ::serde::de::Unexpected::Unsigned(v),
                                &$crate::tagged::IndexBelow($name::ALL.len()),
                            )
                        })
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::from_word(v).ok_or_else(|| E::unknown_variant(v, $name::WORDS))
                    }
                    fn visit_bytes<E: ::serde::de::Error>(self, v: &[u8]) -> Result<$name, E> {
                        match ::std::str::from_utf8(v) {
                            Ok(s) => self.visit_str(s),
                            Err(_) => Err(E::invalid_value(::serde::de::Unexpected::Bytes(v), &self)),
                        }
                    }
                }
                d.deserialize_identifier(V)
            }
        }
    };
}
pub(crate) use tag_words;

/// "variant index 0 <= i < N", serde's wording for an out-of-range variant index.
pub(crate) struct IndexBelow(pub usize);

impl de::Expected for IndexBelow {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "variant index 0 <= i < {}", self.0)
    }
}

/// Declares the known keys of one catch-all union: read without allocating, unknown keys
/// kept as text for the `Other` map and flattened extras.
macro_rules! known_keys {
    ($name:ident { $($variant:ident = $word:literal),+ $(,)? }) => {
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub(crate) enum $name {
            $($variant,)+
            Unknown(String),
        }

        impl $name {
            pub(crate) fn into_string(self) -> String {
                match self {
                    $(Self::$variant => $word.to_owned(),)+
                    Self::Unknown(key) => key,
                }
            }

            fn known(key: &str) -> Option<Self> {
                match key {
                    $($word => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> ::serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter) -> ::std::fmt::Result {
                        f.write_str("a string key")
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name::known(v).unwrap_or_else(|| $name::Unknown(v.to_owned())))
                    }
                    fn visit_string<E: ::serde::de::Error>(self, v: String) -> Result<$name, E> {
                        Ok($name::known(&v).unwrap_or($name::Unknown(v)))
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}
pub(crate) use known_keys;

/// Fails with serde's `duplicate field` error when `slot` is already filled.
pub(crate) fn fill<T, E: de::Error>(
    slot: &mut Option<T>,
    field: &'static str,
    value: T,
) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(field));
    }
    *slot = Some(value);
    Ok(())
}

/// `slot`'s value, or serde's `missing field` error.
pub(crate) fn required<T, E: de::Error>(slot: Option<T>, field: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(field))
}

/// The position of the one entry keyed `tag`; `None` when it is missing or repeated (both
/// make the derived reader fail the tagged variants).
pub(crate) fn single<K: PartialEq>(entries: &[(K, serde_json::Value)], key: &K) -> Option<usize> {
    let mut found = None;
    for (i, (k, _)) in entries.iter().enumerate() {
        if k == key && found.replace(i).is_some() {
            return None;
        }
    }
    found
}

/// The positions of `fields` among `entries` (each at most once, or `None`).
pub(crate) fn positions<K: PartialEq, const N: usize>(
    entries: &[(K, serde_json::Value)],
    fields: [&K; N],
) -> Option<[Option<usize>; N]> {
    let mut at = [None; N];
    for (i, (k, _)) in entries.iter().enumerate() {
        if let Some(f) = fields.iter().position(|field| *field == k) {
            if at[f].replace(i).is_some() {
                return None;
            }
        }
    }
    Some(at)
}

/// A tag value as the derived reader of a catch-all union takes it (from its buffer, which
/// hands identifiers over as they are): a known word or a variant index.
pub(crate) fn tag_value<T>(
    value: &serde_json::Value,
    from_word: impl Fn(&str) -> Option<T>,
    from_index: impl Fn(u64) -> Option<T>,
) -> Option<T> {
    match value {
        serde_json::Value::String(word) => from_word(word),
        serde_json::Value::Number(n) => n.as_u64().and_then(from_index),
        _ => None,
    }
}

/// Whether `value` at `at` is a string (or the field is absent: `None`).
pub(crate) fn is_string_at<K>(entries: &[(K, serde_json::Value)], at: Option<usize>) -> bool {
    at.is_some_and(|i| entries[i].1.is_string())
}

/// Moves the string out of the entry at `at`; call only after [`is_string_at`].
pub(crate) fn take_string<K>(entries: &mut [(K, serde_json::Value)], at: Option<usize>) -> String {
    match at.map(|i| std::mem::take(&mut entries[i].1)) {
        Some(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// An optional field as `Option<T>` reads it: absent and `null` are `None`.
pub(crate) fn optional_at<K>(
    entries: &[(K, serde_json::Value)],
    at: Option<usize>,
) -> Option<&serde_json::Value> {
    at.map(|i| &entries[i].1).filter(|v| !v.is_null())
}
