//! Just enough of Rust's lexical structure to find extension-point declarations, dispatch
//! calls and listener registrations in one file. Not a parser: comments and the contents of
//! literals are blanked first (so examples in docs and strings never count), then a few token
//! patterns are matched, and `#[cfg(test)]` items are skipped whole.

use dsh_kernel::DispatchMode;

/// Whether a method dispatches an extension point or registers a listener on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Dispatch,
    Register,
}

/// The kernel's dispatch and registration methods (`AgentEvents` reuses the dispatch
/// names), and the mode each serves.
pub const METHODS: &[(&str, Role, DispatchMode)] = &[
    ("emit", Role::Dispatch, DispatchMode::Notification),
    ("emit_strict", Role::Dispatch, DispatchMode::Notification),
    ("serial", Role::Dispatch, DispatchMode::Serial),
    ("parallel", Role::Dispatch, DispatchMode::Parallel),
    ("waterfall", Role::Dispatch, DispatchMode::Waterfall),
    ("on", Role::Register, DispatchMode::Notification),
    ("once", Role::Register, DispatchMode::Notification),
    ("on_with", Role::Register, DispatchMode::Notification),
    ("on_serial", Role::Register, DispatchMode::Serial),
    ("on_serial_with", Role::Register, DispatchMode::Serial),
    ("on_parallel", Role::Register, DispatchMode::Parallel),
    ("on_parallel_with", Role::Register, DispatchMode::Parallel),
    ("on_waterfall", Role::Register, DispatchMode::Waterfall),
    ("on_waterfall_with", Role::Register, DispatchMode::Waterfall),
];

/// The role and mode of a kernel method name.
pub fn method(name: &str) -> Option<(Role, DispatchMode)> {
    METHODS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, role, mode)| (*role, *mode))
}

/// The event traits; `Event` declares a type, the other four give it a mode.
const EVENT_TRAITS: &[&str] = &["Event", "Notification", "Serial", "Parallel", "Waterfall"];

/// What one file holds, by line.
#[derive(Debug, Default)]
pub struct FileScan {
    /// `impl Event for <ident>`.
    pub event_impls: Vec<(String, u32)>,
    /// `impl <Mode> for <ident>`: (ident, mode trait).
    pub mode_impls: Vec<(String, String)>,
    /// `macro_rules!` whose body implements `Event` for a metavariable.
    pub declaring_macros: Vec<String>,
    /// (macro, first identifier of its arguments, line).
    pub macro_calls: Vec<(String, String, u32)>,
    /// (method, last segment of the type argument, line).
    pub dispatches: Vec<(String, String, u32)>,
    pub registrations: Vec<(String, String, u32)>,
    /// `mod <name>;` outside `#[cfg(test)]`.
    pub modules: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
struct Tok<'a> {
    text: &'a str,
    line: u32,
}

impl Tok<'_> {
    fn is(&self, s: &str) -> bool {
        self.text == s
    }
    fn is_ident(&self) -> bool {
        self.text
            .bytes()
            .next()
            .is_some_and(|b| b == b'_' || b.is_ascii_alphabetic())
    }
}

