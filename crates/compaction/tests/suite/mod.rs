mod common;
mod events;
mod invariant;
mod manual;
mod meter;
mod overflow;
mod pressure;
mod rig;
