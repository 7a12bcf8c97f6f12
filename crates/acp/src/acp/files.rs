//! The client's `fs/read_text_file` / `fs/write_text_file` as the file tools' text
//! ([`WorkspaceFiles`]), so an editor's unsaved buffers are what the agent reads and edits.
//!
//! Installed on a session's tool environment when the client advertises either capability
//! (`clientCapabilities.fs`); the direction it does not advertise stays on the disk. The
//! tools resolve every path and check it against the sandbox before this is asked, so the
//! client only ever sees paths the session may touch.

use crate::rpc::{Peer, RpcError};
use dsh_protocol::SessionId;
use dsh_tools_builtin::{LocalFiles, ToolEnvs, WorkspaceFiles};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::io;
use std::path::Path;
use std::sync::Arc;

/// ACP's "resource not found" error code (what a client answers for a missing file).
const RESOURCE_NOT_FOUND: i64 = -32002;

/// What the client said it can do with files (`initialize`'s `clientCapabilities.fs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsCapabilities {
    pub read_text_file: bool,
    pub write_text_file: bool,
}

impl FsCapabilities {
    /// From `initialize`'s params (absent or malformed capabilities mean none).
    pub fn of(params: &Value) -> Self {
        let fs = &params["clientCapabilities"]["fs"];
        Self {
            read_text_file: fs["readTextFile"].as_bool().unwrap_or(false),
            write_text_file: fs["writeTextFile"].as_bool().unwrap_or(false),
        }
    }

    pub fn any(self) -> bool {
        self.read_text_file || self.write_text_file
    }
}

/// One ACP session's files, served by its client.
pub struct ClientFiles {
    peer: Peer,
    session: SessionId,
    can: FsCapabilities,
}

impl ClientFiles {
    pub fn new(peer: Peer, session: SessionId, can: FsCapabilities) -> Self {
        Self { peer, session, can }
    }
}

/// The client's error as an I/O error the tools report ("file not found" for ACP's
/// resource-not-found).
fn io_error(verb: &str, error: RpcError) -> io::Error {
    if error.code == RESOURCE_NOT_FOUND {
        return io::Error::new(io::ErrorKind::NotFound, error.message);
    }
    io::Error::other(format!("the editor could not {verb} it: {}", error.message))
}

impl WorkspaceFiles for ClientFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<String>> {
        if !self.can.read_text_file {
            return LocalFiles.read_text(path);
        }
        Box::pin(async move {
            let params = json!({ "sessionId": self.session.as_str(), "path": path });
            let answer = self
                .peer
                .request("fs/read_text_file", params)
                .await
                .map_err(|e| io_error("read", e))?;
            match answer["content"].as_str() {
                Some(text) => Ok(text.to_owned()),
                None => Err(io::Error::other(
                    "the editor answered fs/read_text_file without a string content",
                )),
            }
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, text: &'a str) -> BoxFuture<'a, io::Result<()>> {
        if !self.can.write_text_file {
            return LocalFiles.write_text(path, text);
        }
        Box::pin(async move {
            let params =
                json!({ "sessionId": self.session.as_str(), "path": path, "content": text });
            self.peer
                .request("fs/write_text_file", params)
                .await
                .map(|_| ())
                .map_err(|e| io_error("write", e))
        })
    }
}

/// Serves `agent`'s file tools from the client, when it offers files. The agent's own tool
/// environment is kept (sandbox, limits, observations); only where text comes from changes.
pub fn install(
    ctx: &dsh_kernel::Context,
    agent: &Arc<dyn dsh_agent::Agent>,
    peer: &Peer,
    can: FsCapabilities,
) -> Result<(), String> {
    if !can.any() {
        return Ok(());
    }
    let Some(envs) = ctx.get::<ToolEnvs>() else {
        return Ok(());
    };
    let Some(env) = envs.resolve(Some(agent.scope_key())) else {
        return Ok(());
    };
    let files = ClientFiles::new(peer.clone(), agent.id().clone(), can);
    envs.set(agent.ctx(), env.with_files(Arc::new(files)))
        .map(|registration| registration.forget())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_read_from_initialize() {
        let both =
            json!({"clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}});
        assert_eq!(
            FsCapabilities::of(&both),
            FsCapabilities {
                read_text_file: true,
                write_text_file: true
            }
        );
        let read = json!({"clientCapabilities": {"fs": {"readTextFile": true}}});
        assert!(FsCapabilities::of(&read).read_text_file);
        assert!(!FsCapabilities::of(&read).write_text_file);
        for none in [
            json!({}),
            json!({"clientCapabilities": {"fs": "yes"}}),
            json!(null),
        ] {
            assert!(!FsCapabilities::of(&none).any());
        }
    }

    #[test]
    fn a_missing_resource_is_not_found() {
        let missing = io_error(
            "read",
            RpcError::new(RESOURCE_NOT_FOUND, "Resource not found"),
        );
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        let other = io_error("read", RpcError::internal("boom"));
        assert!(other.to_string().contains("the editor could not read it"));
    }
}
