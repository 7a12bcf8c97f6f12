use super::*;
use dsh_tools_builtin::approval::{ApprovalRule, RuleAction};
use serde_json::json;
use std::path::Path;

#[test]
fn a_valid_file_loads_every_section() {
    let settings = load_with(VALID, &[("LOCAL_KEY", "x")], &Overrides::default()).unwrap();
    let file = |line| Source::File { line };
    assert_eq!(
        settings.model.provider,
        Sourced::new("local".to_owned(), file(3))
    );
    assert_eq!(
        settings.model.model,
        Sourced::new("qwen3-coder".to_owned(), file(4))
    );

    let local = settings.active_provider().unwrap();
    assert_eq!(local.route, "local");
    assert_eq!(local.defined, file(6));
    assert_eq!(local.base_url.value, "http://127.0.0.1:8080/v1");
    assert_eq!(
        local.api_key,
        ApiKeyStatus::Set {
            var: "LOCAL_KEY".into()
        }
    );
    assert_eq!(local.headers["X-Title"].value.expose(), "dsh");
    assert_eq!(
        local.compat.max_tokens_field,
        Sourced::new(MaxTokensField::MaxCompletionTokens, file(10))
    );
    assert_eq!(local.compat.send_thinking, Sourced::default_value(false));
    assert_eq!(
        local.compat.replay_reasoning.value,
        ReasoningReplay::ToolCallTurns
    );
    assert_eq!(
        local.models,
        [Sourced::new(
            ModelEntry {
                id: "qwen3-coder".into(),
                context_window: Some(131_072),
                context_window_source: None,
                max_tokens: Some(8192),
                reasoning_efforts: Some(vec!["low".into(), "high".into()]),
                default_effort: Some("low".into()),
                input: Some(vec![Modality::Text, Modality::Image]),
            },
            file(12)
        )]
    );
    let deepseek = settings.provider(DEEPSEEK_ROUTE).unwrap();
    assert_eq!(
        deepseek.base_url,
        Sourced::new("https://gateway.example/deepseek".to_owned(), file(21))
    );
    assert!(deepseek.models.iter().all(|m| m.source == Source::Default));

    assert_eq!(
        settings.approval.policy,
        Sourced::new(ApprovalPolicy::Ask, file(24))
    );
    assert_eq!(settings.approval.rules.len(), 2);
    assert_eq!(settings.approval.rules[0].source, file(26));
    let rules: Vec<ApprovalRule> = settings
        .approval
        .rules
        .iter()
        .map(|r| r.value.clone())
        .collect();
    assert_eq!(
        rules,
        [
            ApprovalRule::command_prefix(RuleAction::Allow, "bash", "cargo test").unwrap(),
            ApprovalRule::path_glob(RuleAction::Deny, "write", "secrets/**").unwrap(),
        ]
    );

    assert_eq!(
        settings.sandbox.mode,
        Sourced::new(SandboxMode::ReadOnly, file(31))
    );
    assert!(!settings.tools.is_enabled("bash"));
    assert!(settings.tools.is_enabled("web_fetch"));
    assert!(settings.tools.is_enabled("read"));
    assert_eq!(
        settings.tools.web_fetch_allow_private,
        Sourced::new(true, file(38))
    );

    let rows: Vec<_> = settings
        .composition
        .rows
        .iter()
        .map(|r| (r.id.as_str(), r.plugin.as_str(), r.disabled))
        .collect();
    assert_eq!(
        rows,
        [
            ("sessions", "sessions", false),
            (
                "session-persistence-jsonl",
                "session-persistence-jsonl",
                false
            ),
            (
                "session-checkpoint-policy",
                "session-checkpoint-policy",
                false
            ),
            ("attachments", "attachments", false),
            ("llm", "llm", false),
            ("llm-openai", "llm-openai", false),
            ("llm-retry", "llm-retry", false),
            ("compaction", "compaction", false),
            ("system-prompt", "system-prompt", false),
            ("tools", "tools", false),
            ("tools-builtin", "tools-builtin", false),
            ("approval", "approval", false),
            ("jobs", "jobs", false),
            ("hooks", "hooks", false),
            ("user-questions", "user-questions", false),
            ("plan-mode", "plan-mode", false),
            ("session-title", "session-title", false),
            ("skills", "skills", false),
            ("mcp", "mcp", false),
            ("memory", "memory", false),
            ("goal", "goal", false),
            ("repeat-tool-reminder", "repeat-tool-reminder", false),
            ("agents", "agents", false),
            ("agent-loop", "agent-loop", false),
            ("subagents", "subagents", false),
            ("audit", "audit-log", true),
        ]
    );
    assert_eq!(
        settings.composition.rows[9].config,
        json!({"max_parallel": 4})
    );
    assert_eq!(settings.row_sources["tools"], file(41));
    assert_eq!(settings.row_sources["audit"], file(45));
    assert_eq!(settings.row_sources["sessions"], Source::Default);
}

