mod bench;
mod http;
mod server;
