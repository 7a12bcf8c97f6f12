mod common;
mod events;
mod fixture;
mod meter;
mod properties;
mod pruner;
mod select;
mod service;
