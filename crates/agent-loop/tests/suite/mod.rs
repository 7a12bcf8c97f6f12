mod harness;
mod normalize;
mod scripted;

mod cancel;
mod tools;
mod turns;
