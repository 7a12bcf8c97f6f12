//! Projections of the log: model messages, the request header in force, the request context.
//!
//! These are the pure forms; `Session` keeps incremental caches of the same folds.

use crate::error::SessionError;
use crate::event::{EventData, SessionEvent};
use crate::surface::fold_surface;
use crate::vocabulary::RequestContext;
use dsh_protocol::{AdapterDefaults, EpochHeader, Message, ToolSchema};
use serde_json::Value;
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
/// compared by its JSON text). Shared texts and schemas compare by pointer first.
///
/// The loop asks this before every model request, so it compares in place: no canonical
/// copies and no serialization (see [`same_json_text`]).
pub fn header_equals(a: &EpochHeader, b: &EpochHeader) -> bool {
    fn defaults(h: &EpochHeader) -> Option<AdapterDefaults> {
        h.adapter_defaults.filter(|d| !d.is_empty())
    }
    fn system(h: &EpochHeader) -> Option<&Arc<str>> {
        h.system.as_ref().filter(|s| !s.is_empty())
    }
    fn tools(h: &EpochHeader) -> &[ToolSchema] {
        h.tools.as_deref().unwrap_or_default()
    }
    let (at, bt) = (tools(a), tools(b));
    a.config == b.config
        && defaults(a) == defaults(b)
        && same_text(system(a), system(b))
        && at.len() == bt.len()
        && at.iter().zip(bt).all(|(x, y)| {
            x.name == y.name
                && same_text(Some(&x.description), Some(&y.description))
                && (Arc::ptr_eq(&x.parameters, &y.parameters)
                    || same_json_text(&x.parameters, &y.parameters))
        })
}

/// Equal texts; the same allocation (an unchanged prompt shared between steps) is equal
/// without reading it.
fn same_text(a: Option<&Arc<str>>, b: Option<&Arc<str>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// Whether two values serialize to the same JSON text. Objects keep their key order
/// (`preserve_order`), so they must list equal keys in the same order; numbers must print
/// the same (`1` ≠ `1.0`, and `0.0` ≠ `-0.0` although they compare equal as floats).
fn same_json_text(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_json_text(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(va, vb)| same_json_text(va, vb))
        }
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(fx), Some(fy)) if x.is_f64() && y.is_f64() => fx.to_bits() == fy.to_bits(),
            _ => x == y,
        },
        _ => a == b,
    }
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
    use dsh_protocol::LlmCallConfig;
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
            parameters: json!({"type": "object"}).into(),
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

    #[test]
    fn system_prompts_compare_by_text_whether_shared_or_not() {
        let shared: Arc<str> = Arc::from("You are dsh.");
        let with = |system: &Arc<str>| EpochHeader {
            system: Some(Arc::clone(system)),
            ..header(None, None)
        };
        // The same allocation, an equal copy, a different prompt, and no prompt.
        assert!(header_equals(&with(&shared), &with(&shared)));
        assert!(header_equals(
            &with(&shared),
            &with(&Arc::from("You are dsh."))
        ));
        assert!(!header_equals(
            &with(&shared),
            &with(&Arc::from("You are dsh!"))
        ));
        assert!(!header_equals(&with(&shared), &header(None, None)));
        assert!(!header_equals(&header(None, None), &with(&shared)));
        // The canonical copy the session keeps shares the allocation.
        let canonical = canonical_header(&with(&shared));
        assert!(Arc::ptr_eq(canonical.system.as_ref().unwrap(), &shared));
    }

    /// `header_equals` must agree with comparing the JSON texts, whatever the values.
    #[test]
    fn tool_parameters_compare_as_json_text() {
        let with = |parameters: serde_json::Value| {
            header(
                None,
                Some(vec![ToolSchema {
                    name: "t".into(),
                    description: "d".into(),
                    parameters: parameters.into(),
                }]),
            )
        };
        let values = [
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            json!({"properties": {"a": {"type": "string"}}, "type": "object"}),
            json!({"type": "object", "properties": {"a": {"type": "number"}}}),
            json!({"type": "object", "properties": {}}),
            json!({"n": 1}),
            json!({"n": 1.0}),
            json!({"n": 0.0}),
            json!({"n": -0.0}),
            json!({"n": -1}),
            json!({"e": ["a", "b"]}),
            json!({"e": ["b", "a"]}),
            json!({"e": ["a"]}),
            json!({"e": null}),
            json!({"e": false}),
            json!({"e": "false"}),
        ];
        for a in &values {
            for b in &values {
                let texts_equal =
                    serde_json::to_string(a).unwrap() == serde_json::to_string(b).unwrap();
                assert_eq!(
                    header_equals(&with(a.clone()), &with(b.clone())),
                    texts_equal,
                    "{a} vs {b}"
                );
            }
        }
        let renamed = ToolSchema {
            name: "u".into(),
            description: "d".into(),
            parameters: json!({}).into(),
        };
        let redescribed = ToolSchema {
            description: "e".into(),
            ..renamed.clone()
        };
        assert!(!header_equals(
            &header(None, Some(vec![renamed])),
            &header(None, Some(vec![redescribed]))
        ));
    }

    #[test]
    fn config_and_defaults_take_part() {
        let base = header(Some("s"), None);
        let mut other_model = base.clone();
        other_model.config.model = "n".into();
        assert!(!header_equals(&base, &other_model));
        let mut marked = base.clone();
        marked.adapter_defaults = Some(AdapterDefaults {
            max_tokens: true,
            ..AdapterDefaults::default()
        });
        assert!(!header_equals(&base, &marked));
        let mut unmarked = base.clone();
        unmarked.adapter_defaults = None;
        assert!(header_equals(&base, &unmarked));
    }
}
