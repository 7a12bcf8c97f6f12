//! Per-model entries: `context_window` overrides, partial overrides of the built-in DeepSeek
//! catalogue, and the window the adapter reports (known, configured or guessed).

use super::*;
use crate::app::model_info;
use dsh_llm::ContextWindowSource;

fn window(
    settings: &Settings,
    route: &str,
    model: &str,
) -> (Option<u64>, Option<ContextWindowSource>) {
    let info = model_info(settings, route, model).unwrap();
    (info.context_window, info.context_window_source)
}

#[test]
fn a_deepseek_entry_override_changes_that_entry_only() {
    let settings = load_with(
        "[providers.deepseek-official]\nmodels = [{ id = \"deepseek-v4-flash\", context_window = 16000 }]\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    let deepseek = settings.provider(DEEPSEEK_ROUTE).unwrap();
    let ids: Vec<&str> = deepseek
        .models
        .iter()
        .map(|m| m.value.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [
            "deepseek-v4-flash",
            "deepseek-v4-pro",
            "deepseek-v4-flash-vision-exp"
        ]
    );
    let flash = &deepseek.models[0];
    assert_eq!(flash.source, Source::File { line: 2 });
    assert_eq!(flash.value.context_window, Some(16_000));
    // The fields the override did not name keep the catalogue's values.
    assert_eq!(flash.value.max_tokens, Some(256_000));
    assert_eq!(flash.value.default_effort.as_deref(), Some("high"));
    assert_eq!(flash.value.input, Some(vec![Modality::Text]));
    assert!(deepseek.models[1..]
        .iter()
        .all(|m| m.source == Source::Default));

    assert_eq!(
        window(&settings, DEEPSEEK_ROUTE, "deepseek-v4-flash"),
        (Some(16_000), Some(ContextWindowSource::Configured))
    );
    assert_eq!(
        window(&settings, DEEPSEEK_ROUTE, "deepseek-v4-pro"),
        (Some(1_000_000), Some(ContextWindowSource::Known))
    );
    let info = model_info(&settings, DEEPSEEK_ROUTE, "deepseek-v4-flash").unwrap();
    assert_eq!(info.default_max_tokens, Some(256_000));

    let text = render_text(&settings);
    let squashed: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("models["))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        squashed[..3],
        [
            "models[0] = \"deepseek-v4-flash\" context_window=16000 max_output_tokens=256000 reasoning_efforts=off,low,high,max default_effort=high input=text # settings.toml:2",
            "models[1] = \"deepseek-v4-pro\" context_window=1000000 max_output_tokens=256000 reasoning_efforts=off,low,high,max default_effort=high input=text # default",
            "models[2] = \"deepseek-v4-flash-vision-exp\" context_window=1000000 max_output_tokens=256000 reasoning_efforts=off,low,high,max default_effort=high input=text,image # default",
        ]
    );
}

#[test]
fn a_new_id_joins_the_catalogue_and_a_new_effort_list_drops_a_default_it_lacks() {
    let settings = load_with(
        "[[providers.deepseek-official.models]]\nid = \"deepseek-v5\"\ncontext_window = 2000000\n\
         [[providers.deepseek-official.models]]\nid = \"deepseek-v4-pro\"\nreasoning_efforts = [\"off\", \"low\"]\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    let deepseek = settings.provider(DEEPSEEK_ROUTE).unwrap();
    assert_eq!(deepseek.models.len(), 4);
    assert_eq!(deepseek.models[3].value.id, "deepseek-v5");
    assert_eq!(deepseek.models[3].source, Source::File { line: 1 });
    let pro = &deepseek.models[1].value;
    assert_eq!(
        pro.reasoning_efforts,
        Some(vec!["off".into(), "low".into()])
    );
    assert_eq!(pro.default_effort, None);
    assert_eq!(pro.context_window, Some(1_000_000));
    assert_eq!(
        window(&settings, DEEPSEEK_ROUTE, "deepseek-v5"),
        (Some(2_000_000), Some(ContextWindowSource::Configured))
    );
}

#[test]
fn an_openai_compatible_model_without_a_window_gets_a_guessed_one() {
    let settings = load_with(
        "[[providers.openai-compatible.models]]\nid = \"qwen3-coder\"\ncontext_window = 32768\n\
         [providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodels = [{ id = \"tiny\", context_window = 4096 }]\n",
        &[],
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        window(&settings, OPENAI_ROUTE, "qwen3-coder"),
        (Some(32_768), Some(ContextWindowSource::Configured))
    );
    assert_eq!(
        window(&settings, OPENAI_ROUTE, "anything-else"),
        (
            Some(dsh_llm_openai::DEFAULT_GUESSED_CONTEXT_WINDOW),
            Some(ContextWindowSource::Guessed)
        )
    );
    assert!(model_info(&settings, OPENAI_ROUTE, "anything-else")
        .unwrap()
        .context_window_guessed());
    assert_eq!(
        window(&settings, "local", "tiny"),
        (Some(4096), Some(ContextWindowSource::Configured))
    );
    assert_eq!(
        window(&settings, "local", "unlisted"),
        (
            Some(dsh_llm_openai::DEFAULT_GUESSED_CONTEXT_WINDOW),
            Some(ContextWindowSource::Guessed)
        )
    );
    assert!(model_info(&settings, "no-such-route", "m").is_none());
}

#[test]
fn bad_windows_name_file_line_and_key() {
    let cases = [
        (
            "[providers.deepseek-official]\nmodels = [{ id = \"deepseek-v4-flash\", context_window = \"16k\" }]\n",
            "settings.toml:2: `providers.deepseek-official.models[0].context_window`: expected a whole number greater than 0, found \"16k\"",
        ),
        (
            "[[providers.openai-compatible.models]]\nid = \"a\"\n\n[[providers.openai-compatible.models]]\nid = \"b\"\ncontext_window = -5\n",
            "settings.toml:6: `providers.openai-compatible.models[1].context_window`: expected a whole number greater than 0, found an integer (-5)",
        ),
        (
            "[[providers.openai-compatible.models]]\nid = \"a\"\ncontext_window = 1.5e4\n",
            "settings.toml:3: `providers.openai-compatible.models[0].context_window`: expected a whole number greater than 0, found a float (15000)",
        ),
        (
            "[providers.deepseek-official]\nmodels = [{ context_window = 16000 }]\n",
            "settings.toml:2: `providers.deepseek-official.models[0].id`: every model entry needs an `id`",
        ),
        (
            "[providers.deepseek-official]\nmodels = [{ id = \"deepseek-v4-flash\", context_windows = 16000 }]\n",
            "settings.toml:2: unknown key `providers.deepseek-official.models[0].context_windows`; did you mean `context_window`?",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(error_of(text), expected, "for {text:?}");
    }
}
