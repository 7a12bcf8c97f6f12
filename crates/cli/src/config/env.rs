//! Where environment variables come from: the process, or a map in tests.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// Read access to environment variables, injected so tests never touch the process env.
pub trait Env {
    /// The raw value of `name`, if set.
    fn get(&self, name: &str) -> Option<OsString>;

    /// Whether `name` holds a non-empty value. Used for credentials, whose values are never
    /// read into configuration at all.
    fn is_set(&self, name: &str) -> bool {
        self.get(name).is_some_and(|v| !v.is_empty())
    }
}

/// The process environment.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn get(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }
}

impl Env for BTreeMap<String, String> {
    fn get(&self, name: &str) -> Option<OsString> {
        BTreeMap::get(self, name).map(OsString::from)
    }
}

impl Env for [(&str, &str)] {
    fn get(&self, name: &str) -> Option<OsString> {
        self.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

impl<const N: usize> Env for [(&str, &str); N] {
    fn get(&self, name: &str) -> Option<OsString> {
        Env::get(self.as_slice(), name)
    }
}

impl Env for BTreeMap<std::ffi::OsString, std::ffi::OsString> {
    fn get(&self, name: &str) -> Option<OsString> {
        BTreeMap::get(self, std::ffi::OsStr::new(name)).cloned()
    }
}
