//! `dsh trust [DIR]`, `dsh trust --revoke DIR`, `dsh trust --list`.

use super::exit;
use crate::config::{resolve_home, Env, Overrides};
use crate::trust::{self, ProjectConfig};
use std::io::Write;
use std::path::Path;

pub(super) fn trust_command(
    dir: &Path,
    revoke: bool,
    list: bool,
    env: &dyn Env,
    flags: &Overrides,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let home = resolve_home(env, flags)?.value;
    if list {
        let dirs = trust::trusted_dirs(&home)?;
        if dirs.is_empty() {
            writeln!(out, "no trusted workspaces")?;
        }
        for dir in dirs {
            writeln!(out, "{}", dir.display())?;
        }
        return Ok(exit::SUCCESS);
    }
    if revoke {
        match trust::revoke(&home, dir)? {
            Some(path) => writeln!(
                out,
                "revoked trust in {}: its project files are ignored again",
                path.display()
            )?,
            None => writeln!(out, "{} was not trusted", dir.display())?,
        }
        return Ok(exit::SUCCESS);
    }
    let (path, new) = trust::grant(&home, dir)?;
    let project = ProjectConfig::scan(&path, env);
    if new {
        writeln!(out, "trusted {}", path.display())?;
    } else {
        writeln!(out, "{} was already trusted", path.display())?;
    }
    if project.is_empty() {
        writeln!(
            out,
            "it has no .mcp.json or .claude/settings*.json hooks yet; they will load when added"
        )?;
    } else {
        writeln!(out, "now enabled: {}", project.file_names(&path).join(", "))?;
        for line in project.would_run() {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(exit::SUCCESS)
}
