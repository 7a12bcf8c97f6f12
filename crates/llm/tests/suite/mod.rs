mod runtime;
mod support;
