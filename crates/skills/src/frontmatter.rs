//! The frontmatter of a skill or command file: a deliberately small YAML subset.
//!
//! No YAML crate is in the workspace, and skill files need little of YAML, so this reads the
//! part people write and refuses the rest with a message naming the line:
//!
//! - the file's first line is exactly `---` (a trailing `\r` is tolerated) and the block runs
//!   to the next line that is exactly `---`;
//! - each top-level line is `key: value`; blank lines and `#` comment lines are skipped;
//! - a value is plain (trimmed, a ` #` comment cut off), `"double"` (with `\"`, `\\`, `\n`,
//!   `\t` escapes) or `'single'` quoted (`''` is a quote), or a `|` / `>` block scalar (with
//!   an optional `-` or `+` chomping indicator) made of the indented lines that follow;
//! - a key with nothing after the colon followed by indented lines (a nested mapping or a
//!   list) is kept as [`Value::Nested`], unread; without indented lines it is [`Value::Null`];
//! - flow collections (`[a, b]`, `{a: b}`) are kept as [`Value::Flow`], unread;
//! - a repeated key, an indented line where none belongs, or a line without a colon is an
//!   error.
//!
//! Values are not typed the way YAML types them: the caller decides what a plain `true` or
//! `12` means for its key.

/// One frontmatter value, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Unquoted text.
    Plain(String),
    /// A quoted string, unescaped.
    Quoted(String),
    /// A `|` or `>` block scalar, assembled.
    Block(String),
    /// Indented lines below the key (a mapping or a list), not interpreted.
    Nested,
    /// `[...]` or `{...}`, not interpreted.
    Flow(String),
    /// Nothing after the colon.
    Null,
}

impl Value {
    /// The text of a string-like value (plain, quoted or block).
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Plain(text) | Self::Quoted(text) | Self::Block(text) => Some(text),
            Self::Nested | Self::Flow(_) | Self::Null => None,
        }
    }

    /// A boolean as the skill format accepts it: YAML's `true`/`false`, `1`/`0`, and the
    /// case-insensitive words `true/false`, `yes/no`, `on/off`, `1/0`, quoted or not.
    pub fn as_flag(&self) -> Option<bool> {
        let text = match self {
            Self::Plain(text) | Self::Quoted(text) => text.trim().to_ascii_lowercase(),
            _ => return None,
        };
        match text.as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        }
    }
}

/// A parsed frontmatter block and the body after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// Keys in file order.
    pub fields: Vec<(String, Value)>,
    /// Everything after the closing `---`, trimmed.
    pub body: String,
}

impl Document {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Why a frontmatter block could not be read. `line` is 1-based in the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    #[error("no frontmatter (the first line must be `---`)")]
    Missing,
    #[error("the frontmatter opened on line 1 is never closed with `---`")]
    Unclosed,
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
}

/// Splits `text` into frontmatter and body; see the module docs for what is accepted.
pub fn parse(text: &str) -> Result<Document, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next() != Some("---") {
        return Err(FrontmatterError::Missing);
    }
    let mut block = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line == "---" {
            closed = true;
            break;
        }
        block.push(line);
    }
    if !closed {
        return Err(FrontmatterError::Unclosed);
    }
    let body: Vec<&str> = lines.collect();
    Ok(Document {
        fields: parse_block(&block)?,
        body: body.join("\n").trim().to_owned(),
    })
}

fn syntax(index: usize, message: impl Into<String>) -> FrontmatterError {
    // Index 0 of the block is line 2 of the file.
    FrontmatterError::Syntax {
        line: index + 2,
        message: message.into(),
    }
}

fn is_indented(line: &str) -> bool {
    line.starts_with(' ') || line.starts_with('\t')
}

fn is_skippable(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.is_empty() || trimmed.starts_with('#')
}

fn parse_block(block: &[&str]) -> Result<Vec<(String, Value)>, FrontmatterError> {
    let mut fields: Vec<(String, Value)> = Vec::new();
    let mut index = 0;
    while index < block.len() {
        let line = block[index];
        if is_skippable(line) {
            index += 1;
            continue;
        }
        if is_indented(line) {
            return Err(syntax(index, "unexpected indentation"));
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(syntax(index, "expected `key: value`"));
        };
        let key = key.trim();
        let key_ok = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !key_ok {
            return Err(syntax(
                index,
                format!("`{key}` is not a key this reader accepts"),
            ));
        }
        if fields.iter().any(|(k, _)| k == key) {
            return Err(syntax(index, format!("key `{key}` appears twice")));
        }
        let rest = rest.trim();
        // The indented lines after this one belong to it.
        let start = index + 1;
        let mut end = start;
        while end < block.len() && (is_indented(block[end]) || block[end].trim().is_empty()) {
            end += 1;
        }
        // Trailing blank lines are not part of the value.
        while end > start && block[end - 1].trim().is_empty() {
            end -= 1;
        }
        let children = &block[start..end];
        let value = value(rest, children).map_err(|message| syntax(index, message))?;
        if !children.is_empty() && !matches!(value, Value::Block(_) | Value::Nested) {
            return Err(syntax(start, "unexpected indentation"));
        }
        fields.push((key.to_owned(), value));
        index = end;
    }
    Ok(fields)
}

