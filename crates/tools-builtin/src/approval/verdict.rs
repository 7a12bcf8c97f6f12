//! The policy half of a verdict: given the policy, the kind of call and whether the sandbox
//! confines it, must a person be asked, and what the messages about it say.
//!
//! Rules come first (see `Approvals::check`): a deny refuses, an ask asks, an allow lets the
//! call run. Only calls no rule decides reach [`policy_need`].

use super::facts::{CallView, Gate};
use super::policy::ApprovalPolicy;
use super::rules::ApprovalRule;

/// Why a call is put to a person.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// An `ask` rule in the settings matches it.
    AskRule,
    /// `untrusted`: every command and file change is asked.
    Untrusted,
    /// `ask` with the sandbox off (`danger-full-access`): nothing else stands between the
    /// call and the machine.
    Unsandboxed,
    /// `ask` or `untrusted` for a web fetch: no sandbox mode confines the network.
    Network,
}

/// Whether `policy` asks about a call of kind `gate` that `sandboxed` says the sandbox
/// confines. Read-only commands are never asked; reads and unmanaged tools only by rule.
pub(crate) fn policy_need(policy: ApprovalPolicy, gate: Gate, sandboxed: bool) -> Option<Need> {
    match (policy, gate) {
        (ApprovalPolicy::Never, _) => None,
        (_, Gate::ReadOnly | Gate::Unmanaged | Gate::Command { read_only: true }) => None,
        (_, Gate::Network) => Some(Need::Network),
        (ApprovalPolicy::Untrusted, Gate::Command { .. } | Gate::FileChange) => {
            Some(Need::Untrusted)
        }
        (ApprovalPolicy::Ask, Gate::Command { .. } | Gate::FileChange) => {
            (!sandboxed).then_some(Need::Unsandboxed)
        }
    }
}

/// "shell commands", "file changes", ... for messages.
pub(crate) fn what(view: &CallView) -> &'static str {
    match view.gate {
        Gate::Command { .. } => "shell commands",
        Gate::FileChange => "file changes",
        Gate::Network => "web fetches",
        Gate::ReadOnly | Gate::Unmanaged => "calls like this",
    }
}

/// Why the person is asked, as the prompt (and `approval/asked`) says it.
pub(crate) fn ask_reason(need: Need, view: &CallView) -> String {
    let what = what(view);
    match need {
        Need::AskRule => "an ask rule in the approval settings matches this call".into(),
        Need::Untrusted => format!("{what} need approval under the untrusted policy"),
        Need::Unsandboxed => {
            format!("{what} need approval under the ask policy while the sandbox is off (danger-full-access)")
        }
        Need::Network => format!("{what} need approval: the sandbox does not confine the network"),
    }
}

/// What the model reads when a call needs a person and no one can answer.
pub(crate) fn headless_denial(need: Need, view: &CallView) -> String {
    let suggestion = ApprovalRule::suggestion(&view.facts());
    let (why, how) = match need {
        Need::AskRule => (
            "an ask rule in the user's approval settings sends it to a person".to_string(),
            "They can run it in the interactive UI (`dsh`), or change the rule in settings.toml."
                .to_string(),
        ),
        Need::Untrusted => (
            format!("{} need approval under the untrusted policy", what(view)),
            format!(
                "To let calls like this run they can rerun with `--approval ask` (commands and \
                 file changes then run inside the sandbox without a prompt), or add an allow \
                 rule to settings.toml: {suggestion}"
            ),
        ),
        Need::Unsandboxed => (
            format!(
                "{} need approval while the sandbox is off (danger-full-access)",
                what(view)
            ),
            format!(
                "To let calls like this run they can rerun inside the sandbox (`--sandbox \
                 workspace-write`), rerun with `--approval never`, or add an allow rule to \
                 settings.toml: {suggestion}"
            ),
        ),
        Need::Network => (
            format!("{} need approval", what(view)),
            format!(
                "To let calls like this run they can rerun with `--approval never`, or add an \
                 allow rule to settings.toml: {suggestion}"
            ),
        ),
    };
    format!(
        "this {} call was not run: {why}, and no one can answer approval prompts in this session \
         (a headless run). Tell the user what you wanted to do. {how}",
        view.tool
    )
}

/// What the model reads when an ask rule or a hook wants a person under `never`.
pub(crate) fn never_denial(view: &CallView) -> String {
    format!(
        "this {} call was not run: the user's settings send it to approval, and approval \
         prompts are off in this session (approval policy never). Do not retry it; tell the \
         user what you wanted to do.",
        view.tool
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_policy_asks_about_what_the_sandbox_leaves_open() {
        use ApprovalPolicy::{Ask, Never, Untrusted};
        let command = Gate::Command { read_only: false };
        let listing = Gate::Command { read_only: true };
        for sandboxed in [true, false] {
            for gate in [Gate::ReadOnly, Gate::Unmanaged, listing] {
                for policy in ApprovalPolicy::ALL {
                    assert_eq!(policy_need(*policy, gate, sandboxed), None);
                }
            }
            for gate in [command, Gate::FileChange, Gate::Network] {
                assert_eq!(policy_need(Never, gate, sandboxed), None);
            }
            assert_eq!(
                policy_need(Untrusted, command, sandboxed),
                Some(Need::Untrusted)
            );
            assert_eq!(
                policy_need(Untrusted, Gate::FileChange, sandboxed),
                Some(Need::Untrusted)
            );
            assert_eq!(
                policy_need(Ask, Gate::Network, sandboxed),
                Some(Need::Network)
            );
        }
        assert_eq!(policy_need(Ask, command, true), None);
        assert_eq!(policy_need(Ask, Gate::FileChange, true), None);
        assert_eq!(policy_need(Ask, command, false), Some(Need::Unsandboxed));
        assert_eq!(
            policy_need(Ask, Gate::FileChange, false),
            Some(Need::Unsandboxed)
        );
    }
}
