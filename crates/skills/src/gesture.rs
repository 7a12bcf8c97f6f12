//! What a pre-step does with the person's input: custom commands become their prompts,
//! `/name` tokens naming user-invocable skills bring the skill's content along, and a changed
//! catalog is recorded.

use crate::render::skill_content;
use crate::service::Skills;
use crate::skill::is_skill_name;
use dsh_protocol::{ContentBlock, Message, MessageSource, Role};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The `/name` tokens of `text`: whitespace-delimited words that are `/` plus a kebab-case
/// name, in order of first appearance (`/a/b`, `5/8` and `/A` are prose).
pub fn gesture_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        if let Some(name) = word.strip_prefix('/') {
            if is_skill_name(name) && !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
    }
    names
}

fn is_user(message: &Message) -> bool {
    matches!(message.source, MessageSource::User { .. }) && message.role == Role::User
}

/// A user message that is exactly a custom command's line, replaced by its prompt (same id,
/// the source naming the command and its arguments).
fn expand_command(skills: &Skills, message: &Message) -> Option<Message> {
    let [ContentBlock::Text { text }] = message.content.as_slice() else {
        return None;
    };
    let expansion = skills.expand_line(text)?;
    let MessageSource::User { extra } = &message.source else {
        return None;
    };
    let mut extra = extra.clone();
    extra.insert(
        "command".to_owned(),
        json!({"name": expansion.command, "args": expansion.args}),
    );
    Some(Message {
        id: message.id.clone(),
        role: Role::User,
        content: vec![ContentBlock::text(expansion.prompt)],
        source: MessageSource::User { extra },
    })
}

/// The skill-invocation message for `name`, if it names a user-invocable skill.
fn invocation(skills: &Skills, name: &str) -> Option<Message> {
    let skill = skills.load(name)?.ok()?;
    if !skill.user_invocable {
        return None;
    }
    let mut source = Map::new();
    source.insert("kind".into(), Value::from("skill-invocation"));
    source.insert("name".into(), Value::from(skill.name.clone()));
    source.insert("form".into(), Value::from("instructions"));
    Some(Message::new(
        Role::User,
        vec![ContentBlock::text(skill_content(&skill))],
        MessageSource::Other(source),
    ))
}

/// The messages a step enters after this plugin's pass over `messages`.
pub fn transform(skills: &Skills, messages: Vec<Arc<Message>>) -> Vec<Arc<Message>> {
    let mut out = Vec::with_capacity(messages.len());
    let mut names: Vec<String> = Vec::new();
    for message in messages {
        if !is_user(&message) {
            out.push(message);
            continue;
        }
        if let Some(expanded) = expand_command(skills, &message) {
            out.push(Arc::new(expanded));
            continue;
        }
        for block in &message.content {
            if let ContentBlock::Text { text } = block {
                for name in gesture_names(text) {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
        }
        out.push(message);
    }
    out.extend(
        names
            .iter()
            .filter_map(|name| invocation(skills, name))
            .map(Arc::new),
    );
    out
}
