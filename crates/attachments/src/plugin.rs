//! [`AttachmentsPlugin`] (row `attachments`): the image store as a kernel service.

use crate::store::{
    ImageLimits, ImageStore, LocalImageStore, DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_IMAGE_DIMENSION,
};
use dsh_kernel::{BoxError, Context, Plugin};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

/// Where the store lives and what it accepts.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachmentsConfig {
    /// The store's directory (the CLI uses `$DSH_HOME/attachments/v1`). Without one the
    /// plugin provides nothing and images stay out of the model's context.
    #[serde(default)]
    pub root: Option<PathBuf>,
    /// The largest encoded image stored (default 20 MiB).
    #[serde(default = "default_max_bytes")]
    pub max_image_bytes: u64,
    /// The largest width or height stored (default 8192 px).
    #[serde(default = "default_max_dimension")]
    pub max_image_dimension: u32,
}

fn default_max_bytes() -> u64 {
    DEFAULT_MAX_IMAGE_BYTES
}

fn default_max_dimension() -> u32 {
    DEFAULT_MAX_IMAGE_DIMENSION
}

impl Default for AttachmentsConfig {
    fn default() -> Self {
        Self {
            root: None,
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
            max_image_dimension: DEFAULT_MAX_IMAGE_DIMENSION,
        }
    }
}

/// Provides a [`LocalImageStore`] as `dyn ImageStore` for as long as its fiber lives.
#[derive(Debug)]
pub struct AttachmentsPlugin;

impl Plugin for AttachmentsPlugin {
    const NAME: &'static str = "attachments";
    type Config = AttachmentsConfig;

    fn apply(ctx: &Context, config: Self::Config) -> Result<(), BoxError> {
        let Some(root) = config.root else {
            return Ok(());
        };
        if config.max_image_bytes == 0 || config.max_image_dimension == 0 {
            return Err("attachments: maxImageBytes and maxImageDimension must be above 0".into());
        }
        let limits = ImageLimits {
            max_image_bytes: config.max_image_bytes,
            max_image_dimension: config.max_image_dimension,
        };
        let store: Arc<dyn ImageStore> = Arc::new(LocalImageStore::new(root, limits));
        ctx.provide::<dyn ImageStore>(store)?.forget();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn provides_the_store_only_with_a_root() {
        let root = Context::root();
        let fiber = root
            .plugin::<AttachmentsPlugin>(AttachmentsConfig::default())
            .unwrap();
        assert!(root.get::<dyn ImageStore>().is_none());
        fiber.dispose();
        let config: AttachmentsConfig =
            serde_json::from_value(json!({"root": "/tmp/x", "maxImageBytes": 10})).unwrap();
        let fiber = root.plugin::<AttachmentsPlugin>(config).unwrap();
        let store = root.get::<dyn ImageStore>().unwrap();
        assert_eq!(store.limits().max_image_bytes, 10);
        fiber.dispose();
        assert!(root.get::<dyn ImageStore>().is_none());
    }
}