#[test]
fn no_file_means_defaults() {
    let home = home_with(None);
    let settings = load(&env_of(home.path(), &[]), &Overrides::default()).unwrap();
    assert!(!settings.settings_present);
    assert_eq!(
        settings.home,
        Sourced::new(home.path().to_path_buf(), Source::Env { var: "DSH_HOME" })
    );
    assert_eq!(
        settings.model.provider,
        Sourced::default_value(DEEPSEEK_ROUTE.to_owned())
    );
    assert_eq!(
        settings.model.model,
        Sourced::default_value(DEFAULT_MODEL.to_owned())
    );
    assert_eq!(
        settings.sandbox.mode,
        Sourced::default_value(SandboxMode::WorkspaceWrite)
    );
    assert_eq!(
        settings.approval.policy,
        Sourced::default_value(ApprovalPolicy::Ask)
    );
    assert!(!settings.tools.is_enabled("web_fetch"));
    assert_eq!(settings.composition, default_composition());
    let deepseek = settings.provider(DEEPSEEK_ROUTE).unwrap();
    assert_eq!(
        deepseek.api_key,
        ApiKeyStatus::NotSet {
            var: "DEEPSEEK_API_KEY".into()
        }
    );
}

#[test]
fn home_defaults_to_dot_dsh_under_home() {
    let env: [(&str, &str); 1] = [("HOME", "/home/someone")];
    assert_eq!(
        resolve_home(&env, &Overrides::default()).unwrap(),
        Sourced::default_value(Path::new("/home/someone/.dsh").to_path_buf())
    );
    let empty: [(&str, &str); 0] = [];
    assert_eq!(
        resolve_home(&empty, &Overrides::default())
            .unwrap_err()
            .code(),
        "NO_HOME"
    );
    let flags = Overrides {
        home: Some("/x".into()),
        ..Overrides::default()
    };
    assert_eq!(
        resolve_home(&env, &flags).unwrap().source,
        Source::Flag { flag: "--home" }
    );
}

#[test]
fn precedence_is_default_then_file_then_env_then_flag() {
    let file = "[model]\nmodel = \"from-file\"\n";
    let model = |vars: &[(&str, &str)], flag: Option<&str>| {
        let flags = Overrides {
            model: flag.map(String::from),
            ..Overrides::default()
        };
        load_with(file, vars, &flags).unwrap().model.model
    };
    assert_eq!(
        model(&[], None),
        Sourced::new("from-file".to_owned(), Source::File { line: 2 })
    );
    assert_eq!(
        model(&[("DSH_MODEL", "from-env")], None),
        Sourced::new("from-env".to_owned(), Source::Env { var: "DSH_MODEL" })
    );
    assert_eq!(
        model(&[("DSH_MODEL", "from-env")], Some("from-flag")),
        Sourced::new("from-flag".to_owned(), Source::Flag { flag: "--model" })
    );
    // An empty variable counts as unset.
    assert_eq!(
        model(&[("DSH_MODEL", "")], None).source,
        Source::File { line: 2 }
    );

    let home = home_with(None);
    let settings = load(&env_of(home.path(), &[]), &Overrides::default()).unwrap();
    assert_eq!(settings.model.model.source, Source::Default);
}

