mod bench;
mod http;
mod retry;
mod server;
