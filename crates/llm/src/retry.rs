//! Retry policy carried by each adapter registration.
//!
//! Failures have no "retryable" flag of their own: whether a code is worth retrying depends on
//! the provider, so each adapter registration resolves a policy and the retry plugin (an
//! `agent/request-error` listener) consults it.

use dsh_protocol::codes;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long to wait between attempts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Backoff {
    /// Delay before the first retry; each later retry doubles it.
    pub initial_delay_ms: u64,
    /// Upper bound for computed delays, and for how long a provider's `Retry-After` is honoured.
    pub max_delay_ms: u64,
    /// Relative spread applied to computed delays (0.1 = ±10%), so clients that failed
    /// together do not retry together.
    pub jitter_ratio: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial_delay_ms: 500,
            max_delay_ms: 10_000,
            jitter_ratio: 0.1,
        }
    }
}

impl Backoff {
    /// The delay before retry number `retry` (1-based), in milliseconds.
    ///
    /// A provider's `Retry-After` wins when it is no longer than `max_delay_ms`; otherwise the
    /// delay is `initial · 2^(retry−1)`, capped at `max_delay_ms`, with jitter. `unit_random` is
    /// a number in `[0, 1)`; [`Self::delay_ms`] supplies a random one.
    pub fn delay_ms_with(
        &self,
        retry: u32,
        provider_retry_after_ms: Option<u64>,
        unit_random: f64,
    ) -> f64 {
        let max = self.max_delay_ms as f64;
        if let Some(after) = provider_retry_after_ms {
            if after > 0 && after <= self.max_delay_ms {
                return after as f64;
            }
        }
        let exponent = retry.saturating_sub(1).min(62);
        let base = (self.initial_delay_ms as f64 * 2f64.powi(exponent as i32)).min(max);
        let ratio = self.jitter_ratio.clamp(0.0, 1.0);
        let spread = ratio * (2.0 * unit_random.clamp(0.0, 1.0) - 1.0);
        (base * (1.0 + spread)).clamp(0.0, max)
    }

    /// [`Self::delay_ms_with`] with a random jitter draw.
    pub fn delay_ms(&self, retry: u32, provider_retry_after_ms: Option<u64>) -> f64 {
        self.delay_ms_with(retry, provider_retry_after_ms, fastrand::f64())
    }

    /// [`Self::delay_ms`] as a [`Duration`].
    pub fn delay(&self, retry: u32, provider_retry_after_ms: Option<u64>) -> Duration {
        Duration::from_secs_f64(self.delay_ms(retry, provider_retry_after_ms) / 1000.0)
    }
}

/// The `normal` policy: a bounded number of retries for a set of codes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NormalRetry {
    pub max_retries: u32,
    pub retryable_codes: Vec<String>,
    #[serde(flatten)]
    pub backoff: Backoff,
}

impl Default for NormalRetry {
    fn default() -> Self {
        Self {
            max_retries: 5,
            retryable_codes: [
                codes::EMPTY_RESPONSE,
                codes::RATE_LIMIT,
                codes::SERVER,
                codes::TIMEOUT,
                codes::TRANSPORT,
            ]
            .map(String::from)
            .to_vec(),
            backoff: Backoff::default(),
        }
    }
}

/// A registration's retry policy, with every default filled in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum ResolvedRetryPolicy {
    /// Retry listed codes up to a limit.
    Normal(NormalRetry),
    /// Retry every failure, without limit (for unattended runs that must not give up).
    Always {
        #[serde(flatten)]
        backoff: Backoff,
    },
}

impl Default for ResolvedRetryPolicy {
    fn default() -> Self {
        Self::Normal(NormalRetry::default())
    }
}