pub fn scan_file(source: &str) -> FileScan {
    let masked = mask(source);
    let toks = tokenize(&masked);
    let mut out = FileScan::default();
    // (macro name, index of its body's closing token)
    let mut in_macro: Option<(String, usize)> = None;
    let mut i = 0;
    while i < toks.len() {
        if in_macro.as_ref().is_some_and(|(_, end)| i > *end) {
            in_macro = None;
        }
        let t = toks[i];
        let at = |k: usize, s: &str| toks.get(i + k).is_some_and(|t| t.is(s));
        // `#[cfg(test)] <item>`: skip the whole item.
        if t.is("#")
            && at(1, "[")
            && at(2, "cfg")
            && at(3, "(")
            && at(4, "test")
            && at(5, ")")
            && at(6, "]")
        {
            i = skip_item(&toks, i + 7);
            continue;
        }
        if t.is("mod") && toks.get(i + 1).is_some_and(Tok::is_ident) && at(2, ";") {
            out.modules.push(toks[i + 1].text.to_owned());
            i += 3;
            continue;
        }
        if t.is("macro_rules") && at(1, "!") && toks.get(i + 2).is_some_and(Tok::is_ident) {
            if let Some(end) = matching(&toks, i + 3) {
                in_macro = Some((toks[i + 2].text.to_owned(), end));
            }
            i += 3;
            continue;
        }
        if t.is("impl") {
            if let Some((trait_name, target, next)) = impl_header(&toks, i + 1) {
                if EVENT_TRAITS.contains(&trait_name) {
                    match target {
                        Target::Type(ident) if trait_name == "Event" => {
                            out.event_impls.push((ident.to_owned(), t.line));
                        }
                        Target::Type(ident) => out
                            .mode_impls
                            .push((ident.to_owned(), trait_name.to_owned())),
                        Target::MacroVar if trait_name == "Event" => {
                            if let Some((name, _)) = &in_macro {
                                out.declaring_macros.push(name.clone());
                            }
                        }
                        Target::MacroVar => {}
                    }
                }
                i = next;
                continue;
            }
        }
        if t.is(".") && toks.get(i + 1).is_some_and(Tok::is_ident) && at(2, "::") && at(3, "<") {
            let name = toks[i + 1].text;
            if let (Some((role, _)), Some(ident)) = (method(name), path_last(&toks, i + 4)) {
                let call = (name.to_owned(), ident.to_owned(), toks[i + 1].line);
                match role {
                    Role::Dispatch => out.dispatches.push(call),
                    Role::Register => out.registrations.push(call),
                }
            }
            i += 4;
            continue;
        }
        if t.is_ident()
            && at(1, "!")
            && toks
                .get(i + 2)
                .is_some_and(|t| t.is("(") || t.is("[") || t.is("{"))
            && in_macro.is_none()
        {
            let mut k = i + 3;
            // Attributes (doc comments are gone with the comments) come before the name.
            while toks.get(k).is_some_and(|t| t.is("#")) {
                k = matching(&toks, k + 1).map_or(toks.len(), |end| end + 1);
            }
            if let Some(first) = toks.get(k).filter(|t| t.is_ident()) {
                out.macro_calls
                    .push((t.text.to_owned(), first.text.to_owned(), t.line));
            }
            i += 3;
            continue;
        }
        i += 1;
    }
    out
}

enum Target<'a> {
    Type(&'a str),
    /// `impl Event for $name` inside a macro.
    MacroVar,
}

/// Parses `[<generics>] Path[<args>] for Target` after `impl`; `None` for inherent impls.
fn impl_header<'a>(toks: &[Tok<'a>], mut i: usize) -> Option<(&'a str, Target<'a>, usize)> {
    if toks.get(i)?.is("<") {
        i = matching_angle(toks, i)? + 1;
    }
    let mut last = None;
    while let Some(t) = toks.get(i) {
        if t.is_ident() && !t.is("for") {
            last = Some(t.text);
            i += 1;
        } else if t.is("::") {
            i += 1;
        } else {
            break;
        }
    }
    if toks.get(i)?.is("<") {
        i = matching_angle(toks, i)? + 1;
    }
    if !toks.get(i)?.is("for") {
        return None;
    }
    i += 1;
    let trait_name = last?;
    if toks.get(i)?.is("$") {
        return Some((trait_name, Target::MacroVar, i + 2));
    }
    let target = path_last(toks, i)?;
    Some((trait_name, Target::Type(target), i + 1))
}

/// The last segment of the path starting at `i` (`a::b::C` → `C`).
fn path_last<'a>(toks: &[Tok<'a>], mut i: usize) -> Option<&'a str> {
    let mut last = None;
    while let Some(t) = toks.get(i) {
        if t.is_ident() {
            last = Some(t.text);
            i += 1;
            if !toks.get(i).is_some_and(|t| t.is("::")) {
                break;
            }
            i += 1;
        } else {
            break;
        }
    }
    last
}

/// Index of the token closing the group opened at `open` (`(`, `[` or `{`).
fn matching(toks: &[Tok<'_>], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.text {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
        if k == open && depth == 0 {
            return None;
        }
    }
    None
}

/// Like [`matching`] for `<...>` generics (a `->` inside does not count as a close).
fn matching_angle(toks: &[Tok<'_>], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for k in open..toks.len() {
        match toks[k].text {
            "<" => depth += 1,
            ">" if k > 0 && toks[k - 1].is("-") => {}
            ">" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
            "{" | ";" => return None,
            _ => {}
        }
    }
    None
}

