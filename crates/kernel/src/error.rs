//! Kernel errors. Every variant carries a stable machine code so callers and logs can match on
//! it without parsing prose.

/// The error type listeners, plugins and services hand back to the kernel.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything the kernel itself can refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// Something tried to register on a fiber that has already been disposed.
    #[error("fiber `{fiber}` is disposed; registering on it is not allowed")]
    InactiveEffect { fiber: String },
    /// `require` found no provider for this service type.
    #[error("service `{service}` is not provided")]
    ServiceMissing { service: &'static str },
    /// A second provider tried to claim an already provided service type.
    #[error("service `{service}` is already provided")]
    ServiceConflict { service: &'static str },
    /// A composition row names a plugin that is not compiled into the table.
    #[error("row `{id}`: unknown plugin `{plugin}`")]
    UnknownPlugin { id: String, plugin: String },
    /// A composition row's config does not deserialize into the plugin's config type.
    #[error("row `{id}` (plugin `{plugin}`): invalid config: {message}")]
    InvalidConfig {
        id: String,
        plugin: String,
        message: String,
    },
    /// A plugin's `apply` returned an error.
    #[error("plugin `{id}` failed to apply: {source}")]
    PluginFailed {
        id: String,
        #[source]
        source: BoxError,
    },
    /// Binding this parent would make a scope its own ancestor.
    #[error("binding this scope parent would create a cycle")]
    ScopeCycle,
    /// A scope's parent can be bound only once.
    #[error("scope already has a parent")]
    ScopeAlreadyBound,
    /// A named registry already holds an entry with this name.
    #[error("duplicate name `{name}`")]
    DuplicateName { name: String },
    /// A composition patch referred to a row id that does not exist.
    #[error("composition has no row `{id}`")]
    UnknownRow { id: String },
    /// A composition patch inserted a row whose id is already taken.
    #[error("composition already has a row `{id}`")]
    DuplicateRow { id: String },
}

impl KernelError {
    /// Stable, machine-readable code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InactiveEffect { .. } => "INACTIVE_EFFECT",
            Self::ServiceMissing { .. } => "SERVICE_MISSING",
            Self::ServiceConflict { .. } => "SERVICE_CONFLICT",
            Self::UnknownPlugin { .. } => "UNKNOWN_PLUGIN",
            Self::InvalidConfig { .. } => "INVALID_CONFIG",
            Self::PluginFailed { .. } => "PLUGIN_FAILED",
            Self::ScopeCycle => "SCOPE_CYCLE",
            Self::ScopeAlreadyBound => "SCOPE_ALREADY_BOUND",
            Self::DuplicateName { .. } => "DUPLICATE_NAME",
            Self::UnknownRow { .. } => "UNKNOWN_ROW",
            Self::DuplicateRow { .. } => "DUPLICATE_ROW",
        }
    }
}

/// All failures of one `parallel` dispatch, in listener order.
#[derive(Debug, thiserror::Error)]
#[error("{} parallel listener(s) failed: {}", .errors.len(), summary(.errors))]
pub struct AggregateError {
    pub errors: Vec<BoxError>,
}

fn summary(errors: &[BoxError]) -> String {
    errors
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A listener panicked during a dispatch that reports failures (strict emit).
#[derive(Debug, thiserror::Error)]
#[error("listener for `{event}` panicked: {message}")]
pub struct ListenerPanicked {
    pub event: &'static str,
    pub message: String,
}

/// Renders a panic payload as text for logs and errors.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
