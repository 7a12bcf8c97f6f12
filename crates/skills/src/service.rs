//! The [`Skills`] kernel service: the current skills and commands, rescanned when their
//! files change, and what each session was last shown.
//!
//! Looking at the roots costs a directory listing per root (a failed `openat` for each of
//! the usual eleven that do not exist) and a `stat` per entry. The `skill` tool and command
//! expansion look every time they run; the catalog in the system prompt, which every step
//! assembles, looks once per turn: at the first assembly after any `turn/start`
//! ([`Skills::turn_started`]), so an edit made between turns applies at the next turn, and
//! the steps of a turn reuse the scan and its rendered catalog.

use crate::command::{expand, Command};
use crate::events::SkillCatalog;
use crate::files::read_text;
use crate::notice::Notice;
use crate::render::{catalog_entries, catalog_section, CatalogEntry};
use crate::scan::{fingerprint, scan_commands, scan_skills, Root, Scan};
use crate::skill::{parse_skill, Skill};
use crate::SkillsConfig;
use dsh_protocol::SessionId;
use dsh_session::Session;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

type Fingerprint = Vec<(std::path::PathBuf, u64, i128)>;

struct State {
    fingerprint: Fingerprint,
    scan: Arc<Scan>,
    /// The catalog of `scan` and its section text, computed once per scan.
    catalog: Arc<Vec<CatalogEntry>>,
    catalog_text: String,
    /// Notices not yet handed to a surface.
    pending: Vec<Notice>,
    /// Every notice ever reported, so a rescan does not repeat one.
    reported: BTreeSet<String>,
}

/// Skills and commands of one workspace (see the crate docs).
pub struct Skills {
    skill_roots: Vec<Root>,
    command_roots: Vec<Root>,
    description_max: usize,
    state: Mutex<State>,
    /// A turn started since the catalog last looked at the roots.
    look_due: AtomicBool,
    /// The catalog last recorded in each live session's log.
    recorded: Mutex<HashMap<SessionId, Arc<Vec<CatalogEntry>>>>,
}

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skills")
            .field("skill_roots", &self.skill_roots)
            .field("command_roots", &self.command_roots)
            .finish_non_exhaustive()
    }
}

/// A `/name args` line a custom command turned into a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expansion {
    pub command: String,
    pub args: String,
    pub prompt: String,
}

