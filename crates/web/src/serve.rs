//! Binding and serving until shutdown.

use crate::api::AppState;
use crate::config::WebConfig;
use crate::hub::Hub;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::watch;

/// A running server.
pub struct Server {
    addr: SocketAddr,
    closing: watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    hub: Hub,
}

impl Server {
    /// The bound address (the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Stops accepting, ends every event stream, waits for requests in flight, then
    /// disposes every held agent (each log ends balanced and flushed).
    pub async fn shutdown(self) -> std::io::Result<()> {
        let _ = self.closing.send(true);
        let served = match self.task.await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        };
        self.hub.shutdown().await;
        served
    }
}

/// Binds `config.addr` and serves `hub` on it in a task.
pub async fn serve(config: WebConfig, hub: Hub) -> std::io::Result<Server> {
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    let addr = listener.local_addr()?;
    let (closing, closed) = watch::channel(false);
    tokio::spawn(hub.roster().clone().run(hub.clone(), closed.clone()));
    let state = AppState {
        config: Arc::new(config),
        hub: hub.clone(),
        closing: closed.clone(),
    };
    let app = crate::router(state).into_make_service_with_connect_info::<SocketAddr>();
    let mut stop = closed;
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|closing| *closing).await;
            })
            .await
    });
    Ok(Server {
        addr,
        closing,
        task,
        hub,
    })
}
