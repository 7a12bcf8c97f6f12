//! The host's session roster: the session list as this server last saw it, numbered
//! revisions of its changes, and the host-wide event stream built on them
//! (`GET /api/events`, docs/web-api.md "The host event stream").
//!
//! The roster is refreshed by re-reading the whole list (the store's index merged with the
//! held sessions, [`Hub::list`]) and diffing it against the last one, so every kind of
//! change (created here or by another process, status, title, removed) is found the same
//! way. A refresh runs shortly after something here may have changed it (a held session's
//! status, an approval or question opening or closing, a `session/title`, a session
//! adopted) and, as the fallback for other processes (a `dsh run` in a terminal, a
//! `dsh sessions delete`), every [`RESCAN`] while anyone listens. Nobody listening, nothing
//! is read.
//!
//! Each change gets the next revision; the last [`KEPT`] are kept, so a client that
//! reconnects with its last cursor gets exactly the changes it missed, and one whose cursor
//! is older (or from another launch) gets a fresh snapshot.

mod stream;

pub use stream::events;

use crate::hub::{lock, Hub, SessionSummary};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, watch, Notify};

/// How often the list is re-read while a client listens, to see sessions that other
/// processes create, change or delete (they do not tell this server).
pub const RESCAN: Duration = Duration::from_secs(2);

/// How long a refresh waits after a local change, so a burst (a turn starting: status,
/// title, approval) is read once.
const SETTLE: Duration = Duration::from_millis(40);

/// How many changes are kept for clients resuming from a cursor.
pub const KEPT: usize = 1024;

/// How many changes a stream may fall behind before it is sent a fresh snapshot.
const FEED_CAPACITY: usize = 256;

/// One change of the roster.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A session appeared (`created`) or one of its listed fields changed.
    Upsert {
        session: Box<SessionSummary>,
        created: bool,
        /// The fields that changed (empty when created).
        fields: Vec<&'static str>,
    },
    /// A session left the list (deleted from the store).
    Removed { id: String },
}

/// A change and its revision.
#[derive(Clone, Debug, PartialEq)]
pub struct Delta {
    pub rev: u64,
    pub change: Change,
}

/// Where a client resumes: `launch.rev` as the stream's `id:` lines carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub launch: String,
    pub rev: u64,
}

impl Cursor {
    /// `None` when `text` is not `launch.rev`.
    pub fn parse(text: &str) -> Option<Self> {
        let (launch, rev) = text.trim().split_once('.')?;
        Some(Self {
            launch: launch.to_owned(),
            rev: rev.parse().ok()?,
        })
    }
}

/// What a new stream starts with.
#[derive(Debug)]
pub enum Start {
    /// The whole list (newest first) as of revision `rev`.
    Snapshot {
        rev: u64,
        sessions: Vec<SessionSummary>,
    },
    /// The changes after the client's cursor.
    Resume(Vec<Arc<Delta>>),
}

#[derive(Default)]
struct State {
    sessions: HashMap<String, SessionSummary>,
    rev: u64,
    kept: VecDeque<Arc<Delta>>,
}

/// The roster (one per hub). See the module docs.
pub struct Roster {
    launch: String,
    state: Mutex<State>,
    feed: broadcast::Sender<Arc<Delta>>,
    dirty: Notify,
}

/// The listed fields whose change is worth a frame. `events` and `updatedAt` move with
/// every event of a running turn and are not, by themselves, a reason to send one.
fn changed_fields(old: &SessionSummary, new: &SessionSummary) -> Vec<&'static str> {
    let mut fields = Vec::new();
    let mut check = |name, differs: bool| {
        if differs {
            fields.push(name);
        }
    };
    check("title", old.title != new.title);
    check("status", old.status != new.status);
    check("cwd", old.cwd != new.cwd);
    check("parentId", old.parent_id != new.parent_id);
    check("origin", old.origin != new.origin);
    check("turns", old.turns != new.turns);
    check("lastOutcome", old.last_outcome != new.last_outcome);
    fields
}

