#![allow(dead_code)] // shared helpers; not every test uses every one
//! Small shared pieces of the invariant suite.

use dsh_agent::{Agent, ResumeError, ResumeSource};
use dsh_protocol::SessionId;
use dsh_session::{interrupted_turn_closers, SeedSource, Session, SessionEvent, SessionHeader};
use dsh_testkit::harness::msg;
use dsh_testkit::scripted::{text_response, ScriptEntry};
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// A script of plain text answers, one per request.
pub fn texts(answers: &[&str]) -> Vec<ScriptEntry> {
    answers.iter().map(|a| text_response(a).into()).collect()
}

/// Queues `text` as a follow-up and waits until the agent is idle again.
pub async fn run(agent: &Arc<dyn Agent>, text: &str) {
    agent.followup(msg(text)).unwrap();
    agent.when_idle().await;
}

/// The events of `log` (a `log_json` array) whose type is one of `types`.
pub fn of_types(log: &Value, types: &[&str]) -> Vec<Value> {
    log.as_array()
        .unwrap()
        .iter()
        .filter(|e| types.contains(&e["type"].as_str().unwrap()))
        .cloned()
        .collect()
}

/// A stand-in for the store: logs saved in memory and, on resume, repaired the way the
/// store repairs a crashed log (closers appended) and seeded into an unpublished session.
#[derive(Default)]
pub struct MemorySource {
    logs: Mutex<HashMap<SessionId, Vec<Arc<SessionEvent>>>>,
}

impl MemorySource {
    /// Saves `events` as the stored log of `id` (as if the process stopped here).
    pub fn save(&self, id: &SessionId, events: Vec<Arc<SessionEvent>>) {
        self.logs.lock().unwrap().insert(id.clone(), events);
    }
}

impl ResumeSource for MemorySource {
    fn prepare(
        &self,
        id: &SessionId,
        _cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Session, ResumeError>> {
        let stored = self.logs.lock().unwrap().get(id).cloned();
        let id = id.clone();
        Box::pin(async move {
            let mut events = stored.ok_or(ResumeError::NotFound { id: id.clone() })?;
            events.extend(interrupted_turn_closers(&events).into_iter().map(Arc::new));
            Session::with_seed(SessionHeader::new(id, 1), events, SeedSource::Persistence)
                .map_err(|e| ResumeError::Failed(Box::new(e)))
        })
    }
}
