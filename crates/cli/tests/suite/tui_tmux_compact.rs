//! Compaction in the real `dsh` binary's terminal UI (a private tmux server), against the
//! in-process mock model: the original's compacted session resumed, Ctrl-O, and `/compact`
//! refused while a turn runs. Skipped, with a printed reason, when tmux is missing.

use super::run_support::{copy_dir, serve, Sandbox};
use super::tui_tmux::{lines_from, stored, tmux_available, turn_end_kinds, Tmux};
use dsh_cli::tui::compact_count;
use dsh_testkit::mock_llm::{Fault, Reply, Script};
use std::path::Path;
use std::sync::Arc;

/// The original's session with 22 compactions (and 22 failed attempts), in `sandbox`'s store.
fn with_compaction_fixture(sandbox: &Sandbox) -> String {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/dsh-0.1.0-compaction/sessions");
    copy_dir(&from, &sandbox.sessions_root());
    "session-e46909af-dd21-4b3e-8ef2-2136027e5aa0".into()
}

#[tokio::test]
async fn a_compacted_session_resumes_with_cards_and_compact_waits_for_the_turn() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    // The next turn's request stalls, so the turn is still running when /compact is typed.
    let server = serve(Script::new().respond(Reply::fault(Fault::StallBeforeResponse))).await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let id = with_compaction_fixture(&sandbox);
    let in_pane = sandbox.clone();
    let (resumed, opened, refused, cancelled) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start_with(&in_pane, &["--resume", &id]);
        let resumed = tmux.wait_for("─ turn 1 completed");
        tmux.keys("C-o");
        let opened = tmux.wait_for("▾ compacted");
        tmux.enter("read them again");
        tmux.wait_for("running · turn 2");
        tmux.enter("/compact");
        let refused = tmux.wait_for("/compact needs an idle agent");
        tmux.keys("Escape");
        let cancelled = tmux.wait_for("turn 2 cancelled by you");
        assert!(tmux.quit(), "dsh did not exit after Ctrl-C twice");
        (resumed, opened, refused, cancelled)
    })
    .await
    .unwrap();
    // The newest compaction and the failed attempt after it, as the original logged them;
    // the checkpoints are not prompts.
    // The newest card of that size: shorter read cards leave an earlier one on screen too.
    let newest = resumed
        .rfind("▸ compacted 3 messages")
        .map_or(resumed.as_str(), |at| &resumed[at..]);
    assert_eq!(
        lines_from(
            newest,
            "▸ compacted 3 messages (~664 tokens) → summary (~123 tokens)  (Ctrl-O shows the summary)",
            7
        ),
        [
            "▸ compacted 3 messages (~664 tokens) → summary (~123 tokens)  (Ctrl-O shows the summary)",
            "",
            "· compaction attempt failed, nothing changed: summary is not smaller than the shadowed co…",
            "",
            "• all notes read",
            "",
            "─ turn 1 completed",
        ]
    );
    assert!(!resumed.contains("compacted-summary"), "{resumed}");
    // Ctrl-O prints the newest card again, opened to its summary.
    assert_eq!(
        lines_from(
            &opened,
            "▾ compacted 3 messages (~664 tokens) → summary (~123 tokens)",
            5
        ),
        [
            "▾ compacted 3 messages (~664 tokens) → summary (~123 tokens)",
            "  ## Primary Request and Intent",
            "  - read notes",
            "  ## Current Work",
            "  - reading notes (summary)",
        ]
    );
    // Refused while the turn runs, and the line stays typed for later.
    let rows: Vec<&str> = refused.lines().map(str::trim_end).collect();
    let at = rows
        .iter()
        .position(|l| l.starts_with("✗ /compact needs an idle agent"))
        .unwrap();
    assert_eq!(
        rows[at..at + 4],
        [
            "✗ /compact needs an idle agent: let the turn finish (or press Esc to stop it), then press",
            "Enter again",
            "──────────────────────────────────────────────────────────────────────────────────────────",
            "› /compact",
        ]
    );
    assert!(cancelled.contains("› /compact"), "{cancelled}");
    let stored = stored(&sandbox.sessions_root());
    assert_eq!(turn_end_kinds(&stored[0].events), ["completed", "aborted"]);
    server.shutdown().await;
}

