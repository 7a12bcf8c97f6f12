mod common;
mod events;
mod meter;
mod pressure;
mod rig;
