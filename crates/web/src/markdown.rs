//! Markdown to HTML for the page, sanitised by construction.
//!
//! The model's text is untrusted: a prompt-injected tool result can make it write `<script>` or
//! a `javascript:` link. Rather than render and then scrub HTML, the renderer never emits
//! anything it did not build itself:
//! - raw HTML (block or inline) becomes text, so pulldown-cmark escapes it like any other text;
//! - a link or image keeps its URL only when the URL is relative or uses `http`, `https` or
//!   (links only) `mailto`; otherwise the link is dropped and its text kept, and the image is
//!   replaced by its alt text;
//! - pulldown-cmark's writer escapes every text and attribute value and writes no attributes
//!   of its own beyond `href`, `src`, `alt`, `title` and a code block's `class`, so no event
//!   handler or style can reach the page.
//!
//! Options are the CommonMark core plus tables, strikethrough and task lists: what models
//! write. Heading attributes, math and metadata blocks stay off.

use dsh_protocol::ContentBlock;
use dsh_session::{EventData, SessionEvent};
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd};

/// The rendered text of an assistant message (its text blocks joined by a blank line), or
/// `None` for any other event and for a message without text.
pub fn assistant_html(event: &SessionEvent) -> Option<String> {
    let EventData::AssistantMessage(message) = &event.data else {
        return None;
    };
    let texts: Vec<&str> = message
        .message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| to_safe_html(&texts.join("\n\n")))
}

/// Writes an event's wire JSON as history and the stream send it: exactly the stored event,
/// plus, when `render` asks for it (`?render=html`), an `"html"` field on an assistant
/// message holding [`assistant_html`].
pub fn write_event(
    out: &mut Vec<u8>,
    event: &SessionEvent,
    render: bool,
) -> serde_json::Result<()> {
    if let Some(html) = render.then(|| assistant_html(event)).flatten() {
        let mut value = serde_json::to_value(event)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("html".to_owned(), serde_json::Value::String(html));
        }
        return serde_json::to_writer(out, &value);
    }
    serde_json::to_writer(out, event)
}

/// [`write_event`] into a string.
pub fn event_json(event: &SessionEvent, render: bool) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(256);
    write_event(&mut out, event, render)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Renders `markdown` to HTML that is safe to insert into the page as-is.
pub fn to_safe_html(markdown: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut out = String::with_capacity(markdown.len() + markdown.len() / 4);
    // Per open link or image: whether its start tag was kept, so its end tag matches.
    let mut kept: Vec<bool> = Vec::new();
    let events = Parser::new_ext(markdown, options).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::HtmlBlock) | Event::End(TagEnd::HtmlBlock) => None,
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let ok = url_allowed(&dest_url, UrlUse::Link);
            kept.push(ok);
            ok.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let ok = url_allowed(&dest_url, UrlUse::Image);
            kept.push(ok);
            ok.then_some(Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(end @ (TagEnd::Link | TagEnd::Image)) => {
            kept.pop().unwrap_or(false).then_some(Event::End(end))
        }
        // Math is not enabled; should a future option emit it, show it as text.
        Event::InlineMath(text) | Event::DisplayMath(text) => Some(Event::Text(text)),
        other => Some(other),
    });
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum UrlUse {
    Link,
    Image,
}

