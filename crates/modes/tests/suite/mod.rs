mod goal;
mod goal_support;
mod guard;
mod plan;
mod plan_support;
mod questions;
mod support;
mod titles;
