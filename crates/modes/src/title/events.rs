//! `session/title` and `session/title-llm-request`, the original's log-only records.

use dsh_protocol::Message;
use dsh_session::{EventDeclaration, PluginEvent, Session, SessionEvent};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The model route a title came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TitleRoute {
    pub provider: String,
    pub model: String,
}

/// Who supplied a title.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TitleSource {
    /// The first prompt's opening words.
    Fallback,
    /// A title provider (the model).
    Provider {
        provider: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<TitleRoute>,
    },
    /// A person's rename: pins the title, so nothing automatic replaces it.
    User,
}

/// `session/title`: the latest one wins.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTitle {
    pub title: String,
    /// The `user/message` seqs the title was made from (empty for a rename).
    pub message_seqs: Vec<u64>,
    pub source: TitleSource,
}

impl PluginEvent for SessionTitle {
    const TYPE: &'static str = "session/title";

    fn validate(&self) -> Result<(), String> {
        if self.title.trim().is_empty() {
            return Err("a session title must not be blank".into());
        }
        Ok(())
    }
}

/// `session/title-llm-request`: the exact side request, logged before it is sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitleLlmRequest {
    pub title_provider: String,
    pub message_seqs: Vec<u64>,
    pub route: TitleRoute,
    pub system: String,
    pub messages: Vec<Message>,
    pub max_tokens: u64,
}

impl PluginEvent for TitleLlmRequest {
    const TYPE: &'static str = "session/title-llm-request";
}

/// The session event types this module writes.
pub static EVENT_TYPES: &[EventDeclaration] = &[
    EventDeclaration::of::<SessionTitle>(),
    EventDeclaration::of::<TitleLlmRequest>(),
];

/// The latest title of `session`: [`fold_title`] over its whole log, answered from the
/// session's newest title record without a scan (asked before every model request). Only
/// when that record does not decode is the log scanned for an older one.
pub fn session_title(session: &Session) -> Option<SessionTitle> {
    match session.newest_decoded::<SessionTitle>()? {
        Ok(title) => Some(title),
        Err(_) => fold_title(&session.events()),
    }
}

/// The latest title in `events`, if any (a record that does not decode is skipped).
pub fn fold_title(events: &[Arc<SessionEvent>]) -> Option<SessionTitle> {
    events
        .iter()
        .rev()
        .filter_map(|event| event.decode::<SessionTitle>())
        .find_map(Result::ok)
}
