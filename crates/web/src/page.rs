//! `GET /`: the page. Reserved for the page work (issue 19 item 4): the HTML, CSS and JS
//! served from the binary. Until it lands, a placeholder that says so.

use axum::http::header;
use axum::response::{IntoResponse, Response};

/// The page's HTML. The only function the router calls for `/`.
pub fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PLACEHOLDER,
    )
        .into_response()
}

const PLACEHOLDER: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>dsh</title></head>\
<body><h1>dsh web</h1><p>The page is coming. The HTTP API under <code>/api/</code> is \
ready (docs/web-api.md).</p></body></html>\n";
