//! The `subagents` plugin's settings.

use crate::descriptor::ToolFilter;
use serde::Deserialize;

/// The default delegation depth cap: root (0) → 1 → 2 → 3.
pub const DEFAULT_MAX_DEPTH: u64 = 3;
/// How many times in a row a child's report or settlement may open a turn of an idle parent
/// before further ones wait for the parent's next turn.
pub const DEFAULT_MAX_CONSECUTIVE_WAKES: u32 = 3;

/// Configuration of [`SubagentsPlugin`](crate::SubagentsPlugin).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct SubagentsConfig {
    /// The deepest a child may sit (the top agent is depth 0).
    pub max_depth: u64,
    /// The persona section every child gets in place of the deployment's.
    pub persona: Option<String>,
    /// The tools every child may (`allow`) or may not (`deny`) use. `report` stays visible
    /// to continuable children whatever `allow` says.
    pub tool_filter: Option<ToolFilter>,
    /// Consecutive wakes of an idle parent by its children (reset by a person's message),
    /// when no `jobs` row is mounted. With one, the budget is the jobs row's, shared by job
    /// completions and children (a different value here is refused).
    pub max_consecutive_wakes: u32,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
            persona: None,
            tool_filter: None,
            max_consecutive_wakes: DEFAULT_MAX_CONSECUTIVE_WAKES,
        }
    }
}

impl SubagentsConfig {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(filter) = &self.tool_filter {
            filter.validate()?;
        }
        if self.persona.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err("persona must not be empty".into());
        }
        Ok(())
    }
}
