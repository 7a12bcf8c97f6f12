//! Questions to the person from `ask_user_question` and the plan review: the TUI's
//! [`QuestionProvider`] and the reply slots the runner answers through.
//!
//! Each question becomes an [`Input::QuestionAsked`] with a fresh ticket; the card's outcome
//! comes back through [`QuestionSlots::answer`]. When the asking call is cancelled, its
//! future (and with it the reply slot) is dropped, the runner sees the slot closed and takes
//! the card down ([`Input::QuestionWithdrawn`]); an answer given after that goes nowhere.

use super::state::Input;
use dsh_kernel::sync::lock;
use dsh_modes::question::{QuestionOutcome, QuestionRequest};
use dsh_modes::QuestionProvider;
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// The open questions' reply slots.
#[derive(Clone, Debug, Default)]
pub struct QuestionSlots {
    inner: Arc<SlotsInner>,
}

#[derive(Debug, Default)]
struct SlotsInner {
    next: AtomicU64,
    open: Mutex<HashMap<u64, oneshot::Sender<QuestionOutcome>>>,
}

impl QuestionSlots {
    pub fn new() -> Self {
        Self::default()
    }

    fn open(&self) -> (u64, oneshot::Receiver<QuestionOutcome>) {
        let ticket = self.inner.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        lock(&self.inner.open).insert(ticket, tx);
        (ticket, rx)
    }

    /// Delivers the person's outcome; `false` when the question was withdrawn meanwhile.
    pub fn answer(&self, ticket: u64, outcome: QuestionOutcome) -> bool {
        match lock(&self.inner.open).remove(&ticket) {
            Some(slot) => slot.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Forgets questions whose asker stopped waiting and returns their tickets.
    pub fn take_withdrawn(&self) -> Vec<u64> {
        let mut open = lock(&self.inner.open);
        let mut gone: Vec<u64> = open
            .iter()
            .filter(|(_, slot)| slot.is_closed())
            .map(|(ticket, _)| *ticket)
            .collect();
        gone.sort_unstable();
        for ticket in &gone {
            open.remove(ticket);
        }
        gone
    }
}

/// Puts questions on the terminal UI.
#[derive(Clone, Debug)]
pub struct TuiQuestions {
    inputs: mpsc::UnboundedSender<Input>,
    slots: QuestionSlots,
}

impl TuiQuestions {
    pub fn new(inputs: mpsc::UnboundedSender<Input>, slots: QuestionSlots) -> Self {
        Self { inputs, slots }
    }
}

impl QuestionProvider for TuiQuestions {
    fn ask(&self, request: QuestionRequest) -> BoxFuture<'_, QuestionOutcome> {
        Box::pin(async move {
            let (ticket, reply) = self.slots.open();
            if self
                .inputs
                .send(Input::QuestionAsked { ticket, request })
                .is_err()
            {
                lock(&self.slots.inner.open).remove(&ticket);
                return QuestionOutcome::Dismissed;
            }
            // A closed UI dismisses: the model is told to wait for the person.
            reply.await.unwrap_or(QuestionOutcome::Dismissed)
        })
    }
}
