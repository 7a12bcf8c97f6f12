//! The job registry: one per process, jobs grouped by owner agent.
//!
//! Every mutation happens under one lock and bumps a version on a `watch` channel, which is
//! what waits (`wait`, `when_quiet`) and surfaces (the TUI's job count) listen to. Agent calls
//! (`status`, `followup`, `inject`) are always made outside the lock.

use crate::notice::{self, Delivery};
use crate::output::{JobOutput, OutputLimits};
use crate::ticket::JobTicket;
use crate::types::{
    JobAliasResolver, JobError, JobHandle, JobId, JobKind, JobOutcome, JobSnapshot, JobState,
};
use dsh_agent::{Agent, AgentStatus};
use dsh_kernel::sync::lock;
use dsh_kernel::{Context, Disposer, KernelError};
use dsh_protocol::SessionId;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// How a registry behaves; [`JobsConfig`](crate::JobsConfig) is its plugin form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistrySettings {
    /// Running plus stopping jobs one owner may have.
    pub max_jobs_per_owner: usize,
    /// Where output past the memory cap is spilled, unless the producer names a directory.
    pub spill_dir: PathBuf,
    pub output: OutputLimits,
    /// Whether a completion may wake an idle owner.
    pub delivery: Delivery,
    /// Wakes in a row (without a user message between them) before notices are only injected.
    pub max_consecutive_wakes: u32,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        Self {
            max_jobs_per_owner: 10,
            spill_dir: std::env::temp_dir().join("dsh-jobs"),
            output: OutputLimits::default(),
            delivery: Delivery::Wakeup,
            max_consecutive_wakes: 3,
        }
    }
}

/// What [`JobRegistry::start_with`] needs beyond the owner.
pub struct JobStart {
    pub kind: JobKind,
    /// The label (a bash job's command string, a subagent's description).
    pub description: String,
    pub handle: Arc<dyn JobHandle>,
    /// Where this job's output spills; the registry's directory when `None`.
    pub spill_dir: Option<PathBuf>,
}

/// One read of a job (`job_output` without or after a wait).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRead {
    /// New stream output since the previous read, or a final-output job's result.
    pub text: String,
    /// Stream bytes not returned yet (a read returns at most the read limit).
    pub remaining: u64,
    /// The job after the read.
    pub job: JobSnapshot,
}

/// What [`JobRegistry::kill_job`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KillOutcome {
    /// False when the job had already finished (nothing was requested).
    pub requested: bool,
    pub job: JobSnapshot,
}

/// The kernel service of background jobs, one per process (`ctx.get::<JobRegistry>()`).
pub struct JobRegistry {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    settings: RegistrySettings,
    pub(crate) state: Mutex<State>,
    version: watch::Sender<u64>,
    aliases: Mutex<Vec<(u64, Arc<dyn JobAliasResolver>)>>,
    /// Consecutive wakes spent per agent: one budget for every source of automatic wakes.
    wakes: Mutex<HashMap<SessionId, u32>>,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) owners: HashMap<SessionId, Owner>,
    /// Completions whose notice is being delivered: the registry is not quiet meanwhile.
    deliveries: usize,
    next_alias: u64,
}

pub(crate) struct Owner {
    agent: Weak<dyn Agent>,
    pub(crate) counters: HashMap<JobKind, u64>,
    /// In start order.
    pub(crate) jobs: Vec<Job>,
    disposing: bool,
    /// Ties the owner's jobs to its scope's unwinding.
    effect: Option<Disposer>,
}

pub(crate) struct Job {
    pub(crate) snapshot: JobSnapshot,
    handle: Arc<dyn JobHandle>,
    pub(crate) output: JobOutput,
    final_output: Option<String>,
    waiters: usize,
    kill_reason: Option<String>,
}

impl Owner {
    fn live(&self) -> usize {
        self.jobs
            .iter()
            .filter(|j| j.snapshot.state.is_live())
            .count()
    }

