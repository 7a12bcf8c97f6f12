mod binary;
mod run;
mod run_support;
mod sessions;
