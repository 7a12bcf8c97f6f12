//! Durable image attachments: the log records a small reference, the bytes live in a
//! content-addressed store beside the sessions (`$DSH_HOME/attachments/v1`).
//!
//! | module | what |
//! |---|---|
//! | [`media`] | [`ImageMediaType`] (PNG, JPEG, WebP, GIF) and [`probe`]: the type and size read from the bytes |
//! | [`reference`] | [`ImageRef`], the original's `ImageAttachmentRef`: what an `image` content block records |
//! | [`store`] | [`ImageStore`], the seam, and [`LocalImageStore`]: fsynced, content-addressed files |
//! | [`text`] | the texts a model or a person sees instead of an image that cannot be shown |
//! | [`plugin`] | [`AttachmentsPlugin`] (row `attachments`): provides the store as `dyn ImageStore` |
//!
//! An image is stored before the event that references it is appended (the store syncs the
//! file and its directories before `save_image` returns), so a log never names an image that a
//! crash lost. References are addresses of content (`sha256:<hex>`): a resumed or forked
//! session, a sub-agent seeded from its parent, or a compacted history all find the same bytes
//! without copying, and saving the same image twice writes nothing the second time.

mod error;
pub mod media;
pub mod plugin;
pub mod reference;
pub mod store;
pub mod text;

pub use error::AttachmentError;
pub use media::{probe, ImageMediaType, Probed};
pub use plugin::{AttachmentsConfig, AttachmentsPlugin};
pub use reference::{image_refs, ImageRef};
pub use store::{ImageLimits, ImageStore, LocalImageStore, SaveImage};