#[test]
fn base_urls_follow_env_over_file() {
    let file = "[providers.deepseek-official]\nbase_url = \"https://file.example\"\n";
    let settings = load_with(
        file,
        &[
            ("DEEPSEEK_BASE_URL", "http://127.0.0.1:9/v1"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:7"),
        ],
        &Overrides::default(),
    )
    .unwrap();
    let url = |route| settings.provider(route).unwrap().base_url.clone();
    assert_eq!(
        url(DEEPSEEK_ROUTE),
        Sourced::new(
            "http://127.0.0.1:9/v1".to_owned(),
            Source::Env {
                var: "DEEPSEEK_BASE_URL"
            }
        )
    );
    assert_eq!(
        url(OPENAI_ROUTE).source,
        Source::Env {
            var: "OPENAI_BASE_URL"
        }
    );
}

#[test]
fn permission_mode_layers_and_full_access_implies_never() {
    let file = "[sandbox]\nmode = \"read-only\"\n";
    let at = |vars: &[(&str, &str)], flags: Overrides| {
        let s = load_with(file, vars, &flags).unwrap();
        (s.sandbox.mode, s.approval.policy)
    };
    assert_eq!(
        at(&[], Overrides::default()),
        (
            Sourced::new(SandboxMode::ReadOnly, Source::File { line: 2 }),
            Sourced::default_value(ApprovalPolicy::Ask)
        )
    );
    let env = Source::Env {
        var: "DSH_PERMISSION_MODE",
    };
    assert_eq!(
        at(
            &[("DSH_PERMISSION_MODE", "danger-full-access")],
            Overrides::default()
        ),
        (
            Sourced::new(SandboxMode::DangerFullAccess, env),
            Sourced::new(ApprovalPolicy::Never, env)
        )
    );
    let flags = Overrides {
        approval: Some(ApprovalPolicy::Ask),
        ..Overrides::default()
    };
    assert_eq!(
        at(&[("DSH_PERMISSION_MODE", "danger-full-access")], flags).1,
        Sourced::new(ApprovalPolicy::Ask, Source::Flag { flag: "--approval" })
    );
    let flags = Overrides {
        sandbox: Some(SandboxMode::WorkspaceWrite),
        ..Overrides::default()
    };
    let (mode, policy) = at(&[("DSH_PERMISSION_MODE", "danger-full-access")], flags);
    assert_eq!(
        mode,
        Sourced::new(
            SandboxMode::WorkspaceWrite,
            Source::Flag { flag: "--sandbox" }
        )
    );
    assert_eq!(
        policy.value,
        ApprovalPolicy::Never,
        "the env layer's implied policy stays"
    );
    // In the file, full access with an explicit policy keeps that policy.
    let s = load_with(
        "[sandbox]\nmode = \"danger-full-access\"\n[approval]\npolicy = \"untrusted\"\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        s.approval.policy,
        Sourced::new(ApprovalPolicy::Untrusted, Source::File { line: 4 })
    );
}

#[test]
fn api_keys_are_presence_only() {
    let settings = load_with(
        "",
        &[("DEEPSEEK_API_KEY", "sk-secret-123")],
        &Overrides::default(),
    )
    .unwrap();
    let deepseek = settings.provider(DEEPSEEK_ROUTE).unwrap();
    assert_eq!(
        deepseek.api_key.to_string(),
        "set (from env DEEPSEEK_API_KEY)"
    );
    assert_eq!(
        settings.provider(OPENAI_ROUTE).unwrap().api_key.to_string(),
        "not set"
    );
    assert!(!format!("{settings:?}").contains("sk-secret-123"));
}
