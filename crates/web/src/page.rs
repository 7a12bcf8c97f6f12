//! The page: one HTML file, one stylesheet and a few ES modules (one per view), compiled into
//! the binary (`crates/web/assets/`); no build step, nothing fetched at run time.
//!
//! Every response carries a strict Content-Security-Policy: scripts and styles only from this
//! server (no inline script, no `eval`), connections only back to it, no frames, no forms,
//! no plugins. The page inserts only server-sanitised HTML ([`crate::markdown`]); the policy
//! is the second wall should that ever fail. Images in markdown may come from the web
//! (`img-src http: https:`), as the model linked them.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_CSS: &str = include_str!("../assets/app.css");

/// The page's ES modules by path: `app.js` is the entry; it imports the others.
pub const SCRIPTS: &[(&str, &str)] = &[
    ("/app.js", include_str!("../assets/app.js")),
    ("/core.js", include_str!("../assets/core.js")),
    ("/sidebar.js", include_str!("../assets/sidebar.js")),
    ("/session.js", include_str!("../assets/session.js")),
    ("/header.js", include_str!("../assets/header.js")),
    ("/render.js", include_str!("../assets/render.js")),
];

/// The policy every page asset is served with.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
style-src 'self'; img-src 'self' http: https:; connect-src 'self'; base-uri 'none'; \
form-action 'none'; frame-ancestors 'none'";

/// Total bytes of the page's assets (HTML, CSS and JS), for the docs and the benchmark.
pub fn size() -> usize {
    INDEX_HTML.len() + APP_CSS.len() + SCRIPTS.iter().map(|(_, js)| js.len()).sum::<usize>()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `GET /`: the page's HTML. The only function the router calls for `/`.
pub fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

/// `GET /app.js` and the modules it imports ([`SCRIPTS`]).
pub fn script(body: &'static str) -> Response {
    asset("text/javascript; charset=utf-8", body)
}

/// `GET /app.css`: the page's stylesheet.
pub fn style() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_html_loads_only_the_bundled_script_and_style() {
        assert!(INDEX_HTML.contains(r#"<script type="module" src="/app.js"></script>"#));
        assert!(INDEX_HTML.contains(r#"<link rel="stylesheet" href="/app.css">"#));
        // No inline script or handler the policy would block, and nothing from elsewhere.
        assert_eq!(INDEX_HTML.matches("<script").count(), 1);
        for bad in [" onclick=", " onload=", "http://", "https://", "<style"] {
            assert!(!INDEX_HTML.contains(bad), "{bad}");
        }
        for (path, js) in SCRIPTS {
            assert!(!js.contains("eval("), "{path}");
            assert!(!js.contains("new Function"), "{path}");
        }
    }

    #[test]
    fn every_import_is_a_served_module() {
        for (path, js) in SCRIPTS {
            for line in js.lines().filter(|l| l.starts_with("import ")) {
                let from = line.rsplit("from '.").next().unwrap_or_default();
                let target = from.trim_end_matches("';");
                assert!(
                    SCRIPTS.iter().any(|(p, _)| *p == target),
                    "{path} imports {target:?}, which is not served"
                );
            }
        }
    }

    #[test]
    fn the_page_stays_small() {
        // docs/web-api.md states the size; a page past this budget wants a look first.
        assert!(size() < 64 * 1024, "{}", size());
    }
}
