//! Runtime-context snapshots: dynamic facts (sandbox policy, approval mode, ...) delivered to
//! the model as logged user messages instead of system-prompt rewrites.
//!
//! Keeping them out of the system prompt keeps the provider's prompt cache warm and keeps
//! the model-visible input rebuildable from the log. A new snapshot is only sent when its
//! text changed since the one the model can still see.

use crate::assembly::{Assembly, NamedText};
use crate::error::{PartKind, PromptError};
use crate::render::{join_parts, render_parts, PART_SEPARATOR};
use dsh_protocol::{ContentBlock, Message, MessageId, MessageSource, Role, SYSTEM_PROMPT_PLUGIN};
use serde_json::{Map, Value};
use std::borrow::Borrow;

/// The first paragraph of every non-empty snapshot.
pub const RUNTIME_CONTEXT_PREFIX: &str =
    "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.";

/// The text sent when context existed before but there is none now.
pub const RUNTIME_CONTEXT_CLEARED: &str =
    "Current runtime context: none. Earlier runtime-context snapshots no longer apply.";

/// The current runtime context rendered to text, with the rendered entries it came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeSnapshot {
    /// The prefix and the entries joined by blank lines; empty when there are no entries.
    pub text: String,
    /// The non-empty entries after interpolation, in order.
    pub sections: Vec<NamedText>,
}

impl RuntimeSnapshot {
    /// Interpolates the assembly's contexts with its variables and drops empty results.
    pub fn render(assembly: &Assembly) -> Result<Self, PromptError> {
        let sections = render_parts(PartKind::Context, &assembly.contexts, &assembly.variables)?;
        Ok(Self::from_sections(sections))
    }

    /// A snapshot of already rendered entries (empty entries are dropped).
    pub fn from_sections(sections: Vec<NamedText>) -> Self {
        let sections: Vec<NamedText> = sections
            .into_iter()
            .filter(|s| !s.text.is_empty())
            .collect();
        if sections.is_empty() {
            return Self::default();
        }
        let text = format!(
            "{RUNTIME_CONTEXT_PREFIX}{PART_SEPARATOR}{}",
            join_parts(&sections)
        );
        Self { text, sections }
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// Whether `message` is a snapshot (or cleared marker) this projection wrote.
pub fn is_runtime_context_message(message: &Message) -> bool {
    message.role == Role::User
        && matches!(&message.source, MessageSource::Plugin { plugin, .. } if plugin == SYSTEM_PROMPT_PLUGIN)
}

/// What the model can currently see of earlier snapshots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectionState {
    /// The log never held a snapshot: an empty context needs no message.
    NeverExisted,
    /// Snapshots were logged, but none is on the surface any more (a replacement shadowed
    /// it): an empty context must be stated explicitly, since the model may remember one.
    NoneRetained,
    /// The newest snapshot on the surface.
    Retained { id: MessageId, text: String },
}

/// Decides whether a step needs a new runtime-context message.
///
/// Restored once from the log, then kept current by observing appended user messages and
/// surface replacements. [`project`](Self::project) only proposes a message; the state
/// changes when that message is actually logged and observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeContextProjection {
    state: ProjectionState,
}

impl Default for RuntimeContextProjection {
    fn default() -> Self {
        Self::new()
    }
}

impl RuntimeContextProjection {
    /// A projection for a log that never held a snapshot.
    pub fn new() -> Self {
        Self {
            state: ProjectionState::NeverExisted,
        }
    }

    /// Restores the state from a log's user messages in log order, each paired with whether
    /// it is still on the surface (visible to the model).
    ///
    /// Messages that are not snapshots are ignored, so passing every user message is fine.
    pub fn restore<M: Borrow<Message>>(entries: impl IntoIterator<Item = (M, bool)>) -> Self {
        let mut projection = Self::new();
        for (message, on_surface) in entries {
            let message = message.borrow();
            if !is_runtime_context_message(message) {
                continue;
            }
            if on_surface {
                projection.retain(message);
            } else if projection.state == ProjectionState::NeverExisted {
                projection.state = ProjectionState::NoneRetained;
            }
        }
        projection
    }

    /// Restores the state from the messages currently on the surface (for example a
    /// session's derived messages).
    ///
    /// A surface alone cannot show snapshots that were shadowed, so a log whose only
    /// snapshots were replaced restores as [`ProjectionState::NeverExisted`]; use
    /// [`restore`](Self::restore) when the full log is at hand.
    pub fn restore_from_surface<M: Borrow<Message>>(messages: impl IntoIterator<Item = M>) -> Self {
        Self::restore(messages.into_iter().map(|message| (message, true)))
    }

    pub fn state(&self) -> &ProjectionState {
        &self.state
    }