fn newest_first(sessions: &HashMap<String, SessionSummary>) -> Vec<SessionSummary> {
    let mut all: Vec<SessionSummary> = sessions.values().cloned().collect();
    all.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
    all
}

impl Roster {
    pub fn new() -> Self {
        let (feed, _) = broadcast::channel(FEED_CAPACITY);
        Self {
            launch: format!("{:08x}", uuid::Uuid::new_v4().as_u128() as u32),
            state: Mutex::new(State::default()),
            feed,
            dirty: Notify::new(),
        }
    }

    /// This launch's name in cursors.
    pub fn launch(&self) -> &str {
        &self.launch
    }

    /// Something may have changed the list: refresh soon.
    pub fn touch(&self) {
        self.dirty.notify_one();
    }

    fn listening(&self) -> bool {
        self.feed.receiver_count() > 0
    }

    /// Diffs `now` (the whole list) against the roster and publishes each change.
    pub fn apply(&self, now: Vec<SessionSummary>) {
        let mut state = lock(&self.state);
        self.apply_locked(&mut state, now);
    }

    fn apply_locked(&self, state: &mut State, now: Vec<SessionSummary>) {
        let mut changes = Vec::new();
        let mut fresh = HashMap::with_capacity(now.len());
        for session in now {
            match state.sessions.get(&session.id) {
                None => changes.push(Change::Upsert {
                    session: Box::new(session.clone()),
                    created: true,
                    fields: Vec::new(),
                }),
                Some(old) => {
                    let fields = changed_fields(old, &session);
                    if !fields.is_empty() {
                        changes.push(Change::Upsert {
                            session: Box::new(session.clone()),
                            created: false,
                            fields,
                        });
                    }
                }
            }
            fresh.insert(session.id.clone(), session);
        }
        let mut gone: Vec<&String> = state
            .sessions
            .keys()
            .filter(|id| !fresh.contains_key(*id))
            .collect();
        gone.sort();
        changes.extend(
            gone.into_iter()
                .map(|id| Change::Removed { id: id.clone() }),
        );
        state.sessions = fresh;
        for change in changes {
            state.rev += 1;
            let delta = Arc::new(Delta {
                rev: state.rev,
                change,
            });
            if state.kept.len() == KEPT {
                state.kept.pop_front();
            }
            state.kept.push_back(delta.clone());
            // No receiver is fine: nobody is watching.
            let _ = self.feed.send(delta);
        }
    }

    /// Starts a stream: applies `now`, then answers the changes after `after` when they
    /// are all still kept, else a snapshot; the receiver gets every later change.
    pub fn join(
        &self,
        now: Vec<SessionSummary>,
        after: Option<&Cursor>,
    ) -> (Start, broadcast::Receiver<Arc<Delta>>) {
        let mut state = lock(&self.state);
        self.apply_locked(&mut state, now);
        let receiver = self.feed.subscribe();
        let oldest_kept = state.kept.front().map_or(state.rev + 1, |d| d.rev);
        let resumable = after.filter(|cursor| {
            cursor.launch == self.launch
                && cursor.rev <= state.rev
                && cursor.rev.saturating_add(1) >= oldest_kept
        });
        let start = match resumable {
            Some(cursor) => Start::Resume(
                state
                    .kept
                    .iter()
                    .filter(|d| d.rev > cursor.rev)
                    .cloned()
                    .collect(),
            ),
            None => Start::Snapshot {
                rev: state.rev,
                sessions: newest_first(&state.sessions),
            },
        };
        (start, receiver)
    }

    /// A fresh snapshot and receiver, for a stream that fell behind.
    pub fn rejoin(&self) -> (Start, broadcast::Receiver<Arc<Delta>>) {
        let state = lock(&self.state);
        let receiver = self.feed.subscribe();
        let start = Start::Snapshot {
            rev: state.rev,
            sessions: newest_first(&state.sessions),
        };
        (start, receiver)
    }

