//! HTML to readable text, simply: drop scripts, styles and tags, break lines at block
//! elements, decode entities, squeeze whitespace. Good enough for a model to read a page; not
//! a renderer.

/// Elements whose content is never text for a reader.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object",
];

/// Elements that start a new line.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "main",
    "aside",
    "ul",
    "ol",
    "table",
    "pre",
    "blockquote",
    "hr",
    "title",
    "dd",
    "dt",
    "form",
    "figure",
    "figcaption",
    "details",
    "summary",
];

/// Readable text of an HTML document.
pub(crate) fn to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&decode_entities(&rest[..open]));
        rest = &rest[open..];
        let starts_tag = rest[1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '/' | '!' | '?'));
        if !starts_tag {
            out.push('<');
            rest = &rest[1..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let Some(close) = rest.find('>') else {
            // A stray `<` with no tag after it is text.
            out.push_str(&decode_entities(rest));
            rest = "";
            break;
        };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if !closing && SKIPPED.contains(&name.as_str()) && !tag.ends_with('/') {
            rest = skip_element(rest, &name);
            continue;
        }
        if name == "li" && !closing {
            out.push_str("\n- ");
        } else if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
        } else if matches!(name.as_str(), "td" | "th") && !closing {
            out.push(' ');
        }
    }
    out.push_str(&decode_entities(rest));
    squeeze_whitespace(&out)
}

/// The text after the element `name` closes (case-insensitively), or nothing if it never does.
fn skip_element<'a>(rest: &'a str, name: &str) -> &'a str {
    let needle = format!("</{name}");
    let lower = rest.to_ascii_lowercase();
    match lower.find(&needle) {
        Some(at) => {
            let after = &rest[at..];
            after.find('>').map_or("", |end| &after[end + 1..])
        }
        None => "",
    }
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest.find(';').filter(|&end| end <= 10).and_then(|end| {
            let entity = &rest[1..end];
            decode_entity(entity).map(|c| (c, end + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_entity(entity: &str) -> Option<char> {
    let named = match entity {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        "mdash" => Some('—'),
        "ndash" => Some('–'),
        "hellip" => Some('…'),
        "copy" => Some('©'),
        _ => None,
    };
    if named.is_some() {
        return named;
    }
    let number = entity.strip_prefix('#')?;
    let code = match number.strip_prefix(['x', 'X']) {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => number.parse().ok()?,
    };
    char::from_u32(code)
}

/// Collapses runs of blanks inside lines, trims lines, and keeps at most one empty line.
fn squeeze_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let squeezed = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if squeezed.is_empty() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(&squeezed);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_tags_scripts_and_decodes_entities() {
        let html = "<html><head><title>T &amp; U</title><style>p{color:red}</style>\
                    <script>var x = '<p>';</script></head><body><!-- c --><h1>Hello</h1>\
                    <p>One&nbsp;&lt;two&gt; &#65;&#x42;</p><ul><li>a</li><li>b</li></ul>\
                    <table><tr><td>x</td><td>y</td></tr></table>5 < 6</body></html>";
        assert_eq!(
            to_text(html),
            "T & U\n\nHello\n\nOne <two> AB\n\n- a\n- b\n\nx y\n\n5 < 6"
        );
    }

    #[test]
    fn unknown_entities_stay_literal() {
        assert_eq!(to_text("a &bogus; b & c"), "a &bogus; b & c");
    }

    #[test]
    fn blank_lines_are_squeezed() {
        assert_eq!(to_text("<p>a</p>\n\n\n<p>b</p>"), "a\n\nb");
    }
}
