//! `dsh` without a command outside a terminal: help on stderr, usage status, nothing booted.

use std::process::{Command, Stdio};

#[test]
fn bare_dsh_off_a_terminal_prints_help_and_exits_2() {
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .env_clear()
        .env("DSH_HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("An LLM agent harness for coding\n\nUsage: dsh [OPTIONS] [COMMAND]\n"),
        "{stderr}"
    );
    // Nothing was booted, so nothing was written.
    assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0);
}
