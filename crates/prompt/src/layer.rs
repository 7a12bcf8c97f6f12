//! One scope's registrations, and the merge of a scope chain's layers into a plan.

use crate::parts::{ContextEntry, Section, ToolProvider, VariableProvider};
use std::collections::HashMap;

/// Identity of one registration inside a layer, so an undo removes exactly that entry even
/// if a same-named one was registered after it.
pub(crate) type EntryId = u64;

/// The registrations of one scope (or of the global layer), in registration order.
#[derive(Default)]
pub(crate) struct PromptLayer {
    next_id: EntryId,
    sections: Vec<(EntryId, Section)>,
    contexts: Vec<(EntryId, ContextEntry)>,
    variables: Vec<(EntryId, String, VariableProvider)>,
    tools: Vec<(EntryId, ToolProvider)>,
    suppressions: Vec<EntryId>,
}

/// A same-named registration already exists in the layer.
#[derive(Debug)]
pub(crate) struct Duplicate;

impl PromptLayer {
    fn next_id(&mut self) -> EntryId {
        self.next_id += 1;
        self.next_id
    }

    pub(crate) fn add_section(&mut self, section: Section) -> Result<EntryId, Duplicate> {
        if self.sections.iter().any(|(_, s)| s.name == section.name) {
            return Err(Duplicate);
        }
        let id = self.next_id();
        self.sections.push((id, section));
        Ok(id)
    }

    pub(crate) fn add_context(&mut self, context: ContextEntry) -> Result<EntryId, Duplicate> {
        if self.contexts.iter().any(|(_, c)| c.name == context.name) {
            return Err(Duplicate);
        }
        let id = self.next_id();
        self.contexts.push((id, context));
        Ok(id)
    }

    pub(crate) fn add_variable(
        &mut self,
        name: String,
        provider: VariableProvider,
    ) -> Result<EntryId, Duplicate> {
        if self.variables.iter().any(|(_, n, _)| *n == name) {
            return Err(Duplicate);
        }
        let id = self.next_id();
        self.variables.push((id, name, provider));
        Ok(id)
    }

    pub(crate) fn add_tools(&mut self, provider: ToolProvider) -> EntryId {
        let id = self.next_id();
        self.tools.push((id, provider));
        id
    }

    pub(crate) fn add_suppression(&mut self) -> EntryId {
        let id = self.next_id();
        self.suppressions.push(id);
        id
    }

    /// Removes the entry with this id, wherever it is; removing twice is harmless.
    pub(crate) fn remove(&mut self, id: EntryId) {
        self.sections.retain(|(entry, _)| *entry != id);
        self.contexts.retain(|(entry, _)| *entry != id);
        self.variables.retain(|(entry, _, _)| *entry != id);
        self.tools.retain(|(entry, _)| *entry != id);
        self.suppressions.retain(|entry| *entry != id);
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.sections.is_empty()
            && self.contexts.is_empty()
            && self.variables.is_empty()
            && self.tools.is_empty()
            && self.suppressions.is_empty()
    }
}

/// The effective registrations of one scope, copied out of the layers so providers run with
/// no registry lock held (a provider may itself register or assemble).
#[derive(Default)]
pub(crate) struct Plan {
    pub(crate) sections: Vec<Section>,
    pub(crate) contexts: Vec<ContextEntry>,
    pub(crate) variables: Vec<(String, VariableProvider)>,
    pub(crate) tools: Vec<ToolProvider>,
    pub(crate) suppressed: bool,
}

impl Plan {
    /// Folds the global layer and then the chain layers (farthest ancestor first, own scope
    /// last): named entries of a nearer layer replace farther ones in place, so a name keeps
    /// the position where it first appeared; tool providers and suppressions accumulate.
    pub(crate) fn merge(global: &PromptLayer, chain: &[&PromptLayer]) -> Self {
        let mut plan = Plan::default();
        let mut section_at = HashMap::new();
        let mut context_at = HashMap::new();
        let mut variable_at = HashMap::new();
        for layer in std::iter::once(global).chain(chain.iter().copied()) {
            for (_, section) in &layer.sections {
                upsert(
                    &mut plan.sections,
                    &mut section_at,
                    &section.name,
                    section.clone(),
                );
            }
            for (_, context) in &layer.contexts {
                upsert(
                    &mut plan.contexts,
                    &mut context_at,
                    &context.name,
                    context.clone(),
                );
            }
            for (_, name, provider) in &layer.variables {
                upsert(
                    &mut plan.variables,
                    &mut variable_at,
                    name,
                    (name.clone(), provider.clone()),
                );
            }
            plan.tools
                .extend(layer.tools.iter().map(|(_, provider)| provider.clone()));
            plan.suppressed |= !layer.suppressions.is_empty();
        }
        plan
    }
}

fn upsert<'a, T>(items: &mut Vec<T>, index: &mut HashMap<&'a str, usize>, name: &'a str, value: T) {
    match index.get(name) {
        Some(&at) => items[at] = value,
        None => {
            index.insert(name, items.len());
            items.push(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn names(plan: &Plan) -> Vec<(String, f64)> {
        plan.sections
            .iter()
            .map(|s| (s.name.clone(), s.order))
            .collect()
    }

    #[test]
    fn duplicate_names_are_refused_per_kind() {
        let mut layer = PromptLayer::default();
        assert!(layer.add_section(Section::new("a", 0.0, "x")).is_ok());
        assert!(layer.add_section(Section::new("a", 1.0, "y")).is_err());
        // Sections, contexts and variables are separate namespaces.
        assert!(layer.add_context(ContextEntry::new("a", 0.0, "x")).is_ok());
        assert!(layer.add_context(ContextEntry::new("a", 0.0, "x")).is_err());
        assert!(layer.add_variable("a".into(), Arc::new(|_| None)).is_ok());
        assert!(layer.add_variable("a".into(), Arc::new(|_| None)).is_err());
    }

    #[test]
    fn remove_is_exact_and_idempotent() {
        let mut layer = PromptLayer::default();
        let first = layer
            .add_section(Section::new("a", 0.0, "x"))
            .unwrap_or_default();
        layer.remove(first);
        let second = layer
            .add_section(Section::new("a", 0.0, "y"))
            .unwrap_or_default();
        layer.remove(first);
        assert_eq!(layer.sections.len(), 1);
        layer.remove(second);
        let tools = layer.add_tools(Arc::new(|_| Default::default()));
        let suppression = layer.add_suppression();
        assert!(!layer.is_empty());
        layer.remove(tools);
        layer.remove(suppression);
        assert!(layer.is_empty());
    }

    #[test]
    fn nearer_layers_replace_by_name_in_place() {
        let mut global = PromptLayer::default();
        let mut parent = PromptLayer::default();
        let mut own = PromptLayer::default();
        let _ = global.add_section(Section::new("a", 1.0, "global a"));
        let _ = global.add_section(Section::new("b", 2.0, "global b"));
        let _ = parent.add_section(Section::new("a", 5.0, "parent a"));
        let _ = parent.add_section(Section::new("c", 3.0, "parent c"));
        let _ = own.add_section(Section::new("c", 4.0, "own c"));
        own.add_suppression();
        let plan = Plan::merge(&global, &[&parent, &own]);
        assert_eq!(
            names(&plan),
            vec![("a".into(), 5.0), ("b".into(), 2.0), ("c".into(), 4.0)]
        );
        assert!(plan.suppressed);
        assert!(!Plan::merge(&global, &[]).suppressed);
    }
}
