use super::*;
use crate::index::SessionSummary;
use crate::persistence::{Inspection, SessionPreparation, StoredSession};
use dsh_session::{AppendOptions, EventData, SeedSource, SessionEvent, SessionHeader, TurnStart};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A store that records batches and can be told to fail.
#[derive(Default)]
struct Recorder {
    batches: Mutex<Vec<Vec<u64>>>,
    attempts: AtomicUsize,
    fail_next: AtomicUsize,
    stored: Mutex<HashMap<SessionId, u64>>,
}

impl Recorder {
    fn batches(&self) -> Vec<Vec<u64>> {
        lock(&self.batches).clone()
    }
}

fn not_found(id: &SessionId) -> StoreError {
    StoreError::NotFound { id: id.to_string() }
}

impl SessionPersistence for Recorder {
    fn create(&self, header: &SessionHeader) -> Result<(), StoreError> {
        lock(&self.stored).insert(header.id.clone(), 0);
        Ok(())
    }
    fn next_seq(&self, id: &SessionId) -> Result<u64, StoreError> {
        lock(&self.stored)
            .get(id)
            .copied()
            .ok_or_else(|| not_found(id))
    }
    fn append(&self, id: &SessionId, events: &[Arc<SessionEvent>]) -> Result<(), StoreError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(StoreError::io(
                "append",
                "/fake",
                std::io::Error::other("disk full"),
            ));
        }
        let mut stored = lock(&self.stored);
        let next = stored.get_mut(id).ok_or_else(|| not_found(id))?;
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs.first(), Some(&*next), "batches continue the store");
        *next += seqs.len() as u64;
        lock(&self.batches).push(seqs);
        Ok(())
    }
    fn prepare(&self, id: &SessionId) -> Result<SessionPreparation, StoreError> {
        Err(not_found(id))
    }
    fn load(&self, id: &SessionId) -> Result<StoredSession, StoreError> {
        Err(not_found(id))
    }
    fn inspect(&self, id: &SessionId) -> Result<Inspection, StoreError> {
        Err(not_found(id))
    }
    fn read_from(&self, id: &SessionId, _: u64) -> Result<Vec<Arc<SessionEvent>>, StoreError> {
        Err(not_found(id))
    }
    fn list(&self) -> Result<Vec<SessionSummary>, StoreError> {
        Ok(Vec::new())
    }
    fn release(&self, _: &SessionId) {}
}

fn setup() -> (Arc<Recorder>, WriteCoordinator, Session) {
    let recorder = Arc::new(Recorder::default());
    let coordinator = WriteCoordinator::new(recorder.clone(), WriteBehindConfig::default());
    let session = Session::new(SessionHeader::new("s".into(), 1)).unwrap();
    coordinator.register(&session).unwrap();
    (recorder, coordinator, session)
}

fn append(coordinator: &WriteCoordinator, session: &Session, n: usize) {
    for _ in 0..n {
        let turn = session.len() + 1;
        session
            .append(
                EventData::TurnStart(TurnStart { turn }),
                AppendOptions::log_only(),
            )
            .unwrap();
        coordinator.notify(session.id());
    }
}

async fn ms(n: u64) {
    tokio::time::sleep(Duration::from_millis(n)).await;
}

/// Waits (in paused virtual time) until the background write has been recorded.
async fn settle(coordinator: &WriteCoordinator, session: &Session) {
    for _ in 0..50 {
        if coordinator.stored_next(session.id()) == Some(session.len()) {
            return;
        }
        ms(1).await;
    }
}

#[tokio::test(start_paused = true)]
async fn the_first_event_arms_one_fixed_window() {
    let (recorder, coordinator, session) = setup();
    append(&coordinator, &session, 2);
    ms(150).await;
    append(&coordinator, &session, 1); // joins, does not reset the window
    assert_eq!(recorder.batches(), Vec::<Vec<u64>>::new());
    ms(60).await;
    settle(&coordinator, &session).await;
    assert_eq!(recorder.batches(), vec![vec![0, 1, 2]]);
    append(&coordinator, &session, 2);
    ms(100).await;
    assert_eq!(recorder.batches().len(), 1);
    ms(150).await;
    settle(&coordinator, &session).await;
    assert_eq!(recorder.batches(), vec![vec![0, 1, 2], vec![3, 4]]);
}

