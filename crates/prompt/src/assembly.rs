//! The assembled, not yet rendered, prompt of one step.

use crate::error::PromptError;
use crate::layer::Plan;
use crate::parts::{AssembleContext, Section};
use crate::tool_order::{order_tools, ToolOrder, UNLISTED_TOOLS};
use dsh_protocol::ToolSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

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

/// The assembly computed from the registrations, with what must survive the
/// `system-prompt/assemble` waterfall.
pub(crate) struct Collected {
    pub(crate) assembly: Assembly,
    /// The effective complete section, evaluated.
    pub(crate) complete: Option<NamedText>,
    pub(crate) suppressed: bool,
}

impl Collected {
    /// Evaluates a merged plan for one assembly context.
    pub(crate) fn evaluate(
        plan: Plan,
        context: &AssembleContext,
        tool_order: Option<&ToolOrder>,
    ) -> Result<Self, PromptError> {
        let variables = plan
            .variables
            .iter()
            .map(|(name, provider)| (name.clone(), provider(context)))
            .collect();

        let mut sections = plan.sections;
        sections.sort_by(|a, b| a.order.partial_cmp(&b.order).unwrap_or(Ordering::Equal));
        let completes: Vec<&Section> = sections.iter().filter(|s| s.complete).collect();
        let complete = match completes.as_slice() {
            [] => None,
            [only] => Some(NamedText::new(
                only.name.clone(),
                only.text.resolve(context),
            )),
            many => {
                return Err(PromptError::MultipleCompleteSections {
                    names: many.iter().map(|s| s.name.clone()).collect(),
                })
            }
        };
        let sections = match &complete {
            Some(section) => vec![section.clone()],
            None => sections
                .iter()
                .map(|s| NamedText::new(s.name.clone(), s.text.resolve(context)))
                .collect(),
        };

        let contexts = if plan.suppressed {
            Vec::new()
        } else {
            let mut contexts = plan.contexts;
            contexts.sort_by(|a, b| a.order.partial_cmp(&b.order).unwrap_or(Ordering::Equal));
            contexts
                .iter()
                .map(|c| NamedText::new(c.name.clone(), c.text.resolve(context)))
                .collect()
        };

        let mut tools = Vec::new();
        // The known names only matter to a configured order (to tell a typo from a hidden
        // tool); without one, every step would copy them for nothing.
        let mut known = BTreeSet::new();
        for provider in &plan.tools {
            let provision = provider(context);
            let names = provision
                .schemas
                .iter()
                .map(|schema| &schema.name)
                .chain(&provision.known_names);
            for name in names {
                if name == UNLISTED_TOOLS {
                    return Err(PromptError::ReservedToolName { name: name.clone() });
                }
                if tool_order.is_some() {
                    known.insert(name.clone());
                }
            }
            tools.extend(provision.schemas);
        }
        let tools = order_tools(tools, &known, tool_order)?;

        Ok(Self {
            assembly: Assembly {
                sections,
                contexts,
                tools,
                variables,
            },
            complete,
            suppressed: plan.suppressed,
        })
    }

