//! How a dsh tool call looks to an editor: its ACP `kind`, a title, the files it touches
//! (`locations`) and, for edits, ACP diff content. Everything is derived from the call's
//! own arguments; nothing here reads a file.

use serde_json::{json, Value};
use std::path::Path;

/// The longest title shown for a command or pattern, in characters.
const TITLE_CHARS: usize = 120;

/// The ACP tool kind of a dsh tool.
pub fn kind(tool: &str) -> &'static str {
    match tool {
        "read" => "read",
        "edit" | "write" => "edit",
        "bash" | "bash_background" => "execute",
        "glob" | "grep" => "search",
        "web_fetch" => "fetch",
        "todo_write" => "think",
        _ => "other",
    }
}

fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > TITLE_CHARS || line.len() < text.trim_end().len() {
        let cut: String = line.chars().take(TITLE_CHARS).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// A one-line title for the call.
pub fn title(tool: &str, args: &Value) -> String {
    let path = || str_arg(args, "file_path").unwrap_or("a file");
    match tool {
        "read" => format!("Read {}", path()),
        "edit" => format!("Edit {}", path()),
        "write" => format!("Write {}", path()),
        "bash" => match str_arg(args, "description") {
            Some(description) => short(description),
            None => format!(
                "Run {}",
                short(str_arg(args, "command").unwrap_or("a command"))
            ),
        },
        "glob" => format!(
            "Find {}",
            short(str_arg(args, "pattern").unwrap_or("files"))
        ),
        "grep" => format!(
            "Search for {}",
            short(str_arg(args, "pattern").unwrap_or("text"))
        ),
        "web_fetch" => format!("Fetch {}", short(str_arg(args, "url").unwrap_or("a page"))),
        "todo_write" => "Update the plan".to_owned(),
        other => other.to_owned(),
    }
}

/// `path` made absolute against the workspace (ACP paths are absolute).
fn absolute(root: &Path, path: &str) -> String {
    let path = Path::new(path);
    if path.is_absolute() {
        path.display().to_string()
    } else {
        root.join(path).display().to_string()
    }
}

/// The files or directories the call works on.
pub fn locations(tool: &str, args: &Value, root: &Path) -> Vec<Value> {
    match tool {
        "read" | "edit" | "write" => match str_arg(args, "file_path") {
            Some(path) => {
                let mut location = json!({ "path": absolute(root, path) });
                if let Some(line) = args.get("offset").and_then(Value::as_u64) {
                    location["line"] = json!(line);
                }
                vec![location]
            }
            None => Vec::new(),
        },
        "glob" | "grep" => str_arg(args, "path")
            .map(|path| vec![json!({ "path": absolute(root, path) })])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// ACP diff content for an edit or a write, from its arguments: the replaced text and its
/// replacement (an edit), or the whole new file (a write).
pub fn diff(tool: &str, args: &Value, root: &Path) -> Option<Value> {
    let path = absolute(root, str_arg(args, "file_path")?);
    match tool {
        "edit" => Some(json!({
            "type": "diff",
            "path": path,
            "oldText": args.get("old_string").and_then(Value::as_str).unwrap_or_default(),
            "newText": args.get("new_string").and_then(Value::as_str).unwrap_or_default(),
        })),
        "write" => Some(json!({
            "type": "diff",
            "path": path,
            "oldText": null,
            "newText": args.get("content").and_then(Value::as_str).unwrap_or_default(),
        })),
        _ => None,
    }
}

/// ACP text content.
pub fn text_content(text: impl Into<String>) -> Value {
    json!({ "type": "content", "content": { "type": "text", "text": text.into() } })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_tools_get_kinds_titles_locations_and_diffs() {
        let root = Path::new("/w");
        let edit = json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"});
        assert_eq!(kind("edit"), "edit");
        assert_eq!(title("edit", &edit), "Edit src/a.rs");
        assert_eq!(
            locations("edit", &edit, root),
            vec![json!({"path": "/w/src/a.rs"})]
        );
        assert_eq!(
            diff("edit", &edit, root),
            Some(json!({"type": "diff", "path": "/w/src/a.rs", "oldText": "a", "newText": "b"}))
        );
        let write = json!({"file_path": "/abs/n.txt", "content": "hi"});
        assert_eq!(
            diff("write", &write, root),
            Some(json!({"type": "diff", "path": "/abs/n.txt", "oldText": null, "newText": "hi"}))
        );
        let read = json!({"file_path": "x", "offset": 10});
        assert_eq!(
            locations("read", &read, root),
            vec![json!({"path": "/w/x", "line": 10})]
        );
    }

    #[test]
    fn other_tools_get_kinds_and_short_titles() {
        assert_eq!(kind("bash"), "execute");
        assert_eq!(kind("grep"), "search");
        assert_eq!(kind("web_fetch"), "fetch");
        assert_eq!(kind("todo_write"), "think");
        assert_eq!(kind("mcp__fs__read"), "other");
        assert_eq!(
            title("bash", &json!({"command": "ls -la\nrm x"})),
            "Run ls -la…"
        );
        assert_eq!(
            title("bash", &json!({"command": "ls", "description": "List"})),
            "List"
        );
        assert_eq!(title("mcp__fs__read", &json!({})), "mcp__fs__read");
        assert!(diff("bash", &json!({"file_path": "x"}), Path::new("/")).is_none());
    }
}
