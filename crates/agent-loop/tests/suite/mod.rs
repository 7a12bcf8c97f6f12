mod harness;
mod normalize;
mod scripted;

mod cancel;
mod lifecycle;
mod tools;
mod turns;
