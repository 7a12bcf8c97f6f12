//! dsh's built-in tool names and argument fields as Claude Code hooks know them.
//!
//! In the Claude Code dialect a matcher matches a tool by either name, and the payload's
//! `tool_name` and `tool_input` use Claude Code's. The table is docs/hooks.md's mapping table.

use dsh_tools_builtin::{Bash, Edit, Glob, Grep, Read, TodoWrite, WebFetch, Write};
use serde_json::Value;
use std::path::Path;

/// `(dsh name, Claude Code name)` for every built-in tool.
pub const CLAUDE_TOOL_NAMES: &[(&str, &str)] = &[
    (Bash::NAME, "Bash"),
    (Read::NAME, "Read"),
    (Write::NAME, "Write"),
    (Edit::NAME, "Edit"),
    (Glob::NAME, "Glob"),
    (Grep::NAME, "Grep"),
    (WebFetch::NAME, "WebFetch"),
    (TodoWrite::NAME, "TodoWrite"),
];

/// The Claude Code name of a dsh tool, when it has one.
pub fn claude_name(dsh_name: &str) -> Option<&'static str> {
    CLAUDE_TOOL_NAMES
        .iter()
        .find(|(dsh, _)| *dsh == dsh_name)
        .map(|(_, claude)| *claude)
}

/// The arguments as Claude Code's tool would have received them: `grep`'s `include` is
/// `glob`, and the file tools' `file_path` is absolute (resolved against `cwd`). Everything
/// else is passed on as the model wrote it.
pub fn claude_tool_input(dsh_name: &str, arguments: &Value, cwd: &Path) -> Value {
    let mut input = arguments.clone();
    let Some(object) = input.as_object_mut() else {
        return input;
    };
    match dsh_name {
        name if name == Grep::NAME => {
            if let Some(include) = object.remove("include") {
                object.insert("glob".into(), include);
            }
        }
        name if name == Read::NAME || name == Write::NAME || name == Edit::NAME => {
            if let Some(Value::String(path)) = object.get("file_path") {
                if Path::new(path).is_relative() {
                    let absolute = cwd.join(path).to_string_lossy().into_owned();
                    object.insert("file_path".into(), Value::String(absolute));
                }
            }
        }
        _ => {}
    }
    input
}
