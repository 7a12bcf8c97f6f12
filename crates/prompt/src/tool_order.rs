//! The order tool schemas are shown to the model in.
//!
//! Registration order depends on plugin load timing, so it is never used: without
//! configuration tools are sorted by name, and a configured order pins chosen tools around an
//! explicit slot for everything else. Providers' schemas change the request prefix, so a
//! deterministic order keeps prompt caches stable across runs.

use crate::error::PromptError;
use dsh_protocol::ToolSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// The reserved entry of a [`ToolOrder`] where all tools it does not list are placed.
pub const UNLISTED_TOOLS: &str = "<unlisted-tools>";

/// A configured tool order: tool names, each at most once, plus exactly one
/// [`UNLISTED_TOOLS`] slot. Checked when the configuration is read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct ToolOrder(Vec<String>);

impl ToolOrder {
    pub fn new(entries: impl IntoIterator<Item = impl Into<String>>) -> Result<Self, PromptError> {
        let entries: Vec<String> = entries.into_iter().map(Into::into).collect();
        let mut seen = BTreeSet::new();
        for entry in &entries {
            if !seen.insert(entry.as_str()) {
                return Err(PromptError::InvalidToolOrder {
                    reason: format!("{entry:?} is listed more than once"),
                });
            }
        }
        if !seen.contains(UNLISTED_TOOLS) {
            return Err(PromptError::InvalidToolOrder {
                reason: format!("the {UNLISTED_TOOLS:?} slot for tools not listed is missing"),
            });
        }
        Ok(Self(entries))
    }

    pub fn entries(&self) -> &[String] {
        &self.0
    }
}

impl TryFrom<Vec<String>> for ToolOrder {
    type Error = PromptError;

    fn try_from(entries: Vec<String>) -> Result<Self, Self::Error> {
        Self::new(entries)
    }
}

impl From<ToolOrder> for Vec<String> {
    fn from(order: ToolOrder) -> Self {
        order.0
    }
}

/// Compares by UTF-16 code units, the order the original's default sort produces, so tool
/// lists match byte for byte even for names outside the Basic Multilingual Plane.
fn code_unit_cmp(a: &str, b: &str) -> Ordering {
    // Below U+10000 the UTF-16 order is the code point order, which is UTF-8's byte order;
    // only a four-byte sequence (lead byte 0xF0 and up) can sort differently.
    let astral = |s: &str| s.bytes().any(|b| b >= 0xF0);
    if !astral(a) && !astral(b) {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Orders `tools`: by name without a configured order; otherwise listed names in listed
/// order, the rest sorted by name at the [`UNLISTED_TOOLS`] slot.
///
/// `known` is every name a provider admitted to (shown or not); a listed name outside it is
/// reported as an error rather than silently skipped, because it is most likely a typo. A
/// known but currently hidden tool is simply absent.
pub(crate) fn order_tools(
    mut tools: Vec<ToolSchema>,
    known: &BTreeSet<String>,
    order: Option<&ToolOrder>,
) -> Result<Vec<ToolSchema>, PromptError> {
    tools.sort_by(|a, b| code_unit_cmp(&a.name, &b.name));
    let Some(order) = order else {
        return Ok(tools);
    };
    let listed: BTreeSet<&str> = order
        .entries()
        .iter()
        .map(String::as_str)
        .filter(|name| *name != UNLISTED_TOOLS)
        .collect();
    if let Some(unknown) = listed.iter().find(|name| !known.contains(**name)) {
        return Err(PromptError::UnknownOrderedTool {
            name: (*unknown).to_owned(),
            known: known.iter().cloned().collect(),
        });
    }
    let mut slots: Vec<Option<ToolSchema>> = tools.into_iter().map(Some).collect();
    let mut ordered = Vec::with_capacity(slots.len());
    for entry in order.entries() {
        for slot in slots.iter_mut() {
            let take = match slot {
                Some(tool) if entry == UNLISTED_TOOLS => !listed.contains(tool.name.as_str()),
                Some(tool) => tool.name == *entry,
                None => false,
            };
            if take {
                ordered.extend(slot.take());
            }
        }
    }
    Ok(ordered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: "".into(),
            parameters: json!({"type": "object"}).into(),
        }
    }

    fn names(tools: &[ToolSchema]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    fn known(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn without_order_tools_sort_by_code_unit() {
        let tools = vec![
            tool("read"),
            tool("Bash"),
            tool("bash"),
            tool("\u{1F600}"),
            tool("\u{FF5E}"),
        ];
        let ordered = order_tools(tools, &BTreeSet::new(), None).unwrap();
        // U+1F600 is a surrogate pair (0xD83D...) and sorts before U+FF5E in UTF-16.
        assert_eq!(
            names(&ordered),
            vec!["Bash", "bash", "read", "\u{1F600}", "\u{FF5E}"]
        );
    }

    #[test]
    fn listed_tools_take_their_place_and_the_rest_fill_the_slot() {
        let order = ToolOrder::new(["write", UNLISTED_TOOLS, "bash", "hidden"]).unwrap();
        let tools = vec![tool("read"), tool("bash"), tool("glob"), tool("write")];
        let ordered = order_tools(
            tools,
            &known(&["read", "bash", "glob", "write", "hidden"]),
            Some(&order),
        )
        .unwrap();
        assert_eq!(names(&ordered), vec!["write", "glob", "read", "bash"]);
    }

    #[test]
    fn a_listed_name_nobody_knows_is_an_error() {
        let order = ToolOrder::new(["bsah", UNLISTED_TOOLS]).unwrap();
        let error = order_tools(vec![tool("bash")], &known(&["bash"]), Some(&order)).unwrap_err();
        assert_eq!(error.code(), "PROMPT_UNKNOWN_ORDERED_TOOL");
        assert!(
            matches!(&error, PromptError::UnknownOrderedTool { name, known }
            if name == "bsah" && known == &["bash"])
        );
    }

    #[test]
    fn order_itself_is_validated() {
        let missing = ToolOrder::new(["a", "b"]).unwrap_err();
        assert_eq!(missing.code(), "PROMPT_INVALID_TOOL_ORDER");
        let duplicate = ToolOrder::new(["a", UNLISTED_TOOLS, "a"]).unwrap_err();
        assert_eq!(duplicate.code(), "PROMPT_INVALID_TOOL_ORDER");
        let twice = ToolOrder::new([UNLISTED_TOOLS, UNLISTED_TOOLS]).unwrap_err();
        assert_eq!(twice.code(), "PROMPT_INVALID_TOOL_ORDER");
        assert!(ToolOrder::new([UNLISTED_TOOLS]).is_ok());
    }

    #[test]
    fn order_deserializes_with_validation() {
        let order: ToolOrder = serde_json::from_value(json!(["a", UNLISTED_TOOLS])).unwrap();
        assert_eq!(order.entries(), ["a", UNLISTED_TOOLS]);
        assert_eq!(
            serde_json::to_value(&order).unwrap(),
            json!(["a", UNLISTED_TOOLS])
        );
        let error = serde_json::from_value::<ToolOrder>(json!(["a"])).unwrap_err();
        assert!(error.to_string().contains("<unlisted-tools>"), "{error}");
    }
}
