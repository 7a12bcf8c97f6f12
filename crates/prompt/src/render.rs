//! Strict `{{name}}` interpolation and system-prompt rendering.
//!
//! The rules are strict on purpose: a typo in a persona template must fail the turn rather
//! than reach the model as literal braces or an empty hole. The one lenient case is a `{{`
//! that nothing ever closes, which can only be prose.

use crate::assembly::{Assembly, NamedText, Variables};
use crate::error::{PartKind, PromptError};

/// The separator between rendered sections (and runtime-context entries).
pub(crate) const PART_SEPARATOR: &str = "\n\n";

/// How much of the text after a malformed `{{` an error quotes.
const EXCERPT_CHARS: usize = 16;

/// Whether `name` is a valid prompt variable name: `^[a-z][a-z0-9_]*$`.
pub fn is_valid_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_'))
}

/// Replaces every `{{name}}` group in `part.text` with the variable's value.
///
/// - Each group must be exactly `{{name}}` with a valid name, a registered variable and a
///   value; otherwise a [`PromptError`] names the offending part.
/// - A `{{` with no group but some later `}}` is malformed (this covers `{{}}`,
///   `{{ name }}`, `{{{name}}` and unbalanced braces).
/// - A `{{` with no `}}` anywhere after it is kept as literal text.
/// - Substituted values are never scanned again, so a value may contain braces.
pub fn interpolate(
    kind: PartKind,
    part: &NamedText,
    variables: &Variables,
) -> Result<String, PromptError> {
    let text = part.text.as_str();
    let mut out = String::with_capacity(text.len());
    // `copied` is where the next verbatim copy starts; `scan` is where the next `{{` search starts.
    let mut copied = 0;
    let mut scan = 0;
    while let Some(offset) = text[scan..].find("{{") {
        let open = scan + offset;
        let inner_start = open + 2;
        let Some(inner) = group_inner(&text[inner_start..]) else {
            if text[inner_start..].contains("}}") {
                return Err(PromptError::MalformedReference {
                    kind,
                    owner: part.name.clone(),
                    reference: text[open..].chars().take(EXCERPT_CHARS).collect(),
                });
            }
            scan = inner_start;
            continue;
        };
        if !is_valid_variable_name(inner) {
            return Err(PromptError::MalformedReference {
                kind,
                owner: part.name.clone(),
                reference: format!("{{{{{inner}}}}}"),
            });
        }
        let value = match variables.get(inner) {
            None => {
                return Err(PromptError::UnknownVariable {
                    kind,
                    owner: part.name.clone(),
                    name: inner.to_owned(),
                    registered: variables.names().map(str::to_owned).collect(),
                })
            }
            Some(None) => {
                return Err(PromptError::MissingValue {
                    kind,
                    owner: part.name.clone(),
                    name: inner.to_owned(),
                })
            }
            Some(Some(value)) => value,
        };
        out.push_str(&text[copied..open]);
        out.push_str(value);
        copied = inner_start + inner.len() + 2;
        scan = copied;
    }
    out.push_str(&text[copied..]);
    Ok(out)
}

/// The text between `{{` and `}}` when `rest` (the text right after a `{{`) starts a
/// complete group whose inside holds no brace at all.
fn group_inner(rest: &str) -> Option<&str> {
    let end = rest.find(['{', '}'])?;
    rest[end..].starts_with("}}").then(|| &rest[..end])
}

/// Interpolates every part, drops the ones that come out empty, and returns the survivors
/// with their rendered text, in order.
pub(crate) fn render_parts(
    kind: PartKind,
    parts: &[NamedText],
    variables: &Variables,
) -> Result<Vec<NamedText>, PromptError> {
    let mut rendered = Vec::with_capacity(parts.len());
    for part in parts {
        let text = interpolate(kind, part, variables)?;
        if !text.is_empty() {
            rendered.push(NamedText {
                name: part.name.clone(),
                text,
            });
        }
    }
    Ok(rendered)
}

