//! Runs the built `dsh` binary with a clean environment and a temporary `$DSH_HOME`.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

fn dsh(home: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dsh"));
    command.env_clear().env("DSH_HOME", home).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A line of `config show` output with its padding squeezed.
fn shown_line(stdout: &str, prefix: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{stdout}"))
}

#[test]
fn version_needs_no_home_and_no_config() {
    // No HOME and no DSH_HOME, so loading configuration would fail: --version never does.
    let output = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .env_clear()
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        text(&output.stdout),
        format!("dsh {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(text(&output.stderr), "");
}

#[test]
fn config_show_reports_each_value_with_its_source() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("settings.toml"),
        "[model]\nmodel = \"deepseek-v4-pro\"\n\n[sandbox]\nmode = \"read-only\"\n",
    )
    .unwrap();
    let output = dsh(
        home.path(),
        &[
            ("DSH_PROVIDER", "openai-compatible"),
            ("DEEPSEEK_API_KEY", "sk-do-not-print"),
        ],
        &["config", "show", "--approval", "untrusted"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(!stdout.contains("sk-do-not-print"));
    assert_eq!(
        shown_line(&stdout, "home = "),
        format!(
            "home = {:?} # env DSH_HOME",
            home.path().display().to_string()
        )
    );
    assert_eq!(
        shown_line(&stdout, "provider = "),
        "provider = \"openai-compatible\" # env DSH_PROVIDER"
    );
    assert_eq!(
        shown_line(&stdout, "model = "),
        "model = \"deepseek-v4-pro\" # settings.toml:2"
    );
    assert_eq!(
        shown_line(&stdout, "mode = "),
        "mode = \"read-only\" # settings.toml:5"
    );
    assert_eq!(
        shown_line(&stdout, "policy = "),
        "policy = \"untrusted\" # flag --approval"
    );
    assert_eq!(
        shown_line(&stdout, "api_key = "),
        "api_key = set (from env DEEPSEEK_API_KEY)"
    );
    assert_eq!(text(&output.stderr), "");
}

#[test]
fn config_show_json_is_machine_readable() {
    let home = tempfile::tempdir().unwrap();
    let output = dsh(
        home.path(),
        &[
            ("DSH_PERMISSION_MODE", "danger-full-access"),
            ("OPENAI_API_KEY", "sk-hidden"),
        ],
        &["config", "show", "--json", "--model", "deepseek-v4-pro"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(!stdout.contains("sk-hidden"));
    let value: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        value["model"]["model"],
        json!({"value": "deepseek-v4-pro", "source": "flag --model"})
    );
    assert_eq!(
        value["model"]["provider"],
        json!({"value": "deepseek-official", "source": "default"})
    );
    assert_eq!(
        value["sandbox"]["mode"],
        json!({"value": "danger-full-access", "source": "env DSH_PERMISSION_MODE"})
    );
    assert_eq!(
        value["approval"]["policy"],
        json!({"value": "never", "source": "env DSH_PERMISSION_MODE"})
    );
    assert_eq!(
        value["providers"][0]["api_key"],
        json!({"status": "not set", "env": "DEEPSEEK_API_KEY"})
    );
    assert_eq!(
        value["providers"][1]["api_key"],
        json!({"status": "set", "env": "OPENAI_API_KEY"})
    );
    assert_eq!(value["settings_file"]["present"], json!(false));
    let ids: Vec<&str> = value["composition"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "sessions",
            "session-persistence-jsonl",
            "session-checkpoint-policy",
            "attachments",
            "llm",
            "llm-openai",
            "llm-retry",
            "compaction",
            "system-prompt",
            "tools",
            "tools-builtin",
            "approval",
            "jobs",
            "hooks",
            "user-questions",
            "plan-mode",
            "session-title",
            "skills",
            "mcp",
            "memory",
            "goal",
            "repeat-tool-reminder",
            "agents",
            "agent-loop",
            "subagents"
        ]
    );
}

#[test]
fn a_broken_settings_file_stops_with_status_2_and_says_where() {
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join("settings.toml");
    std::fs::write(
        &settings,
        "[model]\nmodel = \"m\"\n\n[approval]\npolcy = \"never\"\n",
    )
    .unwrap();
    let output = dsh(home.path(), &[], &["config", "show"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(text(&output.stdout), "");
    assert_eq!(
        text(&output.stderr),
        format!(
            "dsh: error: {}:5: unknown key `approval.polcy`; did you mean `policy`?\n",
            settings.display()
        )
    );
}

#[test]
fn a_bad_environment_value_stops_with_status_2() {
    let home = tempfile::tempdir().unwrap();
    let output = dsh(
        home.path(),
        &[("DSH_PERMISSION_MODE", "yolo")],
        &["config", "show"],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "dsh: error: env DSH_PERMISSION_MODE: `sandbox.mode`: expected one of \"read-only\", \
         \"workspace-write\", \"danger-full-access\", found \"yolo\"\n"
    );
}

#[test]
fn commands_that_are_not_built_do_not_exist() {
    let home = tempfile::tempdir().unwrap();
    let output = dsh(home.path(), &[], &["serve"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("unrecognized subcommand"));
}
