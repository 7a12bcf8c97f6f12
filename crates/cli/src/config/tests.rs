use super::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// A temp `$DSH_HOME` holding `settings` (when given).
fn home_with(settings: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if let Some(text) = settings {
        std::fs::write(dir.path().join(SETTINGS_FILE), text).unwrap();
    }
    dir
}

fn env_of(home: &Path, vars: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    env.insert("DSH_HOME".into(), home.display().to_string());
    env
}

fn load_with(
    settings: &str,
    vars: &[(&str, &str)],
    flags: &Overrides,
) -> Result<Settings, ConfigError> {
    let home = home_with(Some(settings));
    load(&env_of(home.path(), vars), flags)
}

/// The error message, with the temp path replaced by `settings.toml`.
fn error_of(settings: &str) -> String {
    error_with(settings, &[], &Overrides::default())
}

fn error_with(settings: &str, vars: &[(&str, &str)], flags: &Overrides) -> String {
    let home = home_with(Some(settings));
    let error = load(&env_of(home.path(), vars), flags).unwrap_err();
    let path = home.path().join(SETTINGS_FILE).display().to_string();
    error.to_string().replace(&path, "settings.toml")
}

const VALID: &str = r#"
[model]
provider = "local"
model = "qwen3-coder"

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "LOCAL_KEY"
headers = { X-Title = "dsh" }
compat = { max_tokens_field = "max_completion_tokens", replay_reasoning = "tool-call-turns" }

[[providers.local.models]]
id = "qwen3-coder"
context_window = 131072
max_output_tokens = 8192
reasoning_efforts = ["low", "high"]
default_effort = "low"
input = ["text", "image"]

[providers.deepseek-official]
base_url = "https://gateway.example/deepseek"

[approval]
policy = "ask"
rules = [
  { action = "allow", tool = "bash", command_prefix = "cargo test" },
  { action = "deny", tool = "write", path = "secrets/**" },
]

[sandbox]
mode = "read-only"

[tools.bash]
enabled = false

[tools.web_fetch]
enabled = true
allow_private = true

[[plugins]]
id = "tools"
config = { max_parallel = 4 }

