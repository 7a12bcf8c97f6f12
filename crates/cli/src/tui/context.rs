//! How full the model's context is, as the status line shows it: `ctx 42% (84k/200k)`.
//!
//! The figure comes from the session's token meter (the estimate of what the next request
//! sends, calibrated to the provider's reported usage), measured by the application after
//! events arrive, not by the view per frame. Without a meter the view falls back to the
//! prompt size the provider reported for the latest call.

use super::text::{compact_count, percent};

/// One measurement of the context on screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextFill {
    /// Estimated tokens of the next request.
    pub tokens: u64,
    /// The model's context window, when known.
    pub window: Option<u64>,
    /// The window is a conservative default for a model whose real window nobody told dsh
    /// (configure `context_window` for the model to replace it).
    pub window_guessed: bool,
}

impl ContextFill {
    /// The status line's part: `ctx 42% (84k/200k)`, `ctx 42% (84k/32.8k guess)` when the
    /// window is a default, `ctx 84k/?` when it is unknown.
    pub fn status_text(&self) -> String {
        let tokens = compact_count(self.tokens);
        match self.window {
            Some(window) if window > 0 => {
                let guess = if self.window_guessed { " guess" } else { "" };
                format!(
                    "ctx {} ({tokens}/{}{guess})",
                    percent(self.tokens, window),
                    compact_count(window)
                )
            }
            _ => format!("ctx {tokens}/?"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fill_reads_as_percent_then_tokens_of_window() {
        let fill = |tokens, window, window_guessed| {
            ContextFill {
                tokens,
                window,
                window_guessed,
            }
            .status_text()
        };
        assert_eq!(fill(84_000, Some(200_000), false), "ctx 42% (84k/200k)");
        assert_eq!(fill(8_005, Some(1_000_000), false), "ctx 0.8% (8k/1M)");
        assert_eq!(
            fill(13_800, Some(32_768), true),
            "ctx 42% (13.8k/32.8k guess)"
        );
        assert_eq!(fill(84_000, None, false), "ctx 84k/?");
        assert_eq!(fill(10, Some(0), false), "ctx 10/?");
    }
}
