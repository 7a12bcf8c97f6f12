mod common;
mod damage;
mod fixtures;
mod packing;
mod round_trip;
