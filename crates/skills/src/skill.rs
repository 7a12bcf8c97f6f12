//! One skill: its file format, frontmatter rules and invocation policy.

use crate::frontmatter::{self, Value};
use crate::notice::Notice;
use std::path::{Path, PathBuf};

/// A loaded skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Kebab-case, from the frontmatter (not the directory name).
    pub name: String,
    pub description: String,
    /// `whenToUse`: kept as metadata, never shown to the model.
    pub when_to_use: Option<String>,
    /// Listed in the catalog and callable through the `skill` tool.
    pub model_invocable: bool,
    /// Reachable with the `/name` gesture.
    pub user_invocable: bool,
    /// The file the skill was read from (`SKILL.md` or a flat `.md`).
    pub file: PathBuf,
    /// Where relative paths in the skill resolve: the bundle directory, or the root for a
    /// flat file.
    pub base_dir: PathBuf,
    /// The root's label (`project-dsh`, `user-claude`, ...).
    pub source: String,
    /// The body, trimmed.
    pub body: String,
}

/// Keys whose camelCase spelling is refused rather than silently ignored, so a skill meant to
/// be hidden from the model is never shown because of a spelling.
const CAMEL_CASE_KEYS: &[&str] = &["disableModelInvocation", "modelInvocable", "userInvocable"];

/// Whether `name` is kebab-case: `^[a-z0-9]+(-[a-z0-9]+)*$`.
pub fn is_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty() && part.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9'))
        })
}

/// Reads a skill from the text of `file`; a skill that breaks a rule is `Err` with the notice
/// that says why.
pub fn parse_skill(
    text: &str,
    file: &Path,
    base_dir: &Path,
    source: &str,
) -> Result<Skill, Notice> {
    let notice = |key: Option<&str>, message: String| Notice::new(file, key, message);
    let doc = frontmatter::parse(text).map_err(|e| notice(None, format!("skipped: {e}")))?;
    for key in CAMEL_CASE_KEYS {
        if doc.get(key).is_some() {
            return Err(notice(
                Some(key),
                "skipped: camelCase spelling is not read; use `disable-model-invocation` or \
                 `user-invocable`"
                    .to_owned(),
            ));
        }
    }
    let text_field = |key: &str| -> Result<String, Notice> {
        match doc.get(key).and_then(Value::as_text).map(str::trim) {
            Some(text) if !text.is_empty() => Ok(text.to_owned()),
            Some(_) | None if doc.get(key).is_some() => Err(notice(
                Some(key),
                "skipped: must be a non-empty string".to_owned(),
            )),
            _ => Err(notice(Some(key), "skipped: missing".to_owned())),
        }
    };
    let name = text_field("name")?;
    if !is_skill_name(&name) {
        return Err(notice(
            Some("name"),
            format!("skipped: {name:?} is not kebab-case (a-z, 0-9, single hyphens)"),
        ));
    }
    let description = text_field("description")?;
    let flag = |key: &str| -> Result<Option<bool>, Notice> {
        match doc.get(key) {
            None => Ok(None),
            Some(value) => value.as_flag().map(Some).ok_or_else(|| {
                notice(
                    Some(key),
                    "skipped: must be a boolean (true/false, yes/no, on/off, 1/0)".to_owned(),
                )
            }),
        }
    };
    let disable_model = flag("disable-model-invocation")?;
    let user = flag("user-invocable")?;
    let when_to_use = doc
        .get("whenToUse")
        .and_then(Value::as_text)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    Ok(Skill {
        name,
        description,
        when_to_use,
        model_invocable: disable_model != Some(true),
        user_invocable: user != Some(false),
        file: file.to_path_buf(),
        base_dir: base_dir.to_path_buf(),
        source: source.to_owned(),
        body: doc.body,
    })
}
