//! The sandbox against metadata changes and hard links, probed the way an attacker would:
//! every probe in every mode, inside and outside the workspace and in `.git`, as root and as
//! an unprivileged user.
//!
//! Running as root, the unprivileged half re-executes this test binary as uid/gid 65534 with
//! only that test selected, so the sandbox is built by an unprivileged parent exactly as a
//! normal user's `dsh` builds it.

use std::fmt::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};

use dsh_tools_builtin::sandbox::{Enforcement, SandboxProbe};
use dsh_tools_builtin::{Bash, BashArgs, SandboxMode, ToolOutput};
use tokio_util::sync::CancellationToken;

use super::support::Fixture;

/// Set in the re-executed child: run the probes here, as whoever we are.
const CHILD_ENV: &str = "DSH_TEST_SANDBOX_PROBE_CHILD";
const NOBODY: u32 = 65534;

/// A metadata-or-content change and the shell that attempts it on the probe files in `$d`.
struct Probe {
    name: &'static str,
    script: &'static str,
}

const PROBES: &[Probe] = &[
    Probe {
        name: "chmod",
        script: r#"chmod 600 "$d/chmod""#,
    },
    Probe {
        name: "touch -d",
        script: r#"touch -d 2001-02-03T04:05:06 "$d/touch""#,
    },
    Probe {
        name: "chown to own uid",
        script: r#"chown "$(id -u):$(id -g)" "$d/chown""#,
    },
    Probe {
        name: "truncate",
        script: r#"truncate -s 0 "$d/truncate""#,
    },
    Probe {
        name: "mkdir",
        script: r#"mkdir "$d/newdir""#,
    },
    Probe {
        name: "mv",
        script: r#"mv "$d/mv" "$d/mv.moved""#,
    },
    Probe {
        name: "ln -s",
        script: r#"ln -s chmod "$d/symlink""#,
    },
    Probe {
        name: "rm",
        script: r#"rm "$d/rm""#,
    },
];

/// Probes that need a tool which may not be installed, or a file system that may not
/// support them; each runs only where it works unconfined first.
const OPTIONAL_PROBES: &[Probe] = &[
    Probe {
        name: "setfattr",
        script: r#"setfattr -n user.dsh -v 1 "$d/xattr""#,
    },
    Probe {
        name: "setfacl",
        script: r#"setfacl -m "u:$(id -u):r" "$d/acl""#,
    },
];

const FILES: &[&str] = &[
    "chmod", "touch", "chown", "truncate", "mv", "rm", "xattr", "acl",
];

