#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

fn clean(text: &str) -> String {
    sanitize(text).into_owned()
}

#[test]
fn titles_clipboard_writes_and_cursor_moves_go_whole() {
    let cases = [
        // OSC 0 (window title), BEL- and ST-terminated.
        ("a\x1b]0;PWNED\x07b", "ab"),
        ("a\x1b]0;PWNED\x1b\\b", "ab"),
        // OSC 52 (clipboard write).
        ("x\x1b]52;c;cm0gLXJmIH4=\x07y", "xy"),
        // OSC 8 hyperlink: the link goes, the visible text stays.
        (
            "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
            "click",
        ),
        // CSI: colours, cursor moves, erase, private modes.
        ("\x1b[31mred\x1b[0m", "red"),
        ("up\x1b[2A\x1b[2Kover", "upover"),
        ("\x1b[?1049h\x1b[?25l", ""),
        // DCS, APC, PM, SOS.
        (
            "1\x1bP+q544e\x1b\\2\x1b_apc\x07 3\x1b^pm\x1b\\4\x1bXsos\x1b\\5",
            "12 345",
        ),
        // C1 forms of CSI, OSC and ST, and other C1 controls.
        ("a\u{9b}31mb\u{9d}0;t\u{9c}c\u{85}d\u{8d}e", "abcde"),
        // Two-byte and intermediate escapes, and a lone ESC.
        ("\x1bc\x1b7\x1b(Btext\x1b", "text"),
        // (ESC SP is an escape with an intermediate byte, so the space goes too.)
        ("lone \x1b é", "lone é"),
        ("lone \x1b\x1b!", "lone "),
        // Other C0 controls and DEL; line feed and tab stay.
        ("a\rb\x08c\x00d\x7fe\tf\ng\x0bh", "abcde\tf\ngh"),
    ];
    for (input, expected) in cases {
        assert_eq!(clean(input), expected, "{input:?}");
    }
}

#[test]
fn an_unterminated_control_string_ends_at_the_line_break() {
    assert_eq!(
        clean("before\x1b]0;never closed\nthe rest of the answer"),
        "before\nthe rest of the answer"
    );
}

#[test]
fn escape_inside_a_string_starts_a_new_sequence() {
    assert_eq!(clean("\x1b]0;t\x1b[31mred"), "red");
}

#[test]
fn a_broken_csi_ends_and_its_text_shows() {
    assert_eq!(clean("\x1b[12;é"), "é");
    assert_eq!(clean("\x1b[1\ntext"), "\ntext");
}

#[test]
fn wide_and_combining_characters_are_kept() {
    let text = "漢字 e\u{301} 👩‍💻 ﷽ \u{200d}";
    assert_eq!(clean(text), text);
    assert!(matches!(sanitize(text), Cow::Borrowed(_)));
}

#[test]
fn a_sequence_split_across_pushes_is_still_removed() {
    let mut sanitizer = TerminalSanitizer::new();
    let mut out = String::new();
    for piece in ["Hello \x1b", "]0;PW", "NED\x07wor", "ld\x1b[", "1m!"] {
        sanitizer.push(piece, &mut out);
    }
    assert_eq!(out, "Hello world!");
    // After a reset, an unfinished sequence no longer swallows text.
    sanitizer.push("\x1b]0;cut", &mut out);
    sanitizer.reset();
    sanitizer.push("next", &mut out);
    assert_eq!(out, "Hello world!next");
}

#[test]
fn for_terminal_leaves_other_destinations_exact() {
    let text = "a\x1b]0;t\x07b";
    assert_eq!(for_terminal(text, false), text);
    assert_eq!(for_terminal(text, true), "ab");
}

/// Text rich in the characters sequences are made of.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z \n\t;:0-9]{0,6}",
        2 => Just("\x1b".to_owned()),
        1 => Just("[".to_owned()),
        1 => Just("]".to_owned()),
        1 => Just("\\".to_owned()),
        1 => Just("\x07".to_owned()),
        1 => prop::sample::select(vec!['P', 'X', '^', '_', '(', '?', 'm', '~'])
            .prop_map(String::from),
        1 => (0x80u32..0xa0).prop_map(|c| char::from_u32(c).unwrap().to_string()),
        1 => (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap().to_string()),
        1 => Just("\x7f".to_owned()),
        1 => prop::sample::select(vec!["é", "漢", "e\u{301}", "👩‍💻"]).prop_map(str::to_owned),
        1 => any::<String>(),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_lets_a_control_character_through(text in hostile_text()) {
        let out = clean(&text);
        prop_assert!(out.chars().all(is_displayable), "{out:?} from {text:?}");
        let c1 = '\u{80}'..='\u{9f}';
        prop_assert!(!out.contains(ESC), "ESC in {:?}", out);
        prop_assert!(!out.chars().any(|c| c1.contains(&c)), "C1 in {:?}", out);
    }

    #[test]
    fn is_idempotent(text in hostile_text()) {
        let once = clean(&text);
        prop_assert_eq!(clean(&once), once);
    }

    #[test]
    fn is_the_identity_on_clean_text(text in any::<String>()) {
        let displayable: String = text.chars().filter(|c| is_displayable(*c)).collect();
        prop_assert_eq!(clean(&displayable), displayable);
    }

    #[test]
    fn gives_the_same_text_however_the_input_is_split(
        text in hostile_text(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let chars: Vec<char> = text.chars().collect();
        let mut at: Vec<usize> = cuts.iter().map(|i| i.index(chars.len() + 1)).collect();
        at.sort_unstable();
        let mut sanitizer = TerminalSanitizer::new();
        let mut out = String::new();
        let mut from = 0;
        for to in at.into_iter().chain([chars.len()]) {
            let piece: String = chars[from..to].iter().collect();
            sanitizer.push(&piece, &mut out);
            from = to;
        }
        prop_assert_eq!(out, clean(&text));
    }
}
