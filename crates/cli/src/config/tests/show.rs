use super::*;
use serde_json::json;

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
            approval: Some(ApprovalPolicy::Untrusted),
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
    assert_eq!(
        line("policy = "),
        "policy = \"untrusted\" # flag --approval"
    );
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
        line("plugins[25]"),
        "plugins[25] = \"audit\" plugin \"audit-log\", disabled, config null # settings.toml:45"
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
        value["composition"][9],
        json!({"id": "tools", "plugin": "tools", "config": {"max_parallel": 4}, "disabled": false, "source": "settings.toml:41"})
    );
}

#[test]
fn secret_looking_plugin_config_fields_are_hidden() {
    let config = json!({"apiKey": "k", "api_key_env": "VAR", "nested": [{"authToken": "t", "port": 1}], "password": null});
    assert_eq!(
        crate::config::show::redact(&config),
        json!({"apiKey": "<hidden>", "api_key_env": "VAR", "nested": [{"authToken": "<hidden>", "port": 1}], "password": null})
    );
}

#[test]
fn stream_limits_show_their_defaults_and_where_a_route_changed_them() {
    let settings = load_with(
        "[providers.deepseek-official]\nmax_sse_line_bytes = 65536\nmax_response_bytes = 1048576\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    let text = render_text(&settings);
    let compact: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("max_sse") || l.starts_with("max_response"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        compact,
        [
            "max_sse_line_bytes = 65536 # settings.toml:2",
            "max_response_bytes = 1048576 # settings.toml:3",
            "max_sse_line_bytes = 16777216 # default",
            "max_response_bytes = 134217728 # default",
        ]
    );
    let value = render_json(&settings);
    assert_eq!(
        value["providers"][0]["max_response_bytes"],
        json!({"value": 1048576, "source": "settings.toml:3"})
    );
    assert_eq!(
        value["providers"][1]["max_sse_line_bytes"],
        json!({"value": 16777216, "source": "default"})
    );
}

#[test]
fn the_tools_block_lists_only_tools_that_exist() {
    let settings = load_with("", &[], &Overrides::default()).unwrap();
    let text = render_text(&settings);
    let block: Vec<&str> = text
        .split("\n\n")
        .find(|b| b.starts_with("[tools]"))
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| {
            l.split(".enabled = ")
                .next()
                .filter(|_| l.contains(".enabled"))
        })
        .collect();
    assert_eq!(block, dsh_tools_builtin::BUILTIN_TOOL_NAMES);
    let json = render_json(&settings);
    let shown: Vec<&String> = json["tools"].as_object().unwrap().keys().collect();
    assert_eq!(shown.len(), dsh_tools_builtin::BUILTIN_TOOL_NAMES.len());
    // A switch for a tool this binary does not have is refused, not silently shown.
    let error = load_with(
        "[tools.web_search]\nenabled = true\n",
        &[],
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("unknown key `tools.web_search`"), "{error}");
}

#[test]
fn the_ui_theme_is_read_shown_and_checked() {
    use crate::tui::theme::ThemeChoice;
    let settings = load_with("[ui]\ntheme = \"light\"\n", &[], &Overrides::default()).unwrap();
    assert_eq!(
        settings.ui.theme,
        Sourced::new(ThemeChoice::Light, Source::File { line: 2 })
    );
    let text = render_text(&settings);
    let block = text.split("\n\n").find(|b| b.starts_with("[ui]")).unwrap();
    assert!(block.contains("theme = \"light\""), "{block}");
    assert_eq!(render_json(&settings)["ui"]["theme"]["value"], "light");
    let defaults = load_with("", &[], &Overrides::default()).unwrap();
    assert_eq!(defaults.ui.theme, Sourced::default_value(ThemeChoice::Auto));
    let error = error_of("[ui]\ntheme = \"solarized\"\n");
    assert!(
        error.contains("ui.theme") && error.contains("\"auto\""),
        "{error}"
    );
    let error = error_of("[ui]\ncolour = \"dark\"\n");
    assert!(error.contains("colour"), "{error}");
}

#[test]
fn prices_are_read_shown_and_checked() {
    use crate::tui::cost::Price;
    let text = "[prices]\ncurrency = \"¥\"\n\n[prices.\"deepseek-v4-flash\"]\ninput = 2\ncached_input = 0.5\noutput = 8.0\n";
    let settings = load_with(text, &[], &Overrides::default()).unwrap();
    let price = Price {
        input: 2.0,
        cached_input: 0.5,
        output: 8.0,
    };
    assert_eq!(
        settings.prices.models,
        vec![(
            "deepseek-v4-flash".to_owned(),
            Sourced::new(price, Source::File { line: 4 })
        )]
    );
    assert_eq!(settings.prices.table().currency, "¥");
    let shown = render_text(&settings);
    let block = shown
        .split("\n\n")
        .find(|b| b.starts_with("[prices]"))
        .unwrap();
    assert!(block.contains("currency = \"¥\""), "{block}");
    assert!(
        block.contains("\"deepseek-v4-flash\" = input 2, cached_input 0.5, output 8 per 1M tokens"),
        "{block}"
    );
    let json = render_json(&settings);
    assert_eq!(
        json["prices"]["models"]["deepseek-v4-flash"]["value"]["output"],
        8.0
    );

    // None built in: the default shows no priced model and says so.
    let defaults = load_with("", &[], &Overrides::default()).unwrap();
    assert!(defaults.prices.models.is_empty());
    let shown = render_text(&defaults);
    let block = shown
        .split("\n\n")
        .find(|b| b.starts_with("[prices]"))
        .unwrap();
    assert!(
        block.contains("no model priced: no cost is shown"),
        "{block}"
    );

    let error = error_of("[prices.m]\ninput = 1\noutput = 2\n");
    assert!(error.contains("cached_input is missing"), "{error}");
    let error = error_of("[prices.m]\ninput = -1\ncached_input = 0\noutput = 2\n");
    assert!(error.contains("prices.\"m\".input"), "{error}");
    let error = error_of("[prices.m]\ninput = 1\ncached_input = 0\noutput = 2\nreasoning = 3\n");
    assert!(error.contains("reasoning"), "{error}");
}
