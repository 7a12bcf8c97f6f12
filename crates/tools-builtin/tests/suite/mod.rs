mod bash;
mod fs_tools;
mod sandbox;
mod support;
