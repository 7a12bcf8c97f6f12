//! [`MessageSource`]: entries collected once, the variant built from them by moving, `Other`
//! holding the whole object when the derived reader's tagged variants would fail.

use super::take_string;
use super::{is_string_at, known_keys, optional_at, positions, single, tag_value, tag_words};
use crate::ids::CallId;
use crate::message::MessageSource;
use serde::de::value::SeqAccessDeserializer;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::fmt;

/// The derived reader of the tagged [`MessageSource`] variants, for the array form.
#[derive(Deserialize)]
#[serde(remote = "MessageSource", tag = "kind", rename_all = "kebab-case")]
enum MessageSourceMirror {
    User {
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Plugin {
        plugin: String,
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    Model {
        provider: String,
        model: String,
        #[serde(rename = "replayState", default)]
        replay_state: Option<Value>,
    },
    Tool {
        #[serde(rename = "callId")]
        call_id: CallId,
    },
}

const NO_VARIANT: &str = "data did not match any variant of untagged enum MessageSource";

tag_words!(
    /// `MessageSource`'s `kind` words, in declaration order.
    SourceTag {
        User = "user",
        Plugin = "plugin",
        Model = "model",
        Tool = "tool",
    }
);

known_keys!(SourceKey {
    Kind = "kind",
    Plugin = "plugin",
    Provider = "provider",
    Model = "model",
    ReplayState = "replayState",
    CallId = "callId",
});

type Entries = Vec<(SourceKey, Value)>;

impl<'de> Deserialize<'de> for MessageSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SourceVisitor)
    }
}

struct SourceVisitor;

impl<'de> Visitor<'de> for SourceVisitor {
    type Value = MessageSource;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message source object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MessageSource, A::Error> {
        let mut entries = Entries::with_capacity(4);
        while let Some(key) = map.next_key::<SourceKey>()? {
            entries.push((key, map.next_value()?));
        }
        Ok(match typed(&mut entries) {
            Some(source) => source,
            None => MessageSource::Other(into_map(entries, |_| true)),
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MessageSource, A::Error> {
        let value = Value::deserialize(SeqAccessDeserializer::new(seq))?;
        MessageSourceMirror::deserialize(value).map_err(|_| de::Error::custom(NO_VARIANT))
    }
}

/// The entries `keep` selects, as a map (a repeated key keeps its last value, in its first
/// position, as reading into a map does).
fn into_map(entries: Entries, keep: impl Fn(&SourceKey) -> bool) -> Map<String, Value> {
    entries
        .into_iter()
        .filter(|(key, _)| keep(key))
        .map(|(key, value)| (key.into_string(), value))
        .collect()
}

/// The tagged variant, or `None` (entries untouched) where the derived reader failed it.
fn typed(entries: &mut Entries) -> Option<MessageSource> {
    let tag = single(entries, &SourceKey::Kind)?;
    let tag = tag_value(&entries[tag].1, SourceTag::from_word, SourceTag::from_index)?;
    Some(match tag {
        SourceTag::User => MessageSource::User {
            extra: into_map(std::mem::take(entries), |key| *key != SourceKey::Kind),
        },
        SourceTag::Plugin => {
            let [plugin] = positions(entries, [&SourceKey::Plugin])?;
            if !is_string_at(entries, plugin) {
                return None;
            }
            let plugin = take_string(entries, plugin);
            MessageSource::Plugin {
                plugin,
                extra: into_map(std::mem::take(entries), |key| {
                    !matches!(key, SourceKey::Kind | SourceKey::Plugin)
                }),
            }
        }
        SourceTag::Model => {
            let [provider, model, replay_state] = positions(
                entries,
                [
                    &SourceKey::Provider,
                    &SourceKey::Model,
                    &SourceKey::ReplayState,
                ],
            )?;
            if !is_string_at(entries, provider) || !is_string_at(entries, model) {
                return None;
            }
            let replay_state = optional_at(entries, replay_state)
                .is_some()
                .then(|| replay_state.map(|i| std::mem::take(&mut entries[i].1)))
                .flatten();
            MessageSource::Model {
                provider: take_string(entries, provider),
                model: take_string(entries, model),
                replay_state,
            }
        }
        SourceTag::Tool => {
            let [call_id] = positions(entries, [&SourceKey::CallId])?;
            if !is_string_at(entries, call_id) {
                return None;
            }
            MessageSource::Tool {
                call_id: CallId::from(take_string(entries, call_id)),
            }
        }
    })
}
