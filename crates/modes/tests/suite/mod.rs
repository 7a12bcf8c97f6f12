mod plan;
mod questions;
mod support;
mod titles;
