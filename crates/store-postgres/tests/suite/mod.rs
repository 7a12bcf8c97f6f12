mod conformance;
mod postgres;
