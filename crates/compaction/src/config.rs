//! `CompactionConfig`: the compaction row's settings (spec §2.2), camelCase JSON.
//!
//! ```json
//! {"auto": true, "thresholdRatio": 0.8, "retainRatio": 0.16, "retainTokens": null,
//!  "maxTokens": 8192, "retries": 1, "overflowRetries": 1, "provider": null, "model": null}
//! ```
//!
//! `null` (or `{}`) is the defaults. Unknown keys are refused. `retainRatio` and
//! `retainTokens` are alternatives (set at most one; with neither, the ratio 0.16 applies);
//! `provider` and `model` choose the summarizer route and come as a pair.

use serde::{Deserialize, Serialize};

/// The largest integer JSON readers keep exactly.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The compaction row's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CompactionConfig {
    /// `false`: manual compaction only (no pre-step or request-error listeners).
    pub auto: bool,
    /// Pressure threshold as a share of the context window, in (0, 1].
    pub threshold_ratio: f64,
    /// The retained tail as a share of the window, in (0, 1] and below `thresholdRatio`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retain_ratio: Option<f64>,
    /// The retained tail in tokens (instead of `retainRatio`); must stay below the threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retain_tokens: Option<u64>,
    /// The summarizer's output cap, reasoning included.
    pub max_tokens: u64,
    /// Extra pressure attempts after the first.
    pub retries: u64,
    /// Overflow recoveries per request; `0` turns overflow recovery off.
    pub overflow_retries: u64,
    /// The summarizer's provider route (with `model`); unset = the conversation's route.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The summarizer's model (with `provider`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            auto: true,
            threshold_ratio: 0.8,
            retain_ratio: None,
            retain_tokens: None,
            max_tokens: 8192,
            retries: 1,
            overflow_retries: 1,
            provider: None,
            model: None,
        }
    }
}

/// The retained share of the window when neither retention key is set.
pub const DEFAULT_RETAIN_RATIO: f64 = 0.16;

/// A setting that breaks its rule; `key` is the camelCase config key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("compaction config `{key}`: {message}")]
pub struct CompactionConfigError {
    pub key: &'static str,
    pub message: String,
}

fn refuse(key: &'static str, message: impl Into<String>) -> CompactionConfigError {
    CompactionConfigError {
        key,
        message: message.into(),
    }
}

fn check_ratio(key: &'static str, ratio: f64) -> Result<(), CompactionConfigError> {
    if !(ratio > 0.0 && ratio <= 1.0) {
        return Err(refuse(key, format!("must be in (0, 1], got {ratio}")));
    }
    Ok(())
}

impl CompactionConfig {
    /// Parses a row config (`null` = defaults) and validates it.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, CompactionConfigError> {
        if value.is_null() {
            return Ok(Self::default());
        }
        let config: Self = serde_json::from_value(value.clone())
            .map_err(|e| refuse("compaction", e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every rule that does not need a context window.
    pub fn validate(&self) -> Result<(), CompactionConfigError> {
        check_ratio("thresholdRatio", self.threshold_ratio)?;
        if let Some(ratio) = self.retain_ratio {
            check_ratio("retainRatio", ratio)?;
            if self.retain_tokens.is_some() {
                return Err(refuse(
                    "retainTokens",
                    "set either retainRatio or retainTokens, not both",
                ));
            }
        }
        if self.retain_ratio() >= self.threshold_ratio {
            return Err(refuse(
                "retainRatio",
                format!(
                    "must be below thresholdRatio ({} >= {})",
                    self.retain_ratio(),
                    self.threshold_ratio
                ),
            ));
        }
        if self.retain_tokens.is_some_and(|t| t > MAX_SAFE_INTEGER) {
            return Err(refuse("retainTokens", "must be a safe integer"));
        }
        if self.max_tokens == 0 || self.max_tokens > MAX_SAFE_INTEGER {
            return Err(refuse("maxTokens", "must be a positive safe integer"));
        }
        for (key, value) in [("provider", &self.provider), ("model", &self.model)] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(refuse(key, "must not be empty (leave it unset)"));
            }
        }
        match (&self.provider, &self.model) {
            (Some(_), None) => Err(refuse("model", "set provider and model together")),
            (None, Some(_)) => Err(refuse("provider", "set provider and model together")),
            _ => Ok(()),
        }
    }

    /// The retained share of the window when `retainTokens` is not set.
    pub fn retain_ratio(&self) -> f64 {
        self.retain_ratio.unwrap_or(DEFAULT_RETAIN_RATIO)
    }

    /// The summarizer route the config chooses, if any.
    pub fn summarizer_route(&self) -> Option<(&str, &str)> {
        match (&self.provider, &self.model) {
            (Some(provider), Some(model)) => Some((provider, model)),
            _ => None,
        }
    }

    /// Thresholds for a window of `context_window` tokens.
    pub fn pressure(&self, context_window: u64) -> Result<Pressure, CompactionConfigError> {
        let threshold_tokens = scale(context_window, self.threshold_ratio);
        let retain_tokens = match self.retain_tokens {
            Some(tokens) => tokens,
            None => scale(context_window, self.retain_ratio()),
        };
        if retain_tokens >= threshold_tokens {
            return Err(refuse(
                "retainTokens",
                format!(
                    "must be below the threshold of {threshold_tokens} tokens for a \
                     {context_window}-token window, got {retain_tokens}"
                ),
            ));
        }
        Ok(Pressure {
            context_window,
            threshold_tokens,
            retain_tokens,
        })
    }
}

/// `floor(window × ratio)`.
fn scale(window: u64, ratio: f64) -> u64 {
    // Windows are far below 2^53, so the product is exact enough; floor as the spec says.
    let scaled = (window as f64 * ratio).floor();
    if scaled <= 0.0 {
        0
    } else {
        scaled as u64
    }
}

/// The resolved thresholds for one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pressure {
    pub context_window: u64,
    /// A measured total at or above this compacts.
    pub threshold_tokens: u64,
    /// The newest surface worth this many tokens stays verbatim.
    pub retain_tokens: u64,
}
