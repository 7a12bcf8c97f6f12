//! The synchronous seam's bridge to async tokio-postgres: one dedicated thread runs a
//! current-thread runtime that owns every connection; callers hand it a future and wait on
//! a std channel, so no caller's tokio worker ever drives (or blocks inside) this runtime.

use std::future::Future;
use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::runtime::Handle;
use tokio::sync::oneshot;

pub(crate) struct Bridge {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// The runtime thread is gone (it panicked or was shut down).
#[derive(Debug)]
pub(crate) struct BridgeGone;

impl Bridge {
    pub(crate) fn start() -> std::io::Result<Bridge> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("dsh-postgres".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })?;
        Ok(Bridge {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Runs `work` on the runtime thread and waits for its result.
    pub(crate) fn run<F, T>(&self, work: F) -> Result<T, BridgeGone>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(work.await);
        });
        rx.recv().map_err(|_| BridgeGone)
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
