//! Reading hook files: shapes, matchers, notices naming file, line and key, trust.

use super::support::HookFiles;
use dsh_hooks::hooks::Subject;
use dsh_hooks::{Dialect, HookEvent, HookSource, Hooks, HooksConfig, SourceScope};

fn load(config: HooksConfig) -> Hooks {
    Hooks::load(config, &[])
}

fn tool<'a>(name: &'a str, alias: Option<&'a str>) -> Subject<'a> {
    Subject {
        name: Some(name),
        claude_alias: alias,
    }
}

#[test]
fn claude_matchers_are_literal_lists_or_regexes_and_know_claude_code_tool_names() {
    let files = HookFiles::new().claude(
        r#"{"hooks":{"PreToolUse":[
            {"matcher":"Bash","hooks":[{"command":"a"}]},
            {"matcher":"Edit|Write","hooks":[{"command":"b"}]},
            {"matcher":"^mcp__fs__.*","hooks":[{"command":"c"}]},
            {"matcher":"*","hooks":[{"command":"d"}]},
            {"hooks":[{"type":"command","command":"e"}]},
            {"matcher":"bas","hooks":[{"command":"f"}]}
        ]}}"#,
    );
    let hooks = load(files.config());
    assert!(hooks.notices().is_empty(), "{:?}", hooks.notices());
    let commands = |subject| -> Vec<String> {
        hooks
            .matching(HookEvent::PreToolUse, subject)
            .iter()
            .flat_map(|g| g.hooks.iter().map(|h| h.command.clone()))
            .collect()
    };
    // `bash` is matched by its Claude Code name; the literal `bas` is not a prefix match.
    assert_eq!(commands(tool("bash", Some("Bash"))), ["a", "d", "e"]);
    assert_eq!(commands(tool("edit", Some("Edit"))), ["b", "d", "e"]);
    assert_eq!(commands(tool("mcp__fs__read", None)), ["c", "d", "e"]);
    // Without the alias (a tool Claude Code does not have) only the dsh name counts.
    assert_eq!(commands(tool("Bashful", None)), ["d", "e"]);
}

#[test]
fn codex_matchers_are_regexes_on_the_dsh_name() {
    let files = HookFiles::new().file(
        "hooks.json",
        Dialect::Codex,
        r#"{"PreToolUse":[{"matcher":"bas","hooks":[{"command":"x","timeoutSec":3}]}],
            "SubagentStart":[{"hooks":[{"command":"ignored"}]}]}"#,
    );
    let hooks = load(files.config());
    assert!(hooks.notices().is_empty());
    assert_eq!(
        hooks
            .matching(HookEvent::PreToolUse, tool("bash", Some("Bash")))
            .len(),
        1
    );
    assert_eq!(
        hooks
            .matching(HookEvent::PreToolUse, tool("Bash", None))
            .len(),
        0
    );
    assert!(!hooks.has(HookEvent::SubagentStart));
    let group = &hooks.groups()[0];
    assert_eq!(
        group.hooks[0].timeout,
        Some(std::time::Duration::from_secs(3))
    );
}

#[test]
fn malformed_json_names_file_and_line_and_the_other_files_still_load() {
    let files = HookFiles::new()
        .file(
            "broken.json",
            Dialect::ClaudeCode,
            "{\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}\n",
        )
        .file(
            "good.json",
            Dialect::ClaudeCode,
            r#"{"hooks":{"Stop":[{"hooks":[{"command":"ok"}]}]}}"#,
        );
    let hooks = load(files.config());
    assert_eq!(hooks.groups().len(), 1);
    let notices: Vec<String> = hooks.notices().iter().map(ToString::to_string).collect();
    let broken = files.path("broken.json");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with(&format!(
            "hooks: {}:3: not valid JSON (column 14)",
            broken.display()
        )),
        "{notices:?}"
    );
}

#[test]
fn a_bad_group_is_named_by_line_and_key_and_only_it_is_dropped() {
    let text = r#"{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"command": "one"}]},
      {"matcher": "(unclosed", "hooks": [{"command": "two"}]},
      {"matcher": "Read", "hooks": [{"type": "http", "url": "x"}, {"command": 7}, {"command": "three", "timeout": "soon"}]}
    ],
    "Notification": [{"matcher": "[", "hooks": [{"command": "unsupported event"}]}],
    "Stop": [{"matcher": "[", "hooks": [{"command": "stop"}]}]
  }
}"#;
    let files = HookFiles::new().claude(text);
    let hooks = load(files.config());
    let commands: Vec<&str> = hooks
        .groups()
        .iter()
        .flat_map(|g| g.hooks.iter().map(|h| h.command.as_str()))
        .collect();
    assert_eq!(commands, ["one", "three", "stop"]);
    let notices: Vec<(Option<usize>, Option<&str>)> = hooks
        .notices()
        .iter()
        .map(|n| (n.line, n.key.as_deref()))
        .collect();
    assert_eq!(
        notices,
        [
            (Some(5), Some("hooks.PreToolUse[1].matcher")),
            (Some(6), Some("hooks.PreToolUse[2].hooks[0].type")),
            (Some(4), Some("hooks.PreToolUse[2].hooks[1].command")),
            (Some(6), Some("hooks.PreToolUse[2].hooks[2].timeout")),
        ]
    );
    assert!(hooks.notices()[0].message.starts_with("invalid regex"));
}

#[test]
fn project_files_load_only_in_a_trusted_workspace() {
    let files = HookFiles::new();
    let path = files.path("project.json");
    std::fs::write(&path, r#"{"hooks":{"Stop":[{"hooks":[{"command":"p"}]}]}}"#).unwrap();
    let mut config = files.config();
    config.sources.push(HookSource {
        path: path.clone(),
        dialect: Dialect::ClaudeCode,
        scope: SourceScope::Project,
    });
    config.sources.push(HookSource {
        path: files.path("missing.json"),
        dialect: Dialect::ClaudeCode,
        scope: SourceScope::Local,
    });
    let untrusted = load(config.clone());
    assert!(!untrusted.has(HookEvent::Stop));
    assert_eq!(untrusted.notices().len(), 1);
    assert_eq!(untrusted.notices()[0].path, path);
    assert!(untrusted.notices()[0].message.contains("not trusted"));

    config.project_trusted = true;
    let trusted = load(config);
    assert!(trusted.has(HookEvent::Stop));
    assert!(trusted.notices().is_empty());
}