impl Skills {
    /// Scans the roots once.
    pub fn new(config: &SkillsConfig) -> Self {
        let skills = Self {
            skill_roots: config.skill_roots.clone(),
            command_roots: config.command_roots.clone(),
            description_max: config.catalog_description_max_length,
            state: Mutex::new(State {
                fingerprint: Vec::new(),
                scan: Arc::new(Scan::default()),
                catalog: Arc::new(Vec::new()),
                catalog_text: String::new(),
                pending: Vec::new(),
                reported: BTreeSet::new(),
            }),
            recorded: Mutex::new(HashMap::new()),
            look_due: AtomicBool::new(false),
        };
        skills.rescan(
            &mut skills.lock(),
            fingerprint(&skills.skill_roots, &skills.command_roots),
        );
        skills
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn rescan(&self, state: &mut State, print: Fingerprint) {
        let mut notices = Vec::new();
        let skills = scan_skills(&self.skill_roots, &mut notices);
        let commands = scan_commands(&self.command_roots, &mut notices);
        for notice in &notices {
            if state.reported.insert(notice.to_string()) {
                tracing::warn!(target: "dsh_skills", "{notice}");
                state.pending.push(notice.clone());
            }
        }
        state.fingerprint = print;
        let catalog = catalog_entries(&skills, self.description_max);
        state.catalog_text = catalog_section(&catalog);
        state.catalog = Arc::new(catalog);
        state.scan = Arc::new(Scan {
            skills,
            commands,
            notices,
        });
    }

    /// Rescans `state` if a root changed since the last look.
    fn look(&self, state: &mut State) {
        let print = fingerprint(&self.skill_roots, &self.command_roots);
        if state.fingerprint != print {
            self.rescan(state, print);
        }
    }

    /// The current scan, after rescanning if any root changed since the last look.
    pub fn refresh(&self) -> Arc<Scan> {
        let mut state = self.lock();
        self.look(&mut state);
        state.scan.clone()
    }

    /// A turn started somewhere: the next [`turn_catalog_text`](Self::turn_catalog_text)
    /// looks at the roots again.
    pub fn turn_started(&self) {
        self.look_due.store(true, Ordering::SeqCst);
    }

    /// The last scan, without looking at the files.
    pub fn current(&self) -> Arc<Scan> {
        self.lock().scan.clone()
    }

    /// Notices found since the last call (each reported once per process).
    pub fn take_notices(&self) -> Vec<Notice> {
        std::mem::take(&mut self.lock().pending)
    }

    pub fn skill_roots(&self) -> &[Root] {
        &self.skill_roots
    }

    pub fn command_roots(&self) -> &[Root] {
        &self.command_roots
    }

    /// The catalog of the current scan.
    pub fn catalog(&self) -> Vec<CatalogEntry> {
        self.lock().catalog.as_ref().clone()
    }

    /// The catalog section text, after a refresh.
    pub fn catalog_text(&self) -> String {
        let mut state = self.lock();
        self.look(&mut state);
        state.catalog_text.clone()
    }

    /// The catalog section text as a step's system prompt shows it: after a refresh when a
    /// turn started since the last one ([`turn_started`](Self::turn_started)), else the
    /// current scan's (see the module docs).
    pub fn turn_catalog_text(&self) -> String {
        let mut state = self.lock();
        // Cleared under the lock: a caller that finds it cleared waits for the look that
        // cleared it, so nobody reads a scan older than the turn's start.
        if self.look_due.swap(false, Ordering::SeqCst) {
            self.look(&mut state);
        }
        state.catalog_text.clone()
    }

    /// The skill `name` re-read from its file, so an edited body applies at once. `None`
    /// when it is unknown, or no longer parses or is named so.
    pub fn load(&self, name: &str) -> Option<Result<Skill, Notice>> {
        let scan = self.refresh();
        let listed = scan.skills.iter().find(|s| s.name == name)?;
        let fresh = read_text(&listed.file)
            .map_err(|why| Notice::new(&listed.file, None, why))
            .and_then(|text| parse_skill(&text, &listed.file, &listed.base_dir, &listed.source));
        Some(fresh.and_then(|skill| {
            if skill.name == name {
                Ok(skill)
            } else {
                Err(Notice::new(
                    &listed.file,
                    Some("name"),
                    format!("now names `{}`", skill.name),
                ))
            }
        }))
    }

    /// The command `name`, if one is loaded.
    pub fn command(&self, name: &str) -> Option<Command> {
        self.refresh()
            .commands
            .iter()
            .find(|c| c.name == name)
            .cloned()
    }

    /// `line` as a custom command's prompt, if it is `/name [args]` and `name` is a command.
    pub fn expand_line(&self, line: &str) -> Option<Expansion> {
        let (name, args) = split_command_line(line)?;
        let command = self.command(name)?;
        Some(Expansion {
            command: command.name.clone(),
            args: args.trim().to_owned(),
            prompt: expand(&command.body, args),
        })
    }

    /// The `skills/catalog` record `session` needs now, if its last one differs from the
    /// current catalog; remembered as recorded.
    pub(crate) fn catalog_record(&self, session: &Session) -> Option<SkillCatalog> {
        let now = Arc::clone(&self.lock().catalog);
        let mut recorded = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
        let before = match recorded.get(session.id()) {
            // The common case of every step: the catalog recorded is the current one.
            Some(before) if Arc::ptr_eq(before, &now) => return None,
            Some(before) => Some(Arc::clone(before)),
            None => last_recorded(session).map(Arc::new),
        };
        let record = SkillCatalog::between(before.as_deref().map(Vec::as_slice), &now);
        if record.is_some() || before.is_some() {
            recorded.insert(session.id().clone(), now);
        }
        record
    }

    /// Forgets a session that left the store.
    pub(crate) fn forget_session(&self, id: &SessionId) {
        self.recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// The newest `skills/catalog` in `session`'s log (a resumed session's baseline). Asked at
/// every step while the session has no catalog to remember (no skills), so it is a lookup.
fn last_recorded(session: &Session) -> Option<Vec<CatalogEntry>> {
    session
        .newest_decoded::<SkillCatalog>()?
        .ok()
        .map(|record| record.entries)
}

/// `/name rest` → (`name`, `rest`), by the command grammar: a name of
/// `[a-z][a-z0-9_-]*` followed by the end or whitespace.
pub fn split_command_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    crate::command::is_namespaced_command_name(name).then(|| (name, &rest[end..]))
}

/// Shared handle, as provided on the kernel.
pub type SharedSkills = Arc<Skills>;