    /// Refreshes the roster after local changes and every [`RESCAN`], while anyone
    /// listens, until `closing` flips.
    pub async fn run(self: Arc<Self>, hub: Hub, mut closing: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = self.dirty.notified() => tokio::time::sleep(SETTLE).await,
                _ = tokio::time::sleep(RESCAN) => {}
                _ = closing.changed() => return,
            }
            if *closing.borrow() {
                return;
            }
            if !self.listening() {
                continue;
            }
            let reader = hub.clone();
            // Listing walks the store's directory: off the runtime's threads.
            match tokio::task::spawn_blocking(move || reader.list(None)).await {
                Ok(Ok(now)) => self.apply(now),
                Ok(Err(error)) => tracing::warn!(%error, "refreshing the session roster failed"),
                Err(error) => tracing::warn!(%error, "refreshing the session roster failed"),
            }
        }
    }
}

impl Default for Roster {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, title: Option<&str>, status: &'static str) -> SessionSummary {
        SessionSummary {
            id: id.into(),
            title: title.map(Into::into),
            cwd: Some("/w".into()),
            parent_id: None,
            origin: None,
            status,
            live: status != "stored",
            created_at: 1,
            updated_at: 1,
            turns: 0,
            events: 0,
            last_outcome: None,
        }
    }

    fn kinds(start: &Start) -> Vec<String> {
        match start {
            Start::Snapshot { rev, sessions } => vec![format!(
                "snapshot@{rev} {}",
                sessions
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            )],
            Start::Resume(deltas) => deltas
                .iter()
                .map(|d| match &d.change {
                    Change::Upsert {
                        session,
                        created,
                        fields,
                    } => format!("{} {} {created} {fields:?}", d.rev, session.id),
                    Change::Removed { id } => format!("{} {id} removed", d.rev),
                })
                .collect(),
        }
    }

    #[test]
    fn changes_are_diffed_numbered_and_resumed_from_a_cursor() {
        let roster = Roster::new();
        let (start, _rx) = roster.join(vec![summary("a", None, "idle")], None);
        assert_eq!(kinds(&start), ["snapshot@1 a"]);
        let cursor = Cursor {
            launch: roster.launch().to_owned(),
            rev: 1,
        };
        roster.apply(vec![
            summary("a", Some("Fix it"), "running"),
            summary("b", None, "stored"),
        ]);
        // Only events/updatedAt moved: no change.
        let mut quiet = summary("a", Some("Fix it"), "running");
        quiet.events = 9;
        quiet.updated_at = 9;
        roster.apply(vec![quiet, summary("b", None, "stored")]);
        roster.apply(vec![summary("b", None, "stored")]);
        let (start, _rx) = roster.join(vec![summary("b", None, "stored")], Some(&cursor));
        assert_eq!(
            kinds(&start),
            [
                r#"2 a false ["title", "status"]"#,
                "3 b true []",
                "4 a removed"
            ]
        );
        // Another launch's cursor, or one past the end: a snapshot.
        let foreign = Cursor {
            launch: "other".into(),
            rev: 1,
        };
        let (start, _rx) = roster.join(vec![summary("b", None, "stored")], Some(&foreign));
        assert_eq!(kinds(&start), ["snapshot@4 b"]);
        let ahead = Cursor {
            launch: roster.launch().to_owned(),
            rev: 99,
        };
        let (start, _rx) = roster.join(vec![summary("b", None, "stored")], Some(&ahead));
        assert_eq!(kinds(&start), ["snapshot@4 b"]);
    }

    #[test]
    fn a_cursor_older_than_what_is_kept_gets_a_snapshot() {
        let roster = Roster::new();
        let cursor = Cursor {
            launch: roster.launch().to_owned(),
            rev: 0,
        };
        for i in 0..=KEPT {
            roster.apply(vec![summary(&format!("s{i}"), None, "stored")]);
        }
        let (start, _rx) = roster.join(vec![summary("last", None, "stored")], Some(&cursor));
        assert!(matches!(start, Start::Snapshot { .. }), "{start:?}");
        assert_eq!(
            Cursor::parse("ab12.7"),
            Some(Cursor {
                launch: "ab12".into(),
                rev: 7
            })
        );
        assert_eq!(Cursor::parse("7"), None);
    }
}
