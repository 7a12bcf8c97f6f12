mod agent;
mod index;
mod ranking;
mod support;