    /// Applies the guarantees listeners cannot override to the waterfall's result: a
    /// complete section stays the whole prompt, and suppressed contexts stay suppressed.
    pub(crate) fn finish(&self, mut assembly: Assembly) -> Assembly {
        if let Some(section) = &self.complete {
            assembly.sections = vec![section.clone()];
        }
        if self.suppressed {
            assembly.contexts.clear();
        }
        assembly
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::PromptLayer;
    use crate::parts::{ContextEntry, PromptText, ToolProvision};
    use dsh_kernel::ScopeKey;
    use serde_json::json;
    use std::sync::Arc;

    fn tool(name: &str) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: format!("{name} tool").into(),
            parameters: json!({"type": "object", "properties": {}}).into(),
        }
    }

    fn collect(global: &PromptLayer, chain: &[&PromptLayer]) -> Result<Collected, PromptError> {
        Collected::evaluate(
            Plan::merge(global, chain),
            &AssembleContext::default(),
            None,
        )
    }

    #[test]
    fn sections_sort_by_order_stably_and_evaluate_dynamic_text() {
        let mut global = PromptLayer::default();
        let _ = global.add_section(Section::new("late", 100.0, "L"));
        let _ = global.add_section(Section::new("tie-1", 0.0, "T1"));
        let _ = global.add_section(Section::new("first", -100.0, "F"));
        let _ = global.add_section(Section::new("tie-2", 0.0, "T2"));
        let _ = global.add_section(Section::new(
            "scope",
            116.5,
            PromptText::dynamic(|cx| format!("scope={:?}", cx.scope.as_ref().map(ScopeKey::name))),
        ));
        let scope = ScopeKey::new("agent-1");
        let plan = Plan::merge(&global, &[]);
        let collected =
            Collected::evaluate(plan, &AssembleContext::new(Some(scope)), None).unwrap();
        assert_eq!(
            collected.assembly.sections,
            vec![
                NamedText::new("first", "F"),
                NamedText::new("tie-1", "T1"),
                NamedText::new("tie-2", "T2"),
                NamedText::new("late", "L"),
                NamedText::new("scope", "scope=Some(\"agent-1\")"),
            ]
        );
        assert!(collected.complete.is_none());
    }

    #[test]
    fn one_complete_section_is_the_whole_prompt() {
        let mut global = PromptLayer::default();
        let _ = global.add_section(Section::new("harness:identity", -100.0, "id"));
        let _ = global.add_section(Section::new("minimal", 0.0, "only me").complete());
        let collected = collect(&global, &[]).unwrap();
        assert_eq!(
            collected.assembly.sections,
            vec![NamedText::new("minimal", "only me")]
        );
        assert_eq!(
            collected.complete,
            Some(NamedText::new("minimal", "only me"))
        );
    }

    #[test]
    fn two_complete_sections_in_effect_are_an_error() {
        let mut global = PromptLayer::default();
        let _ = global.add_section(Section::new("b", 1.0, "x").complete());
        let _ = global.add_section(Section::new("a", 0.0, "y").complete());
        let error = collect(&global, &[]).err().unwrap();
        assert_eq!(error.code(), "PROMPT_MULTIPLE_COMPLETE_SECTIONS");
        assert!(
            matches!(&error, PromptError::MultipleCompleteSections { names } if names == &["a", "b"])
        );

        // A nearer non-complete section with the same name takes the claim away.
        let mut scoped = PromptLayer::default();
        let _ = scoped.add_section(Section::new("b", 1.0, "plain"));
        let collected = collect(&global, &[&scoped]).unwrap();
        assert_eq!(collected.complete, Some(NamedText::new("a", "y")));
    }

    #[test]
    fn contexts_sort_and_suppression_empties_them() {
        let mut global = PromptLayer::default();
        let _ = global.add_context(ContextEntry::new("b", 2.0, "B"));
        let _ = global.add_context(ContextEntry::new("a", 1.0, "A"));
        let collected = collect(&global, &[]).unwrap();
        assert_eq!(
            collected.assembly.contexts,
            vec![NamedText::new("a", "A"), NamedText::new("b", "B")]
        );
        assert!(!collected.suppressed);
        let mut scoped = PromptLayer::default();
        scoped.add_suppression();
        let collected = collect(&global, &[&scoped]).unwrap();
        assert!(collected.assembly.contexts.is_empty());
        assert!(collected.suppressed);
    }

    #[test]
    fn variables_nearest_wins_even_without_a_value() {
        let mut global = PromptLayer::default();
        let mut parent = PromptLayer::default();
        let mut own = PromptLayer::default();
        let _ = global.add_variable("model".into(), Arc::new(|_| Some("global".into())));
        let _ = global.add_variable("cwd".into(), Arc::new(|_| Some("/g".into())));
        let _ = global.add_variable("provider".into(), Arc::new(|_| Some("p".into())));
        let _ = parent.add_variable("model".into(), Arc::new(|_| Some("parent".into())));
        let _ = parent.add_variable("cwd".into(), Arc::new(|_| Some("/parent".into())));
        let _ = own.add_variable("cwd".into(), Arc::new(|_| None));
        let collected = collect(&global, &[&parent, &own]).unwrap();
        let expected: Variables = [
            ("model", Some("parent".to_owned())),
            ("cwd", None),
            ("provider", Some("p".to_owned())),
        ]
        .into_iter()
        .collect();
        assert_eq!(collected.assembly.variables, expected);
    }

    #[test]
    fn tools_come_from_every_provider_sorted_by_name() {
        let mut global = PromptLayer::default();
        let mut own = PromptLayer::default();
        global.add_tools(Arc::new(|_| {
            ToolProvision::new(vec![tool("read"), tool("bash")])
        }));
        own.add_tools(Arc::new(|_| ToolProvision::new(vec![tool("agent")])));
        let collected = collect(&global, &[&own]).unwrap();
        assert_eq!(
            collected.assembly.tools,
            vec![tool("agent"), tool("bash"), tool("read")]
        );
    }

    #[test]
    fn configured_order_accepts_names_only_a_provider_knows() {
        let mut global = PromptLayer::default();
        global.add_tools(Arc::new(|_| {
            ToolProvision::new(vec![tool("read"), tool("bash")]).with_known_names(["web_search"])
        }));
        let order = ToolOrder::new(["web_search", "bash", UNLISTED_TOOLS]).unwrap();
        let plan = Plan::merge(&global, &[]);
        let collected =
            Collected::evaluate(plan, &AssembleContext::default(), Some(&order)).unwrap();
        assert_eq!(collected.assembly.tools, vec![tool("bash"), tool("read")]);
        let order = ToolOrder::new(["grep", UNLISTED_TOOLS]).unwrap();
        let plan = Plan::merge(&global, &[]);
        let error = Collected::evaluate(plan, &AssembleContext::default(), Some(&order))
            .err()
            .unwrap();
        assert!(
            matches!(&error, PromptError::UnknownOrderedTool { name, known }
            if name == "grep" && known == &["bash", "read", "web_search"])
        );
    }

    #[test]
    fn the_reserved_marker_is_not_a_tool_name() {
        for provision in [
            ToolProvision::new(vec![tool(UNLISTED_TOOLS)]),
            ToolProvision::new(vec![]).with_known_names([UNLISTED_TOOLS]),
        ] {
            let mut global = PromptLayer::default();
            global.add_tools(Arc::new(move |_| provision.clone()));
            let error = collect(&global, &[]).err().unwrap();
            assert_eq!(error.code(), "PROMPT_RESERVED_TOOL_NAME");
        }
    }

    #[test]
    fn finish_restores_the_complete_section_and_suppression() {
        let collected = Collected {
            assembly: Assembly::default(),
            complete: Some(NamedText::new("c", "whole")),
            suppressed: true,
        };
        let changed = Assembly {
            sections: vec![
                NamedText::new("x", "added"),
                NamedText::new("c", "rewritten"),
            ],
            contexts: vec![NamedText::new("ctx", "added")],
            tools: vec![tool("t")],
            variables: [("model", Some("m".to_owned()))].into_iter().collect(),
        };
        let finished = collected.finish(changed.clone());
        assert_eq!(
            finished,
            Assembly {
                sections: vec![NamedText::new("c", "whole")],
                contexts: vec![],
                ..changed.clone()
            }
        );
        let plain = Collected {
            assembly: Assembly::default(),
            complete: None,
            suppressed: false,
        };
        assert_eq!(plain.finish(changed.clone()), changed);
    }
}