/// The index after the item starting at `i` (after any further attributes): through its
/// `;` or its closing brace.
fn skip_item(toks: &[Tok<'_>], mut i: usize) -> usize {
    while toks.get(i).is_some_and(|t| t.is("#")) {
        i = matching(toks, i + 1).map_or(toks.len(), |end| end + 1);
    }
    let mut depth = 0usize;
    while let Some(t) = toks.get(i) {
        match t.text {
            "(" | "[" => depth += 1,
            ")" | "]" => depth = depth.saturating_sub(1),
            ";" if depth == 0 => return i + 1,
            "{" if depth == 0 => return matching(toks, i).map_or(toks.len(), |end| end + 1),
            _ => {}
        }
        i += 1;
    }
    i
}

fn tokenize(masked: &str) -> Vec<Tok<'_>> {
    let bytes = masked.as_bytes();
    let mut toks = Vec::new();
    let mut line = 1u32;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
            i += 1;
        } else if b.is_ascii_whitespace() {
            i += 1;
        } else if b == b'_' || b.is_ascii_alphanumeric() {
            let start = i;
            while i < bytes.len() && (bytes[i] == b'_' || bytes[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            toks.push(Tok {
                text: &masked[start..i],
                line,
            });
        } else if b == b':' && bytes.get(i + 1) == Some(&b':') {
            toks.push(Tok {
                text: &masked[i..i + 2],
                line,
            });
            i += 2;
        } else {
            let len = utf8_len(b);
            toks.push(Tok {
                text: masked.get(i..i + len).unwrap_or(""),
                line,
            });
            i += len;
        }
    }
    toks
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// `source` with comments and the contents of string and char literals replaced by spaces
/// (newlines kept, so lines still count), byte for byte.
pub fn mask(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut out[from..to.min(b.len())] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let ident_before = i > 0 && (b[i - 1] == b'_' || b[i - 1].is_ascii_alphanumeric());
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                let mut k = i;
                while k < b.len() {
                    if b[k] == b'/' && b.get(k + 1) == Some(&b'*') {
                        depth += 1;
                        k += 2;
                    } else if b[k] == b'*' && b.get(k + 1) == Some(&b'/') {
                        depth -= 1;
                        k += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        k += 1;
                    }
                }
                blank(&mut out, i, k);
                i = k;
            }
            b'r' | b'b' if !ident_before && raw_string_start(b, i).is_some() => {
                let (hashes, quote) = raw_string_start(b, i).unwrap_or((0, i));
                let mut k = quote + 1;
                let end = loop {
                    if k >= b.len() {
                        break b.len();
                    }
                    if b[k] == b'"'
                        && b[k + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&c| c == b'#')
                            .count()
                            == hashes
                    {
                        break k;
                    }
                    k += 1;
                };
                blank(&mut out, quote + 1, end);
                i = end + 1 + hashes;
            }
            b'"' => {
                let mut k = i + 1;
                while k < b.len() && b[k] != b'"' {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i + 1, k);
                i = k + 1;
            }
            b'\'' => {
                // A char literal, or a lifetime / label (left alone).
                if b.get(i + 1) == Some(&b'\\') {
                    let mut k = i + 3;
                    while k < b.len() && b[k] != b'\'' {
                        k += 1;
                    }
                    blank(&mut out, i + 1, k);
                    i = k + 1;
                } else if let Some(&lead) = b.get(i + 1) {
                    let len = utf8_len(lead);
                    if b.get(i + 1 + len) == Some(&b'\'') {
                        blank(&mut out, i + 1, i + 1 + len);
                        i += len + 2;
                    } else {
                        i += 1;
                    }
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    // Only whole multi-byte characters were blanked (literal and comment bounds are ASCII).
    String::from_utf8(out).unwrap_or_default()
}

/// For `r"`, `r#"`, `br"`, `br#"` at `i`: the number of `#`s and the index of the quote.
/// (A plain `b"..."` is an ordinary string for masking.)
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut k = i;
    if b[k] == b'b' {
        k += 1;
    }
    if b.get(k) != Some(&b'r') {
        return None;
    }
    k += 1;
    let hashes = b[k..].iter().take_while(|&&c| c == b'#').count();
    k += hashes;
    (b.get(k) == Some(&b'"')).then_some((hashes, k))
}
