mod changes;
mod commands;
mod roots;
mod support;
mod tool;
