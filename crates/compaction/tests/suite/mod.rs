mod common;
mod events;
mod fixture;
mod meter;
mod select;
