mod goal;
mod guard;
mod support;