    fn job_mut(&mut self, id: &JobId) -> Option<&mut Job> {
        self.jobs.iter_mut().find(|j| &j.snapshot.id == id)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn unknown(id: &JobId) -> JobError {
    JobError::Unknown {
        id: id.as_str().to_owned(),
    }
}

impl JobRegistry {
    pub fn new(settings: RegistrySettings) -> Self {
        let (version, _) = watch::channel(0);
        Self {
            shared: Arc::new(Shared {
                settings,
                state: Mutex::new(State::default()),
                version,
                aliases: Mutex::new(Vec::new()),
                wakes: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn settings(&self) -> &RegistrySettings {
        &self.shared.settings
    }

    /// Starts a job for `owner` with the registry's spill directory.
    pub fn start(
        &self,
        owner: &Arc<dyn Agent>,
        kind: JobKind,
        description: String,
        handle: Arc<dyn JobHandle>,
    ) -> Result<JobTicket, JobError> {
        self.start_with(
            owner,
            JobStart {
                kind,
                description,
                handle,
                spill_dir: None,
            },
        )
    }

    /// Starts a job: every check happens first, so a refused start consumes no id. The
    /// owner's first job ties the owner's jobs to its disposal (they are killed, awaited and
    /// forgotten then, with no notice).
    pub fn start_with(
        &self,
        owner: &Arc<dyn Agent>,
        start: JobStart,
    ) -> Result<JobTicket, JobError> {
        if start.description.trim().is_empty() {
            return Err(JobError::EmptyDescription);
        }
        let owner_id = owner.id().clone();
        let needs_effect = {
            let state = lock(&self.shared.state);
            match state.owners.get(&owner_id) {
                Some(entry) if entry.disposing => return Err(JobError::OwnerGone),
                Some(entry) => {
                    if entry.live() >= self.shared.settings.max_jobs_per_owner {
                        return Err(JobError::Limit {
                            limit: self.shared.settings.max_jobs_per_owner,
                        });
                    }
                    false
                }
                None => true,
            }
        };
        // Registered outside the lock: a fiber that is already gone runs the undo at once.
        let effect = if needs_effect {
            let weak = Arc::downgrade(&self.shared);
            let id = owner_id.clone();
            let effect = owner
                .ctx()
                .effect("jobs: kill the owner's jobs", move || {
                    if let Some(shared) = weak.upgrade() {
                        Shared::begin_owner_disposal(&shared, &id);
                    }
                })
                .map_err(|_: KernelError| JobError::OwnerGone)?;
            Some(effect)
        } else {
            None
        };
        let mut state = lock(&self.shared.state);
        let entry = state
            .owners
            .entry(owner_id.clone())
            .or_insert_with(|| Owner {
                agent: Arc::downgrade(owner),
                counters: HashMap::new(),
                jobs: Vec::new(),
                disposing: false,
                effect: None,
            });
        if let Some(effect) = effect {
            if entry.effect.is_some() {
                // A concurrent first start won the race. Disposing this one would run its
                // undo (killing the owner's jobs); kept, it only repeats an idempotent undo.
                effect.forget();
            } else {
                entry.effect = Some(effect);
            }
        }
        if entry.disposing {
            return Err(JobError::OwnerGone);
        }
        if entry.live() >= self.shared.settings.max_jobs_per_owner {
            return Err(JobError::Limit {
                limit: self.shared.settings.max_jobs_per_owner,
            });
        }
        let counter = entry.counters.entry(start.kind).or_insert(0);
        *counter += 1;
        let id = JobId::numbered(start.kind, *counter);
        let spill_dir = start
            .spill_dir
            .unwrap_or_else(|| self.shared.settings.spill_dir.clone());
        let prefix = format!("{}-{id}", owner_id);
        entry.jobs.push(Job {
            snapshot: JobSnapshot {
                id: id.clone(),
                kind: start.kind,
                state: JobState::Running,
                description: start.description,
                owner: owner_id.clone(),
                started_at: now_ms(),
                ended_at: None,
                detail: None,
                reported: false,
            },
            handle: start.handle,
            output: JobOutput::new(self.shared.settings.output, &spill_dir, &prefix),
            final_output: None,
            waiters: 0,
            kill_reason: None,
        });
        drop(state);
        self.shared.bump();
        Ok(JobTicket::new(self.shared.clone(), owner_id, id))
    }

    /// One job of `owner`; an id of another owner is refused exactly like an unknown one.
    pub fn get(&self, owner: &SessionId, id: &JobId) -> Result<JobSnapshot, JobError> {
        let state = lock(&self.shared.state);
        state
            .owners
            .get(owner)
            .and_then(|o| o.jobs.iter().find(|j| &j.snapshot.id == id))
            .map(|j| j.snapshot.clone())
            .ok_or_else(|| unknown(id))
    }

    /// `owner`'s jobs, running and finished, in start order.
    pub fn list(&self, owner: &SessionId) -> Vec<JobSnapshot> {
        let state = lock(&self.shared.state);
        state
            .owners
            .get(owner)
            .map(|o| o.jobs.iter().map(|j| j.snapshot.clone()).collect())
            .unwrap_or_default()
    }

    /// Requests a stop; returns the job after the request.
    pub async fn kill(&self, owner: &SessionId, id: &JobId) -> Result<JobSnapshot, JobError> {
        self.kill_job(owner, id).await.map(|k| k.job)
    }

    /// Requests a stop: a running job becomes `stopping` and is marked reported (the owner
    /// asked for it, so no notice follows), then its handle's `kill` runs. A finished job is
    /// left alone.
    pub async fn kill_job(&self, owner: &SessionId, id: &JobId) -> Result<KillOutcome, JobError> {
        self.kill_job_because(owner, id, None).await
    }

    /// [`kill_job`](Self::kill_job) with the caller's reason, added to the killed job's detail.
    pub async fn kill_job_because(
        &self,
        owner: &SessionId,
        id: &JobId,
        reason: Option<String>,
    ) -> Result<KillOutcome, JobError> {
        let handle = {
            let mut state = lock(&self.shared.state);
            let job = state
                .owners
                .get_mut(owner)
                .and_then(|o| o.job_mut(id))
                .ok_or_else(|| unknown(id))?;
            if !job.snapshot.state.is_live() {
                return Ok(KillOutcome {
                    requested: false,
                    job: job.snapshot.clone(),
                });
            }
            job.snapshot.state = JobState::Stopping;
            job.snapshot.reported = true;
            if job.kill_reason.is_none() {
                job.kill_reason = reason;
            }
            job.handle.clone()
        };
        self.shared.bump();
        handle.kill().await;
        let job = self.get(owner, id)?;
        Ok(KillOutcome {
            requested: true,
            job,
        })
    }

    /// Reads what is new: a stream job's output since the previous read (at most the read
    /// limit), a final-output job's result once it settled. A read of a finished job marks
    /// it reported.
    pub fn read(&self, owner: &SessionId, id: &JobId) -> Result<JobRead, JobError> {
        let mut state = lock(&self.shared.state);
        let job = state
            .owners
            .get_mut(owner)
            .and_then(|o| o.job_mut(id))
            .ok_or_else(|| unknown(id))?;
        let live = job.snapshot.state.is_live();
        let chunk = job.output.read(live).map_err(|reason| JobError::Io {
            id: id.as_str().to_owned(),
            reason,
        })?;
        let mut text = chunk.text;
        if !live {
            if let Some(output) = &job.final_output {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(output);
            }
            if chunk.remaining == 0 {
                job.snapshot.reported = true;
            }
        }
        Ok(JobRead {
            text,
            remaining: chunk.remaining,
            job: job.snapshot.clone(),
        })
    }

    /// Waits up to `timeout` for the job to finish; returns its snapshot then (or the live
    /// one at the timeout). A job that finishes while someone waits for it sends no notice:
    /// the waiter reads the outcome. `timeout` must be positive.
    pub async fn wait(
        &self,
        owner: &SessionId,
        id: &JobId,
        timeout: Duration,
    ) -> Result<JobSnapshot, JobError> {
        if timeout.is_zero() {
            return Err(JobError::Invalid {
                message: "a wait needs a positive timeout".into(),
            });
        }
        let mut changes = self.shared.version.subscribe();
        {
            let mut state = lock(&self.shared.state);
            let job = state
                .owners
                .get_mut(owner)
                .and_then(|o| o.job_mut(id))
                .ok_or_else(|| unknown(id))?;
            if !job.snapshot.state.is_live() {
                return Ok(job.snapshot.clone());
            }
            job.waiters += 1;
        }
        let _waiting = WaiterGuard {
            shared: self.shared.clone(),
            owner: owner.clone(),
            id: id.clone(),
        };
        let finished = async {
            loop {
                match self.get(owner, id) {
                    Ok(job) if job.state.is_live() => {}
                    other => return other,
                }
                if changes.changed().await.is_err() {
                    return self.get(owner, id);
                }
            }
        };
        match tokio::time::timeout(timeout, finished).await {
            Ok(result) => result,
            Err(_) => self.get(owner, id),
        }
    }

    /// Whether a [`wait`](Self::wait) for this job is pending (its completion will send no
    /// notice); `false` for an unknown or foreign id.
    pub fn is_awaited(&self, owner: &SessionId, id: &JobId) -> bool {
        let mut state = lock(&self.shared.state);
        state
            .owners
            .get_mut(owner)
            .and_then(|o| o.job_mut(id))
            .is_some_and(|j| j.waiters > 0)
    }

    /// Registers a resolver `job_output` consults for ids that are not jobs; removed when
    /// the returned disposer runs or `ctx`'s fiber unwinds.
    pub fn register_alias(
        &self,
        ctx: &Context,
        resolver: Arc<dyn JobAliasResolver>,
    ) -> Result<Disposer, KernelError> {
        let key = {
            let mut state = lock(&self.shared.state);
            state.next_alias += 1;
            state.next_alias
        };
        lock(&self.shared.aliases).push((key, resolver));
        let weak = Arc::downgrade(&self.shared);
        ctx.effect("jobs: alias resolver", move || {
            if let Some(shared) = weak.upgrade() {
                lock(&shared.aliases).retain(|(k, _)| *k != key);
            }
        })
    }

    /// What a registered resolver says about `id` for `owner`.
    pub fn describe_alias(&self, owner: &SessionId, id: &str) -> Option<String> {
        let resolvers: Vec<_> = lock(&self.shared.aliases)
            .iter()
            .map(|(_, r)| r.clone())
            .collect();
        resolvers.iter().find_map(|r| r.describe(owner, id))
    }

    /// A user message reached `owner`: its wake budget is full again.
    pub fn note_user_message(&self, owner: &SessionId) {
        lock(&self.shared.wakes).remove(owner);
    }

    /// The wake rule, one budget per agent for everything that wakes an idle agent on its
    /// own (a job's completion here; a subagent's settlement or report in `dsh-subagents`):
    /// `true` spends one wake of `agent` — it is idle and fewer than `maxConsecutiveWakes`
    /// wakes went to it since a person's last message — and the caller wakes it; `false`:
    /// the caller injects instead.
    pub fn spend_wake(&self, agent: &SessionId, idle: bool) -> bool {
        self.shared.spend_wake(agent, idle)
    }

    /// The consecutive-wake budget (`maxConsecutiveWakes`).
    pub fn max_consecutive_wakes(&self) -> u32 {
        self.shared.settings.max_consecutive_wakes
    }

    /// Live (running or stopping) jobs of every owner.
    pub fn live_count(&self) -> usize {
        lock(&self.shared.state)
            .owners
            .values()
            .map(Owner::live)
            .sum()
    }

    /// Live jobs of one owner.
    pub fn live_count_of(&self, owner: &SessionId) -> usize {
        lock(&self.shared.state)
            .owners
            .get(owner)
            .map_or(0, Owner::live)
    }

    /// No job is live and no completion notice is still being delivered.
    pub fn is_quiet(&self) -> bool {
        let state = lock(&self.shared.state);
        state.deliveries == 0 && state.owners.values().all(|o| o.live() == 0)
    }

    /// Resolves once [`is_quiet`](Self::is_quiet) holds.
    pub async fn when_quiet(&self) {
        let mut changes = self.shared.version.subscribe();
        while !self.is_quiet() {
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// A receiver whose value changes on every change of any job (for surfaces).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.version.subscribe()
    }

    /// Kills `owner`'s jobs (no notices), waits until each settled, and forgets them. What
    /// an owner's disposal does; callable earlier by an owner that wants to wait.
    pub async fn dispose_owner(&self, owner: &SessionId) {
        lock(&self.shared.wakes).remove(owner);
        Shared::begin_owner_disposal(&self.shared, owner);
        Shared::await_owner(&self.shared, owner).await;
    }
}

impl Shared {
    fn spend_wake(&self, agent: &SessionId, idle: bool) -> bool {
        if !idle {
            return false;
        }
        let mut wakes = lock(&self.wakes);
        let spent = wakes.entry(agent.clone()).or_insert(0);
        if *spent >= self.settings.max_consecutive_wakes {
            return false;
        }
        *spent += 1;
        true
    }

    pub(crate) fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Synchronous half of an owner's disposal: no new jobs, no notices, every live job's
    /// kill requested. A task then awaits the settlements and drops the owner's entry.
    fn begin_owner_disposal(shared: &Arc<Shared>, owner: &SessionId) {
        let handles: Vec<Arc<dyn JobHandle>> = {
            let mut state = lock(&shared.state);
            let Some(entry) = state.owners.get_mut(owner) else {
                return;
            };
            if entry.disposing {
                return;
            }
            entry.disposing = true;
            entry
                .jobs
                .iter_mut()
                .filter(|j| j.snapshot.state.is_live())
                .map(|j| {
                    j.snapshot.reported = true;
                    j.snapshot.state = JobState::Stopping;
                    j.handle.clone()
                })
                .collect()
        };
        shared.bump();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime to drive the kills: forget the entry; the producers' own guards
            // (a bash job's process-group kill on drop) remain.
            lock(&shared.state).owners.remove(owner);
            shared.bump();
            return;
        };
        let weak = Arc::downgrade(shared);
        let owner = owner.clone();
        runtime.spawn(async move {
            for handle in handles {
                handle.kill().await;
            }
            if let Some(shared) = weak.upgrade() {
                Shared::await_owner(&shared, &owner).await;
            }
        });
    }

    async fn await_owner(shared: &Arc<Shared>, owner: &SessionId) {
        let mut changes = shared.version.subscribe();
        loop {
            let done = {
                let state = lock(&shared.state);
                state.owners.get(owner).is_none_or(|o| o.live() == 0)
            };
            if done {
                break;
            }
            if changes.changed().await.is_err() {
                break;
            }
        }
        let removed = {
            let mut state = lock(&shared.state);
            match state.owners.get(owner) {
                Some(entry) if entry.disposing => state.owners.remove(owner).is_some(),
                _ => false,
            }
        };
        if removed {
            shared.bump();
        }
    }

    pub(crate) fn append(&self, owner: &SessionId, id: &JobId, bytes: &[u8]) {
        let mut state = lock(&self.state);
        if let Some(job) = state.owners.get_mut(owner).and_then(|o| o.job_mut(id)) {
            if job.snapshot.state.is_live() {
                job.output.append(bytes);
            }
        }
    }

    /// First-wins settlement, then (outside the lock) the completion notice.
    pub(crate) fn settle(
        shared: &Arc<Shared>,
        owner: &SessionId,
        id: &JobId,
        outcome: JobOutcome,
    ) -> bool {
        let pending = {
            let mut state = lock(&shared.state);
            let Some(entry) = state.owners.get_mut(owner) else {
                return false;
            };
            let disposing = entry.disposing;
            let agent = entry.agent.clone();
            let Some(job) = entry.job_mut(id) else {
                return false;
            };
            if !job.snapshot.state.is_live() {
                return false;
            }
            let (job_state, mut detail, output) = outcome.into_parts();
            if job_state == JobState::Killed {
                if let Some(reason) = &job.kill_reason {
                    detail = Some(match detail {
                        Some(d) if !d.is_empty() => format!("{d}; reason: {reason}"),
                        _ => format!("reason: {reason}"),
                    });
                }
            }
            job.snapshot.state = job_state;
            job.snapshot.detail = detail;
            job.snapshot.ended_at = Some(now_ms());
            job.final_output = output;
            if job.waiters > 0 {
                job.snapshot.reported = true;
            }
            let snapshot = job.snapshot.clone();
            let notify = !snapshot.reported && !disposing;
            if notify {
                state.deliveries += 1;
                Some((agent, snapshot))
            } else {
                None
            }
        };
        shared.bump();
        if let Some((agent, snapshot)) = pending {
            if let Some(agent) = agent.upgrade() {
                Shared::deliver(shared, &agent, &snapshot);
            }
            lock(&shared.state).deliveries -= 1;
            shared.bump();
        }
        true
    }

    /// The wake rule: an idle owner with budget left is woken (`followup`), otherwise the
    /// notice is injected for its next step.
    fn deliver(shared: &Arc<Shared>, agent: &Arc<dyn Agent>, snapshot: &JobSnapshot) {
        let message = notice::completion_message(snapshot);
        let idle = agent.status() == AgentStatus::Idle;
        let wake =
            shared.settings.delivery == Delivery::Wakeup && shared.spend_wake(agent.id(), idle);
        let sent = if wake {
            agent.followup(message.clone())
        } else {
            agent.inject(message.clone())
        };
        if let Err(error) = sent {
            tracing::warn!(agent = %agent.id(), job = %snapshot.id, %error, "could not deliver a job's completion notice");
        }
    }
}

struct WaiterGuard {
    shared: Arc<Shared>,
    owner: SessionId,
    id: JobId,
}

impl Drop for WaiterGuard {
    fn drop(&mut self) {
        let mut state = lock(&self.shared.state);
        if let Some(job) = state
            .owners
            .get_mut(&self.owner)
            .and_then(|o| o.job_mut(&self.id))
        {
            job.waiters = job.waiters.saturating_sub(1);
        }
    }
}
