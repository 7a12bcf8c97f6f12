//! The plugin that provides the [`LlmRuntime`] service.

use crate::runtime::LlmRuntime;
use dsh_kernel::{BoxError, Context, Plugin};
use serde::Deserialize;

/// Provides [`LlmRuntime`] for as long as the plugin's fiber lives; adapter plugins require
/// it and register their routes on it.
#[derive(Debug)]
pub struct LlmPlugin;

/// The runtime has no settings yet; unknown fields are refused so typos surface.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmPluginConfig {}

impl Plugin for LlmPlugin {
    const NAME: &'static str = "llm";
    type Config = LlmPluginConfig;

    fn apply(ctx: &Context, _config: Self::Config) -> Result<(), BoxError> {
        LlmRuntime::install(ctx)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provides_the_runtime_until_unloaded() {
        let root = Context::root();
        let fiber = root
            .plugin::<LlmPlugin>(LlmPluginConfig::default())
            .unwrap();
        assert!(root.get::<LlmRuntime>().is_some());
        fiber.dispose();
        assert!(root.get::<LlmRuntime>().is_none());
    }
}
