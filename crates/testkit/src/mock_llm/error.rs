//! Errors from loading scripts and running the mock server.

use std::path::PathBuf;

/// What can go wrong before or while serving; faults the script asks for are not errors.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// The script file could not be read.
    #[error("cannot read mock script {path}: {source}")]
    ScriptRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The script is not valid JSON or does not have the script shape.
    #[error("cannot parse mock script: {0}")]
    ScriptParse(#[source] serde_json::Error),
    /// The script parsed but holds a value that cannot be served.
    #[error("invalid mock script: {0}")]
    ScriptInvalid(String),
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

impl MockError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            MockError::ScriptRead { .. } => "MOCK_SCRIPT_READ",
            MockError::ScriptParse(_) => "MOCK_SCRIPT_PARSE",
            MockError::ScriptInvalid(_) => "MOCK_SCRIPT_INVALID",
            MockError::Bind { .. } => "MOCK_BIND",
        }
    }
}
