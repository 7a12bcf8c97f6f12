//! What loading skills and commands has to tell the person.

use std::fmt;
use std::path::{Path, PathBuf};

/// One notice: the file, the frontmatter key if one is at fault, and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub file: PathBuf,
    pub key: Option<String>,
    pub message: String,
}

impl Notice {
    pub fn new(file: &Path, key: Option<&str>, message: String) -> Self {
        Self {
            file: file.to_path_buf(),
            key: key.map(str::to_owned),
            message,
        }
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(key) = &self.key {
            write!(f, ": `{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}
