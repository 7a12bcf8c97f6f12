//! `edit`: literal search-and-replace with a unique-match rule and helpful misses.

use std::path::Path;
use std::time::Duration;

use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::similar::{matches_ignoring_whitespace, nearest_candidates};
use super::WorkspaceFiles;
use super::{diff_meta, observe_written, read_guarded, read_guarded_via, write_atomic};
use crate::env::ToolEnv;
use crate::error::ToolError;
use crate::tool::{run_blocking, tool_env, ToolOutput, BACKSTOP_TIMEOUT};

/// The `edit` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct Edit;

/// Arguments of `edit`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct EditArgs {
    pub file_path: String,
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

const DESCRIPTION: &str = "Edit an existing UTF-8 text file by replacing literal text: \
old_string must match the file exactly (including whitespace) and, unless replace_all is true, \
exactly once. Read the file first; a file changed on disk since the last read must be read again.";

/// Line numbers listed in an ambiguous-match error.
const MAX_LISTED_LINES: usize = 20;

impl Edit {
    /// The name the model calls the tool by.
    pub const NAME: &'static str = "edit";

    /// The body: runs one call in `env`; `cancel` is the call's signal.
    pub async fn run(
        &self,
        args: EditArgs,
        env: &ToolEnv,
        _cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let env = env.clone();
        match env.files().cloned() {
            Some(files) => edit_via(files.as_ref(), &env, &args).await,
            None => run_blocking("editing", move || edit_blocking(&env, &args)).await,
        }
    }
}

impl TypedTool for Edit {
    type Args = EditArgs;
    type Output = ToolOutput;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn description(&self) -> String {
        DESCRIPTION.to_owned()
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path of the file to edit; relative paths resolve against the workspace."},
                "old_string": {"type": "string", "description": "Literal text to replace. Must match exactly."},
                "new_string": {"type": "string", "description": "Literal replacement text. An empty string deletes the match."},
                "replace_all": {"type": "boolean", "description": "Replace every match. Defaults to false, in which case old_string must appear exactly once."}
            },
            "required": ["file_path", "old_string", "new_string"]
        })
    }

    fn timeout(&self) -> Option<Duration> {
        Some(BACKSTOP_TIMEOUT)
    }

    fn is_concurrency_safe(&self, _args: &Value) -> bool {
        false
    }

    async fn execute(
        &self,
        args: EditArgs,
        exec: &ToolExecution,
    ) -> Result<ToolOutput, ToolFailure> {
        let env = tool_env(exec)?;
        Ok(self.run(args, &env, exec.signal().clone()).await?)
    }

    fn render(&self, _args: &Value, value: &Value) -> Vec<ContentBlock> {
        ToolOutput::render_value(value)
    }

    fn presentation_meta(&self, _args: &Value, value: &Value) -> Option<Value> {
        ToolOutput::value_meta(value)
    }
}

fn edit_blocking(env: &ToolEnv, args: &EditArgs) -> Result<ToolOutput, ToolError> {
    check_args(args)?;
    let path = crate::paths::resolve_for_write(env, &args.file_path)?;
    let bytes = read_guarded(env, &path)?;
    let (text, updated, count) = apply(&path, bytes, args)?;
    write_atomic(&path, updated.as_bytes())?;
    Ok(edited(env, args, &path, &text, &updated, count))
}

/// [`edit_blocking`] through the session's [`WorkspaceFiles`]: the same checks, guard and
/// matching rules.
async fn edit_via(
    files: &dyn WorkspaceFiles,
    env: &ToolEnv,
    args: &EditArgs,
) -> Result<ToolOutput, ToolError> {
    check_args(args)?;
    let path = crate::paths::resolve_for_write(env, &args.file_path)?;
    let bytes = read_guarded_via(files, env, &path).await?;
    let (text, updated, count) = apply(&path, bytes, args)?;
    files
        .write_text(&path, &updated)
        .await
        .map_err(|e| ToolError::io("writing", &path, e))?;
    Ok(edited(env, args, &path, &text, &updated, count))
}

fn check_args(args: &EditArgs) -> Result<(), ToolError> {
    if args.old_string.is_empty() {
        return Err(ToolError::EditEmptyOldString);
    }
    if args.old_string == args.new_string {
        return Err(ToolError::EditNoChange);
    }
    Ok(())
}

/// The file's text, its edited text and how many matches were replaced.
fn apply(
    path: &Path,
    bytes: Vec<u8>,
    args: &EditArgs,
) -> Result<(String, String, usize), ToolError> {
    let text = String::from_utf8(bytes).map_err(|_| ToolError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    let (old, new) = match_form(&text, &args.old_string, &args.new_string)
        .ok_or_else(|| no_match(path, &text, &args.old_string))?;
    let starts: Vec<usize> = text.match_indices(old.as_str()).map(|(i, _)| i).collect();
    if starts.len() > 1 && !args.replace_all {
        let lines = starts
            .iter()
            .take(MAX_LISTED_LINES)
            .map(|&i| line_of(&text, i))
            .collect();
        return Err(ToolError::EditAmbiguous {
            path: path.to_path_buf(),
            count: starts.len(),
            lines,
        });
    }
    let updated = if args.replace_all {
        text.replace(&old, &new)
    } else {
        text.replacen(&old, &new, 1)
    };
    Ok((text, updated, starts.len()))
}

/// Records what was written and describes it.
fn edited(
    env: &ToolEnv,
    args: &EditArgs,
    path: &Path,
    text: &str,
    updated: &str,
    count: usize,
) -> ToolOutput {
    observe_written(env, path, updated.as_bytes());
    let mut content = format!("The file {} has been updated successfully.", path.display());
    if count > 1 {
        content.push_str(&format!(" ({count} occurrences replaced)"));
    }
    let mut metadata = diff_meta(&args.file_path, text, updated);
    metadata["replacements"] = json!(count);
    ToolOutput { content, metadata }
}

/// The strings to use: as given, or with `\n` turned into `\r\n` when the file uses CRLF line
/// endings and only that form matches (models rarely reproduce `\r`).
fn match_form(text: &str, old: &str, new: &str) -> Option<(String, String)> {
    if text.contains(old) {
        return Some((old.to_string(), new.to_string()));
    }
    if text.contains("\r\n") && old.contains('\n') && !old.contains('\r') {
        let crlf = old.replace('\n', "\r\n");
        if text.contains(&crlf) {
            return Some((crlf, new.replace('\n', "\r\n")));
        }
    }
    None
}

fn no_match(path: &Path, text: &str, old: &str) -> ToolError {
    ToolError::EditNoMatch {
        path: path.to_path_buf(),
        candidates: nearest_candidates(text, old),
        whitespace_hint: matches_ignoring_whitespace(text, old),
    }
}

/// 1-based line number of byte offset `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].bytes().filter(|&b| b == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_files_accept_lf_old_strings() {
        let text = "a\r\nb\r\nc\r\n";
        assert_eq!(
            match_form(text, "a\nb", "x\ny"),
            Some(("a\r\nb".into(), "x\r\ny".into()))
        );
        assert_eq!(match_form(text, "zz", "y"), None);
    }

    #[test]
    fn line_numbers_are_one_based() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 4), 3);
    }
}