fn value(rest: &str, children: &[&str]) -> Result<Value, String> {
    if rest.is_empty() || rest.starts_with('#') {
        return Ok(if children.is_empty() {
            Value::Null
        } else {
            Value::Nested
        });
    }
    if let Some(header) = rest.strip_prefix('|') {
        return block_scalar(header, children, true);
    }
    if let Some(header) = rest.strip_prefix('>') {
        return block_scalar(header, children, false);
    }
    if rest.starts_with('"') {
        return double_quoted(rest).map(Value::Quoted);
    }
    if rest.starts_with('\'') {
        return single_quoted(rest).map(Value::Quoted);
    }
    if rest.starts_with('[') || rest.starts_with('{') {
        return Ok(Value::Flow(rest.to_owned()));
    }
    let plain = match rest.find(" #") {
        Some(at) => &rest[..at],
        None => rest,
    };
    Ok(Value::Plain(plain.trim_end().to_owned()))
}

fn block_scalar(header: &str, children: &[&str], literal: bool) -> Result<Value, String> {
    let header = header.split(" #").next().unwrap_or_default().trim();
    let chomp = match header {
        "" => Chomp::Clip,
        "-" => Chomp::Strip,
        "+" => Chomp::Keep,
        other => return Err(format!("unsupported block scalar header `{other}`")),
    };
    let indent = children
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines: Vec<&str> = children
        .iter()
        .map(|l| if l.len() >= indent { &l[indent..] } else { "" })
        .collect();
    let mut text = if literal {
        lines.join("\n")
    } else {
        fold(&lines)
    };
    match chomp {
        Chomp::Strip => {}
        Chomp::Clip | Chomp::Keep if !text.is_empty() => text.push('\n'),
        _ => {}
    }
    Ok(Value::Block(text))
}

enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// `>` folding: lines of one paragraph join with a space, a blank line is a newline.
fn fold(lines: &[&str]) -> String {
    let mut out = String::new();
    let mut blank_run = false;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            out.push('\n');
            blank_run = true;
            continue;
        }
        if i > 0 && !blank_run {
            out.push(' ');
        }
        blank_run = false;
        out.push_str(line);
    }
    out
}

fn double_quoted(rest: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = rest[1..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return trailing(chars.as_str()).map(|()| out),
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some(other) => return Err(format!("unsupported escape `\\{other}`")),
                None => break,
            },
            other => out.push(other),
        }
    }
    Err("unterminated double-quoted string".to_owned())
}

fn single_quoted(rest: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = rest[1..].chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            let tail: String = chars.collect();
            return trailing(&tail).map(|()| out);
        }
        out.push(c);
    }
    Err("unterminated single-quoted string".to_owned())
}

fn trailing(tail: &str) -> Result<(), String> {
    let tail = tail.trim();
    if tail.is_empty() || tail.starts_with('#') {
        Ok(())
    } else {
        Err(format!("unexpected text after the closing quote: `{tail}`"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_the_subset() {
        let doc = parse(
            "---\r\nname: deploy  # the name\ndescription: \"Ship it: \\\"now\\\"\"\nother: 'it''s'\n\
             long: |\n  one\n  two\n\nfolded: >-\n  a\n  b\nmetadata:\n  k: v\nlist: [a, b]\nempty:\n---\n\n body \n",
        )
        .unwrap();
        assert_eq!(doc.get("name"), Some(&Value::Plain("deploy".into())));
        assert_eq!(
            doc.get("description"),
            Some(&Value::Quoted("Ship it: \"now\"".into()))
        );
        assert_eq!(doc.get("other"), Some(&Value::Quoted("it's".into())));
        assert_eq!(doc.get("long"), Some(&Value::Block("one\ntwo\n".into())));
        assert_eq!(doc.get("folded"), Some(&Value::Block("a b".into())));
        assert_eq!(doc.get("metadata"), Some(&Value::Nested));
        assert_eq!(doc.get("list"), Some(&Value::Flow("[a, b]".into())));
        assert_eq!(doc.get("empty"), Some(&Value::Null));
        assert_eq!(doc.body, "body");
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert_eq!(parse("name: x\n"), Err(FrontmatterError::Missing));
        assert_eq!(parse("---\nname: x\n"), Err(FrontmatterError::Unclosed));
        let err = |text: &str| match parse(text) {
            Err(FrontmatterError::Syntax { line, .. }) => line,
            other => unreachable!("{other:?}"),
        };
        assert_eq!(err("---\nname: x\nname: y\n---\n"), 3);
        assert_eq!(err("---\nname x\n---\n"), 2);
        assert_eq!(err("---\nname: x\n  more\n---\n"), 3);
        assert_eq!(err("---\nd: \"open\n---\n"), 2);
    }

    #[test]
    fn flags_accept_the_documented_spellings() {
        for yes in ["true", "TRUE", "yes", "On", "1"] {
            assert_eq!(Value::Plain(yes.into()).as_flag(), Some(true));
            assert_eq!(Value::Quoted(yes.into()).as_flag(), Some(true));
        }
        for no in ["false", "No", "off", "0"] {
            assert_eq!(Value::Plain(no.into()).as_flag(), Some(false));
        }
        for bad in ["maybe", "2", ""] {
            assert_eq!(Value::Plain(bad.into()).as_flag(), None);
        }
        assert_eq!(Value::Null.as_flag(), None);
        assert_eq!(Value::Nested.as_flag(), None);
    }
}
