mod cluster;
mod conformance;
mod postgres;
