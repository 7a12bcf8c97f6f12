mod common;
mod events;
mod manual;
mod meter;
mod overflow;
mod pressure;
mod rig;
