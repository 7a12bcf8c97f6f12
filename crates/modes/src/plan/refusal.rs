//! What plan mode refuses, whatever the approval policy says: file writes and edits, and
//! commands that are not read-only (the approval module's own classification, so "read-only"
//! means the same thing everywhere). Everything else is left to the approval policy and the
//! plan guidance, as in the original.

use dsh_tools_builtin::approval::is_read_only_command;
use dsh_tools_builtin::{Bash, Edit, Write};
use serde_json::Value;

/// Why plan mode refuses a call of `tool` with `args`, or `None` when it may run. The text is
/// what the model reads.
pub fn refusal(tool: &str, args: &Value) -> Option<String> {
    if tool == Write::NAME || tool == Edit::NAME {
        return Some(format!(
            "plan mode is on: `{tool}` changes files, so it is refused until the user approves \
             a plan. Explore with read-only tools, then present the complete plan with \
             exit_plan_mode."
        ));
    }
    if tool == Bash::NAME {
        let command = args.get("command").and_then(Value::as_str).unwrap_or("");
        if !is_read_only_command(command) {
            return Some(
                "plan mode is on: this command is not a read-only command, so it is refused \
                 until the user approves a plan. Read-only commands (ls, cat, head, tail, wc, \
                 pwd, grep, rg, find, git status/log/diff/show, one command with no chaining or \
                 redirection) run; present the complete plan with exit_plan_mode."
                    .to_owned(),
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_edits_and_non_read_only_commands_are_refused() {
        assert!(refusal("write", &json!({"path": "a", "content": "b"})).is_some());
        assert!(refusal("edit", &json!({})).is_some());
        assert!(refusal("bash", &json!({"command": "rm -rf target"})).is_some());
        assert!(refusal("bash", &json!({"command": "ls && touch x"})).is_some());
        assert!(refusal("bash", &json!({"command": "git status"})).is_none());
        assert!(refusal("bash", &json!({"command": "find . -delete"})).is_some());
        assert!(refusal("read", &json!({"path": "a"})).is_none());
        assert!(refusal("grep", &json!({"pattern": "a"})).is_none());
    }
}