/// Creates the files the probes act on.
fn lay_out(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for file in FILES {
        std::fs::write(dir.join(file), "data\n").unwrap();
        std::fs::set_permissions(dir.join(file), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

/// Everything the probes could change, as one comparable value.
fn snapshot(dir: &Path) -> Vec<String> {
    let mut entries: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            format!(
                "{} mode={:o} size={} mtime={} uid={} gid={} link={:?}",
                path.file_name().unwrap().to_string_lossy(),
                meta.mode(),
                meta.size(),
                meta.mtime(),
                meta.uid(),
                meta.gid(),
                std::fs::read_link(&path).ok()
            )
        })
        .collect();
    entries.sort();
    entries
}

/// Whether an optional probe works on a scratch copy in `dir`'s file system, unconfined.
fn works_unconfined(probe: &Probe, dir: &Path) -> bool {
    let scratch = dir.join("scratch-probe");
    lay_out(&scratch);
    let ok = std::process::Command::new("/bin/bash")
        .arg("-c")
        .arg(format!(
            "d={}; {} 2>/dev/null",
            scratch.display(),
            probe.script
        ))
        .status()
        .is_ok_and(|s| s.success());
    std::fs::remove_dir_all(&scratch).unwrap();
    if !ok {
        eprintln!(
            "note: `{}` probe skipped: it fails here even unconfined",
            probe.name
        );
    }
    ok
}

/// One shell script that runs every probe in every location and prints one line each, plus
/// one on the host's devices when `devices` is set (never unconfined).
fn script(locations: &[(&str, PathBuf)], probes: &[&Probe], devices: bool) -> String {
    let mut script = String::new();
    for (label, dir) in locations {
        writeln!(script, "d='{}'", dir.display()).unwrap();
        for probe in probes {
            writeln!(
                script,
                "if ({}) >/dev/null 2>&1; then echo '{label}: {}: changed'; else echo '{label}: {}: refused'; fi",
                probe.script, probe.name, probe.name
            )
            .unwrap();
        }
    }
    // The host's devices: /dev is a mount of its own, and chmod to the mode it already has
    // is harmless should the sandbox ever let it through.
    if devices {
        script.push_str(
            "if chmod 666 /dev/null 2>/dev/null; then echo '/dev/null: chmod: changed'; \
         else echo '/dev/null: chmod: refused'; fi\n",
        );
    }
    script
}

async fn sh(fx: &Fixture, command: &str) -> Result<ToolOutput, dsh_tools_builtin::ToolError> {
    let args = BashArgs {
        command: command.into(),
        description: String::new(),
        timeout_ms: None,
        workdir: None,
        run_in_background: false,
    };
    Bash.run(args, &fx.env, CancellationToken::new()).await
}

/// Runs the whole matrix as the current user and checks both what the commands report and
/// what actually happened on disk.
async fn metadata_matrix() {
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let fx = Fixture::mode(mode);
        let probe = SandboxProbe::current();
        if probe.enforcement(mode) != Enforcement::Full {
            // No namespace for this user: the mode must fail closed, not run half-confined.
            let err = sh(&fx, "true").await.unwrap_err();
            assert_eq!(err.code(), "SANDBOX_UNAVAILABLE", "{err}");
            eprintln!("note: {mode} is unavailable here, and bash refused as it must: {probe:?}");
            continue;
        }
        let locations = [
            ("workspace", fx.ws().join("probe")),
            ("temp dir", fx.env.temp_dir().join("probe")),
            (".git", fx.ws().join(".git/probe")),
            ("outside", fx.outside().join("outside")),
        ];
        for (_, dir) in &locations {
            lay_out(dir);
        }
        let mut probes: Vec<&Probe> = PROBES.iter().collect();
        probes.extend(
            OPTIONAL_PROBES
                .iter()
                .filter(|p| works_unconfined(p, &fx.outside())),
        );
        let before: Vec<Vec<String>> = locations.iter().map(|(_, d)| snapshot(d)).collect();

        let out = sh(&fx, &script(&locations, &probes, true)).await.unwrap();

        let writable = |label: &str| {
            mode == SandboxMode::WorkspaceWrite && (label == "workspace" || label == "temp dir")
        };
        let mut expected = String::new();
        for (label, _) in &locations {
            let outcome = if writable(label) {
                "changed"
            } else {
                "refused"
            };
            for probe in &probes {
                writeln!(expected, "{label}: {}: {outcome}", probe.name).unwrap();
            }
        }
        expected.push_str("/dev/null: chmod: refused\n");
        assert_eq!(out.content, expected, "{mode}");
        assert_eq!(out.metadata["sandbox"], "landlock+namespace");
        for ((label, dir), before) in locations.iter().zip(&before) {
            let after = snapshot(dir);
            if writable(label) {
                assert_ne!(&after, before, "{mode}: {label} should have changed");
            } else {
                assert_eq!(&after, before, "{mode}: {label} must not change");
            }
        }
    }
    // Without the sandbox the very same probes change the outside: they are not vacuous.
    let fx = Fixture::mode(SandboxMode::DangerFullAccess);
    let outside = fx.outside().join("outside");
    lay_out(&outside);
    let probes: Vec<&Probe> = PROBES.iter().collect();
    let out = sh(&fx, &script(&[("outside", outside)], &probes, false))
        .await
        .unwrap();
    let expected: String = PROBES
        .iter()
        .map(|p| format!("outside: {}: changed\n", p.name))
        .collect();
    assert_eq!(out.content, expected);
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[tokio::test]
async fn metadata_probes_as_root() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    if !is_root() {
        eprintln!("skipping: not running as root (the unprivileged test covers this user)");
        return;
    }
    metadata_matrix().await;
}