    /// Observes a user message that was just logged onto the surface; a snapshot becomes the
    /// retained one. Returns whether it was a snapshot.
    pub fn observe_message(&mut self, message: &Message) -> bool {
        let owned = is_runtime_context_message(message);
        if owned {
            self.retain(message);
        }
        owned
    }

    /// Observes a surface replacement: when the retained snapshot is no longer on the
    /// surface, nothing is retained any more.
    pub fn observe_replacement(&mut self, still_on_surface: impl FnOnce(&MessageId) -> bool) {
        if let ProjectionState::Retained { id, .. } = &self.state {
            if !still_on_surface(id) {
                self.state = ProjectionState::NoneRetained;
            }
        }
    }

    /// The message to add to the next step, if the model's view of the runtime context is
    /// out of date: nothing when it matches, the cleared marker when context went away, or
    /// a new snapshot.
    pub fn project(&self, current: &RuntimeSnapshot) -> Option<Message> {
        let candidate = if current.is_empty() {
            if self.state == ProjectionState::NeverExisted {
                return None;
            }
            RUNTIME_CONTEXT_CLEARED
        } else {
            current.text.as_str()
        };
        if let ProjectionState::Retained { text, .. } = &self.state {
            if text == candidate {
                return None;
            }
        }
        let mut extra = Map::new();
        if !current.is_empty() {
            extra.insert("form".into(), Value::from("snapshot"));
            let sections = current
                .sections
                .iter()
                .map(|s| {
                    let mut entry = Map::new();
                    entry.insert("name".into(), Value::from(s.name.as_str()));
                    entry.insert("text".into(), Value::from(s.text.as_str()));
                    Value::Object(entry)
                })
                .collect();
            extra.insert("sections".into(), Value::Array(sections));
        }
        Some(Message::new(
            Role::User,
            vec![ContentBlock::text(candidate)],
            MessageSource::Plugin {
                plugin: SYSTEM_PROMPT_PLUGIN.to_owned(),
                extra,
            },
        ))
    }

