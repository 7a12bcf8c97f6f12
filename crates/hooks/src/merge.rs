//! Merging what N hooks of one point said: the strongest decision wins (deny > ask > allow).

use crate::codec::HookOutcome;

/// The point's merged decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Decision {
    #[default]
    None,
    Allow,
    Ask,
    Deny,
}

/// The merged outcome of every hook that ran at one point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Merged {
    pub decision: Decision,
    /// The non-empty reasons of the winning rank only, joined with a blank line.
    pub reason: Option<String>,
    /// Some hook said `continue: false`.
    pub stop: bool,
    /// The `stopReason` of the first hook that stopped.
    pub stop_reason: Option<String>,
    /// Non-empty `additionalContext`s, in hook order.
    pub contexts: Vec<String>,
    pub system_messages: Vec<String>,
    /// The dialect of the first hook that ran (names the context messages' plugin).
    pub dialect: Option<crate::config::Dialect>,
}

pub fn merge<'a>(outcomes: impl IntoIterator<Item = &'a HookOutcome>) -> Merged {
    let outcomes: Vec<&HookOutcome> = outcomes.into_iter().collect();
    let rank = outcomes
        .iter()
        .filter_map(|o| o.decision.map(|d| d.rank()))
        .max()
        .unwrap_or(0);
    let reasons: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.decision.map(|d| d.rank()) == Some(rank) && rank > 0)
        .filter_map(|o| o.reason.as_deref())
        .filter(|r| !r.is_empty())
        .collect();
    let stopper = outcomes.iter().find(|o| o.stop);
    Merged {
        decision: match rank {
            3 => Decision::Deny,
            2 => Decision::Ask,
            1 => Decision::Allow,
            _ => Decision::None,
        },
        reason: (!reasons.is_empty()).then(|| reasons.join("\n\n")),
        stop: stopper.is_some(),
        stop_reason: stopper.and_then(|o| o.stop_reason.clone()),
        contexts: outcomes
            .iter()
            .filter_map(|o| o.additional_context.clone())
            .filter(|c| !c.is_empty())
            .collect(),
        system_messages: outcomes
            .iter()
            .filter_map(|o| o.system_message.clone())
            .filter(|m| !m.is_empty())
            .collect(),
        dialect: None,
    }
}
