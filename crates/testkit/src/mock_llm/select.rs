//! Picking the scripted reply for one chat request.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

use super::script::{IndexBy, Reply, RuleMatch, Script};

/// How the server answered a recorded request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Served {
    /// By `rules[index]`.
    Rule { index: usize },
    /// By `responses[index]`.
    Response { index: usize },
    /// The script had no response at `index`; answered with HTTP 500.
    Exhausted { index: usize },
    /// A session-title side request no rule answered: the built-in title reply
    /// ([`DEFAULT_TITLE`]). Kept out of [`MockServer::requests`](super::MockServer::requests)
    /// and of the response order, so scripts written for the conversation are unaffected.
    Title,
    /// The model list.
    Models,
    /// The request body was not a JSON object; answered with HTTP 400.
    BadRequest,
    /// Unknown path; answered with HTTP 404.
    NotFound,
    /// Known path, wrong method; answered with HTTP 405.
    MethodNotAllowed,
}

/// What the built-in rule answers a session-title request with.
pub const DEFAULT_TITLE: &str = "Mock session title";

/// The opening of dsh's title system prompt (`dsh_modes::title::request::system_prompt`).
const TITLE_SYSTEM_PROMPT: &str = "Create a concise title for an AI coding-assistant session";

/// Whether `body` is dsh's session-title side request: no tools, and the title system prompt.
pub fn is_title_request(body: &Value) -> bool {
    let no_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    no_tools
        && body
            .get("messages")
            .and_then(Value::as_array)
            .and_then(|messages| messages.first())
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .is_some_and(|m| message_text(m).starts_with(TITLE_SYSTEM_PROMPT))
}

/// The outcome of selection: what to record and what to send.
pub(crate) struct Selection {
    pub served: Served,
    pub reply: Option<Reply>,
}

/// Mutable selection state shared by all connections of one server.
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    /// Chat requests answered from `responses` so far (for [`IndexBy::Order`]).
    consumed: usize,
}

impl Cursor {
    /// Chooses the reply for a chat request (its body, and its headers with lower-cased
    /// names): the first matching rule, else the indexed response. An order-indexed request
    /// past the end still advances, so every later request also reports exhaustion with its
    /// own index.
    pub fn select(
        &mut self,
        script: &Script,
        body: &Value,
        headers: &BTreeMap<String, String>,
    ) -> Selection {
        if let Some((index, rule)) = script
            .rules
            .iter()
            .enumerate()
            .find(|(_, rule)| rule_matches(&rule.matcher, body, headers))
        {
            return Selection {
                served: Served::Rule { index },
                reply: Some(rule.response.clone()),
            };
        }
        if is_title_request(body) {
            return Selection {
                served: Served::Title,
                reply: Some(Reply::text(DEFAULT_TITLE)),
            };
        }
        let index = match script.index_by {
            IndexBy::Order => {
                let index = self.consumed;
                self.consumed += 1;
                index
            }
            IndexBy::AssistantTurns => assistant_turns(body),
        };
        match script.responses.get(index) {
            Some(reply) => Selection {
                served: Served::Response { index },
                reply: Some(reply.clone()),
            },
            None => Selection {
                served: Served::Exhausted { index },
                reply: None,
            },
        }
    }
}

fn rule_matches(matcher: &RuleMatch, body: &Value, headers: &BTreeMap<String, String>) -> bool {
    for (name, want) in &matcher.header {
        if headers.get(&name.to_ascii_lowercase()) != Some(want) {
            return false;
        }
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if let Some(needle) = &matcher.message_contains {
        if !messages
            .iter()
            .any(|m| message_text(m).contains(needle.as_str()))
        {
            return false;
        }
    }
    if let Some(needle) = &matcher.last_message_contains {
        if !messages
            .last()
            .is_some_and(|m| message_text(m).contains(needle.as_str()))
        {
            return false;
        }
    }
    if let Some(name) = &matcher.lacks_tool {
        let offered = body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| {
                tools
                    .iter()
                    .any(|t| t["function"]["name"].as_str() == Some(name.as_str()))
            });
        if offered {
            return false;
        }
    }
    if let Some(want_none) = matcher.no_tools {
        let has_tools = body
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| !tools.is_empty());
        if want_none == has_tools {
            return false;
        }
    }
    if let Some(limit) = matcher.max_tokens_le {
        let max_tokens = body
            .get("max_tokens")
            .or_else(|| body.get("max_completion_tokens"))
            .and_then(Value::as_u64);
        if max_tokens.is_none_or(|m| m > limit) {
            return false;
        }
    }
    if let Some(model) = &matcher.model {
        if body.get("model").and_then(Value::as_str) != Some(model.as_str()) {
            return false;
        }
    }
    if !matcher
        .contains
        .iter()
        .all(|text| conversation_mentions(body, text))
    {
        return false;
    }
    if matcher
        .lacks
        .iter()
        .any(|text| conversation_mentions(body, text))
    {
        return false;
    }
    true
}

