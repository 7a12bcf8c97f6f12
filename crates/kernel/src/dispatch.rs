//! The four dispatch modes. Each snapshots the listener list once (one `Arc` clone) and then
//! runs listeners with no kernel lock held, so listeners may register, dispose and dispatch.

use std::any::TypeId;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::context::Context;
use crate::error::{panic_message, AggregateError, BoxError, ListenerPanicked};
use crate::events::{
    BoxFuture, Listener, Notification, NotifyFn, NotifyKey, Parallel, ParallelFn, ParallelKey,
    Serial, SerialFn, SerialKey, Waterfall, WaterfallFn, WaterfallKey,
};
use crate::scope::ScopeKey;

type DefaultFn<E> = Box<
    dyn FnOnce(Arc<<E as Waterfall>::Args>) -> BoxFuture<Result<<E as Waterfall>::Output, BoxError>>
        + Send,
>;

/// The rest of a waterfall chain, handed to each listener. Owned and single-use:
/// `next.run().await` invokes the next listener that hears this dispatch, and finally the
/// dispatcher's default. Dropping it without running vetoes everything inward.
pub struct Next<E: Waterfall> {
    chain: Arc<[Listener<WaterfallFn<E>>]>,
    pos: usize,
    carrier: Option<ScopeKey>,
    args: Arc<E::Args>,
    default: DefaultFn<E>,
}

impl<E: Waterfall> std::fmt::Debug for Next<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("event", &E::NAME)
            .field("pos", &self.pos)
            .finish()
    }
}

impl<E: Waterfall> Next<E> {
    /// Continues the chain inward and returns what the inner layers produced.
    pub async fn run(self) -> Result<E::Output, BoxError> {
        let mut pos = self.pos;
        while let Some(listener) = self.chain.get(pos) {
            if listener.hears(self.carrier.as_ref()) {
                let call = listener.call.clone();
                let args = self.args.clone();
                let next = Next {
                    pos: pos + 1,
                    ..self
                };
                return contained::<E, _>(|| call(args, next)).await;
            }
            pos += 1;
        }
        (self.default)(self.args).await
    }
}

/// Runs an async listener so that a panic, while building its future or while polling it,
/// becomes a [`ListenerPanicked`] error for the dispatcher instead of unwinding through the
/// caller (a driver task that unwinds would leave its turn open).
async fn contained<E: crate::events::Event, T>(
    start: impl FnOnce() -> BoxFuture<Result<T, BoxError>>,
) -> Result<T, BoxError> {
    use futures_util::FutureExt;
    let future = catch_unwind(AssertUnwindSafe(start))
        .map_err(|payload| event_panic(E::NAME, payload.as_ref()))?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .unwrap_or_else(|payload| Err(event_panic(E::NAME, payload.as_ref())))
}

fn event_panic(name: &'static str, payload: &(dyn std::any::Any + Send)) -> BoxError {
    Box::new(ListenerPanicked {
        event: name,
        message: panic_message(payload),
    })
}

impl Context {
    /// Contained notification: every listener that hears `carrier` runs in registration
    /// order; a listener that fails or panics is logged and the rest still run.
    pub fn emit<E: Notification>(&self, carrier: Option<&ScopeKey>, payload: &E::Payload) {
        let Some(list) = self
            .rt
            .events
            .snapshot::<NotifyFn<E>>(TypeId::of::<NotifyKey<E>>())
        else {
            return;
        };
        for listener in list.iter() {
            if !listener.hears(carrier) {
                continue;
            }
            match catch_unwind(AssertUnwindSafe(|| (listener.call)(payload))) {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::warn!(event = E::NAME, %error, "notification listener failed");
                }
                Err(panic) => {
                    tracing::error!(
                        event = E::NAME,
                        panic = %panic_message(&*panic),
                        "notification listener panicked"
                    );
                }
            }
        }
    }

    /// Strict notification: the first listener error or panic stops the dispatch and is
    /// returned (the veto form used for `*/created`).
    pub fn emit_strict<E: Notification>(
        &self,
        carrier: Option<&ScopeKey>,
        payload: &E::Payload,
    ) -> Result<(), BoxError> {
        let Some(list) = self
            .rt
            .events
            .snapshot::<NotifyFn<E>>(TypeId::of::<NotifyKey<E>>())
        else {
            return Ok(());
        };
        for listener in list.iter().filter(|l| l.hears(carrier)) {
            match catch_unwind(AssertUnwindSafe(|| (listener.call)(payload))) {
                Ok(result) => result?,
                Err(panic) => return Err(event_panic(E::NAME, &*panic)),
            }
        }
        Ok(())
    }

    /// Serial dispatch: listeners are awaited in order; the first `Some` stops the chain and
    /// is returned; the first error propagates.
    pub async fn serial<E: Serial>(
        &self,
        carrier: Option<&ScopeKey>,
        args: Arc<E::Args>,
    ) -> Result<Option<E::Output>, BoxError> {
        let Some(list) = self
            .rt
            .events
            .snapshot::<SerialFn<E>>(TypeId::of::<SerialKey<E>>())
        else {
            return Ok(None);
        };
        for listener in list.iter().filter(|l| l.hears(carrier)) {
            let call = &listener.call;
            if let Some(out) = contained::<E, _>(|| call(args.clone())).await? {
                return Ok(Some(out));
            }
        }
        Ok(None)
    }

    /// Parallel dispatch: all listeners start together and are all awaited; failures are
    /// collected in listener order.
    pub async fn parallel<E: Parallel>(
        &self,
        carrier: Option<&ScopeKey>,
        args: Arc<E::Args>,
    ) -> Result<(), AggregateError> {
        let Some(list) = self
            .rt
            .events
            .snapshot::<ParallelFn<E>>(TypeId::of::<ParallelKey<E>>())
        else {
            return Ok(());
        };
        let futures = list
            .iter()
            .filter(|l| l.hears(carrier))
            .map(|l| contained::<E, _>(|| (l.call)(args.clone())));
        let errors: Vec<BoxError> = futures_util::future::join_all(futures)
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(AggregateError { errors })
        }
    }

    /// Waterfall dispatch: the outermost (first registered, or last prepended) listener runs
    /// first and decides whether to call `next`; `default` is the innermost step. The
    /// listener set is fixed when the dispatch starts.
    pub async fn waterfall<E: Waterfall, D, DFut>(
        &self,
        carrier: Option<&ScopeKey>,
        args: Arc<E::Args>,
        default: D,
    ) -> Result<E::Output, BoxError>
    where
        D: FnOnce(Arc<E::Args>) -> DFut + Send + 'static,
        DFut: Future<Output = Result<E::Output, BoxError>> + Send + 'static,
    {
        let chain = self
            .rt
            .events
            .snapshot::<WaterfallFn<E>>(TypeId::of::<WaterfallKey<E>>())
            .unwrap_or_else(|| Arc::from(Vec::new()));
        let next = Next::<E> {
            chain,
            pos: 0,
            carrier: carrier.cloned(),
            args,
            default: Box::new(move |args| Box::pin(default(args))),
        };
        next.run().await
    }
}