    fn retain(&mut self, message: &Message) {
        self.state = ProjectionState::Retained {
            id: message.id.clone(),
            text: message.text(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assembly::Variables;
    use serde_json::json;

    fn snapshot(entries: &[(&str, &str)]) -> RuntimeSnapshot {
        RuntimeSnapshot::from_sections(
            entries
                .iter()
                .map(|(n, t)| NamedText::new(*n, *t))
                .collect(),
        )
    }

    fn owned(text: &str) -> Message {
        Message::new(
            Role::User,
            vec![ContentBlock::text(text)],
            MessageSource::plugin(SYSTEM_PROMPT_PLUGIN),
        )
    }

    #[test]
    fn snapshot_text_has_prefix_and_blank_line_separators() {
        let s = snapshot(&[("a", "first"), ("empty", ""), ("b", "second")]);
        assert_eq!(
            s.text,
            format!("{RUNTIME_CONTEXT_PREFIX}\n\nfirst\n\nsecond")
        );
        assert_eq!(
            s.sections,
            vec![NamedText::new("a", "first"), NamedText::new("b", "second")]
        );
        assert_eq!(snapshot(&[("empty", "")]), RuntimeSnapshot::default());
        assert!(snapshot(&[]).is_empty());
    }

    #[test]
    fn snapshot_render_interpolates_contexts() {
        let mut variables = Variables::new();
        variables.set("cwd", Some("/w".into()));
        let assembly = Assembly {
            contexts: vec![NamedText::new("a", "in {{cwd}}"), NamedText::new("b", "")],
            variables,
            ..Assembly::default()
        };
        let s = RuntimeSnapshot::render(&assembly).unwrap();
        assert_eq!(s.sections, vec![NamedText::new("a", "in /w")]);
        let bad = Assembly {
            contexts: vec![NamedText::new("c", "{{nope}}")],
            ..Assembly::default()
        };
        let error = RuntimeSnapshot::render(&bad).unwrap_err();
        assert!(
            matches!(&error, PromptError::UnknownVariable { kind: PartKind::Context, owner, .. } if owner == "c")
        );
    }

    #[test]
    fn ownership_requires_the_plugin_source_and_user_role() {
        assert!(is_runtime_context_message(&owned("x")));
        assert!(!is_runtime_context_message(&Message::user_text("x")));
        let other = Message::new(Role::User, vec![], MessageSource::plugin("@other/plugin"));
        assert!(!is_runtime_context_message(&other));
    }

    #[test]
    fn never_existed_and_empty_projects_nothing() {
        let projection = RuntimeContextProjection::new();
        assert_eq!(projection.project(&RuntimeSnapshot::default()), None);
    }

    #[test]
    fn new_snapshot_message_has_the_recorded_shape() {
        let projection = RuntimeContextProjection::new();
        let current = snapshot(&[("sandbox:policy", "P"), ("approval:policy", "A")]);
        let message = projection.project(&current).unwrap();
        let mut value = serde_json::to_value(&message).unwrap();
        assert!(!message.id.as_str().is_empty());
        value["id"] = json!("ID");
        assert_eq!(
            value,
            json!({"id":"ID","role":"user",
                "content":[{"type":"text","text":format!("{RUNTIME_CONTEXT_PREFIX}\n\nP\n\nA")}],
                "source":{"kind":"plugin","plugin":SYSTEM_PROMPT_PLUGIN,"form":"snapshot",
                    "sections":[{"name":"sandbox:policy","text":"P"},{"name":"approval:policy","text":"A"}]}})
        );
    }

    #[test]
    fn unchanged_snapshot_projects_nothing_and_changed_one_projects_again() {
        let mut projection = RuntimeContextProjection::new();
        let first = projection.project(&snapshot(&[("a", "1")])).unwrap();
        // Projecting does not change state: the same proposal comes until it is logged.
        assert!(projection.project(&snapshot(&[("a", "1")])).is_some());
        assert!(projection.observe_message(&first));
        assert_eq!(
            projection.state(),
            &ProjectionState::Retained {
                id: first.id.clone(),
                text: first.text()
            }
        );
        assert_eq!(projection.project(&snapshot(&[("a", "1")])), None);
        let second = projection.project(&snapshot(&[("a", "2")])).unwrap();
        assert_eq!(second.text(), format!("{RUNTIME_CONTEXT_PREFIX}\n\n2"));
    }

    #[test]
    fn emptied_context_projects_the_cleared_marker_once() {
        let mut projection = RuntimeContextProjection::new();
        projection.observe_message(&owned("old snapshot"));
        let cleared = projection.project(&RuntimeSnapshot::default()).unwrap();
        assert_eq!(
            serde_json::to_value(&cleared.source).unwrap(),
            json!({"kind":"plugin","plugin":SYSTEM_PROMPT_PLUGIN})
        );
        assert_eq!(cleared.text(), RUNTIME_CONTEXT_CLEARED);
        projection.observe_message(&cleared);
        assert_eq!(projection.project(&RuntimeSnapshot::default()), None);
    }

    #[test]
    fn shadowed_snapshot_means_none_retained() {
        let mut projection = RuntimeContextProjection::new();
        let logged = owned("snap");
        projection.observe_message(&logged);
        projection.observe_replacement(|id| id == &logged.id);
        assert!(matches!(
            projection.state(),
            ProjectionState::Retained { .. }
        ));
        projection.observe_replacement(|_| false);
        assert_eq!(projection.state(), &ProjectionState::NoneRetained);
        // The model may remember the shadowed snapshot, so emptiness is stated...
        assert_eq!(
            projection
                .project(&RuntimeSnapshot::default())
                .map(|m| m.text()),
            Some(RUNTIME_CONTEXT_CLEARED.to_owned())
        );
        // ...and the same text as before is sent again, since it is no longer visible.
        let again = RuntimeSnapshot {
            text: "snap".into(),
            sections: vec![NamedText::new("a", "x")],
        };
        assert!(projection.project(&again).is_some());
    }

    #[test]
    fn restore_picks_the_newest_snapshot_still_on_the_surface() {
        let a = owned("a");
        let b = owned("b");
        let c = owned("c");
        let user = Message::user_text("hello");
        let projection =
            RuntimeContextProjection::restore([(&a, true), (&user, true), (&b, true), (&c, false)]);
        assert_eq!(
            projection.state(),
            &ProjectionState::Retained {
                id: b.id.clone(),
                text: "b".into()
            }
        );
    }

    #[test]
    fn restore_distinguishes_never_from_none_retained() {
        let user = Message::user_text("hello");
        let projection = RuntimeContextProjection::restore([(user.clone(), true)]);
        assert_eq!(projection.state(), &ProjectionState::NeverExisted);
        let gone = owned("gone");
        let projection = RuntimeContextProjection::restore([(gone, false), (user, true)]);
        assert_eq!(projection.state(), &ProjectionState::NoneRetained);
        let none: [(Message, bool); 0] = [];
        assert_eq!(
            RuntimeContextProjection::restore(none),
            RuntimeContextProjection::new()
        );
    }

    #[test]
    fn restore_from_surface_treats_every_message_as_visible() {
        let a = std::sync::Arc::new(owned("a"));
        let projection = RuntimeContextProjection::restore_from_surface(vec![a.clone()]);
        assert_eq!(
            projection.state(),
            &ProjectionState::Retained {
                id: a.id.clone(),
                text: "a".into()
            }
        );
    }
}