#[tokio::test]
async fn metadata_probes_as_an_unprivileged_user() {
    if std::env::var_os(CHILD_ENV).is_some() || !is_root() {
        assert!(!is_root(), "the probe child must not run as root");
        metadata_matrix().await;
        return;
    }
    // Root: drop to nobody in a fresh process of this binary that runs only this test.
    let tmp = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(tmp.path(), Some(NOBODY), Some(NOBODY)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let name = "suite::sandbox_probes::metadata_probes_as_an_unprivileged_user";
    let spawned = std::process::Command::new(&exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("TMPDIR", tmp.path())
        .current_dir(tmp.path())
        .uid(NOBODY)
        .gid(NOBODY)
        .output();
    let output = match spawned {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            eprintln!(
                "skipping: uid {NOBODY} cannot execute {} ({e})",
                exe.display()
            );
            return;
        }
        other => other.unwrap(),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprint!("{stderr}");
    assert!(
        output.status.success(),
        "the unprivileged probes failed:\n{stdout}\n{stderr}"
    );
    // A renamed test would otherwise pass by running nothing.
    assert!(stdout.contains("1 passed"), "{stdout}");
}

#[tokio::test]
async fn a_hard_link_to_a_file_outside_is_the_known_limit_for_bash() {
    if SandboxProbe::current().enforcement(SandboxMode::WorkspaceWrite) != Enforcement::Full {
        eprintln!("skipping: workspace-write cannot be enforced here");
        return;
    }
    let fx = Fixture::new();
    let secret = fx.outside().join("secret");
    std::fs::write(&secret, "original\n").unwrap();
    std::fs::hard_link(&secret, fx.ws().join("alias")).unwrap();
    let other = fx.outside().join("other");
    std::fs::write(&other, "other\n").unwrap();

    // A link made before the session is the same file: bash writes through it. No Linux
    // sandbox short of a copy can tell the two names apart; docs/safety.md says so.
    let out = sh(&fx, "echo changed > alias && chmod 600 alias && echo wrote")
        .await
        .unwrap();
    assert_eq!(out.content, "wrote\n");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "changed\n");
    assert_eq!(std::fs::metadata(&secret).unwrap().mode() & 0o777, 0o600);

    // But no new link to a file outside can be made from inside.
    let out = sh(&fx, &format!("ln {} newlink", other.display()))
        .await
        .unwrap();
    assert_eq!(out.metadata["exitCode"], 1, "{}", out.content);
    assert!(!fx.ws().join("newlink").exists());
    assert_eq!(std::fs::metadata(&other).unwrap().nlink(), 1);

    // Read-only mode refuses the write through the old link like any other.
    if SandboxProbe::current().enforcement(SandboxMode::ReadOnly) == Enforcement::Full {
        let fx = Fixture::mode(SandboxMode::ReadOnly);
        let secret = fx.outside().join("secret");
        std::fs::write(&secret, "original\n").unwrap();
        std::fs::hard_link(&secret, fx.ws().join("alias")).unwrap();
        let out = sh(&fx, "echo changed > alias").await.unwrap();
        assert_eq!(out.metadata["sandboxDenied"], true, "{}", out.content);
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "original\n");
    }
}

/// Clears the read-only flag of each path's mounts with `mount_setattr`, the one mount call
/// Landlock has no hook for; prints what happened to each.
const CLEAR_READ_ONLY_PL: &str = r#"
my $attr = pack("QQQQ", 0, 1, 0, 0); # attr_set 0, attr_clr MOUNT_ATTR_RDONLY
for my $path (@ARGV) {
    my $r = syscall(SYS_MOUNT_SETATTR, -100, $path, 0x8000, $attr, 32); # AT_FDCWD, AT_RECURSIVE
    print $r == 0 ? "cleared $path\n" : "refused $path\n";
}
"#;

#[tokio::test]
async fn commands_cannot_undo_their_read_only_mounts() {
    if SandboxProbe::current().enforcement(SandboxMode::WorkspaceWrite) != Enforcement::Full {
        eprintln!("skipping: workspace-write cannot be enforced here");
        return;
    }
    let has_perl = std::process::Command::new("perl")
        .arg("-e1")
        .status()
        .is_ok_and(|s| s.success());
    let fx = Fixture::new();
    let config = fx.write(".git/config", "[core]\n");
    let mode_before = std::fs::metadata(&config).unwrap().mode();
    let outside = fx.outside();
    let clear = fx.env.temp_dir().join("clear.pl");
    std::fs::create_dir_all(fx.env.temp_dir()).unwrap();
    std::fs::write(
        &clear,
        CLEAR_READ_ONLY_PL.replace("SYS_MOUNT_SETATTR", &libc::SYS_mount_setattr.to_string()),
    )
    .unwrap();
    let attempt = |tag: &str| {
        format!(
            "echo evil >> .git/config; chmod 600 .git/config; echo x > {}/escaped-{tag}",
            outside.display()
        )
    };
    let mut script = String::new();
    if has_perl {
        // As root in the namespace this would work, were CAP_SYS_ADMIN not dropped.
        writeln!(
            script,
            "perl {} .git /; {}",
            clear.display(),
            attempt("direct")
        )
        .unwrap();
        // A nested namespace holds every capability, but over mounts the kernel locked.
        writeln!(
            script,
            "unshare --user --mount --propagation unchanged sh -c 'perl \"$0\" .git /; {}' {}",
            attempt("nested"),
            clear.display()
        )
        .unwrap();
    } else {
        eprintln!("note: perl is not installed; the mount_setattr attempts are skipped");
    }
    // The old mount API and unmounting: Landlock refuses both.
    writeln!(
        script,
        "mount -o remount,rw,bind .git; umount -l .git; {}",
        attempt("old-api")
    )
    .unwrap();
    let out = sh(&fx, &script).await.unwrap();
    assert!(!out.content.contains("cleared"), "{}", out.content);
    if has_perl {
        assert!(out.content.contains("refused .git"), "{}", out.content);
    }
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "[core]\n");
    assert_eq!(std::fs::metadata(&config).unwrap().mode(), mode_before);
    for tag in ["direct", "nested", "old-api"] {
        assert!(!outside.join(format!("escaped-{tag}")).exists(), "{tag}");
    }
}
