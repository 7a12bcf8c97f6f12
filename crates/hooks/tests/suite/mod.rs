mod bridge;
mod parse;
mod protocol;
mod runner;
mod support;