/// Renders the system prompt of an assembly: each section interpolated, empty results
/// dropped, the rest joined by a blank line.
pub fn render_prompt(assembly: &Assembly) -> Result<String, PromptError> {
    let parts = render_parts(PartKind::Section, &assembly.sections, &assembly.variables)?;
    Ok(join_parts(&parts))
}

pub(crate) fn join_parts(parts: &[NamedText]) -> String {
    let texts: Vec<&str> = parts.iter().map(|part| part.text.as_str()).collect();
    texts.join(PART_SEPARATOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Variables {
        let mut variables = Variables::new();
        variables.set("model", Some("deepseek-v4-flash".into()));
        variables.set("cwd", Some("/home/user/project".into()));
        variables.set("braces", Some("{{model}} }}{{".into()));
        variables.set("empty", Some(String::new()));
        variables.set("absent", None);
        variables
    }

    fn render(text: &str) -> Result<String, PromptError> {
        interpolate(PartKind::Section, &NamedText::new("s", text), &vars())
    }

    fn code(text: &str) -> &'static str {
        match render(text) {
            Ok(out) => unreachable!("{text:?} rendered to {out:?}"),
            Err(error) => error.code(),
        }
    }

    #[test]
    fn names_follow_the_pattern() {
        for good in ["a", "model", "cwd", "a1", "a_b", "x_1_y", "z9"] {
            assert!(is_valid_variable_name(good), "{good}");
        }
        for bad in [
            "", "A", "1a", "_a", "a-b", "aB", "a b", " a", "é", "a.b", "a$",
        ] {
            assert!(!is_valid_variable_name(bad), "{bad}");
        }
    }

    #[test]
    fn substitutes_registered_values() {
        assert_eq!(
            render("Model {{model}} in {{cwd}}.").unwrap(),
            "Model deepseek-v4-flash in /home/user/project."
        );
        assert_eq!(
            render("{{model}}{{model}}").unwrap(),
            "deepseek-v4-flashdeepseek-v4-flash"
        );
        assert_eq!(render("[{{empty}}]").unwrap(), "[]");
        assert_eq!(render("no references").unwrap(), "no references");
        assert_eq!(render("").unwrap(), "");
    }

    #[test]
    fn substituted_values_are_not_rescanned() {
        assert_eq!(render("<{{braces}}>").unwrap(), "<{{model}} }}{{>");
    }

    #[test]
    fn lone_open_without_later_close_is_literal() {
        assert_eq!(render("a {{ b").unwrap(), "a {{ b");
        assert_eq!(render("{{").unwrap(), "{{");
        assert_eq!(render("{{{").unwrap(), "{{{");
        assert_eq!(render("{{{{").unwrap(), "{{{{");
        assert_eq!(
            render("{{model}} then {{ open").unwrap(),
            "deepseek-v4-flash then {{ open"
        );
        assert_eq!(render("x {{ y } z").unwrap(), "x {{ y } z");
    }

    #[test]
    fn lone_close_and_single_braces_are_literal() {
        assert_eq!(render("a }} b").unwrap(), "a }} b");
        assert_eq!(render("{a} {b}").unwrap(), "{a} {b}");
        assert_eq!(render("{{model}}}").unwrap(), "deepseek-v4-flash}");
        assert_eq!(
            render("json: {\"a\": {\"b\": 1}}").unwrap(),
            "json: {\"a\": {\"b\": 1}}"
        );
    }

    #[test]
    fn malformed_groups_fail() {
        for text in [
            "{{}}",
            "{{ model }}",
            "{{Model}}",
            "{{1a}}",
            "{{a-b}}",
            "{{{model}}",
            "{{a}b}}",
            "{{ open and later a close }}",
            "{{ {{model}}",
            "{{\n}}",
            "text {{ x\n y }} z",
            "{{model}} {{ bad }}",
        ] {
            assert_eq!(code(text), "PROMPT_MALFORMED_REFERENCE", "{text:?}");
        }
    }

    #[test]
    fn unknown_and_valueless_variables_fail() {
        assert_eq!(code("{{nope}}"), "PROMPT_UNKNOWN_VARIABLE");
        // Only registered names count; nothing is inherited from anywhere.
        assert_eq!(code("{{constructor}}"), "PROMPT_UNKNOWN_VARIABLE");
        assert_eq!(code("{{absent}}"), "PROMPT_MISSING_VALUE");
    }

    #[test]
    fn errors_name_the_part_and_the_reference() {
        let part = NamedText::new("deployment:persona", "hi {{nope}}");
        let error = interpolate(PartKind::Section, &part, &vars()).unwrap_err();
        match &error {
            PromptError::UnknownVariable {
                kind,
                owner,
                name,
                registered,
            } => {
                assert_eq!(*kind, PartKind::Section);
                assert_eq!(owner, "deployment:persona");
                assert_eq!(name, "nope");
                assert_eq!(registered, &["absent", "braces", "cwd", "empty", "model"]);
            }
            other => unreachable!("{other:?}"),
        }
        assert!(error.to_string().contains("{{nope}}"), "{error}");

        let part = NamedText::new("ctx", "x {{ a {very long malformed reference }}");
        match interpolate(PartKind::Context, &part, &vars()).unwrap_err() {
            PromptError::MalformedReference {
                kind,
                owner,
                reference,
            } => {
                assert_eq!((kind, owner.as_str()), (PartKind::Context, "ctx"));
                assert_eq!(reference, "{{ a {very long ");
            }
            other => unreachable!("{other:?}"),
        }
        let error = render("{{ a very long malformed reference }}").unwrap_err();
        assert!(
            matches!(&error, PromptError::MalformedReference { reference, .. }
            if reference == "{{ a very long malformed reference }}")
        );
        let error = render("{{Bad}}").unwrap_err();
        assert!(
            matches!(&error, PromptError::MalformedReference { reference, .. } if reference == "{{Bad}}")
        );
    }

    #[test]
    fn multibyte_text_is_handled_on_char_boundaries() {
        assert_eq!(render("é {{model}} ü").unwrap(), "é deepseek-v4-flash ü");
        assert_eq!(render("日本{{").unwrap(), "日本{{");
        let error = render("{{日本語の{説明です、長いテキスト}}").unwrap_err();
        assert!(
            matches!(&error, PromptError::MalformedReference { reference, .. }
            if reference == "{{日本語の{説明です、長いテキ")
        );
        let error = render("{{日本語}}").unwrap_err();
        assert!(
            matches!(&error, PromptError::MalformedReference { reference, .. }
            if reference == "{{日本語}}")
        );
    }

    #[test]
    fn render_prompt_drops_empty_sections_and_joins_with_blank_lines() {
        let assembly = Assembly {
            sections: vec![
                NamedText::new(
                    "harness:identity",
                    "You are an AI agent powered by DeepSeek Harness.",
                ),
                NamedText::new("deployment:persona", ""),
                NamedText::new("empty-after-render", "{{empty}}"),
                NamedText::new("tool:bash", "Model: {{model}}."),
            ],
            variables: vars(),
            ..Assembly::default()
        };
        assert_eq!(
            render_prompt(&assembly).unwrap(),
            "You are an AI agent powered by DeepSeek Harness.\n\nModel: deepseek-v4-flash."
        );
        assert_eq!(render_prompt(&Assembly::default()).unwrap(), "");
    }

    #[test]
    fn render_prompt_propagates_the_first_error() {
        let assembly = Assembly {
            sections: vec![NamedText::new("a", "ok"), NamedText::new("b", "{{nope}}")],
            ..Assembly::default()
        };
        let error = render_prompt(&assembly).unwrap_err();
        assert!(matches!(&error, PromptError::UnknownVariable { owner, .. } if owner == "b"));
    }

    #[test]
    fn whitespace_only_sections_are_kept() {
        // Only an exactly empty result is dropped.
        let assembly = Assembly {
            sections: vec![NamedText::new("a", "x"), NamedText::new("b", " ")],
            ..Assembly::default()
        };
        assert_eq!(render_prompt(&assembly).unwrap(), "x\n\n ");
    }
}
