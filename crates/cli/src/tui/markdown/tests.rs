#![allow(clippy::unwrap_used)]

use super::*;
use ratatui::style::Color;

fn text(lines: &[Line<'_>]) -> String {
    let rows: Vec<String> = lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect();
    rows.join("\n")
}

fn shown(markdown: &str, width: usize) -> String {
    text(&render(markdown, width, &Theme::dark()))
}

fn style_of(lines: &[Line<'_>], needle: &str) -> Style {
    lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .find(|s| s.content.contains(needle))
        .map(|s| s.style)
        .unwrap()
}

#[test]
fn headings_emphasis_code_and_links() {
    let md = "## Done\n\nSome **bold**, *italic*, ~~gone~~ and `code`; see [the docs](https://x.dev/d).\n\n---\n\nend";
    assert_eq!(
        shown(md, 40),
        "Done\n\
         \n\
         Some bold, italic, gone and code; see\n\
         the docs (https://x.dev/d).\n\
         \n\
         ────────────────────────────────────────\n\
         \n\
         end"
    );
    let lines = render(md, 40, &Theme::dark());
    assert!(style_of(&lines, "Done")
        .add_modifier
        .contains(Modifier::BOLD));
    assert!(style_of(&lines, "bold")
        .add_modifier
        .contains(Modifier::BOLD));
    assert!(style_of(&lines, "italic")
        .add_modifier
        .contains(Modifier::ITALIC));
    assert!(style_of(&lines, "gone")
        .add_modifier
        .contains(Modifier::CROSSED_OUT));
    assert_eq!(style_of(&lines, "code").fg, Some(Color::Cyan));
    assert!(style_of(&lines, "the docs")
        .add_modifier
        .contains(Modifier::UNDERLINED));
}

#[test]
fn nested_numbered_and_task_lists() {
    let md = "1. first\n2. second with a long line that wraps\n   - nested\n   - [x] done\n   - [ ] todo\n3. third\n";
    assert_eq!(
        shown(md, 30),
        "1. first\n\
         2. second with a long line\n   \
            that wraps\n   \
            ◦ nested\n   \
            ◦ [x] done\n   \
            ◦ [ ] todo\n\
         3. third"
    );
}

#[test]
fn block_quotes_and_code_blocks() {
    let md = "> quoted words\n> more\n\n```rust\nfn main() {\n\tlet x = 1;\n}\n```\n";
    let lines = render(md, 40, &Theme::dark());
    assert_eq!(
        text(&lines),
        "│ quoted words\n\
         │ more\n\
         \n  \
           fn main() {\n      \
               let x = 1;\n  \
           }"
    );
    // Highlighted: the keyword has a colour of the syntax theme.
    assert!(matches!(style_of(&lines, "fn").fg, Some(Color::Rgb(..))));
    let plain = render(md, 40, &Theme::plain());
    assert!(plain
        .iter()
        .flat_map(|l| l.spans.iter())
        .all(|s| s.style.fg.is_none()));
}

#[test]
fn tables_fit_the_width() {
    let md = "| name | what it does |\n|---|--:|\n| a | a fairly long description of the thing |\n| bb | short |\n";
    assert_eq!(
        shown(md, 30),
        "name │            what it does\n\
         ─────┼────────────────────────\n\
         a    │           a fairly long\n     \
              │      description of the\n     \
              │                   thing\n\
         bb   │                   short"
    );
    for line in render(md, 30, &Theme::dark()) {
        assert!(line.width() <= 30, "{line:?}");
    }
}

#[test]
fn hostile_input_stays_bounded_and_on_screen() {
    // An unclosed fence renders as code to the end.
    assert_eq!(shown("```\nno end\n", 20), "  no end");
    // A 10,000-row table lays out in one pass.
    let mut table = String::from("| a | b |\n|---|---|\n");
    for i in 0..10_000 {
        table.push_str(&format!("| {i} | x |\n"));
    }
    let lines = render(&table, 80, &Theme::dark());
    assert_eq!(lines.len(), 10_002);
    // A 5 MB line wraps without a row wider than the screen.
    let long = "word ".repeat(1_000_000);
    let lines = render(&long, 80, &Theme::dark());
    assert!(lines.iter().all(|l| l.width() <= 80));
    assert!(lines.len() > 60_000);
    // A 5 MB code line is cut into rows, not highlighted.
    let code = format!("```rust\n{}\n```\n", "x".repeat(5_000_000));
    let lines = render(&code, 80, &Theme::dark());
    assert!(lines.iter().all(|l| l.width() <= 80));
}

#[test]
fn finished_prefix_stops_before_the_open_block() {
    assert_eq!(finished_prefix("one\n\ntwo"), 5);
    assert_eq!(finished_prefix("one\n\ntwo\n"), 5);
    assert_eq!(finished_prefix("one\n\ntwo\n\nthree"), 10);
    // Inside a fence, blank lines do not finish anything.
    let fenced = "intro\n\n```\na\n\nb\n```\n\nafter";
    assert_eq!(&fenced[finished_prefix(fenced)..], "after");
    let open = "intro\n\n```\na\n\nb\n";
    assert_eq!(&open[finished_prefix(open)..], "```\na\n\nb\n");
    // An indented line continues the list above it.
    let list = "- a\n\n  more of a\n";
    assert_eq!(finished_prefix(list), 0);
    assert_eq!(finished_prefix("no newline yet"), 0);
}

#[test]
fn a_streamed_answer_renders_as_the_whole_does() {
    let md = "# Title\n\nintro para\n\n- a\n- b\n\n```sh\nls\n```\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\ntail";
    let whole = text(&render(md, 40, &Theme::dark()));
    let cut = finished_prefix(md);
    let head = render(&md[..cut], 40, &Theme::dark());
    let tail = render(&md[cut..], 40, &Theme::dark());
    assert_eq!(format!("{}\n\n{}", text(&head), text(&tail)), whole);
}