impl ResolvedRetryPolicy {
    /// The policy's mode name as logged in `llm/retry`.
    pub fn mode(&self) -> &'static str {
        match self {
            Self::Normal(_) => "normal",
            Self::Always { .. } => "always",
        }
    }

    /// The retry limit; `None` means unlimited.
    pub fn max_retries(&self) -> Option<u32> {
        match self {
            Self::Normal(normal) => Some(normal.max_retries),
            Self::Always { .. } => None,
        }
    }

    /// Whether a failure with `code` may be retried at all.
    pub fn is_retryable(&self, code: &str) -> bool {
        match self {
            Self::Normal(normal) => normal.retryable_codes.iter().any(|c| c == code),
            Self::Always { .. } => true,
        }
    }

    /// Whether retry number `retry` (1-based) of a failure with `code` is allowed.
    pub fn allows(&self, code: &str, retry: u32) -> bool {
        self.is_retryable(code) && self.max_retries().is_none_or(|max| retry <= max)
    }

    /// The backoff settings.
    pub fn backoff(&self) -> &Backoff {
        match self {
            Self::Normal(normal) => &normal.backoff,
            Self::Always { backoff } => backoff,
        }
    }

    /// The delay before retry number `retry`, in milliseconds (see [`Backoff::delay_ms_with`]).
    pub fn delay_for(&self, retry: u32, provider_retry_after_ms: Option<u64>) -> f64 {
        self.backoff().delay_ms(retry, provider_retry_after_ms)
    }

    /// A stable identity for the policy's settings, logged with each retry so retries counted
    /// under one policy are not confused with those of a changed policy.
    pub fn policy_key(&self) -> String {
        // The key is matched against keys the original wrote, so numbers must render the way
        // JavaScript renders them: a whole-valued ratio is `0`/`1`, never `0.0`/`1.0`.
        fn js_number(x: f64) -> serde_json::Value {
            if x.fract() == 0.0 && x.abs() < 9.0e15 {
                serde_json::Value::from(x as i64)
            } else {
                serde_json::Value::from(x)
            }
        }
        let value = match self {
            Self::Normal(n) => serde_json::json!([
                "normal",
                n.max_retries,
                n.retryable_codes,
                n.backoff.initial_delay_ms,
                n.backoff.max_delay_ms,
                js_number(n.backoff.jitter_ratio)
            ]),
            Self::Always { backoff } => serde_json::json!([
                "always",
                backoff.initial_delay_ms,
                backoff.max_delay_ms,
                js_number(backoff.jitter_ratio)
            ]),
        };
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_match_the_original() {
        let policy = ResolvedRetryPolicy::default();
        assert_eq!(
            serde_json::to_value(&policy).unwrap(),
            json!({"mode":"normal","maxRetries":5,
                "retryableCodes":["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],
                "initialDelayMs":500,"maxDelayMs":10000,"jitterRatio":0.1})
        );
        // The key the original logs in `llm/retry.policyKey`.
        assert_eq!(
            policy.policy_key(),
            r#"["normal",5,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],500,10000,0.1]"#
        );
        // Whole-valued ratios render as JavaScript writes them.
        let mut no_jitter = NormalRetry::default();
        no_jitter.backoff.jitter_ratio = 0.0;
        assert_eq!(
            ResolvedRetryPolicy::Normal(no_jitter).policy_key(),
            r#"["normal",5,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],500,10000,0]"#
        );
        let partial: ResolvedRetryPolicy =
            serde_json::from_value(json!({"mode":"always","maxDelayMs":2000})).unwrap();
        assert_eq!(
            partial,
            ResolvedRetryPolicy::Always {
                backoff: Backoff {
                    max_delay_ms: 2000,
                    ..Backoff::default()
                }
            }
        );
    }

    #[test]
    fn retryability_and_limits() {
        let normal = ResolvedRetryPolicy::default();
        assert!(normal.allows("SERVER", 5));
        assert!(!normal.allows("SERVER", 6));
        assert!(!normal.allows("AUTH", 1));
        let always = ResolvedRetryPolicy::Always {
            backoff: Backoff::default(),
        };
        assert!(always.allows("AUTH", 1000));
        assert_eq!(always.max_retries(), None);
        assert_eq!(always.mode(), "always");
    }

    #[test]
    fn delays_grow_exponentially_with_jitter_and_cap() {
        let backoff = Backoff::default();
        // unit_random 0.5 means no jitter.
        assert_eq!(backoff.delay_ms_with(1, None, 0.5), 500.0);
        assert_eq!(backoff.delay_ms_with(2, None, 0.5), 1000.0);
        assert_eq!(backoff.delay_ms_with(5, None, 0.5), 8000.0);
        assert_eq!(backoff.delay_ms_with(6, None, 0.5), 10_000.0);
        assert_eq!(backoff.delay_ms_with(60, None, 0.5), 10_000.0);
        assert_eq!(backoff.delay_ms_with(1, None, 0.0), 450.0);
        assert!((backoff.delay_ms_with(1, None, 1.0) - 550.0).abs() < 1e-9);
        let random = backoff.delay_ms(1, None);
        assert!((450.0..=550.0).contains(&random));
    }

    #[test]
    fn provider_retry_after_is_honoured_only_within_the_cap() {
        let backoff = Backoff::default();
        assert_eq!(backoff.delay_ms_with(3, Some(1234), 0.0), 1234.0);
        assert_eq!(backoff.delay_ms_with(1, Some(60_000), 0.5), 500.0);
        assert_eq!(backoff.delay(2, Some(2000)), Duration::from_millis(2000));
    }
}
