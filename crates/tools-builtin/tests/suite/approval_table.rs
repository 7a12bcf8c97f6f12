//! Every approval policy × sandbox mode × kind of call, through the real pipeline: was a person
//! asked, and did the call run (and did its write land)? The answerer says no to every
//! question, so an asked call never runs.

use dsh_tools::InvocationResult;
use dsh_tools_builtin::sandbox::{Enforcement, SandboxProbe};
use dsh_tools_builtin::{ApprovalDecision, SandboxMode};
use serde_json::{json, Value};

use super::harness::{text, Harness, ScriptedAnswerer};
use super::support::Fixture;

/// What became of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    /// A person was asked (and said no): the call did not run.
    Asked,
    /// It ran unasked and did what it was meant to.
    Ran,
    /// It ran unasked, and the sandbox refused its write.
    Fenced,
}
use Cell::{Asked, Fenced, Ran};

/// The kinds of call, in table column order.
const KINDS: [&str; 5] = ["read", "ls", "echo > file", "write", "web_fetch"];

fn call(kind: &str) -> (&'static str, Value) {
    match kind {
        "read" => ("read", json!({"file_path": "seen.txt"})),
        "ls" => ("bash", json!({"command": "ls"})),
        "echo > file" => ("bash", json!({"command": "echo ok > by-bash.txt"})),
        "write" => (
            "write",
            json!({"file_path": "by-write.txt", "content": "ok"}),
        ),
        // Port 9 (discard) is closed on loopback: a fetch that runs fails to connect.
        _ => ("web_fetch", json!({"url": "http://127.0.0.1:9/"})),
    }
}

/// What `result` says happened, checking the workspace for the writes.
fn outcome(h: &Harness, kind: &str, result: &InvocationResult) -> Cell {
    if result.error_info().is_some_and(|e| e.code == "TOOL_DENIED") {
        return Asked;
    }
    let landed = |name: &str| h.fx.ws().join(name).exists();
    match kind {
        "echo > file" if landed("by-bash.txt") => Ran,
        "echo > file" => {
            assert!(
                text(result).contains("[sandbox: file access denied"),
                "{result:?}"
            );
            Fenced
        }
        "write" if landed("by-write.txt") => Ran,
        "write" => {
            assert_eq!(result.error_info().unwrap().code, "SANDBOX_DENIED");
            Fenced
        }
        // A fetch that ran fails to connect, not for want of approval.
        "web_fetch" => Ran,
        _ => {
            assert!(!result.is_error(), "{kind}: {result:?}");
            Ran
        }
    }
}

#[tokio::test]
async fn each_policy_asks_what_its_sandbox_mode_leaves_open() {
    use SandboxMode::{DangerFullAccess as Danger, ReadOnly, WorkspaceWrite};
    #[rustfmt::skip]
    let table: [(&str, SandboxMode, [Cell; 5]); 9] = [
        //                           read  ls   echo>f  write   web_fetch
        ("never",     ReadOnly,       [Ran, Ran, Fenced, Fenced, Ran]),
        ("never",     WorkspaceWrite, [Ran, Ran, Ran,    Ran,    Ran]),
        ("never",     Danger,         [Ran, Ran, Ran,    Ran,    Ran]),
        ("ask",       ReadOnly,       [Ran, Ran, Fenced, Fenced, Asked]),
        ("ask",       WorkspaceWrite, [Ran, Ran, Ran,    Ran,    Asked]),
        ("ask",       Danger,         [Ran, Ran, Asked,  Asked,  Asked]),
        ("untrusted", ReadOnly,       [Ran, Ran, Asked,  Asked,  Asked]),
        ("untrusted", WorkspaceWrite, [Ran, Ran, Asked,  Asked,  Asked]),
        ("untrusted", Danger,         [Ran, Ran, Asked,  Asked,  Asked]),
    ];
    let probe = SandboxProbe::current();
    if probe.enforcement(WorkspaceWrite) != Enforcement::Full {
        eprintln!("skipping: the kernel cannot fully enforce the sandbox: {probe:?}");
        return;
    }
    for (policy, mode, expected) in table {
        let fx = Fixture::mode(mode);
        fx.write("seen.txt", "x\n");
        let tools = json!({"web_fetch": {"enabled": true, "allow_private_addresses": true}});
        let h = Harness::with_fixture(tools, json!({"policy": policy}), fx);
        let answerer =
            ScriptedAnswerer::new(KINDS.map(|_| ApprovalDecision::Deny { feedback: None }));
        h.answer_with(&answerer);
        let mut got = Vec::new();
        for kind in KINDS {
            let (tool, args) = call(kind);
            let result = h.run(tool, args).await;
            got.push(outcome(&h, kind, &result));
        }
        assert_eq!(got, expected, "{policy} × {mode}");
        let asks = expected.iter().filter(|c| **c == Asked).count();
        assert_eq!(answerer.asked().len(), asks, "{policy} × {mode}");
        // Each ask is one asked/decided pair in the log, nothing else.
        assert_eq!(h.approval_events().len(), 2 * asks, "{policy} × {mode}");
    }
}
