mod common;
mod events;
mod meter;
