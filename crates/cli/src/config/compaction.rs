//! `[compaction]`: when and how a long session's older history is summarised, read from the
//! settings file and turned into the `compaction` row's config.
//!
//! ```toml
//! [compaction]
//! auto = true              # false: manual only (`/compact`, `dsh sessions compact`)
//! threshold_ratio = 0.8    # compact when the context reaches this share of the window
//! retain_ratio = 0.16      # keep this share of the window verbatim ...
//! # retain_tokens = 20000  # ... or this many tokens (not both)
//! max_tokens = 8192        # the summary's output cap, reasoning included
//! retries = 1              # extra pressure attempts after the first
//! overflow_retries = 1     # compact-and-retry rounds after a context-overflow error
//! provider = "deepseek-official"   # summarise with another route and model (both or neither)
//! model = "deepseek-v4-flash"
//! ```

use super::error::{closest, ConfigError};
use super::reader::{At, Doc, Entries};
use super::settings::Provider;
use super::source::{Location, Source, Sourced};
use super::tree::Node;
use dsh_compaction::CompactionConfig;
use std::path::Path;

/// The keys `[compaction]` accepts.
pub(crate) const KEYS: &[&str] = &[
    "auto",
    "threshold_ratio",
    "retain_ratio",
    "retain_tokens",
    "max_tokens",
    "retries",
    "overflow_retries",
    "provider",
    "model",
];

/// Built-in `threshold_ratio`.
pub const DEFAULT_THRESHOLD_RATIO: f64 = 0.8;
/// Built-in `retain_ratio`.
pub const DEFAULT_RETAIN_RATIO: f64 = 0.16;
/// Built-in `max_tokens`.
pub const DEFAULT_SUMMARY_MAX_TOKENS: u64 = 8192;

/// What `[compaction]` said, with lines. Absent keys are `None`.
#[derive(Debug, Default)]
pub(crate) struct CompactionLayer {
    pub auto: Option<At<bool>>,
    pub threshold_ratio: Option<At<f64>>,
    pub retain_ratio: Option<At<f64>>,
    pub retain_tokens: Option<At<u64>>,
    pub max_tokens: Option<At<u64>>,
    pub retries: Option<At<u64>>,
    pub overflow_retries: Option<At<u64>>,
    pub provider: Option<At<String>>,
    pub model: Option<At<String>>,
}

/// How much recent history a compaction keeps verbatim.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Retention {
    /// This share of the model's context window.
    Ratio(f64),
    /// This many estimated tokens.
    Tokens(u64),
}

/// A route and model that write the summaries instead of the conversation's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummarizerRoute {
    pub provider: String,
    pub model: String,
}

/// The effective `[compaction]` settings.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionSettings {
    pub auto: Sourced<bool>,
    pub threshold_ratio: Sourced<f64>,
    pub retain: Sourced<Retention>,
    pub max_tokens: Sourced<u64>,
    pub retries: Sourced<u64>,
    pub overflow_retries: Sourced<u64>,
    /// `None`: the conversation's own route and model.
    pub summarizer: Sourced<Option<SummarizerRoute>>,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            auto: Sourced::default_value(true),
            threshold_ratio: Sourced::default_value(DEFAULT_THRESHOLD_RATIO),
            retain: Sourced::default_value(Retention::Ratio(DEFAULT_RETAIN_RATIO)),
            max_tokens: Sourced::default_value(DEFAULT_SUMMARY_MAX_TOKENS),
            retries: Sourced::default_value(1),
            overflow_retries: Sourced::default_value(1),
            summarizer: Sourced::default_value(None),
        }
    }
}

impl CompactionSettings {
    /// The compaction plugin's row config, in the plugin's own type (so the derived row
    /// cannot drift from what the plugin reads).
    pub fn plugin_config(&self) -> CompactionConfig {
        let (retain_ratio, retain_tokens) = match self.retain.value {
            Retention::Ratio(ratio) => (Some(ratio), None),
            Retention::Tokens(tokens) => (None, Some(tokens)),
        };
        let (provider, model) = match &self.summarizer.value {
            Some(route) => (Some(route.provider.clone()), Some(route.model.clone())),
            None => (None, None),
        };
        CompactionConfig {
            auto: self.auto.value,
            threshold_ratio: self.threshold_ratio.value,
            retain_ratio,
            retain_tokens,
            max_tokens: self.max_tokens.value,
            retries: self.retries.value,
            overflow_retries: self.overflow_retries.value,
            provider,
            model,
        }
    }
}

fn get<'a>(entries: &'a Entries, name: &str) -> Option<&'a Node> {
    entries.iter().find(|(k, _)| k.name == name).map(|(_, v)| v)
}

