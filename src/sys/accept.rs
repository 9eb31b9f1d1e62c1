//! The accept loop of the harness's loopback servers (the metering proxy, the sinks):
//! accept until told to stop, then give the open connections a grace to end and cut
//! the rest, so that a server's shutdown is bounded whatever its clients do.

use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The pause after a failed accept (out of file descriptors and the like), so that the
/// loop backs off instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// Accept on `listener` until `stop` changes (or its sender is dropped), handing each
/// connection to `serve`, which spawns the task that serves it into the set it is
/// given, with a receiver of `stop` of its own to end the connection gracefully by;
/// then close the listener, wait up to `grace` for those tasks, and abort what is
/// left. Finished tasks are reaped as the loop goes, so a long-running server does
/// not grow with its past connections.
pub async fn accept_and_drain<F>(
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
    grace: Duration,
    mut serve: F,
) where
    F: FnMut(TcpStream, &mut JoinSet<()>, watch::Receiver<bool>),
{
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => serve(stream, &mut connections, stop.clone()),
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            },
            _ = stop.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.shutdown().await;
    }
}
