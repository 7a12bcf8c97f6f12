mod bash;
mod sandbox;
mod support;
