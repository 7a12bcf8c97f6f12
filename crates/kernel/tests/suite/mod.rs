mod common;
mod events;