/// Reads the `[compaction]` table: types and ranges of each key on its own; how the keys fit
/// together is checked by [`resolve`].
pub(crate) fn read(doc: &Doc<'_>, node: &Node) -> Result<CompactionLayer, ConfigError> {
    let table = doc.table("compaction", node)?;
    doc.check_keys("compaction", table, KEYS)?;
    let key = |name: &str| format!("compaction.{name}");
    let mut layer = CompactionLayer::default();
    if let Some(node) = get(table, "auto") {
        layer.auto = Some(doc.boolean(&key("auto"), node)?);
    }
    if let Some(node) = get(table, "threshold_ratio") {
        layer.threshold_ratio = Some(doc.ratio(&key("threshold_ratio"), node)?);
    }
    if let Some(node) = get(table, "retain_ratio") {
        layer.retain_ratio = Some(doc.ratio(&key("retain_ratio"), node)?);
    }
    if let Some(node) = get(table, "retain_tokens") {
        layer.retain_tokens = Some(doc.whole(&key("retain_tokens"), node)?);
    }
    if let Some(node) = get(table, "max_tokens") {
        layer.max_tokens = Some(doc.positive(&key("max_tokens"), node)?);
    }
    if let Some(node) = get(table, "retries") {
        layer.retries = Some(doc.whole(&key("retries"), node)?);
    }
    if let Some(node) = get(table, "overflow_retries") {
        layer.overflow_retries = Some(doc.whole(&key("overflow_retries"), node)?);
    }
    if let Some(node) = get(table, "provider") {
        layer.provider = Some(doc.text(&key("provider"), node)?);
    }
    if let Some(node) = get(table, "model") {
        layer.model = Some(doc.text(&key("model"), node)?);
    }
    Ok(layer)
}

/// Merges the file's `[compaction]` over the defaults and checks the keys against each other
/// and against the provider routes.
pub(crate) fn resolve(
    layer: &CompactionLayer,
    providers: &[Provider],
    settings_path: &Path,
) -> Result<CompactionSettings, ConfigError> {
    let file = |line: u32| Source::File { line };
    let error = |line: u32, key: &str, message: String| ConfigError::Inconsistent {
        at: Location::File {
            path: settings_path.to_path_buf(),
            line,
        },
        key: format!("compaction.{key}"),
        message,
    };
    let mut settings = CompactionSettings::default();
    let sourced = |at: &Option<At<u64>>, slot: &mut Sourced<u64>| {
        if let Some(at) = at {
            *slot = Sourced::new(at.value, file(at.line));
        }
    };
    sourced(&layer.max_tokens, &mut settings.max_tokens);
    sourced(&layer.retries, &mut settings.retries);
    sourced(&layer.overflow_retries, &mut settings.overflow_retries);
    if let Some(auto) = &layer.auto {
        settings.auto = Sourced::new(auto.value, file(auto.line));
    }
    if let Some(ratio) = &layer.threshold_ratio {
        settings.threshold_ratio = Sourced::new(ratio.value, file(ratio.line));
    }

    match (&layer.retain_ratio, &layer.retain_tokens) {
        (Some(ratio), Some(tokens)) => {
            let (line, key) = if tokens.line >= ratio.line {
                (tokens.line, "retain_tokens")
            } else {
                (ratio.line, "retain_ratio")
            };
            return Err(error(
                line,
                key,
                "set `retain_ratio` or `retain_tokens`, not both".into(),
            ));
        }
        (Some(ratio), None) => {
            settings.retain = Sourced::new(Retention::Ratio(ratio.value), file(ratio.line));
        }
        (None, Some(tokens)) => {
            settings.retain = Sourced::new(Retention::Tokens(tokens.value), file(tokens.line));
        }
        (None, None) => {}
    }
    if let Retention::Ratio(retain) = settings.retain.value {
        let threshold = settings.threshold_ratio.value;
        if retain >= threshold {
            // Point at whichever of the two the file set (the later line when both).
            let (line, key) = match (&layer.retain_ratio, &layer.threshold_ratio) {
                (Some(r), Some(t)) if t.line > r.line => (t.line, "threshold_ratio"),
                (Some(r), _) => (r.line, "retain_ratio"),
                (None, Some(t)) => (t.line, "threshold_ratio"),
                (None, None) => (0, "retain_ratio"),
            };
            return Err(error(
                line,
                key,
                format!(
                    "`retain_ratio` ({retain}) must be smaller than `threshold_ratio` \
                     ({threshold}): the history kept after a compaction has to fit below the \
                     point that starts one"
                ),
            ));
        }
    }

    match (&layer.provider, &layer.model) {
        (Some(provider), Some(model)) => {
            if !providers.iter().any(|p| p.route == provider.value) {
                let routes: Vec<&str> = providers.iter().map(|p| p.route.as_str()).collect();
                let hint = match closest(&provider.value, &routes) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!(
                        "known routes: {}",
                        routes
                            .iter()
                            .map(|r| format!("`{r}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                return Err(error(
                    provider.line,
                    "provider",
                    format!("unknown provider route {:?}; {hint}", provider.value),
                ));
            }
            settings.summarizer = Sourced::new(
                Some(SummarizerRoute {
                    provider: provider.value.clone(),
                    model: model.value.clone(),
                }),
                file(provider.line.min(model.line)),
            );
        }
        (Some(provider), None) => {
            return Err(error(
                provider.line,
                "provider",
                "also set `model`: the summariser is chosen as a provider and model pair".into(),
            ))
        }
        (None, Some(model)) => {
            return Err(error(
                model.line,
                "model",
                "also set `provider`: the summariser is chosen as a provider and model pair".into(),
            ))
        }
        (None, None) => {}
    }
    Ok(settings)
}