#[tokio::test]
async fn compact_while_idle_in_a_real_terminal() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let (server, sandbox) =
        two_turns_then(&[Reply::text("## Current Work\n- parser split; tests added")]).await;
    let in_pane = sandbox.clone();
    let (before, after) = tokio::task::spawn_blocking(move || {
        let tmux = start_two_turns(&in_pane);
        let before = tmux.pane();
        tmux.enter("/compact");
        let after = tmux.wait_for("history items");
        assert!(tmux.quit(), "dsh did not exit after Ctrl-C twice");
        (before, after)
    })
    .await
    .unwrap();
    let status = |pane: &str| {
        pane.lines()
            .find(|l| l.starts_with("idle · "))
            .unwrap_or_default()
            .trim_end()
            .to_owned()
    };
    // The meter's estimate of the next request against the model's 1M window, smaller
    // once the first answer is summarized.
    let (before_fill, after_fill) = (ctx_tokens(&status(&before)), ctx_tokens(&status(&after)));
    assert!(after_fill < before_fill, "{before}\n{after}");
    let stored = stored(&sandbox.sessions_root());
    let events = &stored[0].events;
    let summary = events
        .iter()
        .find_map(|e| e.decode::<dsh_compaction::CompactionSummary>())
        .unwrap()
        .unwrap();
    let card = format!(
        "▸ compacted {} messages (~{} tokens) → summary",
        summary.shadowed_seqs.len(),
        compact_count(summary.shadowed_token_count)
    );
    let rows: Vec<&str> = after.lines().map(str::trim_end).collect();
    let at = rows
        .iter()
        .position(|l| l.starts_with("› /compact"))
        .unwrap_or_else(|| panic!("{after}"));
    assert!(rows[at + 2].starts_with(&card), "{card:?} in\n{after}");
    assert_eq!(
        rows[at + 4],
        format!(
            "Compacted {} history items (~{} tokens).",
            summary.shadowed_seqs.len(),
            summary.shadowed_token_count
        )
    );
    // A standalone manual compaction owns no turn, and no turn ran for it.
    assert_eq!(turn_end_kinds(events), ["completed", "completed"]);
    server.shutdown().await;
}

/// The token figure of a status line's `ctx P% (T/W)`, in tokens.
fn ctx_tokens(status: &str) -> f64 {
    let fill = status
        .split(" · ctx ")
        .nth(1)
        .unwrap_or_else(|| panic!("no ctx in {status:?}"));
    let tokens = fill
        .split_once('(')
        .and_then(|(_, rest)| rest.split_once('/'))
        .map(|(tokens, _)| tokens)
        .unwrap_or_else(|| panic!("no (T/W) in {status:?}"));
    match tokens.strip_suffix('k') {
        Some(thousands) => thousands.parse::<f64>().unwrap() * 1000.0,
        None => tokens.parse().unwrap(),
    }
}

/// A mock serving a long first answer (over the selection floor of 1,024 estimated tokens), a
/// short second one, then `then` (the summary a compaction asks for, and what follows), and a
/// sandbox using it.
async fn two_turns_then(then: &[Reply]) -> (dsh_testkit::mock_llm::MockServer, Arc<Sandbox>) {
    let long = "The parser is now split into a lexer and a grammar. ".repeat(100);
    let mut script = Script::new()
        .respond(Reply::text(long))
        .respond(Reply::text("Tests added."));
    for reply in then {
        script = script.respond(reply.clone());
    }
    let server = serve(script).await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    (server, sandbox)
}

/// Opens dsh on a new session and runs the two turns of [`two_turns_then`].
fn start_two_turns(sandbox: &Sandbox) -> Tmux {
    let tmux = Tmux::start(sandbox);
    tmux.enter("split the parser");
    tmux.wait_for("turn 1 completed");
    tmux.enter("add tests");
    tmux.wait_for("turn 2 completed");
    tmux
}

#[tokio::test]
async fn esc_cancels_a_compaction_and_the_session_goes_on() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let (server, sandbox) = two_turns_then(&[
        Reply::fault(Fault::StallBeforeResponse),
        Reply::text("Still here."),
    ])
    .await;
    let in_pane = sandbox.clone();
    let (compacting, cancelled, after) = tokio::task::spawn_blocking(move || {
        let tmux = start_two_turns(&in_pane);
        tmux.enter("/compact");
        let compacting = tmux.wait_for("compacting history (Esc cancels)");
        tmux.keys("Escape");
        let cancelled = tmux.wait_for("Compaction cancelled.");
        tmux.enter("are you there?");
        let after = tmux.wait_for("turn 3 completed");
        assert!(tmux.quit(), "dsh did not exit after Ctrl-C twice");
        (compacting, cancelled, after)
    })
    .await
    .unwrap();
    assert!(
        compacting.contains("⟳ compacting older history (/compact; Esc cancels)…"),
        "{compacting}"
    );
    let rows: Vec<&str> = cancelled.lines().map(str::trim_end).collect();
    let at = rows.iter().position(|l| *l == "› /compact").unwrap();
    assert_eq!(
        rows[at..at + 5],
        [
            "› /compact",
            "",
            "· compaction attempt failed, nothing changed: compaction cancelled",
            "",
            "✗ Compaction cancelled.",
        ]
    );
    assert!(after.contains("• Still here."), "{after}");
    let stored = stored(&sandbox.sessions_root());
    let events = &stored[0].events;
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| e.decode::<dsh_compaction::CompactionEnd>())
        .map(|end| end.unwrap())
        .collect();
    assert_eq!(ends.len(), 1);
    assert!(ends[0].error.is_some(), "{ends:?}");
    assert_eq!(
        turn_end_kinds(events),
        ["completed", "completed", "completed"]
    );
    server.shutdown().await;
}
