//! Text helpers for the view: one-line tool argument summaries, compact numbers, wrapping
//! by display width.

use serde_json::Value;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A one-line summary of a tool call's arguments: the field a person cares about for known
/// tools, `key=value` pairs otherwise, the raw text when it is not JSON.
pub fn args_summary(tool: &str, arguments: &str) -> String {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return one_line(arguments);
    };
    let field = |name: &str| args.get(name).and_then(Value::as_str).map(one_line);
    let preferred = match tool {
        "bash" | "pwsh" => field("command"),
        "read" | "write" | "edit" | "str_replace_editor" => {
            field("file_path").or_else(|| field("path"))
        }
        "glob" => field("pattern"),
        "grep" => field("pattern").map(|pattern| match field("path") {
            Some(path) => format!("{pattern} in {path}"),
            None => pattern,
        }),
        "web_fetch" => field("url"),
        "web_search" => args
            .get("queries")
            .and_then(Value::as_array)
            .map(|queries| {
                let texts: Vec<&str> = queries.iter().filter_map(Value::as_str).collect();
                texts.join(" | ")
            }),
        "todo_write" => args
            .get("todos")
            .and_then(Value::as_array)
            .map(|todos| plural(todos.len(), "item")),
        "subagent" | "subagent_fork" => field("description").or_else(|| field("prompt")),
        _ => None,
    };
    if let Some(summary) = preferred {
        return summary;
    }
    let pairs: Vec<String> = args
        .iter()
        .map(|(key, value)| match value {
            Value::String(text) => format!("{key}={}", one_line(text)),
            other => format!("{key}={other}"),
        })
        .collect();
    pairs.join(" ")
}

/// `text` on one line: line breaks become `⏎`, runs of whitespace one space.
pub fn one_line(text: &str) -> String {
    let lines: Vec<String> = text
        .trim()
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    lines.join(" ⏎ ")
}

/// `1 item`, `3 items`.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `950`, `16.1k`, `1.2M`: token counts at a glance.
pub fn compact_count(n: u64) -> String {
    let scaled = |size: u64, unit: &str| {
        let tenths = (n * 10 + size / 2) / size;
        if tenths.is_multiple_of(10) || tenths >= 1000 {
            format!("{}{unit}", tenths / 10)
        } else {
            format!("{}.{}{unit}", tenths / 10, tenths % 10)
        }
    };
    // 999_960 rounds to 1000.0k, which reads better as 1M.
    if n >= 999_950 {
        scaled(1_000_000, "M")
    } else if n >= 1_000 {
        scaled(1_000, "k")
    } else {
        n.to_string()
    }
}

/// `0.8%`, `42%`: one decimal below ten percent, none above.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        return "?".into();
    }
    let tenths = (u128::from(part) * 1000 + u128::from(whole) / 2) / u128::from(whole);
    if tenths < 100 {
        format!("{}.{}%", tenths / 10, tenths % 10)
    } else {
        format!("{}%", (tenths + 5) / 10)
    }
}

/// `0.5s`, `12s`: a delay in milliseconds.
pub fn seconds(ms: f64) -> String {
    let tenths = (ms / 100.0).round().max(0.0);
    if tenths < 100.0 {
        format!("{:.1}s", tenths / 10.0)
    } else {
        format!("{:.0}s", tenths / 10.0)
    }
}

/// Word-wraps `text` to `width` display columns; words longer than a line are broken.
/// Every input line yields at least one output line.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for line in text.split('\n') {
        let mut current = String::new();
        let mut current_width = 0;
        for word in line.split_inclusive(' ') {
            let word_width = word.trim_end().width();
            if current_width + word_width > width && current_width > 0 {
                out.push(current.trim_end().to_owned());
                current.clear();
                current_width = 0;
            }
            if word_width > width {
                for ch in word.chars() {
                    let w = ch.width().unwrap_or(0);
                    if current_width + w > width && current_width > 0 {
                        out.push(std::mem::take(&mut current));
                        current_width = 0;
                    }
                    current.push(ch);
                    current_width += w;
                }
                continue;
            }
            current.push_str(word);
            current_width += word.width();
        }
        out.push(current.trim_end().to_owned());
    }
    out
}

/// `text` cut to `width` columns, ending in `…` when cut.
pub fn truncate(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = ch.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(ch);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_pick_the_telling_field() {
        let cases = [
            (
                "bash",
                r#"{"command": "cat notes.txt", "description": "Show"}"#,
                "cat notes.txt",
            ),
            ("read", r#"{"file_path": "src/main.rs"}"#, "src/main.rs"),
            (
                "grep",
                r#"{"pattern": "fn main", "path": "src"}"#,
                "fn main in src",
            ),
            ("todo_write", r#"{"todos": [{}, {}, {}]}"#, "3 items"),
            (
                "bash",
                r#"{"command": "cd x &&\n  make"}"#,
                "cd x && ⏎ make",
            ),
            (
                "mcp__db__query",
                r#"{"sql": "select 1", "limit": 5}"#,
                "sql=select 1 limit=5",
            ),
            ("bash", "{not json", "{not json"),
        ];
        for (tool, args, expected) in cases {
            assert_eq!(args_summary(tool, args), expected, "{tool} {args}");
        }
    }

    #[test]
    fn numbers_read_at_a_glance() {
        let counts: Vec<String> = [0, 950, 1_000, 16_113, 999_960, 1_234_567]
            .iter()
            .map(|n| compact_count(*n))
            .collect();
        assert_eq!(counts, ["0", "950", "1k", "16.1k", "1M", "1.2M"]);
        assert_eq!(percent(8_005, 1_000_000), "0.8%");
        assert_eq!(percent(420, 1000), "42%");
        assert_eq!(percent(1, 0), "?");
        assert_eq!(seconds(459.86), "0.5s");
        assert_eq!(seconds(12_345.0), "12s");
    }

    #[test]
    fn wrapping_breaks_on_words_then_characters() {
        assert_eq!(wrap("the quick brown fox", 9), ["the quick", "brown fox"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a\n\nb", 5), ["a", "", "b"]);
        assert_eq!(wrap("日本語テキスト", 6), ["日本語", "テキス", "ト"]);
        assert_eq!(truncate("hello world", 6), "hello…");
        assert_eq!(truncate("hi", 6), "hi");
    }
}
