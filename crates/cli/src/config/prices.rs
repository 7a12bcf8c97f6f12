//! `[prices]`: what each model costs, so the terminal UI's status line can show the session's
//! cost. Nothing is built in (the repository holds no verified prices): a model without an
//! entry shows no cost.
//!
//! ```toml
//! [prices]
//! currency = "$"                 # written before the amount (default "$")
//!
//! [prices."deepseek-v4-flash"]   # the model id, as the provider names it
//! input = 0.27                   # per million prompt tokens not served from the cache
//! cached_input = 0.07            # per million prompt tokens served from the cache
//! output = 1.10                  # per million completion tokens (reasoning included)
//! ```

use super::error::ConfigError;
use super::reader::{found, At, Doc};
use super::source::{Source, Sourced};
use super::tree::Node;
use crate::tui::cost::{Price, Prices};

/// The keys of one model's entry.
const PRICE_KEYS: &[&str] = &["input", "cached_input", "output"];
/// The longest currency mark accepted (it shares the status line).
const MAX_CURRENCY_CHARS: usize = 8;

/// What `[prices]` said, with lines.
#[derive(Debug, Default)]
pub(crate) struct PricesLayer {
    pub currency: Option<At<String>>,
    pub models: Vec<(String, At<Price>)>,
}

/// The effective `[prices]`.
#[derive(Clone, Debug, PartialEq)]
pub struct PriceSettings {
    pub currency: Sourced<String>,
    /// By model id, in file order.
    pub models: Vec<(String, Sourced<Price>)>,
}

impl Default for PriceSettings {
    fn default() -> Self {
        Self {
            currency: Sourced::default_value("$".into()),
            models: Vec::new(),
        }
    }
}

impl PriceSettings {
    /// The table the status line prices the session with.
    pub fn table(&self) -> Prices {
        Prices {
            currency: self.currency.value.clone(),
            by_model: self
                .models
                .iter()
                .map(|(model, price)| (model.clone(), price.value))
                .collect(),
        }
    }

    /// `dsh config show`'s text for one model.
    pub fn describe(price: &Price) -> String {
        format!(
            "input {}, cached_input {}, output {} per 1M tokens",
            price.input, price.cached_input, price.output
        )
    }
}

pub(crate) fn read(doc: &Doc<'_>, node: &Node) -> Result<PricesLayer, ConfigError> {
    let table = doc.table("prices", node)?;
    let mut layer = PricesLayer::default();
    for (key, value) in table {
        if key.name == "currency" {
            let currency = doc.string("prices.currency", value)?;
            if currency.value.chars().count() > MAX_CURRENCY_CHARS
                || currency.value.chars().any(char::is_control)
            {
                return Err(doc.invalid(
                    &value.span,
                    "prices.currency",
                    "a short mark such as \"$\" or \"¥\" (at most 8 characters)",
                    found(&value.value),
                ));
            }
            layer.currency = Some(currency);
            continue;
        }
        let prefix = format!("prices.\"{}\"", key.name);
        let entry = doc.table(&prefix, value)?;
        doc.check_keys(&prefix, entry, PRICE_KEYS)?;
        let mut amounts = [None; 3];
        for (slot, name) in amounts.iter_mut().zip(PRICE_KEYS) {
            let full = format!("{prefix}.{name}");
            let Some(node) = entry.iter().find(|(k, _)| k.name == *name).map(|(_, v)| v) else {
                return Err(doc.inconsistent(
                    &value.span,
                    &full,
                    format!(
                        "a price needs input, cached_input and output (per million tokens); \
                         {name} is missing"
                    ),
                ));
            };
            *slot = Some(amount(doc, &full, node)?);
        }
        let [Some(input), Some(cached_input), Some(output)] = amounts else {
            continue;
        };
        layer.models.push((
            key.name.clone(),
            At {
                value: Price {
                    input,
                    cached_input,
                    output,
                },
                line: doc.line(&key.span),
            },
        ));
    }
    Ok(layer)
}

/// A price: a number, zero or more.
fn amount(doc: &Doc<'_>, key: &str, node: &Node) -> Result<f64, ConfigError> {
    use super::tree::Value;
    let value = match &node.value {
        Value::Float(x) => Some(*x),
        // Whole prices are written as integers (`output = 2`).
        #[allow(clippy::cast_precision_loss)]
        Value::Integer(n) => Some(*n as f64),
        _ => None,
    };
    match value {
        Some(x) if x.is_finite() && (0.0..1e9).contains(&x) => Ok(x),
        _ => Err(doc.invalid(
            &node.span,
            key,
            "a price per million tokens (a number, 0 or more)",
            found(&node.value),
        )),
    }
}

pub(crate) fn resolve(layer: PricesLayer) -> PriceSettings {
    let line = |line: u32| Source::File { line };
    let mut settings = PriceSettings::default();
    if let Some(currency) = layer.currency {
        settings.currency = Sourced::new(currency.value, line(currency.line));
    }
    settings.models = layer
        .models
        .into_iter()
        .map(|(model, price)| (model, Sourced::new(price.value, line(price.line))))
        .collect();
    settings
}
