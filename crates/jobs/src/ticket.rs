//! The runner's side of a job: [`JobTicket`].

use crate::registry::Shared;
use crate::types::{JobId, JobOutcome};
use dsh_kernel::sync::lock;
use dsh_protocol::SessionId;
use std::path::PathBuf;
use std::sync::Arc;

/// Held by a job's runner: stream output in, settle once. Dropping an unsettled ticket
/// settles the job as failed, so no job stays live after its runner is gone.
pub struct JobTicket {
    shared: Arc<Shared>,
    owner: SessionId,
    id: JobId,
    done: bool,
}

impl std::fmt::Debug for JobTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobTicket")
            .field("id", &self.id)
            .field("owner", &self.owner)
            .finish()
    }
}

impl JobTicket {
    pub(crate) fn new(shared: Arc<Shared>, owner: SessionId, id: JobId) -> Self {
        Self {
            shared,
            owner,
            id,
            done: false,
        }
    }

    pub fn id(&self) -> &JobId {
        &self.id
    }

    pub fn owner(&self) -> &SessionId {
        &self.owner
    }

    /// Streamed output (ignored once the job settled).
    pub fn append_output(&self, bytes: &[u8]) {
        self.shared.append(&self.owner, &self.id, bytes);
    }

    /// Where the output spilled, once it outgrew the memory cap.
    pub fn spill_path(&self) -> Option<PathBuf> {
        let state = lock(&self.shared.state);
        state
            .owners
            .get(&self.owner)
            .and_then(|o| o.jobs.iter().find(|j| j.snapshot.id == self.id))
            .and_then(|j| j.output.spill_path().map(PathBuf::from))
    }

    /// Total stream bytes received so far.
    pub fn output_bytes(&self) -> u64 {
        let state = lock(&self.shared.state);
        state
            .owners
            .get(&self.owner)
            .and_then(|o| o.jobs.iter().find(|j| j.snapshot.id == self.id))
            .map_or(0, |j| j.output.total())
    }

    /// Records the outcome; only the first settlement counts. Returns whether this one did.
    pub fn settle(mut self, outcome: JobOutcome) -> bool {
        self.done = true;
        Shared::settle(&self.shared, &self.owner, &self.id, outcome)
    }

    /// Withdraws a job whose work never started (its spawn failed): the entry is removed and,
    /// when it was the newest of its kind, its number is free again.
    pub fn abandon(mut self) {
        self.done = true;
        let mut state = lock(&self.shared.state);
        if let Some(entry) = state.owners.get_mut(&self.owner) {
            if let Some(at) = entry.jobs.iter().position(|j| j.snapshot.id == self.id) {
                let job = entry.jobs.remove(at);
                let counter = entry.counters.entry(job.snapshot.kind).or_insert(0);
                if JobId::numbered(job.snapshot.kind, *counter) == self.id {
                    *counter -= 1;
                }
            }
        }
        drop(state);
        self.shared.bump();
    }
}

impl Drop for JobTicket {
    fn drop(&mut self) {
        if !self.done {
            Shared::settle(
                &self.shared,
                &self.owner,
                &self.id,
                JobOutcome::Failed {
                    detail: "the job's runner stopped without reporting an outcome".into(),
                },
            );
        }
    }
}
