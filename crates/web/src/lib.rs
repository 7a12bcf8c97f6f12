//! `dsh web`: a local HTTP API to run, watch and steer sessions, and the page that uses it.
//!
//! One process serves every session of every workspace. The agents are the CLI's own (the
//! embedding program implements [`WebHost`] over the same boot as `dsh`, `dsh acp` and
//! `dsh sdk`), so a session driven here resumes in the TUI and vice versa. docs/web-api.md
//! is the contract.
//!
//! - [`config`]: what a launch decides ([`WebConfig`]): address, trusted hosts, the token,
//!   the body cap;
//! - [`fence`]: the trust fence (Host, Origin, `Sec-Fetch-Site`, loopback-only routes);
//! - [`auth`]: the per-launch token, as a bearer header or an HttpOnly cookie;
//! - [`body`]: JSON request bodies (415 / 413 / 400);
//! - [`error`]: [`ApiError`], every refusal as a status and a stable code;
//! - [`host`]: [`WebHost`], what the embedding program provides beyond `dsh_acp::Host`;
//! - [`hub`]: the sessions this server holds: agents, their live feeds, open approvals and
//!   questions, resumed from the store on demand;
//! - [`stream`]: a session's server-sent event stream with catch-up from a seq;
//! - [`roster`]: the session list's changes and the host-wide event stream (`/api/events`);
//! - [`api`]: the route handlers;
//! - [`page`]: `GET /` (the page, served from the binary);
//! - [`markdown`]: assistant markdown rendered to sanitised HTML for the page;
//! - [`router`]: the route table; [`serve`]: binding and serving until shutdown.

pub mod api;
pub mod auth;
pub mod body;
pub mod config;
pub mod error;
pub mod fence;
pub mod host;
pub mod hub;
pub mod markdown;
pub mod page;
pub mod roster;
pub mod router;
pub mod serve;
pub mod stream;

pub use config::{ConfigError, TrustedHost, WebConfig, MAX_BODY_BYTES};
pub use error::ApiError;
pub use host::WebHost;
pub use hub::Hub;
pub use router::router;
pub use serve::{serve, Server};
