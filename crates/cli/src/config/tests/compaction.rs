//! `[compaction]`: defaults, file values with their lines, the row config, and the errors.

use super::*;
use serde_json::json;

#[test]
fn defaults_give_the_original_policy() {
    let settings = load_with("", &[], &Overrides::default()).unwrap();
    assert_eq!(settings.compaction, CompactionSettings::default());
    let config = settings.compaction.plugin_config();
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({"auto": true, "thresholdRatio": 0.8, "retainRatio": 0.16,
               "maxTokens": 8192, "retries": 1, "overflowRetries": 1})
    );
    config.validate().unwrap();
    // The same policy as the plugin's own defaults.
    assert_eq!(
        config,
        dsh_compaction::CompactionConfig {
            retain_ratio: Some(dsh_compaction::config::DEFAULT_RETAIN_RATIO),
            ..dsh_compaction::CompactionConfig::default()
        }
    );
}

#[test]
fn file_values_are_sourced_and_mapped_to_the_row_config() {
    let settings = load_with(
        "[compaction]\nauto = false\nthreshold_ratio = 0.9\nretain_tokens = 4000\n\
         max_tokens = 2048\nretries = 0\noverflow_retries = 2\n\
         provider = \"openai-compatible\"\nmodel = \"small\"\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    let c = &settings.compaction;
    let file = |line| Source::File { line };
    assert_eq!(c.auto, Sourced::new(false, file(2)));
    assert_eq!(c.threshold_ratio, Sourced::new(0.9, file(3)));
    assert_eq!(c.retain, Sourced::new(Retention::Tokens(4000), file(4)));
    assert_eq!(c.max_tokens, Sourced::new(2048, file(5)));
    assert_eq!(c.retries, Sourced::new(0, file(6)));
    assert_eq!(c.overflow_retries, Sourced::new(2, file(7)));
    assert_eq!(
        c.summarizer,
        Sourced::new(
            Some(SummarizerRoute {
                provider: "openai-compatible".into(),
                model: "small".into()
            }),
            file(8)
        )
    );
    let config = c.plugin_config();
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({"auto": false, "thresholdRatio": 0.9, "retainTokens": 4000,
               "maxTokens": 2048, "retries": 0, "overflowRetries": 2,
               "provider": "openai-compatible", "model": "small"})
    );
    config.validate().unwrap();
}

