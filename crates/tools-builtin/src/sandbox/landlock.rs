//! The Landlock ruleset that confines a command's writes.
//!
//! Only write-type rights are *handled*, so reads and execution stay unrestricted, exactly as
//! the product promises (the sandbox governs file writes only). The ruleset is created and
//! filled in the parent; the child merely calls `restrict_self`.

use std::path::Path;

use landlock::{
    AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    RulesetStatus, ABI,
};

use super::policy::{SandboxMode, SandboxPolicy, WRITABLE_DEVICES};

/// The ABI whose write rights we handle. V3 adds `Truncate` and V2 `Refer` (cross-directory
/// renames); newer ABIs only add rights that are not file writes (ioctl, unix sockets), which
/// we deliberately leave alone. On an older kernel the crate drops what it cannot enforce.
const TARGET_ABI: ABI = ABI::V3;

/// Builds the ruleset for `policy` (read-only or workspace-write).
pub(crate) fn build_ruleset(policy: &SandboxPolicy) -> Result<RulesetCreated, String> {
    let handled = AccessFs::from_write(TARGET_ABI);
    let file_rights = handled & AccessFs::from_file(TARGET_ABI);
    let mut ruleset = Ruleset::default()
        .handle_access(handled)
        .and_then(Ruleset::create)
        .map_err(|e| format!("creating the Landlock ruleset: {e}"))?;
    for device in WRITABLE_DEVICES {
        // A missing device (no /dev/tty in a container) simply stays unwritable.
        if let Ok(fd) = PathFd::new(device) {
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, file_rights))
                .map_err(|e| format!("allowing {device}: {e}"))?;
        }
    }
    if policy.mode() == SandboxMode::WorkspaceWrite {
        for root in policy.writable_roots() {
            ruleset = add_dir(ruleset, root, handled)?;
        }
    }
    Ok(ruleset)
}

fn add_dir(
    ruleset: RulesetCreated,
    dir: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<RulesetCreated, String> {
    let fd = PathFd::new(dir).map_err(|e| format!("opening {}: {e}", dir.display()))?;
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| format!("allowing {}: {e}", dir.display()))
}

/// Applies `ruleset` to the calling process. Runs in the forked child.
pub(crate) fn restrict_self(ruleset: RulesetCreated) -> std::io::Result<()> {
    match ruleset.restrict_self() {
        Ok(status) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
        // Fail closed: a command must never run believing it is confined when it is not.
        Ok(_) => Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
        Err(_) => Err(std::io::Error::last_os_error()),
    }
}
