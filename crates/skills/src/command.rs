//! Custom slash commands: `<root>/<name>.md` prompt files in Claude Code's convention.
//!
//! A command is a prompt the person sends by typing `/name args`; the model never sees the
//! command list and cannot invoke one. The frontmatter is optional and only `description`
//! and `argument-hint` are read (`allowed-tools`, `model` and the rest are ignored and grant
//! nothing). In the body, `$ARGUMENTS` becomes the whole argument text and `$1`..`$9` the
//! positional arguments (split like a shell splits words: `"two words"` and `'two words'`
//! are one argument); a body that uses neither gets `ARGUMENTS: <args>` appended when
//! arguments were given, so they are never silently dropped.

use crate::frontmatter::{self, FrontmatterError, Value};
use crate::notice::Notice;
use std::path::{Path, PathBuf};

/// One custom command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// The file stem: `^[a-z][a-z0-9_-]*$`.
    pub name: String,
    /// From the frontmatter, else the body's first line.
    pub description: String,
    pub argument_hint: Option<String>,
    pub file: PathBuf,
    /// The root's label (`project-dsh`, `project-claude`, `user-dsh`, `user-claude`).
    pub source: String,
    pub body: String,
}

/// How much of the body's first line becomes a missing description.
const DESCRIPTION_CHARS: usize = 80;

/// Whether `name` is a command name: `^[a-z][a-z0-9_-]*$`.
pub fn is_command_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

/// A command name with namespaces: segments that are each [`is_command_name`], joined by `:`
/// (`frontend:test`, from `frontend/test.md`).
pub fn is_namespaced_command_name(name: &str) -> bool {
    name.split(':').all(is_command_name)
}

/// Reads the command in `text`, named after `file`'s stem.
pub fn parse_command(text: &str, file: &Path, source: &str) -> Result<Command, Notice> {
    parse_command_in(text, file, source, &[])
}

/// [`parse_command`] for a file in the subdirectories `namespace` of its root: the name is
/// the directories and the stem joined by `:`.
pub fn parse_command_in(
    text: &str,
    file: &Path,
    source: &str,
    namespace: &[String],
) -> Result<Command, Notice> {
    let mut command = parse_stem_command(text, file, source)?;
    if !namespace.is_empty() {
        command.name = format!("{}:{}", namespace.join(":"), command.name);
    }
    Ok(command)
}

fn parse_stem_command(text: &str, file: &Path, source: &str) -> Result<Command, Notice> {
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned();
    if !is_command_name(&stem) {
        return Err(Notice::new(
            file,
            None,
            format!(
                "skipped: {stem:?} is not a command name (lowercase letters, digits, `-`, `_`, \
                 starting with a letter)"
            ),
        ));
    }
    let (description, argument_hint, body) = match frontmatter::parse(text) {
        Ok(doc) => {
            let field = |key: &str| -> Result<Option<String>, Notice> {
                match doc.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(value) => match value.as_text().map(str::trim) {
                        Some(text) => Ok(Some(text.to_owned()).filter(|t| !t.is_empty())),
                        None => Err(Notice::new(
                            file,
                            Some(key),
                            "skipped: must be a string".to_owned(),
                        )),
                    },
                }
            };
            (field("description")?, field("argument-hint")?, doc.body)
        }
        Err(FrontmatterError::Missing) => (None, None, text.trim().to_owned()),
        Err(error) => return Err(Notice::new(file, None, format!("skipped: {error}"))),
    };
    let description = description.unwrap_or_else(|| {
        let first = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let first = first.trim().trim_start_matches('#').trim();
        let mut cut: String = first.chars().take(DESCRIPTION_CHARS).collect();
        if first.chars().count() > DESCRIPTION_CHARS {
            cut.push('…');
        }
        cut
    });
    Ok(Command {
        name: stem,
        description,
        argument_hint,
        file: file.to_path_buf(),
        source: source.to_owned(),
        body,
    })
}

/// Splits `args` into words the way a shell would, without expansions: whitespace separates,
/// `"..."` and `'...'` group, a backslash outside single quotes takes the next character
/// literally. An unclosed quote runs to the end.
pub fn split_arguments(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                word.push(n);
                            }
                        }
                        other => word.push(other),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The prompt `/name args` sends: the body with `$ARGUMENTS` and `$1`..`$9` substituted (see
/// the module docs).
pub fn expand(body: &str, args: &str) -> String {
    let args = args.trim();
    let words = split_arguments(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c)) {
            let index = digit as usize - '1' as usize;
            out.push_str(words.get(index).map_or("", String::as_str));
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(args);
    }
    out
}
