//! Skills and custom slash commands: prompts kept in files, never code.
//!
//! - [`scan`]: the roots ([`Root`]), nearest first, and precedence between them;
//! - [`skill`] and [`frontmatter`]: the `SKILL.md` / flat `.md` format and its rules;
//! - [`command`]: `.dsh/commands` / `.claude/commands` prompt files and `$ARGUMENTS`;
//! - [`render`]: the catalog section and a skill's content as the model reads them;
//! - [`service`]: the [`Skills`] kernel service (rescans on change, per-session records);
//! - [`tool`]: the `skill` tool;
//! - [`gesture`]: the pre-step pass (command expansion, `/name` gesture);
//! - [`events`]: the `skills/catalog` log record ([`EVENT_TYPES`]);
//! - [`plugin`]: the `skills` plugin row.
//!
//! Nothing here runs a file: a skill's bundled scripts are only ever run by the model through
//! the ordinary tools, under the session's sandbox and approval policy. That is why skills
//! and commands load without workspace trust.

pub mod command;
pub mod events;
mod files;
pub mod frontmatter;
pub mod gesture;
mod notice;
pub mod plugin;
pub mod render;
pub mod scan;
pub mod service;
pub mod skill;
pub mod tool;

pub use command::{expand, split_arguments, Command};
pub use events::{SkillCatalog, EVENT_TYPES};
pub use files::{MAX_FILE_BYTES, MAX_ROOT_ENTRIES};
pub use notice::Notice;
pub use plugin::{SkillsConfig, SkillsPlugin, CATALOG_SECTION};
pub use render::{catalog_section, skill_content, CatalogEntry};
pub use scan::{Root, Scan};
pub use service::{split_command_line, Expansion, Skills};
pub use skill::Skill;
pub use tool::{SkillTool, SkillValue, SKILL_TOOL};
