//! `tools-builtin`: the kernel plugin that registers the coding tools on the tool runtime and
//! provides [`ToolEnvs`], where each agent's session environment is registered.

use std::collections::BTreeMap;
use std::sync::Arc;

use dsh_kernel::{BoxError, Context, Disposer, Plugin, ServiceName};
use dsh_tools::{RegistryError, Tool, ToolRuntime, Typed};
use serde::Deserialize;

use crate::bash::Bash;
use crate::env::WebFetchConfig;
use crate::envs::ToolEnvs;
use crate::fs_tools::{Edit, Read, Write};
use crate::search::{Glob, Grep};
use crate::todo::TodoWrite;
use crate::web_fetch::WebFetch;

/// Every built-in tool name, in registration (and so catalog) order.
pub const BUILTIN_TOOL_NAMES: &[&str] = &[
    Bash::NAME,
    Read::NAME,
    Write::NAME,
    Edit::NAME,
    Glob::NAME,
    Grep::NAME,
    TodoWrite::NAME,
    WebFetch::NAME,
];

/// Which tools to register: a list of names, or per-tool flags over the default set.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum ToolSelection {
    /// Exactly these tools.
    List(Vec<String>),
    /// The default set, with these tools switched on or off.
    Flags(BTreeMap<String, bool>),
}

/// `web_fetch` settings. Off by default: fetching is network egress the user opts into.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebFetchSettings {
    pub enabled: bool,
    /// Allow private, loopback and link-local destinations (intranets, tests).
    pub allow_private_addresses: bool,
}

/// Configuration of [`BuiltinToolsPlugin`]. `null`/`{}` registers every tool but `web_fetch`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BuiltinToolsConfig {
    pub enabled: Option<ToolSelection>,
    pub web_fetch: WebFetchSettings,
}

/// Why a configuration cannot be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuiltinToolsError {
    #[error("unknown built-in tool {name:?}; known tools: {}", BUILTIN_TOOL_NAMES.join(", "))]
    UnknownTool { name: String },
    #[error("web_fetch is enabled in the tool selection but web_fetch.enabled is false; set web_fetch.enabled = true to turn it on")]
    WebFetchNotEnabled,
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl BuiltinToolsError {
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "UNKNOWN_BUILTIN_TOOL",
            Self::WebFetchNotEnabled => "WEB_FETCH_NOT_ENABLED",
            Self::Registry(error) => error.code(),
        }
    }
}

impl BuiltinToolsConfig {
    /// The names to register, in catalog order, after checking the selection.
    pub fn tool_names(&self) -> Result<Vec<&'static str>, BuiltinToolsError> {
        let web_fetch = self.web_fetch.enabled;
        let default_on = |name: &str| name != WebFetch::NAME || web_fetch;
        let known = |name: &str| {
            BUILTIN_TOOL_NAMES
                .contains(&name)
                .then_some(())
                .ok_or_else(|| BuiltinToolsError::UnknownTool { name: name.into() })
        };
        let chosen: Vec<&'static str> = match &self.enabled {
            None => BUILTIN_TOOL_NAMES
                .iter()
                .copied()
                .filter(|n| default_on(n))
                .collect(),
            Some(ToolSelection::List(names)) => {
                names.iter().try_for_each(|n| known(n))?;
                BUILTIN_TOOL_NAMES
                    .iter()
                    .copied()
                    .filter(|n| names.iter().any(|listed| listed == n))
                    .collect()
            }
            Some(ToolSelection::Flags(flags)) => {
                flags.keys().try_for_each(|n| known(n))?;
                BUILTIN_TOOL_NAMES
                    .iter()
                    .copied()
                    .filter(|n| flags.get(*n).copied().unwrap_or_else(|| default_on(n)))
                    .collect()
            }
        };
        if chosen.contains(&WebFetch::NAME) && !web_fetch {
            return Err(BuiltinToolsError::WebFetchNotEnabled);
        }
        Ok(chosen)
    }

    /// The tools to register, in catalog order.
    pub fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, BuiltinToolsError> {
        let web_fetch = WebFetchConfig {
            enabled: self.web_fetch.enabled,
            allow_private_addresses: self.web_fetch.allow_private_addresses,
        };
        Ok(self
            .tool_names()?
            .into_iter()
            .filter_map(|name| builtin_tool(name, &web_fetch))
            .collect())
    }
}

