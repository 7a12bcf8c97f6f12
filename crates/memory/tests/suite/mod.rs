mod agent;
mod index;
mod support;
