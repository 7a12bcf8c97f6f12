//! [`WebHost`]: what the embedding program provides. Agents come from `dsh_acp::Host`
//! (the same boot as `dsh`, `dsh acp` and `dsh sdk`); this adds what only a settings-aware
//! surface can answer: the model catalog, the settings view and the permission presets.

use dsh_acp::{Host, HostError, Workspace};
use dsh_agent::Agent;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// A provider route and its configured models.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProviderModels {
    pub id: String,
    pub models: Vec<String>,
}

/// The configured default model and the catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Models {
    pub provider: String,
    pub model: String,
    pub providers: Vec<ProviderModels>,
}

/// The embedding program, as `dsh web` needs it.
pub trait WebHost: Host {
    /// The configured default model and every provider's catalog.
    fn models(&self) -> Models;

    /// The effective settings with every secret (API keys, tokens, headers) removed.
    fn settings_view(&self) -> Value;

    /// The session's permission preset (`read-only`, `workspace-write`, …).
    fn permission(&self, workspace: &dyn Workspace, agent: &Arc<dyn Agent>) -> String;

    /// Switches an idle session's permission preset, as `/permissions` in the TUI; the
    /// text says what happened (a pinned sandbox, for one).
    fn set_permission(
        &self,
        workspace: &dyn Workspace,
        agent: &Arc<dyn Agent>,
        preset: &str,
    ) -> Result<String, HostError>;
}
