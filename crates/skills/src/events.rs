//! The log record of what the model was offered: `skills/catalog`.

use crate::render::CatalogEntry;
use dsh_session::{EventDeclaration, PluginEvent};
use serde::{Deserialize, Serialize};

/// The skill event types, for `dsh_session::register_event_types`.
pub static EVENT_TYPES: &[EventDeclaration] = &[EventDeclaration::of::<SkillCatalog>()];

/// `skills/catalog`: the catalog a step's system prompt lists, recorded at the first step
/// that lists skills and again at every step where it differs from the last record (a skill
/// added, removed or edited mid-session). Log-only and ignorable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillCatalog {
    pub entries: Vec<CatalogEntry>,
    /// Names new since the last record.
    #[serde(default)]
    pub added: Vec<String>,
    /// Names gone since the last record.
    #[serde(default)]
    pub removed: Vec<String>,
    /// Names whose description changed.
    #[serde(default)]
    pub changed: Vec<String>,
    /// False for a session's first record.
    #[serde(default)]
    pub update: bool,
}

impl PluginEvent for SkillCatalog {
    const TYPE: &'static str = "skills/catalog";
    const IGNORABLE: bool = true;
}

impl SkillCatalog {
    /// The record for `now` after `before` (`None`: nothing recorded yet); `None` when
    /// nothing changed, or nothing was ever listed and nothing is now.
    pub fn between(before: Option<&[CatalogEntry]>, now: &[CatalogEntry]) -> Option<Self> {
        let previous = before.unwrap_or_default();
        if before.is_some_and(|b| b == now) || (before.is_none() && now.is_empty()) {
            return None;
        }
        let find = |list: &[CatalogEntry], name: &str| {
            list.iter()
                .find(|e| e.name == name)
                .map(|e| e.description.clone())
        };
        let added = now
            .iter()
            .filter(|e| find(previous, &e.name).is_none())
            .map(|e| e.name.clone())
            .collect();
        let removed = previous
            .iter()
            .filter(|e| find(now, &e.name).is_none())
            .map(|e| e.name.clone())
            .collect();
        let changed = now
            .iter()
            .filter(|e| find(previous, &e.name).is_some_and(|d| d != e.description))
            .map(|e| e.name.clone())
            .collect();
        Some(Self {
            entries: now.to_vec(),
            added,
            removed,
            changed,
            update: before.is_some(),
        })
    }
}
