mod append;
mod common;
mod fixtures;
mod fork;
mod properties;
mod repair;
mod seed;
mod store;
