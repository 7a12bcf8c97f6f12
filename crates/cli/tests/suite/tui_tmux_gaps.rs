//! End to end in tmux: the status line's cost from `[prices]`, the live area after the
//! terminal is resized, and the newline keys that work where the kitty keyboard protocol
//! does not reach (tmux). Skipped, with a printed reason, without tmux.

use super::run_support::{serve, Sandbox};
use super::tui_tmux::{tmux_available, Tmux};
use dsh_testkit::mock_llm::{Reply, Script, UsageSpec};
use std::sync::Arc;

fn status_lines(pane: &str) -> usize {
    pane.lines()
        .filter(|l| l.contains("deepseek-v4-flash (deepseek-official)"))
        .count()
}

#[tokio::test]
async fn the_status_line_shows_the_cost_only_with_a_price_set() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let usage = UsageSpec {
        prompt_tokens: Some(1_000_000),
        completion_tokens: Some(100_000),
        cached_tokens: Some(600_000),
        ..UsageSpec::default()
    };
    let reply = || Reply::text("Priced.").usage(usage.clone());
    let server = serve(Script::new().respond(reply()).respond(reply())).await;
    let priced = Arc::new(Sandbox::new().with_server(&server));
    std::fs::write(
        priced.home.path().join("settings.toml"),
        "[prices.\"deepseek-v4-flash\"]\ninput = 1.0\ncached_input = 0.5\noutput = 10\n",
    )
    .unwrap();
    let unpriced = Arc::new(Sandbox::new().with_server(&server));
    let (with_price, without_price) = tokio::task::spawn_blocking(move || {
        let shown = |sandbox: &Sandbox| {
            let tmux = Tmux::start(sandbox);
            tmux.enter("what does it cost?");
            let pane = tmux.wait_for("turn 1 completed");
            assert!(tmux.quit());
            pane
        };
        (shown(&priced), shown(&unpriced))
    })
    .await
    .unwrap();
    // 400k uncached at $1/M + 600k cached at $0.5/M + 100k out at $10/M = $1.70.
    assert!(
        with_price.contains("1M in / 100k out · $1.70 · ctx"),
        "{with_price}"
    );
    assert!(
        without_price.contains("1M in / 100k out · ctx"),
        "{without_price}"
    );
    assert!(!without_price.contains('$'), "{without_price}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_resize_redraws_the_live_area_once_at_the_new_width() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(
        Script::new()
            .respond(Reply::text("First answer, settled in scrollback."))
            .respond(Reply::text("Second answer after the resizes.")),
    )
    .await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let long = "word ".repeat(30);
    let typed = long.trim_end().to_owned();
    let (narrow, wide, done) = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.enter("first");
        tmux.wait_for("turn 1 completed");
        tmux.type_text(&typed);
        tmux.wait_for("word word");
        tmux.resize(50, 20);
        let narrow = tmux.wait_until(|pane| {
            pane.lines().all(|l| l.chars().count() <= 50) && pane.contains("idle ·")
        });
        let narrow = tmux.wait_for(narrow.lines().last().unwrap_or(""));
        tmux.resize(120, 30);
        let wide = tmux.wait_until(|pane| pane.lines().any(|l| l.trim_end().chars().count() > 90));
        let wide = tmux.wait_for(wide.lines().last().unwrap_or(""));
        tmux.keys("Enter");
        let done = tmux.wait_for("turn 2 completed");
        assert!(tmux.quit());
        (narrow, wide, done)
    })
    .await
    .unwrap();
    for pane in [&narrow, &wide, &done] {
        assert_eq!(status_lines(pane), 1, "one status line:\n{pane}");
    }
    // The input re-wraps to each width: 30 words are 149 columns.
    let input_rows = |pane: &str| pane.lines().filter(|l| l.contains("word word")).count();
    assert!(input_rows(&narrow) >= 3, "{narrow}");
    assert_eq!(input_rows(&wide), 2, "{wide}");
    assert!(narrow.lines().all(|l| l.chars().count() <= 50), "{narrow}");
    // What was printed before stays printed once; the new turn follows it.
    assert_eq!(
        done.matches("Second answer after the resizes.").count(),
        1,
        "{done}"
    );
    assert!(done.matches("turn 1 completed").count() <= 1, "{done}");
    server.shutdown().await;
}

#[tokio::test]
async fn ctrl_j_and_alt_enter_are_newlines_where_shift_enter_cannot_be_told_apart() {
    if !tmux_available() {
        println!("skipped: tmux is not installed");
        return;
    }
    let server = serve(Script::new().respond(Reply::text("Three lines read."))).await;
    let sandbox = Arc::new(Sandbox::new().with_server(&server));
    let in_pane = sandbox.clone();
    let typed = tokio::task::spawn_blocking(move || {
        let tmux = Tmux::start(&in_pane);
        tmux.type_text("one");
        tmux.keys("C-j");
        tmux.type_text("two");
        tmux.keys("M-Enter");
        tmux.type_text("three");
        let typed = tmux.wait_for("  three");
        tmux.keys("Enter");
        tmux.wait_for("turn 1 completed");
        assert!(tmux.quit());
        typed
    })
    .await
    .unwrap();
    assert!(typed.contains("› one\n  two\n  three"), "{typed}");
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.body.to_string().contains(r"one\ntwo\nthree")),
        "{requests:#?}"
    );
    server.shutdown().await;
}