/// Whether a link or image destination may be emitted: relative, or an allowed scheme.
///
/// Browsers drop ASCII tabs and newlines inside URLs and trim leading control characters and
/// spaces, and schemes are case-insensitive (`JaVa\tScRiPt:`), so the scheme is read the way a
/// browser would read it before it is compared.
fn url_allowed(url: &CowStr<'_>, usage: UrlUse) -> bool {
    let cleaned: String = url
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let scheme_end = cleaned.find([':', '/', '?', '#']);
    let scheme = match scheme_end {
        Some(i) if cleaned[i..].starts_with(':') => cleaned[..i].to_ascii_lowercase(),
        // No scheme: a relative URL (path, query, fragment or `//host`).
        _ => return true,
    };
    match scheme.as_str() {
        "http" | "https" => true,
        "mailto" => usage == UrlUse::Link,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::{event_json, to_safe_html};
    use dsh_session::SessionEvent;
    use serde_json::{json, Value};

    #[test]
    fn history_events_gain_html_only_on_assistant_messages_and_only_when_asked() {
        let message = SessionEvent::from_value(&json!({"type": "assistant/message", "seq": 5,
            "time": 1, "surfaceOp": "append", "data": {"turn": 1, "step": 1, "message": {
            "id": "m1", "role": "assistant", "source": {"kind": "model"}, "content": [
                {"type": "reasoning", "text": "hmm <b>"},
                {"type": "text", "text": "**one**"},
                {"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"},
                {"type": "text", "text": "<script>x()</script>"}]}}}))
        .unwrap();
        let plain: Value = serde_json::from_str(&event_json(&message, false).unwrap()).unwrap();
        assert_eq!(plain, serde_json::to_value(&message).unwrap());
        let rendered: Value = serde_json::from_str(&event_json(&message, true).unwrap()).unwrap();
        assert_eq!(
            rendered["html"],
            json!("<p><strong>one</strong></p>\n&lt;script&gt;x()&lt;/script&gt;")
        );
        let mut without = rendered.clone();
        without.as_object_mut().unwrap().remove("html");
        assert_eq!(without, plain);
        let turn = SessionEvent::from_value(&json!({"type": "turn/start", "seq": 0, "time": 1,
            "data": {"turn": 1}}))
        .unwrap();
        assert_eq!(
            event_json(&turn, true).unwrap(),
            serde_json::to_string(&turn).unwrap()
        );
    }

    /// Every tag in `html` is one the renderer builds, with only its own attributes, and no
    /// URL attribute uses a script-capable scheme. Text is escaped, so each `<` opens a tag.
    fn assert_inert(html: &str) {
        const TAGS: &[&str] = &[
            "p",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "em",
            "strong",
            "del",
            "code",
            "pre",
            "a",
            "img",
            "ul",
            "ol",
            "li",
            "blockquote",
            "hr",
            "br",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "input",
        ];
        const ATTRS: &[&str] = &[
            "href", "src", "alt", "title", "class", "type", "checked", "disabled", "start", "style",
        ];
        let mut rest = html;
        while let Some(open) = rest.find('<') {
            let close = rest[open..]
                .find('>')
                .map(|i| open + i)
                .unwrap_or(rest.len());
            let tag = &rest[open + 1..close];
            let tag = tag.trim_start_matches('/').trim_end_matches('/').trim();
            let mut parts = tag.splitn(2, char::is_whitespace);
            let name = parts.next().unwrap_or("").to_ascii_lowercase();
            assert!(TAGS.contains(&name.as_str()), "tag <{name}> in {html}");
            let mut attrs = parts.next().unwrap_or("");
            while !attrs.trim().is_empty() {
                let a = attrs.trim_start();
                let eq = a
                    .find(|c: char| c == '=' || c.is_whitespace())
                    .unwrap_or(a.len());
                let attr = a[..eq].to_ascii_lowercase();
                assert!(ATTRS.contains(&attr.as_str()), "attribute {attr} in {html}");
                let after = &a[eq..];
                if let Some(v) = after.strip_prefix("=\"") {
                    let end = v.find('"').unwrap_or(v.len());
                    let value = v[..end].to_ascii_lowercase();
                    if attr == "href" || attr == "src" {
                        for scheme in ["javascript:", "vbscript:", "data:", "file:"] {
                            assert!(!value.starts_with(scheme), "{attr}={value} in {html}");
                        }
                    }
                    if attr == "style" {
                        assert!(value.starts_with("text-align:"), "style={value} in {html}");
                    }
                    attrs = &v[(end + 1).min(v.len())..];
                } else {
                    attrs = after;
                }
            }
            rest = &rest[(close + 1).min(rest.len())..];
        }
    }

    #[test]
    fn ordinary_markdown_renders() {
        let html = to_safe_html(
            "# Title\n\nSome **bold**, `code` and [a link](https://example.com/x?a=1&b=2).\n\n\
             ```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n",
        );
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<strong>bold</strong>"), "{html}");
        assert!(html.contains("<code>code</code>"), "{html}");
        assert!(
            html.contains(r#"<a href="https://example.com/x?a=1&amp;b=2">a link</a>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<code class="language-rust">fn main() {}"#),
            "{html}"
        );
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("checkbox"), "{html}");
    }

    #[test]
    fn raw_html_is_escaped_text() {
        let html =
            to_safe_html("<script>alert(1)</script>\n\nhi <img src=x onerror=alert(1)> there");
        assert_inert(&html);
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("hi &lt;img src=x onerror=alert(1)&gt; there"),
            "{html}"
        );
    }

    #[test]
    fn html_blocks_of_every_kind_are_text() {
        for input in [
            "<div onclick=\"x()\">\n\n*md*\n\n</div>",
            "<!-- <script>alert(1)</script> -->",
            "<?php echo 1; ?>",
            "<![CDATA[<script>x</script>]]>",
            "<svg><script>alert(1)</script></svg>",
            "<iframe src=\"javascript:alert(1)\"></iframe>",
            "<style>body{display:none}</style>",
            "<a href=\"javascript:alert(1)\">x</a>",
        ] {
            assert_inert(&to_safe_html(input));
        }
    }

    #[test]
    fn hostile_link_schemes_lose_their_link_but_keep_their_text() {
        for url in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "java%0ascript:alert(1)",
            "<java\tscript:alert(1)>",
            "<\u{1}javascript:alert(1)>",
            "vbscript:msgbox(1)",
            "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
            "file:///etc/passwd",
        ] {
            let html = to_safe_html(&format!("[click me]({url})"));
            assert_inert(&html);
            assert!(!html.contains("<a"), "{url}: {html}");
            assert!(html.contains("click me"), "{url}: {html}");
        }
        // Reference-style and autolinks go through the same check.
        let html = to_safe_html("[x][r]\n\n[r]: javascript:alert(1)\n\n<javascript:alert(1)>");
        assert_inert(&html);
        assert!(!html.contains("<a"), "{html}");
    }

    #[test]
    fn allowed_links_keep_their_url() {
        for (url, href) in [
            ("https://a.example/", "https://a.example/"),
            ("http://a.example/", "http://a.example/"),
            ("mailto:me@a.example", "mailto:me@a.example"),
            ("docs/readme.md", "docs/readme.md"),
            ("#section", "#section"),
            ("/abs/path?q=1", "/abs/path?q=1"),
        ] {
            let html = to_safe_html(&format!("[t]({url})"));
            assert!(
                html.contains(&format!("<a href=\"{href}\">t</a>")),
                "{url}: {html}"
            );
        }
        let html = to_safe_html("<https://auto.example/>");
        assert!(
            html.contains("<a href=\"https://auto.example/\">"),
            "{html}"
        );
    }

    #[test]
    fn images_keep_only_safe_sources_and_never_take_attributes() {
        let html = to_safe_html("![a cat](https://img.example/cat.png \"t\")");
        assert!(
            html.contains(r#"<img src="https://img.example/cat.png" alt="a cat" title="t" />"#),
            "{html}"
        );
        for src in [
            "javascript:alert(1)",
            "data:image/svg+xml,<svg onload=alert(1)>",
            "mailto:x@y",
        ] {
            let html = to_safe_html(&format!("![alt text]({src})"));
            assert_inert(&html);
            assert!(!html.contains("<img"), "{src}: {html}");
            assert!(html.contains("alt text"), "{src}: {html}");
        }
        // A quote in the URL or title cannot close the attribute.
        let html =
            to_safe_html("![x](https://a.example/\"onerror=\"alert(1) \"t\\\" onload=\\\"y\")");
        assert_inert(&html);
        let html = to_safe_html("![<img src=x onerror=alert(1)>](https://a.example/i.png)");
        assert_inert(&html);
    }

    #[test]
    fn nested_dropped_and_kept_links_stay_balanced() {
        let html = to_safe_html(
            "[outer ![img](javascript:x) text](https://ok.example/) and [bad](javascript:y) end",
        );
        assert_inert(&html);
        assert_eq!(
            html.matches("<a ").count(),
            html.matches("</a>").count(),
            "{html}"
        );
        assert!(html.contains("<a href=\"https://ok.example/\">"), "{html}");
    }

    #[test]
    fn code_keeps_angle_brackets_as_text() {
        let html = to_safe_html("```html\n<script>alert(1)</script>\n```\n\n`<b onmouseover=x>`");
        assert_inert(&html);
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }
}
