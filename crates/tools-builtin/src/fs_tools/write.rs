//! `write`: create a file, or replace one the session has read and that is unchanged since.

use std::time::Duration;

use dsh_protocol::ContentBlock;
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::WorkspaceFiles;
use super::{diff_meta, observe_written, read_guarded, read_guarded_via, write_atomic};
use crate::env::ToolEnv;
use crate::error::ToolError;
use crate::tool::{run_blocking, tool_env, ToolOutput, BACKSTOP_TIMEOUT};

/// The `write` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct Write;

/// Arguments of `write`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct WriteArgs {
    pub file_path: String,
    pub content: String,
}

const DESCRIPTION: &str = "Create a UTF-8 text file, or replace an existing file's entire \
content. Missing parent directories are created. An existing file must have been read with the \
read tool first and must not have changed since; prefer edit for targeted changes.";

impl Write {
    /// The name the model calls the tool by.
    pub const NAME: &'static str = "write";

    /// The body: runs one call in `env`; `cancel` is the call's signal.
    pub async fn run(
        &self,
        args: WriteArgs,
        env: &ToolEnv,
        _cancel: CancellationToken,
    ) -> Result<ToolOutput, ToolError> {
        let env = env.clone();
        match env.files().cloned() {
            Some(files) => write_via(files.as_ref(), &env, &args).await,
            None => run_blocking("writing", move || write_blocking(&env, &args)).await,
        }
    }
}

impl TypedTool for Write {
    type Args = WriteArgs;
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
                "file_path": {"type": "string", "description": "Path of the file to write; relative paths resolve against the workspace."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            },
            "required": ["file_path", "content"]
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
        args: WriteArgs,
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

fn write_blocking(env: &ToolEnv, args: &WriteArgs) -> Result<ToolOutput, ToolError> {
    let path = crate::paths::resolve_for_write(env, &args.file_path)?;
    let existed = path.symlink_metadata().is_ok();
    let old = if existed {
        read_guarded(env, &path)?
    } else {
        Vec::new()
    };
    write_atomic(&path, args.content.as_bytes())?;
    Ok(written(env, args, &path, existed, &old))
}

/// [`write_blocking`] through the session's [`WorkspaceFiles`]: the same checks and guard.
async fn write_via(
    files: &dyn WorkspaceFiles,
    env: &ToolEnv,
    args: &WriteArgs,
) -> Result<ToolOutput, ToolError> {
    let path = crate::paths::resolve_for_write(env, &args.file_path)?;
    let existed = path.symlink_metadata().is_ok();
    let old = if existed {
        read_guarded_via(files, env, &path).await?
    } else {
        Vec::new()
    };
    files
        .write_text(&path, &args.content)
        .await
        .map_err(|e| ToolError::io("writing", &path, e))?;
    Ok(written(env, args, &path, existed, &old))
}

/// Records what was written and describes it.
fn written(
    env: &ToolEnv,
    args: &WriteArgs,
    path: &std::path::Path,
    existed: bool,
    old: &[u8],
) -> ToolOutput {
    observe_written(env, path, args.content.as_bytes());
    let verb = if existed { "overwritten" } else { "created" };
    let mut metadata = diff_meta(
        &args.file_path,
        &String::from_utf8_lossy(old),
        &args.content,
    );
    metadata["path"] = json!(path.display().to_string());
    metadata["created"] = json!(!existed);
    metadata["bytes"] = json!(args.content.len());
    ToolOutput {
        content: format!("The file {} has been {verb} successfully.", path.display()),
        metadata,
    }
}
