mod common;
mod damage;
mod fixtures;
mod listing;
mod packing;
mod round_trip;
mod typed;
