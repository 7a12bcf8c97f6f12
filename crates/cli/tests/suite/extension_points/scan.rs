//! The source half of the check: which crates are production code, which of their files
//! the module tree reaches (test modules excluded), and what [`scan_file`] finds in
//! them, collated per crate. What it cannot resolve it reports instead of guessing (a `mod`
//! whose file is missing, a mode impl without its `Event` impl).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::lexer::scan_file;

/// A place in the workspace, `crates/<dir>/src/<file>.rs:<line>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Site {
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A `.method::<Type...>` call whose type argument is a plain path.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    /// The last segment of the type argument (`PreStep` in `dsh_agent::PreStep`).
    pub ident: String,
    pub site: Site,
}

/// One extension-point type the sources declare.
#[derive(Clone, Debug)]
pub struct Declared {
    /// The package name (`dsh-agent`).
    pub krate: String,
    pub ident: String,
    pub site: Site,
    /// The mode traits implemented by hand next to it; empty when a macro declares it
    /// (the check's typed list is then the only word on its mode).
    pub modes: BTreeSet<String>,
}

/// Everything the scan found in the production crates.
#[derive(Debug, Default)]
pub struct Scan {
    pub declared: Vec<Declared>,
    pub dispatches: Vec<Call>,
    pub registrations: Vec<Call>,
    /// Package name → its longest chain of production dependencies (its layer), for ordering.
    pub depth: BTreeMap<String, usize>,
}

/// Scans the crates the `dsh` binary links (dsh-cli and its `dsh-*` dependencies,
/// transitively; dev-dependencies such as dsh-testkit are not production code).
pub fn scan_workspace(root: &Path) -> Result<Scan, String> {
    let crates = production_crates(root)?;
    let mut scan = Scan::default();
    for (name, krate) in &crates {
        scan.depth.insert(name.clone(), depth_of(name, &crates));
        // Per crate, since a declaring macro and its invocations share one.
        let mut events: BTreeMap<String, Site> = BTreeMap::new();
        let mut modes: BTreeMap<String, (BTreeSet<String>, String)> = BTreeMap::new();
        let mut macros: BTreeSet<String> = BTreeSet::new();
        let mut macro_calls: Vec<(String, String, Site)> = Vec::new();
        for file in module_files(root, &krate.dir)? {
            let source = std::fs::read_to_string(root.join(&file))
                .map_err(|e| format!("cannot read {file}: {e}"))?;
            let found = scan_file(&source);
            let site = |line| Site {
                file: file.clone(),
                line,
            };
            for (ident, line) in found.event_impls {
                events.entry(ident).or_insert_with(|| site(line));
            }
            for (ident, mode) in found.mode_impls {
                let entry = modes
                    .entry(ident)
                    .or_insert_with(|| (BTreeSet::new(), file.clone()));
                entry.0.insert(mode);
            }
            macros.extend(found.declaring_macros);
            for (mac, ident, line) in found.macro_calls {
                macro_calls.push((mac, ident, site(line)));
            }
            let calls = |found: Vec<(String, String, u32)>| {
                found.into_iter().map(|(method, ident, line)| Call {
                    method,
                    ident,
                    site: site(line),
                })
            };
            scan.dispatches.extend(calls(found.dispatches));
            scan.registrations.extend(calls(found.registrations));
        }
        for (mac, ident, site) in macro_calls {
            if macros.contains(&mac) {
                events.entry(ident).or_insert(site);
            }
        }
        if let Some((ident, (_, file))) = modes.iter().find(|(i, _)| !events.contains_key(*i)) {
            return Err(format!(
                "`{ident}` in {file} implements an event mode trait, but its crate has no \
                 `impl Event for {ident}` the scan can see"
            ));
        }
        for (ident, site) in events {
            scan.declared.push(Declared {
                krate: name.clone(),
                modes: modes.remove(&ident).map(|(m, _)| m).unwrap_or_default(),
                ident,
                site,
            });
        }
    }
    Ok(scan)
}

struct Crate {
    /// `crates/<dir>`, relative to the workspace root.
    dir: String,
    deps: Vec<String>,
}

fn production_crates(root: &Path) -> Result<BTreeMap<String, Crate>, String> {
    let mut all: BTreeMap<String, Crate> = BTreeMap::new();
    let dirs = std::fs::read_dir(root.join("crates")).map_err(|e| format!("crates/: {e}"))?;
    for entry in dirs {
        let entry = entry.map_err(|e| e.to_string())?;
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let table: toml::Table = text
            .parse()
            .map_err(|e| format!("{}: {e}", manifest.display()))?;
        let name = table
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .ok_or_else(|| format!("{}: no package name", manifest.display()))?
            .to_owned();
        let deps = table
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|d| {
                d.keys()
                    .filter(|k| k.starts_with("dsh-"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let dir = format!("crates/{}", entry.file_name().to_string_lossy());
        all.insert(name, Crate { dir, deps });
    }
    let mut keep: BTreeSet<String> = BTreeSet::new();
    let mut todo = vec!["dsh-cli".to_owned()];
    while let Some(name) = todo.pop() {
        let Some(krate) = all.get(&name) else {
            return Err(format!("no crate directory holds package `{name}`"));
        };
        if keep.insert(name) {
            todo.extend(krate.deps.iter().cloned());
        }
    }
    all.retain(|name, _| keep.contains(name));
    Ok(all)
}

/// The longest chain of production dependencies below `name` (dsh-kernel is 0).
fn depth_of(name: &str, crates: &BTreeMap<String, Crate>) -> usize {
    crates.get(name).map_or(0, |krate| {
        krate
            .deps
            .iter()
            .map(|dep| depth_of(dep, crates) + 1)
            .max()
            .unwrap_or(0)
    })
}

/// The files the crate's module tree reaches from its roots, skipping `#[cfg(test)]`
/// modules: test code may listen and dispatch as it likes.
fn module_files(root: &Path, dir: &str) -> Result<Vec<String>, String> {
    let mut roots: Vec<PathBuf> = ["src/lib.rs", "src/main.rs"]
        .iter()
        .map(|f| Path::new(dir).join(f))
        .filter(|p| root.join(p).is_file())
        .collect();
    if let Ok(bins) = std::fs::read_dir(root.join(dir).join("src/bin")) {
        let mut bins: Vec<PathBuf> = bins
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .filter_map(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    let mut out = Vec::new();
    let mut todo = roots;
    while let Some(file) = todo.pop() {
        let source = std::fs::read_to_string(root.join(&file))
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let children_dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("lib.rs" | "main.rs" | "mod.rs") => file.parent().map(Path::to_path_buf),
            _ => Some(file.with_extension("")),
        }
        .unwrap_or_default();
        for module in scan_file(&source).modules {
            let flat = children_dir.join(format!("{module}.rs"));
            let nested = children_dir.join(&module).join("mod.rs");
            if root.join(&flat).is_file() {
                todo.push(flat);
            } else if root.join(&nested).is_file() {
                todo.push(nested);
            } else {
                return Err(format!(
                    "{}: `mod {module};` has no file the scan can find",
                    file.display()
                ));
            }
        }
        out.push(file.to_string_lossy().replace('\\', "/"));
    }
    out.sort();
    Ok(out)
}
