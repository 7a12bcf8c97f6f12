//! The rendered system prompt of one agent, shared while its inputs stay the same.
//!
//! Every step assembles the prompt and puts the rendered text in the request header, which
//! the loop compares with the last logged one. Rendering afresh each time means allocating
//! and copying the whole prompt (a few kilobytes with the history tools or a skill catalog)
//! and then comparing it byte by byte with the previous copy. [`RenderedPrompt`] keeps the
//! last rendering beside the sections and variables it came from: when a step's assembly
//! has the same ones, it hands back the same `Arc<str>`, which the header check then
//! compares by pointer. Rendering is a pure function of those two inputs, so a hit is
//! exactly what rendering again would give.

use crate::assembly::{Assembly, NamedText, Variables};
use crate::error::PromptError;
use crate::render::render_prompt;
use std::sync::{Arc, Mutex, PoisonError};

/// See the module docs. One per agent (any number of callers may share one; a miss
/// replaces the kept rendering).
#[derive(Debug, Default)]
pub struct RenderedPrompt {
    last: Mutex<Option<Rendering>>,
}

#[derive(Debug)]
struct Rendering {
    sections: Vec<NamedText>,
    variables: Variables,
    text: Arc<str>,
}

impl RenderedPrompt {
    pub fn new() -> Self {
        Self::default()
    }

    /// [`render_prompt`] of `assembly`, or the kept rendering when the assembly's sections
    /// and variables equal the ones it was rendered from. An error keeps nothing new.
    pub fn render(&self, assembly: &Assembly) -> Result<Arc<str>, PromptError> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kept) = last.as_ref() {
            if kept.sections == assembly.sections && kept.variables == assembly.variables {
                return Ok(Arc::clone(&kept.text));
            }
        }
        let text: Arc<str> = Arc::from(render_prompt(assembly)?);
        *last = Some(Rendering {
            sections: assembly.sections.clone(),
            variables: assembly.variables.clone(),
            text: Arc::clone(&text),
        });
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assembly(persona: &str, model: Option<&str>) -> Assembly {
        let mut variables = Variables::new();
        variables.set("model", model.map(str::to_owned));
        Assembly {
            sections: vec![
                NamedText::new("harness:identity", "You are dsh."),
                NamedText::new("deployment:persona", persona),
            ],
            variables,
            ..Assembly::default()
        }
    }

    #[test]
    fn an_unchanged_assembly_gets_the_same_allocation() {
        let cache = RenderedPrompt::new();
        let first = cache
            .render(&assembly("Be terse on {{model}}.", Some("m1")))
            .unwrap();
        let second = cache
            .render(&assembly("Be terse on {{model}}.", Some("m1")))
            .unwrap();
        assert_eq!(&*first, "You are dsh.\n\nBe terse on m1.");
        assert!(Arc::ptr_eq(&first, &second));
    }

    #[test]
    fn a_changed_section_or_variable_renders_again() {
        let cache = RenderedPrompt::new();
        let first = cache
            .render(&assembly("Be terse on {{model}}.", Some("m1")))
            .unwrap();
        let edited = cache
            .render(&assembly("Be brief on {{model}}.", Some("m1")))
            .unwrap();
        assert_eq!(&*edited, "You are dsh.\n\nBe brief on m1.");
        assert!(!Arc::ptr_eq(&first, &edited));
        let other_model = cache
            .render(&assembly("Be brief on {{model}}.", Some("m2")))
            .unwrap();
        assert_eq!(&*other_model, "You are dsh.\n\nBe brief on m2.");
        // Going back is a change too: only the last rendering is kept.
        let back = cache
            .render(&assembly("Be terse on {{model}}.", Some("m1")))
            .unwrap();
        assert_eq!(back, first);
        assert!(!Arc::ptr_eq(&first, &back));
    }

    #[test]
    fn an_error_is_not_kept() {
        let cache = RenderedPrompt::new();
        let error = cache.render(&assembly("On {{model}}.", None)).unwrap_err();
        assert_eq!(error.code(), "PROMPT_MISSING_VALUE");
        assert_eq!(
            cache
                .render(&assembly("On {{model}}.", Some("m")))
                .unwrap()
                .as_ref(),
            "You are dsh.\n\nOn m."
        );
        assert!(cache.render(&assembly("On {{model}}.", None)).is_err());
    }
}
