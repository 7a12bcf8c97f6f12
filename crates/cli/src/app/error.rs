//! Why the runtime could not start, or could not start an agent.

use std::path::PathBuf;

/// A boot or agent-start failure. Configuration problems ([`is_usage`](Self::is_usage)) mean
/// nothing was started and the person has to change a setting, a flag or the environment.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// The selected provider route needs an API key and its variable is empty.
    #[error("{var} is not set: {hint}")]
    MissingApiKey {
        var: String,
        route: String,
        hint: String,
    },
    /// An environment variable dsh reads as text holds bytes that are not UTF-8.
    #[error("environment variable {var} is not valid UTF-8 ({why}); set it to UTF-8 text")]
    EnvNotUnicode { var: String, why: String },
    /// The working directory cannot be used as the workspace.
    #[error("cannot use {} as the workspace: {source}", path.display())]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The private temp area for tool output could not be created.
    #[error("cannot create the private temp directory {}: {source}", path.display())]
    TempDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A composition row names an unknown plugin, has an invalid config, or failed to load.
    #[error("cannot start the plugin composition: {0}")]
    Mount(#[source] dsh_kernel::KernelError),
    /// The composition loaded, but a part every agent needs is missing (a disabled row).
    #[error(
        "the composition provides no {service}; is the `{row}` row disabled in settings.toml?"
    )]
    MissingPart {
        service: &'static str,
        row: &'static str,
    },
    /// The selected provider route has no model adapter (its row failed to load).
    #[error("provider route `{route}` has no model adapter; the llm-openai row did not load it (run with DSH_LOG=warn to see why)")]
    RouteUnavailable { route: String },
    /// No stored session has this id (or id prefix).
    #[error("no stored session matches {0:?}; `dsh sessions list --all` shows them")]
    UnknownSession(String),
    /// More than one stored session starts with this prefix.
    #[error("{prefix:?} matches {} sessions ({}); give more of the id", candidates.len(), candidates.join(", "))]
    AmbiguousSession {
        prefix: String,
        candidates: Vec<String>,
    },
    /// There is no session of this workspace to continue.
    #[error("no stored session ran in {}; start one with `dsh run \"...\"`", .0.display())]
    NothingToContinue(PathBuf),
    /// Creating or resuming the agent failed.
    #[error("{0}")]
    Agent(#[from] dsh_agent::AgentError),
    /// The configured session store cannot be opened (a PostgreSQL database that is down,
    /// refuses the credentials, or holds a newer schema); the message names the setting.
    #[error("{message}")]
    StoreUnavailable { code: &'static str, message: String },
    /// Reading the session store failed.
    #[error(transparent)]
    Store(#[from] dsh_store::StoreError),
    /// The linked crates' session event declarations conflict (a build defect).
    #[error("cannot register the session event types: {0}")]
    EventTypes(#[source] dsh_session::SessionError),
}

impl AppError {
    /// A stable code for scripts and logs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingApiKey { .. } => "MISSING_CREDENTIAL",
            Self::EnvNotUnicode { .. } => "ENV_NOT_UNICODE",
            Self::Workspace { .. } => "WORKSPACE_UNAVAILABLE",
            Self::TempDir { .. } => "TEMP_DIR_UNAVAILABLE",
            Self::Mount(error) => error.code(),
            Self::MissingPart { .. } => "COMPOSITION_INCOMPLETE",
            Self::RouteUnavailable { .. } => "ROUTE_UNAVAILABLE",
            Self::UnknownSession(_) => "SESSION_NOT_FOUND",
            Self::AmbiguousSession { .. } => "SESSION_ID_AMBIGUOUS",
            Self::NothingToContinue(_) => "NO_SESSION_TO_CONTINUE",
            Self::Agent(_) => "AGENT_START_FAILED",
            Self::StoreUnavailable { code, .. } => code,
            Self::Store(error) => error.code(),
            Self::EventTypes(error) => error.code(),
        }
    }

    /// Whether the fix is a change of settings, flags, environment or arguments (exit
    /// status 2) rather than a failure of the work itself.
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            Self::Agent(_) | Self::Store(_) | Self::TempDir { .. } | Self::EventTypes(_)
        )
    }
}
