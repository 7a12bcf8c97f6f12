//! The session's cost for the status line, from prices the person configured.
//!
//! The repository holds no verified provider prices, so none are built in: a model's cost
//! is shown only when `[prices."<model>"]` in `settings.toml` gives its input, cached-input
//! and output price per million tokens. Calls to a model without a price make the figure a
//! lower bound, which the status line says (`$0.0123+?`).

use dsh_protocol::TokenUsage;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One model's prices, per million tokens, in the table's currency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    /// Prompt tokens the provider did not serve from its cache.
    pub input: f64,
    /// Prompt tokens served from the provider's cache (DeepSeek's "cache hit").
    pub cached_input: f64,
    /// Completion tokens, reasoning included.
    pub output: f64,
}

/// The prices the settings give, by model id.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices {
    /// Written before the amount (`$`, `¥`, `EUR `).
    pub currency: String,
    pub by_model: BTreeMap<String, Price>,
}

/// Tokens one model used, split the way prices are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelTokens {
    pub input: u64,
    pub cached_input: u64,
    pub output: u64,
    /// Model calls counted.
    pub calls: u64,
}

impl ModelTokens {
    /// Adds one call's usage.
    pub fn add(&mut self, usage: &TokenUsage) {
        self.input += usage.input_tokens;
        self.cached_input += usage.cache_read_tokens.unwrap_or(0);
        self.output += usage.output_tokens;
        self.calls += 1;
    }
}

/// What the session cost so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    pub amount: f64,
    /// Some calls went to models without a price: the amount is a lower bound.
    pub partial: bool,
}

impl Prices {
    /// The cost of `tokens` (by model id), or `None` when no model used has a price (then
    /// nothing is shown rather than a made-up figure).
    pub fn cost<'a>(
        &self,
        tokens: impl IntoIterator<Item = (&'a str, &'a ModelTokens)>,
    ) -> Option<Cost> {
        let mut amount = 0.0;
        let mut priced = false;
        let mut partial = false;
        for (model, used) in tokens {
            match self.by_model.get(model) {
                Some(price) => {
                    priced = true;
                    amount += per_million(used.input, price.input)
                        + per_million(used.cached_input, price.cached_input)
                        + per_million(used.output, price.output);
                }
                None => partial |= used.calls > 0,
            }
        }
        priced.then_some(Cost { amount, partial })
    }

    /// `cost` as the status line writes it: `$0.0123`, `$1.24`, `$0.0123+?`.
    pub fn format(&self, cost: Cost) -> String {
        let digits = if cost.amount < 1.0 { 4 } else { 2 };
        let unknown = if cost.partial { "+?" } else { "" };
        format!("{}{:.digits$}{unknown}", self.currency, cost.amount)
    }
}

fn per_million(tokens: u64, price: f64) -> f64 {
    // u64 → f64 loses precision only past 2^53 tokens.
    #[allow(clippy::cast_precision_loss)]
    let tokens = tokens as f64;
    tokens * price / 1_000_000.0
}

static PRICES: OnceLock<Prices> = OnceLock::new();

/// Sets the process's price table from the settings; the first call wins.
pub fn set(prices: Prices) {
    let _ = PRICES.set(prices);
}

/// The process's price table (empty until [`set`]: no cost shown).
pub fn current() -> &'static Prices {
    PRICES.get_or_init(Prices::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prices() -> Prices {
        Prices {
            currency: "$".into(),
            by_model: BTreeMap::from([(
                "m1".to_owned(),
                Price {
                    input: 0.5,
                    cached_input: 0.1,
                    output: 2.0,
                },
            )]),
        }
    }

    fn used(input: u64, cached: u64, output: u64) -> ModelTokens {
        let mut tokens = ModelTokens::default();
        tokens.add(&TokenUsage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: Some(cached),
            cache_write_tokens: None,
            reasoning_tokens: None,
        });
        tokens
    }

    #[test]
    fn each_kind_of_token_at_its_own_price() {
        let tokens = used(1_000_000, 2_000_000, 500_000);
        let cost = prices().cost([("m1", &tokens)]).unwrap();
        assert!((cost.amount - (0.5 + 0.2 + 1.0)).abs() < 1e-9, "{cost:?}");
        assert!(!cost.partial);
        assert_eq!(prices().format(cost), "$1.70");
    }

    #[test]
    fn no_price_no_figure_and_a_mix_is_a_lower_bound() {
        let tokens = used(1_000, 0, 100);
        assert_eq!(prices().cost([("other", &tokens)]), None);
        assert_eq!(Prices::default().cost([("m1", &tokens)]), None);
        let mixed = prices()
            .cost([("m1", &tokens), ("other", &tokens)])
            .unwrap();
        assert!(mixed.partial);
        assert_eq!(prices().format(mixed), "$0.0007+?");
    }
}
