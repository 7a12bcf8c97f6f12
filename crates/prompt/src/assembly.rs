//! The assembled, not yet rendered, prompt of one step.

use dsh_protocol::ToolSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A named piece of prompt text: an assembled section or context, or a rendered one.
///
/// Serializes as `{name, text}`, the shape runtime-context snapshots record in their source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedText {
    pub name: String,
    pub text: String,
}

impl NamedText {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
        }
    }
}

/// The variables of one assembly: every registered name, with its value or `None` when its
/// provider had nothing this time.
///
/// The difference matters when rendering: referencing an unregistered name and referencing a
/// registered name without a value are different mistakes, reported differently.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Variables(BTreeMap<String, Option<String>>);

impl Variables {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `name` with `value`, replacing any earlier value; returns the earlier entry.
    pub fn set(
        &mut self,
        name: impl Into<String>,
        value: Option<String>,
    ) -> Option<Option<String>> {
        self.0.insert(name.into(), value)
    }

    /// `None` when `name` is not registered, `Some(None)` when it has no value.
    pub fn get(&self, name: &str) -> Option<Option<&str>> {
        self.0.get(name).map(Option::as_deref)
    }

    /// Unregisters `name`.
    pub fn remove(&mut self, name: &str) -> Option<Option<String>> {
        self.0.remove(name)
    }

    /// Registered names in lexicographic order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_deref()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Into<String>> FromIterator<(K, Option<String>)> for Variables {
    fn from_iter<I: IntoIterator<Item = (K, Option<String>)>>(iter: I) -> Self {
        Self(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// Everything a step tells the model besides the conversation: system-prompt sections,
/// runtime-context entries (sent as a user-message snapshot, never in the system prompt),
/// the ordered tool schemas, and the variables both kinds of text may reference.
///
/// Section and context texts are templates here; [`render_prompt`](crate::render_prompt) and
/// [`RuntimeSnapshot::render`](crate::RuntimeSnapshot::render) interpolate them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Assembly {
    pub sections: Vec<NamedText>,
    pub contexts: Vec<NamedText>,
    pub tools: Vec<ToolSchema>,
    pub variables: Variables,
}
