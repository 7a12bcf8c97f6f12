mod common;
mod composition;
mod events;
mod fiber;
mod layers;
mod leaks;
mod plugins;
mod services;
