//! Projections of the log: model messages, the request header in force, the request context.
//!
//! These are the pure forms; `Session` keeps incremental caches of the same folds.

use crate::error::SessionError;
use crate::event::{EventData, SessionEvent};
use crate::surface::fold_surface;
use crate::vocabulary::RequestContext;
use dsh_protocol::{EpochHeader, Message};
use std::sync::Arc;

/// The message one event contributes to model history, if any: user messages and tool
/// results verbatim, assistant messages unless their content is empty (such a message only
/// hosts the usage of a capped step). Everything else contributes nothing.
pub fn derive_event_message(event: &SessionEvent) -> Option<Arc<Message>> {
    match &event.data {
        EventData::UserMessage(m) => Some(Arc::clone(m)),
        EventData::AssistantMessage(a) if !a.message.content.is_empty() => {
            Some(Arc::clone(&a.message))
        }
        EventData::ToolResult(r) => Some(Arc::clone(&r.message)),
        _ => None,
    }
}

/// Model history of a whole log (seq == index), folded from scratch.
pub fn derive_messages(events: &[Arc<SessionEvent>]) -> Result<Vec<Arc<Message>>, SessionError> {
    let surface = fold_surface(events)?;
    Ok(surface
        .nodes
        .iter()
        .filter_map(|&seq| usize::try_from(seq).ok().and_then(|i| events.get(i)))
        .filter_map(|event| derive_event_message(event))
        .collect())
}

/// The canonical form of a header: an empty system prompt, an empty tool list and empty
/// adapter-default markers are the same as absent ones.
pub fn canonical_header(header: &EpochHeader) -> EpochHeader {
    EpochHeader {
        config: header.config.clone(),
        adapter_defaults: header.adapter_defaults.filter(|d| !d.is_empty()),
        system: header.system.clone().filter(|s| !s.is_empty()),
        tools: header.tools.clone().filter(|t| !t.is_empty()),
    }
}

/// Whether two headers would produce the same request: config field by field, equal
/// adapter-default markers, equal system prompt, and the same tools in the same order (each
/// compared by its JSON text).
pub fn header_equals(a: &EpochHeader, b: &EpochHeader) -> bool {
    let (a, b) = (canonical_header(a), canonical_header(b));
    if a.config != b.config || a.adapter_defaults != b.adapter_defaults || a.system != b.system {
        return false;
    }
    let (at, bt) = (a.tools.unwrap_or_default(), b.tools.unwrap_or_default());
    at.len() == bt.len()
        && at
            .iter()
            .zip(&bt)
            .all(|(x, y)| serde_json::to_string(x).ok() == serde_json::to_string(y).ok())
}

/// The header in force after `events`: the canonical form of the last `request/header`,
/// continuing from `from`.
pub fn fold_request_header(
    events: &[Arc<SessionEvent>],
    from: Option<EpochHeader>,
) -> Option<EpochHeader> {
    events.iter().fold(from, |state, event| match &event.data {
        EventData::RequestHeader(h) => Some(canonical_header(&h.header)),
        _ => state,
    })
}

/// The last `request/context` of `events`, continuing from `from`.
pub fn fold_request_context(
    events: &[Arc<SessionEvent>],
    from: Option<RequestContext>,
) -> Option<RequestContext> {
    events.iter().fold(from, |state, event| match &event.data {
        EventData::RequestContext(c) => Some(c.clone()),
        _ => state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{AdapterDefaults, LlmCallConfig, ToolSchema};
    use serde_json::json;

    fn header(system: Option<&str>, tools: Option<Vec<ToolSchema>>) -> EpochHeader {
        EpochHeader {
            config: LlmCallConfig {
                provider: "p".into(),
                model: "m".into(),
                ..Default::default()
            },
            adapter_defaults: Some(AdapterDefaults::default()),
            system: system.map(Into::into),
            tools,
        }
    }

    #[test]
    fn empty_fields_are_canonically_absent() {
        let canonical = canonical_header(&header(Some(""), Some(vec![])));
        assert_eq!(
            canonical,
            EpochHeader {
                adapter_defaults: None,
                system: None,
                tools: None,
                ..header(None, None)
            }
        );
        assert!(header_equals(
            &header(Some(""), None),
            &header(None, Some(vec![]))
        ));
    }

    #[test]
    fn tools_compare_in_order() {
        let tool = |name: &str| ToolSchema {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        };
        let ab = header(None, Some(vec![tool("a"), tool("b")]));
        let ba = header(None, Some(vec![tool("b"), tool("a")]));
        assert!(header_equals(&ab, &ab.clone()));
        assert!(!header_equals(&ab, &ba));
        assert!(!header_equals(
            &ab,
            &header(Some("sys"), Some(vec![tool("a"), tool("b")]))
        ));
    }
}
