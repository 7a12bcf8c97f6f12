mod fixture;
mod real_servers;
pub mod support;
