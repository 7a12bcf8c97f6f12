//! `dsh config ...`

use crate::config::{load, render_json, render_text, Env, Overrides};
use std::io::{ErrorKind, Write};

/// `dsh config show [--json]`.
pub(super) fn show(
    env: &dyn Env,
    flags: &Overrides,
    json: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let settings = load(env, flags)?;
    let text = if json {
        let mut text = serde_json::to_string_pretty(&render_json(&settings))?;
        text.push('\n');
        text
    } else {
        render_text(&settings)
    };
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // A closed pipe (`dsh config show | head`) is the reader's choice, not a failure.
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
