mod registry;
mod support;
mod whole_log;
