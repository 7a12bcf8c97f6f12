mod bash;
mod fs_tools;
mod sandbox;
mod search;
mod support;
mod todo;
mod web_fetch;