/// A wire message's text: its string content, or the `text` of its content parts, joined.
fn message_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// Whether a non-system message of the request holds `needle` in its text
/// ([`message_text`]).
fn conversation_mentions(body: &Value, needle: &str) -> bool {
    body.get("messages")
        .and_then(Value::as_array)
        .is_some_and(|messages| {
            messages
                .iter()
                .filter(|m| m.get("role").and_then(Value::as_str) != Some("system"))
                .any(|m| message_text(m).contains(needle))
        })
}

/// Number of assistant messages in the request's conversation.
fn assistant_turns(body: &Value) -> usize {
    body.get("messages")
        .and_then(Value::as_array)
        .map_or(0, |messages| {
            messages
                .iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
                .count()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn title_rule_script() -> Script {
        Script::new()
            .rule(
                RuleMatch::any().no_tools().max_tokens_le(64),
                Reply::text("Title"),
            )
            .respond(Reply::text("first"))
            .respond(Reply::text("second"))
    }

    #[test]
    fn rules_need_every_condition() {
        let script = title_rule_script();
        let mut cursor = Cursor::default();
        let none = BTreeMap::new();
        let title = json!({"max_tokens": 64, "messages": []});
        let with_tools = json!({"max_tokens": 64, "tools": [{"type": "function"}]});
        let big = json!({"max_tokens": 65});
        let unset = json!({});
        assert_eq!(
            cursor.select(&script, &title, &none).served,
            Served::Rule { index: 0 }
        );
        assert_eq!(
            cursor.select(&script, &with_tools, &none).served,
            Served::Response { index: 0 }
        );
        assert_eq!(
            cursor.select(&script, &big, &none).served,
            Served::Response { index: 1 }
        );
        assert_eq!(
            cursor.select(&script, &unset, &none).served,
            Served::Exhausted { index: 2 }
        );
        assert_eq!(
            cursor.select(&script, &unset, &none).served,
            Served::Exhausted { index: 3 }
        );
    }

    #[test]
    fn empty_tool_list_counts_as_no_tools_and_model_must_match() {
        let script = Script::new().rule(RuleMatch::any().no_tools().model("m"), Reply::text("x"));
        let mut cursor = Cursor::default();
        let none = BTreeMap::new();
        let hit = json!({"model": "m", "tools": []});
        let miss = json!({"model": "n"});
        assert_eq!(
            cursor.select(&script, &hit, &none).served,
            Served::Rule { index: 0 }
        );
        assert_eq!(
            cursor.select(&script, &miss, &none).served,
            Served::Exhausted { index: 0 }
        );
    }

    #[test]
    fn assistant_turns_index_repeats_for_the_same_conversation() {
        let script = title_rule_script().index_by(IndexBy::AssistantTurns);
        let mut cursor = Cursor::default();
        let none = BTreeMap::new();
        let fresh = json!({"messages": [{"role": "user", "content": "hi"}]});
        let later = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "x"},
            {"role": "tool", "content": "y"}
        ]});
        for _ in 0..2 {
            assert_eq!(
                cursor.select(&script, &fresh, &none).served,
                Served::Response { index: 0 }
            );
        }
        let selection = cursor.select(&script, &later, &none);
        assert_eq!(selection.served, Served::Response { index: 1 });
        assert_eq!(selection.reply, Some(Reply::text("second")));
    }
}