[[plugins]]
id = "audit"
plugin = "audit-log"
disabled = true
"#;

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
        ReplayReasoning::ToolCallTurns
    );
    assert_eq!(
        local.models,
        Sourced::new(
            vec![ModelEntry {
                id: "qwen3-coder".into(),
                context_window: Some(131_072),
                max_output_tokens: Some(8192),
                reasoning_efforts: Some(vec!["low".into(), "high".into()]),
                default_effort: Some("low".into()),
                input: Some(vec![Modality::Text, Modality::Image]),
            }],
            file(12)
        )
    );
    let deepseek = settings.provider(DEEPSEEK_ROUTE).unwrap();
    assert_eq!(
        deepseek.base_url,
        Sourced::new("https://gateway.example/deepseek".to_owned(), file(21))
    );
    assert_eq!(deepseek.models.source, Source::Default);

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
    let call = CallFacts {
        tool: "bash",
        command: Some("cargo test -q"),
        path: None,
    };
    assert_eq!(decide(&rules, &call), Some(RuleAction::Allow));

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
            ("system-prompt", "system-prompt", false),
            ("tools", "tools", false),
            ("audit", "audit-log", true),
        ]
    );
    assert_eq!(
        settings.composition.rows[2].config,
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
        "[sandbox]\nmode = \"danger-full-access\"\n[approval]\npolicy = \"auto\"\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        s.approval.policy,
        Sourced::new(ApprovalPolicy::Auto, Source::File { line: 4 })
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

#[test]
fn syntax_errors_name_file_and_line() {
    assert_eq!(
        error_of("[model]\nprovider = \"x\"\nmodel = \n"),
        "settings.toml:3: invalid TOML: invalid string; expected `\"`, `'`"
    );
}

#[test]
fn unknown_keys_suggest_the_closest_known_key() {
    assert_eq!(
        error_of("[approval]\npolcy = \"ask\"\n"),
        "settings.toml:2: unknown key `approval.polcy`; did you mean `policy`?"
    );
    assert_eq!(
        error_of("\n[sandbx]\nmode = \"read-only\"\n"),
        "settings.toml:2: unknown key `sandbx`; did you mean `sandbox`?"
    );
    assert_eq!(
        error_of("[model]\ntemperature = 1\n"),
        "settings.toml:2: unknown key `model.temperature`; expected one of `provider`, `model`"
    );
    assert_eq!(
        error_of("[tools.bassh]\nenabled = true\n"),
        "settings.toml:1: unknown key `tools.bassh`; did you mean `bash`?"
    );
    assert_eq!(
        error_of("[providers.x]\nbase_url = \"http://h\"\n[[providers.x.models]]\nid = \"m\"\ncontext = 5\n"),
        "settings.toml:5: unknown key `providers.x.models[0].context`; expected one of `id`, `context_window`, `max_output_tokens`, `reasoning_efforts`, `default_effort`, `input`"
    );
}

#[test]
fn wrong_values_say_what_is_expected() {
    assert_eq!(
        error_of("[sandbox]\nmode = \"workspace\"\n"),
        "settings.toml:2: `sandbox.mode`: expected one of \"read-only\", \"workspace-write\", \"danger-full-access\", found \"workspace\""
    );
    assert_eq!(
        error_of("[approval]\npolicy = 3\n"),
        "settings.toml:2: `approval.policy`: expected one of \"ask\", \"never\", \"auto\", found an integer (3)"
    );
    assert_eq!(
        error_of("[tools.bash]\nenabled = \"no\"\n"),
        "settings.toml:2: `tools.bash.enabled`: expected true or false, found \"no\""
    );
    assert_eq!(
        error_of("model = \"x\"\n"),
        "settings.toml:1: `model`: expected a table, found \"x\""
    );
    assert_eq!(
        error_of("[providers.x]\nbase_url = \"ftp://h\"\n"),
        "settings.toml:2: `providers.x.base_url`: expected an http:// or https:// URL, found \"ftp://h\""
    );
    assert_eq!(
        error_of("[[providers.deepseek-official.models]]\nid = \"m\"\ncontext_window = 0\n"),
        "settings.toml:3: `providers.deepseek-official.models[0].context_window`: expected a whole number greater than 0, found an integer (0)"
    );
    assert_eq!(
        error_of("[[approval.rules]]\naction = \"allow\"\ntool = \"write\"\npath = \"src/[\"\n"),
        "settings.toml:4: `approval.rules[0].path`: expected a glob pattern, found \"src/[\" (unclosed character class; missing ']')"
    );
}

#[test]
fn a_secret_in_the_wrong_place_is_not_echoed() {
    let message = error_of("[providers.deepseek-official]\napi_key_env = \"sk-live-abc123\"\n");
    assert_eq!(
        message,
        "settings.toml:2: `providers.deepseek-official.api_key_env`: expected the name of an environment variable (letters, digits and `_`), found another string (not shown, in case it is a secret)"
    );
    let message = error_of("[providers.deepseek-official.headers]\nAuthorization = 12345\n");
    assert_eq!(
        message,
        "settings.toml:2: `providers.deepseek-official.headers.Authorization`: expected a string, found an integer"
    );
}

#[test]
fn inconsistent_settings_are_refused() {
    assert_eq!(
        error_of("[providers.local]\napi_key_env = \"K\"\n"),
        "settings.toml:1: `providers.local.base_url`: the new provider route `local` needs a base_url (built-in routes: `deepseek-official`, `openai-compatible`)"
    );
    assert_eq!(
        error_of("[model]\nprovider = \"deepseek-oficial\"\n"),
        "settings.toml:2: `model.provider`: unknown provider route \"deepseek-oficial\"; did you mean `deepseek-official`?"
    );
    assert_eq!(
        error_of("[[plugins]]\nid = \"sesions\"\ndisabled = true\n"),
        "settings.toml:2: `plugins[0].id`: no row is named `sesions`; did you mean `sessions`? to add a new row, also set `plugin`"
    );
    assert_eq!(
        error_of("[[plugins]]\nid = \"tools\"\nplugin = \"other\"\n"),
        "settings.toml:3: `plugins[0].plugin`: row `tools` mounts plugin `tools`; use a new id to add another plugin"
    );
    assert_eq!(
        error_of("[[approval.rules]]\ntool = \"bash\"\n"),
        "settings.toml:1: `approval.rules[0].action`: every approval rule needs `action`"
    );
}

#[test]
fn env_and_flag_errors_name_their_origin() {
    assert_eq!(
        error_with("", &[("DSH_PERMISSION_MODE", "yolo")], &Overrides::default()),
        "env DSH_PERMISSION_MODE: `sandbox.mode`: expected one of \"read-only\", \"workspace-write\", \"danger-full-access\", found \"yolo\""
    );
    assert_eq!(
        error_with("", &[("DSH_PROVIDER", "nope")], &Overrides::default()),
        "env DSH_PROVIDER: `model.provider`: unknown provider route \"nope\"; known routes: `deepseek-official`, `openai-compatible`"
    );
    let flags = Overrides {
        provider: Some("openai-compatibel".into()),
        ..Overrides::default()
    };
    assert_eq!(
        error_with("", &[], &flags),
        "flag --provider: `model.provider`: unknown provider route \"openai-compatibel\"; did you mean `openai-compatible`?"
    );
    assert_eq!(
        error_with("", &[("DEEPSEEK_BASE_URL", "localhost:8080")], &Overrides::default()),
        "env DEEPSEEK_BASE_URL: `providers.deepseek-official.base_url`: expected an http:// or https:// URL, found \"localhost:8080\""
    );
}

#[test]
fn error_codes_are_stable() {
    let home = home_with(Some("[x]\n"));
    let error = load(&env_of(home.path(), &[]), &Overrides::default()).unwrap_err();
    assert_eq!(error.code(), "UNKNOWN_KEY");
    let home = home_with(Some("= 1"));
    let error = load(&env_of(home.path(), &[]), &Overrides::default()).unwrap_err();
    assert_eq!(error.code(), "SETTINGS_SYNTAX");
}

#[test]
fn show_prints_provenance_and_hides_secrets() {
    let settings = load_with(
        VALID,
        &[
            ("DSH_MODEL", "qwen3-coder"),
            ("LOCAL_KEY", "sk-local-secret"),
            ("DEEPSEEK_API_KEY", "sk-ds-secret"),
        ],
        &Overrides {
            approval: Some(ApprovalPolicy::Auto),
            ..Overrides::default()
        },
    )
    .unwrap();
    let text = render_text(&settings);
    let json = render_json(&settings).to_string();
    for out in [&text, &json] {
        assert!(
            !out.contains("sk-local-secret") && !out.contains("sk-ds-secret"),
            "{out}"
        );
        assert!(!out.contains("\"dsh\""), "header values are hidden: {out}");
    }
    let lines: Vec<&str> = text.lines().collect();
    let line = |prefix: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(prefix))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| panic!("no line {prefix:?} in\n{text}"))
    };
    assert_eq!(line("model = "), "model = \"qwen3-coder\" # env DSH_MODEL");
    assert_eq!(
        line("provider = "),
        "provider = \"local\" # settings.toml:3"
    );
    assert_eq!(line("policy = "), "policy = \"auto\" # flag --approval");
    assert_eq!(line("mode = "), "mode = \"read-only\" # settings.toml:31");
    assert_eq!(
        line("headers.X-Title"),
        "headers.X-Title = <hidden> # settings.toml:9"
    );
    assert!(
        text.contains("api_key = set (from env DEEPSEEK_API_KEY)\n"),
        "{text}"
    );
    assert!(
        text.contains("api_key = set (from env LOCAL_KEY)\n"),
        "{text}"
    );
    assert!(text.contains("api_key = not set\n"), "{text}");
    assert_eq!(
        line("rules[0]"),
        "rules[0] = allow bash command_prefix \"cargo test\" # settings.toml:26"
    );
    assert_eq!(
        line("plugins[3]"),
        "plugins[3] = \"audit\" plugin \"audit-log\", disabled, config null # settings.toml:45"
    );

    let value = render_json(&settings);
    assert_eq!(
        value["model"]["model"],
        json!({"value": "qwen3-coder", "source": "env DSH_MODEL"})
    );
    assert_eq!(
        value["providers"][0]["api_key"],
        json!({"status": "set", "env": "DEEPSEEK_API_KEY"})
    );
    assert_eq!(
        value["providers"][2]["headers"]["X-Title"],
        json!({"value": "<hidden>", "source": "settings.toml:9"})
    );
    assert_eq!(
        value["approval"]["rules"][1],
        json!({"value": {"action": "deny", "tool": "write", "path": "secrets/**"}, "source": "settings.toml:27"})
    );
    assert_eq!(
        value["composition"][2],
        json!({"id": "tools", "plugin": "tools", "config": {"max_parallel": 4}, "disabled": false, "source": "settings.toml:41"})
    );
}

#[test]
fn secret_looking_plugin_config_fields_are_hidden() {
    let config = json!({"apiKey": "k", "api_key_env": "VAR", "nested": [{"authToken": "t", "port": 1}], "password": null});
    assert_eq!(
        show::redact(&config),
        json!({"apiKey": "<hidden>", "api_key_env": "VAR", "nested": [{"authToken": "<hidden>", "port": 1}], "password": null})
    );
}