/// The registry form of the built-in tool called `name`; `web_fetch` runs with `web_fetch`
/// instead of the session's settings.
pub fn builtin_tool(name: &str, web_fetch: &WebFetchConfig) -> Option<Arc<dyn Tool>> {
    let tool = match name {
        Bash::NAME => Typed::arc(Bash),
        Read::NAME => Typed::arc(Read),
        Write::NAME => Typed::arc(Write),
        Edit::NAME => Typed::arc(Edit),
        Glob::NAME => Typed::arc(Glob),
        Grep::NAME => Typed::arc(Grep),
        TodoWrite::NAME => Typed::arc(TodoWrite),
        WebFetch::NAME => Typed::arc(WebFetch::configured(web_fetch.clone())),
        _ => return None,
    };
    Some(tool)
}

/// Registers the configured tools in `ctx`'s layer of `tools`; the registrations are effects
/// of `ctx`'s fiber. Nothing is registered when the configuration is invalid. The tools find
/// each call's session environment in the `ToolEnvs` service (see [`ToolEnvs`]).
pub fn register_builtin_tools(
    ctx: &Context,
    tools: &ToolRuntime,
    config: &BuiltinToolsConfig,
) -> Result<Vec<Disposer>, BuiltinToolsError> {
    let chosen = config.tools()?;
    let mut registered = Vec::with_capacity(chosen.len());
    for tool in chosen {
        match tools.register(ctx, tool) {
            Ok(disposer) => registered.push(disposer),
            Err(error) => {
                registered.iter().for_each(Disposer::dispose);
                return Err(error.into());
            }
        }
    }
    Ok(registered)
}

/// Registers the built-in tools on the `ToolRuntime` service once it exists, and provides
/// the [`ToolEnvs`] service they look session environments up in (both unwind with the
/// plugin).
#[derive(Debug)]
pub struct BuiltinToolsPlugin;

impl Plugin for BuiltinToolsPlugin {
    const NAME: &'static str = "tools-builtin";
    type Config = BuiltinToolsConfig;

    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<ToolRuntime>()]
    }

    fn apply(ctx: &Context, config: BuiltinToolsConfig) -> Result<(), BoxError> {
        let tools = ctx.require::<ToolRuntime>()?;
        // Checked before anything is provided, so a bad selection leaves nothing behind.
        config.tool_names()?;
        ctx.provide(Arc::new(ToolEnvs::new()))?.forget();
        for disposer in register_builtin_tools(ctx, &tools, &config)? {
            disposer.forget();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn config(value: serde_json::Value) -> BuiltinToolsConfig {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn default_set_leaves_web_fetch_off() {
        assert_eq!(
            config(json!({})).tool_names().unwrap(),
            [
                "bash",
                "read",
                "write",
                "edit",
                "glob",
                "grep",
                "todo_write"
            ]
        );
        assert_eq!(
            config(json!({"web_fetch": {"enabled": true}}))
                .tool_names()
                .unwrap()
                .last(),
            Some(&"web_fetch")
        );
    }

    #[test]
    fn lists_and_flags_select_tools_in_catalog_order() {
        assert_eq!(
            config(json!({"enabled": ["grep", "read"]}))
                .tool_names()
                .unwrap(),
            ["read", "grep"]
        );
        assert_eq!(
            config(json!({"enabled": {"bash": false, "write": false}}))
                .tool_names()
                .unwrap(),
            ["read", "edit", "glob", "grep", "todo_write"]
        );
    }

    #[test]
    fn bad_selections_are_refused_with_clear_messages() {
        let err = config(json!({"enabled": ["bsh"]}))
            .tool_names()
            .unwrap_err();
        assert_eq!(err.code(), "UNKNOWN_BUILTIN_TOOL");
        assert!(err.to_string().contains("known tools: bash, read"));
        let err = config(json!({"enabled": {"web_fetch": true}}))
            .tool_names()
            .unwrap_err();
        assert_eq!(err.code(), "WEB_FETCH_NOT_ENABLED");
        assert!(serde_json::from_value::<BuiltinToolsConfig>(json!({"enabeld": []})).is_err());
    }
}
