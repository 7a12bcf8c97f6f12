//! Working modes that steer long, autonomous work, each a plugin on the loop's seams.
//!
//! - [`goal`]: goals that run round after round until done (row `goal`).
//! - [`guard`]: the repeat-tool-call reminder (row `repeat-tool-reminder`).

pub mod goal;
pub mod guard;

pub use goal::{GoalPlugin, Goals};
pub use guard::RepeatToolReminderPlugin;
