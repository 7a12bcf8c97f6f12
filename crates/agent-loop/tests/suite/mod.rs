mod harness;
mod normalize;
mod scripted;

mod turns;
