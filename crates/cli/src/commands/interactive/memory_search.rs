//! `/search` for the UI: the memory row's index searched off the UI's thread, and forking
//! from a hit.

use super::*;
use crate::tui::interactive::SearchHit;
use dsh_session::EventData;
use std::time::{Duration, Instant};

/// The most hits a `/search` shows (one per session).
const SEARCH_HITS: usize = 50;
/// How long a catch-up with the store counts as fresh. The live indexer keeps this
/// process's sessions current; the catch-up brings what other processes wrote, and costs a
/// listing of the store, so typing does not pay it on every key.
const SYNC_FRESH: Duration = Duration::from_secs(10);

/// The newest query asked and when the index last caught up with the store.
#[derive(Debug, Default)]
pub(super) struct SearchSlot {
    latest: Mutex<Option<String>>,
    synced: Mutex<Option<Instant>>,
}

impl SearchSlot {
    fn ask(&self, query: &str) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = Some(query.to_owned());
    }

    fn is_latest(&self, query: &str) -> bool {
        self.latest
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_deref()
            == Some(query)
    }

    /// Catches the index up with the store unless that happened lately.
    fn sync(&self, memory: &dsh_memory::Memory) {
        let mut synced = self.synced.lock().unwrap_or_else(PoisonError::into_inner);
        if synced.is_some_and(|at| at.elapsed() < SYNC_FRESH) {
            return;
        }
        match memory.sync() {
            Ok(report) if !report.unreadable.is_empty() => tracing::warn!(
                unreadable = ?report.unreadable,
                "some session logs could not be read; they are searched as last indexed"
            ),
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(code = error.code(), %error, "the memory index did not catch up");
            }
        }
        *synced = Some(Instant::now());
    }
}

impl AppDriver {
    /// See [`crate::tui::interactive::AgentDriver::search_sessions`].
    pub(super) fn start_search(&self, query: &str) -> Result<(), DriverError> {
        let memory = self
            .runtime
            .ctx()
            .get::<dsh_memory::Memory>()
            .ok_or_else(|| {
                DriverError::Unsupported(
                    "searching sessions needs the memory row, which this configuration turns off"
                        .into(),
                )
            })?;
        let slot = self.search.clone();
        slot.ask(query);
        let inputs = self.inputs.clone();
        let workspace = dsh_store::recorded_cwd(self.runtime.workspace());
        let query = query.to_owned();
        tokio::task::spawn_blocking(move || {
            // Typed past already: the newer query's search answers instead.
            if !slot.is_latest(&query) {
                return;
            }
            slot.sync(&memory);
            let hits = search(&memory, &workspace, &query);
            let _ = inputs.send(Input::SearchHits { query, hits });
        });
        Ok(())
    }

    /// See [`crate::tui::interactive::AgentDriver::fork_at`].
    pub(super) async fn fork_from_hit(
        &self,
        id: &str,
        seq: u64,
    ) -> Result<OpenedSession, DriverError> {
        self.ensure_idle()?;
        let persistence = self.persistence()?;
        let source = SessionId::new(id.to_owned());
        if let Some(agent) = self.live_agent().filter(|a| *a.id() == source) {
            // The hit is in the session on screen: its log must hold everything first.
            self.runtime
                .sessions()
                .flush(agent.session())
                .await
                .map_err(DriverError::failed)?;
        }
        let stored = persistence.load(&source).map_err(DriverError::failed)?;
        let boundary = fork_boundary(&stored.events, seq).ok_or_else(|| {
            DriverError::Failed(format!(
                "cannot fork {id} from seq {seq}: its turn never finished and nothing comes \
                 before it; resume the session instead"
            ))
        })?;
        let child = Runtime::new_session_id();
        dsh_store::fork_stored(&*persistence, &source, Some(boundary), child.clone())
            .map_err(DriverError::failed)?;
        self.reopen(child, OpenedHow::Forked { parent: source })
            .await
    }
}

fn search(
    memory: &dsh_memory::Memory,
    workspace: &str,
    query: &str,
) -> Result<Vec<SearchHit>, String> {
    let filter = dsh_memory::SessionFilter {
        cwd: Some(workspace.to_owned()),
        ..dsh_memory::SessionFilter::default()
    };
    let hits = memory
        .index()
        .search(
            query,
            &filter,
            &dsh_memory::EventFilter::default(),
            SEARCH_HITS,
        )
        .map_err(|error| error.to_string())?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Ok(hits
        .into_iter()
        .map(|hit| SearchHit {
            session: SessionId::new(hit.session.id),
            title: hit.session.title.unwrap_or_else(|| "(untitled)".into()),
            age: crate::tui::picker::age(now, hit.event.time),
            turn: hit.event.turn,
            seq: hit.event.seq,
            snippet: hit.event.snippet,
        })
        .collect())
}

/// Where a fork from the event at `seq` ends: that event when no turn is open there, else
/// the end of its turn (so the hit comes with its answer), else (the turn never ended)
/// just before the turn. `None` when that is before the first event.
fn fork_boundary(events: &[Arc<dsh_session::SessionEvent>], seq: u64) -> Option<u64> {
    let upto = events.iter().take_while(|e| e.seq <= seq);
    let open_turn = upto
        .filter_map(|e| match &e.data {
            EventData::TurnStart(_) => Some(Some(e.seq)),
            EventData::TurnEnd(_) => Some(None),
            _ => None,
        })
        .last()
        .flatten();
    let Some(started) = open_turn else {
        return Some(seq);
    };
    events
        .iter()
        .find(|e| e.seq > seq && matches!(e.data, EventData::TurnEnd(_)))
        .map(|e| e.seq)
        .or_else(|| started.checked_sub(1))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn event(seq: u64, kind: &str) -> Arc<dsh_session::SessionEvent> {
        let data = match kind {
            "turn/start" => json!({"turn": 1}),
            "turn/end" => json!({"turn": 1, "reason": {"kind": "completed"}}),
            _ => json!({"id": format!("m{seq}"), "role": "user", "source": {"kind": "user"},
                        "content": [{"type": "text", "text": "hi"}]}),
        };
        Arc::new(
            dsh_session::SessionEvent::from_value(
                &json!({"type": kind, "seq": seq, "time": 0, "data": data}),
            )
            .unwrap(),
        )
    }

    #[test]
    fn a_fork_from_a_hit_takes_the_hits_whole_turn() {
        let log = [
            event(0, "user/message"),
            event(1, "turn/start"),
            event(2, "user/message"),
            event(3, "turn/end"),
            event(4, "turn/start"),
            event(5, "user/message"),
        ];
        assert_eq!(fork_boundary(&log, 0), Some(0), "before any turn");
        assert_eq!(
            fork_boundary(&log, 2),
            Some(3),
            "through the end of its turn"
        );
        assert_eq!(fork_boundary(&log, 3), Some(3));
        assert_eq!(
            fork_boundary(&log, 5),
            Some(3),
            "an unfinished turn: before it"
        );
        assert_eq!(fork_boundary(&log[1..3], 2), Some(0));
    }
}
