//! Title text: escape sequences, control and invisible characters removed, whitespace
//! collapsed to single spaces, cut to a UTF-8 byte budget on a character boundary.

/// Strips OSC, CSI and two-byte ESC sequences, C0/C1 controls and bidi or invisible
/// characters, then collapses whitespace and trims.
fn clean(input: &str) -> String {
    let mut out = String::with_capacity(input.len().min(4096));
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                Some(']') => {
                    chars.next();
                    skip_osc(&mut chars);
                }
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(&next) if ('@'..='_').contains(&next) => {
                    chars.next();
                }
                _ => {}
            },
            '\u{9d}' => skip_osc(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            c if is_invisible(c) => {}
            c if c.is_control() && !c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn skip_osc(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        if c == '\u{7}' {
            return;
        }
        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
            chars.next();
            return;
        }
    }
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('@'..='~').contains(&c) {
            return;
        }
    }
}

fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200B}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FEFF}')
}

/// The longest prefix of `input` within `max_bytes` that ends on a character boundary.
pub fn truncate_utf8(input: &str, max_bytes: usize) -> &str {
    if input.len() <= max_bytes {
        return input;
    }
    let mut end = max_bytes;
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    &input[..end]
}

/// A title as accepted: cleaned, cut to `max_bytes`, trimmed (possibly empty).
pub fn normalize_title(input: &str, max_bytes: usize) -> String {
    truncate_utf8(&clean(input), max_bytes)
        .trim_end()
        .to_owned()
}

/// The first-prompt fallback: the first `max_words` words of the cleaned text, cut to
/// `max_bytes`.
pub fn fallback_title(input: &str, max_words: usize, max_bytes: usize) -> String {
    let cleaned = clean(input);
    let words: Vec<&str> = cleaned
        .split(' ')
        .filter(|w| !w.is_empty())
        .take(max_words)
        .collect();
    truncate_utf8(&words.join(" "), max_bytes)
        .trim_end()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_never_survive() {
        let hostile =
            "\u{1b}]0;pwned\u{7}Fix\u{202E} the\u{200B} \u{1b}[31mbug\u{1b}[0m\u{0}\n\tnow";
        assert_eq!(normalize_title(hostile, 80), "Fix the bug now");
    }

    #[test]
    fn cuts_respect_characters_and_word_counts() {
        assert_eq!(normalize_title("héllo wörld", 2), "h");
        assert_eq!(normalize_title("日本語のタイトル", 7), "日本");
        assert_eq!(
            fallback_title(
                "Say hello and describe this workspace in one sentence.",
                5,
                40
            ),
            "Say hello and describe this"
        );
        assert_eq!(fallback_title("a b", 5, 1), "a");
        assert_eq!(fallback_title("   ", 5, 40), "");
    }
}
