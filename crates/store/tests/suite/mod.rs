mod common;
mod damage;
mod fixtures;
mod listing;
mod packing;
mod plugin;
mod round_trip;
mod typed;
