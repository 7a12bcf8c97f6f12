//! Mounting the tool runtime as a service from a composition.

use crate::registry::ToolRuntime;
use dsh_kernel::{BoxError, Context, Plugin};
use serde::Deserialize;

/// Provides a [`ToolRuntime`] as the `ToolRuntime` service (`ctx.get::<ToolRuntime>()`).
#[derive(Debug)]
pub struct ToolsPlugin;

/// The plugin has no settings yet; unknown fields are refused so typos surface.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {}

impl Plugin for ToolsPlugin {
    const NAME: &'static str = "tools";
    type Config = ToolsConfig;

    fn apply(ctx: &Context, _config: ToolsConfig) -> Result<(), BoxError> {
        ctx.provide(ToolRuntime::new(ctx))?.forget();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provides_the_runtime_until_unloaded() {
        let root = Context::root();
        let fiber = root.plugin::<ToolsPlugin>(ToolsConfig::default()).unwrap();
        assert!(root.get::<ToolRuntime>().is_some());
        fiber.dispose();
        assert!(root.get::<ToolRuntime>().is_none());
    }
}