#[test]
fn a_ratio_of_one_may_be_written_as_an_integer() {
    let settings = load_with(
        "[compaction]\nthreshold_ratio = 1\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(settings.compaction.threshold_ratio.value, 1.0);
}

#[test]
fn bad_values_name_file_line_and_key() {
    let cases = [
        (
            "[compaction]\n\nthreshold_ratio = 0.0\n",
            "settings.toml:3: `compaction.threshold_ratio`: expected a number greater than 0 and at most 1, found a float (0)",
        ),
        (
            "[compaction]\nretain_ratio = 1.5\n",
            "settings.toml:2: `compaction.retain_ratio`: expected a number greater than 0 and at most 1, found a float (1.5)",
        ),
        (
            "[compaction]\nthreshold_ratio = \"80%\"\n",
            "settings.toml:2: `compaction.threshold_ratio`: expected a number greater than 0 and at most 1, found \"80%\"",
        ),
        (
            "[compaction]\nretries = -1\n",
            "settings.toml:2: `compaction.retries`: expected a whole number (0 or more), found an integer (-1)",
        ),
        (
            "[compaction]\nmax_tokens = 0\n",
            "settings.toml:2: `compaction.max_tokens`: expected a whole number greater than 0, found an integer (0)",
        ),
        (
            "[compaction]\nauto = \"yes\"\n",
            "settings.toml:2: `compaction.auto`: expected true or false, found \"yes\"",
        ),
        (
            "[compaction]\nretain_ratio = 0.1\nthreshold = 0.5\n",
            "settings.toml:3: unknown key `compaction.threshold`; expected one of `auto`, `threshold_ratio`, `retain_ratio`, `retain_tokens`, `max_tokens`, `retries`, `overflow_retries`, `provider`, `model`",
        ),
        (
            "[compaction]\nretain_token = 10\n",
            "settings.toml:2: unknown key `compaction.retain_token`; did you mean `retain_tokens`?",
        ),
        (
            "compaction = 3\n",
            "settings.toml:1: `compaction`: expected a table, found an integer (3)",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error_of(text), expected, "for {text:?}");
    }
}

#[test]
fn keys_that_do_not_fit_together_are_refused() {
    let cases = [
        (
            "[compaction]\nthreshold_ratio = 0.5\nretain_ratio = 0.5\n",
            "settings.toml:3: `compaction.retain_ratio`: `retain_ratio` (0.5) must be smaller than `threshold_ratio` (0.5): the history kept after a compaction has to fit below the point that starts one",
        ),
        (
            "[compaction]\nthreshold_ratio = 0.1\n",
            "settings.toml:2: `compaction.threshold_ratio`: `retain_ratio` (0.16) must be smaller than `threshold_ratio` (0.1): the history kept after a compaction has to fit below the point that starts one",
        ),
        (
            "[compaction]\nretain_ratio = 0.9\n",
            "settings.toml:2: `compaction.retain_ratio`: `retain_ratio` (0.9) must be smaller than `threshold_ratio` (0.8): the history kept after a compaction has to fit below the point that starts one",
        ),
        (
            "[compaction]\nretain_ratio = 0.1\nretain_tokens = 100\n",
            "settings.toml:3: `compaction.retain_tokens`: set `retain_ratio` or `retain_tokens`, not both",
        ),
        (
            "[compaction]\nprovider = \"deepseek-official\"\n",
            "settings.toml:2: `compaction.provider`: also set `model`: the summariser is chosen as a provider and model pair",
        ),
        (
            "[compaction]\n\nmodel = \"deepseek-v4-flash\"\n",
            "settings.toml:3: `compaction.model`: also set `provider`: the summariser is chosen as a provider and model pair",
        ),
        (
            "[compaction]\nprovider = \"deepseek-oficial\"\nmodel = \"m\"\n",
            "settings.toml:2: `compaction.provider`: unknown provider route \"deepseek-oficial\"; did you mean `deepseek-official`?",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error_of(text), expected, "for {text:?}");
    }
}

#[test]
fn a_route_the_file_adds_can_summarise() {
    let settings = load_with(
        "[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         [compaction]\nprovider = \"local\"\nmodel = \"tiny\"\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        settings.compaction.summarizer.value,
        Some(SummarizerRoute {
            provider: "local".into(),
            model: "tiny".into()
        })
    );
}

#[test]
fn show_lists_the_section_with_sources() {
    let settings = load_with(
        "[compaction]\nretain_tokens = 500\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    let text = render_text(&settings);
    let section: Vec<String> = text
        .split("\n\n")
        .find(|block| block.starts_with("[compaction]"))
        .unwrap_or_else(|| panic!("no [compaction] block in\n{text}"))
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        section,
        [
            "[compaction]",
            "auto = true # default",
            "threshold_ratio = 0.8 # default",
            "retain_tokens = 500 # settings.toml:2",
            "max_tokens = 8192 # default",
            "retries = 1 # default",
            "overflow_retries = 1 # default",
            "provider, model = the conversation's own # default",
        ]
    );
    let json = render_json(&settings);
    assert_eq!(
        json["compaction"],
        json!({
            "auto": {"value": true, "source": "default"},
            "threshold_ratio": {"value": 0.8, "source": "default"},
            "retain_tokens": {"value": 500, "source": "settings.toml:2"},
            "max_tokens": {"value": 8192, "source": "default"},
            "retries": {"value": 1, "source": "default"},
            "overflow_retries": {"value": 1, "source": "default"},
            "provider": {"value": null, "source": "default"},
            "model": {"value": null, "source": "default"},
        })
    );
}