#[tokio::test(start_paused = true)]
async fn flush_drains_at_once_and_cancels_the_window() {
    let (recorder, coordinator, session) = setup();
    append(&coordinator, &session, 3);
    coordinator.flush(session.id()).await.unwrap();
    assert_eq!(recorder.batches(), vec![vec![0, 1, 2]]);
    assert_eq!(coordinator.stored_next(session.id()), Some(3));
    ms(500).await;
    assert_eq!(recorder.attempts.load(Ordering::SeqCst), 1);
    // nothing pending: a flush writes nothing
    coordinator.flush(session.id()).await.unwrap();
    assert_eq!(recorder.attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failed_background_write_waits_for_a_new_event_or_a_flush() {
    let (recorder, coordinator, session) = setup();
    recorder.fail_next.store(1, Ordering::SeqCst);
    append(&coordinator, &session, 2);
    ms(250).await;
    for _ in 0..20 {
        ms(1).await;
    }
    assert_eq!(recorder.attempts.load(Ordering::SeqCst), 1);
    ms(1000).await;
    assert_eq!(
        recorder.attempts.load(Ordering::SeqCst),
        1,
        "no automatic retry"
    );
    assert_eq!(coordinator.stored_next(session.id()), Some(0));
    // a new event resumes automatic writing; the failed events go first
    append(&coordinator, &session, 1);
    ms(250).await;
    settle(&coordinator, &session).await;
    assert_eq!(recorder.batches(), vec![vec![0, 1, 2]]);
}

#[tokio::test(start_paused = true)]
async fn flush_reports_a_repeated_failure_and_the_next_flush_retries() {
    let (recorder, coordinator, session) = setup();
    recorder.fail_next.store(1, Ordering::SeqCst);
    append(&coordinator, &session, 2);
    let err = coordinator.flush(session.id()).await.unwrap_err();
    assert_eq!(err.code(), "SESSION_PERSISTENCE_IO");
    coordinator.flush(session.id()).await.unwrap();
    assert_eq!(recorder.batches(), vec![vec![0, 1]]);
}

#[tokio::test(start_paused = true)]
async fn a_seed_is_written_once_and_release_flushes() {
    let recorder = Arc::new(Recorder::default());
    let coordinator = WriteCoordinator::new(recorder.clone(), WriteBehindConfig::default());
    let seed = vec![SessionEvent {
        seq: 0,
        time: 5,
        data: EventData::TurnStart(TurnStart { turn: 1 }),
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    }];
    let session =
        Session::with_seed(SessionHeader::new("f".into(), 1), seed, SeedSource::Fork).unwrap();
    coordinator.register(&session).unwrap();
    coordinator.register(&session).unwrap();
    append(&coordinator, &session, 1);
    coordinator.release(session.id()).await.unwrap();
    // the seed, its end-seed marker and the live event, once
    assert_eq!(recorder.batches(), vec![vec![0, 1, 2]]);
    assert_eq!(coordinator.stored_next(session.id()), None);
}

#[test]
fn outside_a_runtime_events_wait_for_a_flush() {
    let (recorder, coordinator, session) = setup();
    append(&coordinator, &session, 2);
    assert!(recorder.batches().is_empty());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(coordinator.flush(session.id())).unwrap();
    assert_eq!(recorder.batches(), vec![vec![0, 1]]);
}

/// The predecessor's events, as a persistence-seeded successor of the same id sees them.
fn successor(session: &Session) -> Session {
    Session::with_seed(
        session.header().clone(),
        session.events().iter().map(|e| (**e).clone()),
        SeedSource::Persistence,
    )
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_successor_with_the_same_id_gets_its_own_queue() {
    let (recorder, coordinator, first) = setup();
    append(&coordinator, &first, 2);
    coordinator.flush(first.id()).await.unwrap();
    // disposed: its release is captured now and runs later as a task
    coordinator.release_detached(first.id());
    // resumed before that task ran
    let second = successor(&first);
    coordinator.register(&second).unwrap();
    append(&coordinator, &second, 2);
    coordinator.flush(second.id()).await.unwrap();
    ms(500).await;
    // the end-seed marker and both new events are stored; the predecessor's release left
    // the successor registered
    assert_eq!(coordinator.stored_next(second.id()), Some(second.len()));
    assert_eq!(recorder.batches(), vec![vec![0, 1], vec![2, 3, 4]]);
}
