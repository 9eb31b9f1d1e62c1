//! The threads a proxy serves its agents' connections on.
//!
//! Each thread is a single-threaded runtime of its own, and a connection stays on the
//! thread it was given: the agent's request, the provider's answer and every chunk of a
//! stream between them are handled by one thread, with no wake-up of another thread in
//! between. Only the hand-over of a new connection crosses threads.
//!
//! On the calling program's work-stealing runtime, a call's wake-ups moved between
//! threads, which cost both latency and calls per second (`benches/proxy-race.sh`;
//! the figures before and after are in README.md, "Status"). One kind of call gets
//! slower: a lone large call, which keeps its thread busy reading the JSON, is
//! answered a little later than on a runtime with a second thread.
//!
//! A trial's proxy gets one thread: the calls of an agent that floods its proxy are
//! served there, not on the runtime the harness runs on.

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

/// The proxy's serving threads; they end when this is dropped, and the connections
/// still on them are dropped with their runtimes.
pub(crate) struct Workers {
    threads: Vec<Worker>,
}

struct Worker {
    handle: Handle,
    /// Connections on this thread that have not ended.
    open: Arc<AtomicUsize>,
    /// Dropping it ends the thread's runtime.
    _stop: oneshot::Sender<()>,
}

impl Workers {
    /// Start `count` threads named after `name`.
    pub(crate) fn start(name: &str, count: NonZeroUsize) -> std::io::Result<Workers> {
        let mut threads = Vec::with_capacity(count.get());
        for i in 0..count.get() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let handle = runtime.handle().clone();
            let (stop, stopped) = oneshot::channel::<()>();
            std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    // Tasks on a single-threaded runtime run only while its thread is
                    // in `block_on`; an error only means the sender was dropped, which
                    // is the signal to end.
                    let _ = runtime.block_on(stopped);
                })?;
            threads.push(Worker {
                handle,
                open: Arc::default(),
                _stop: stop,
            });
        }
        Ok(Workers { threads })
    }

    /// Run `connection` in `set` on the thread with the fewest open connections, so
    /// that long-lived connections do not pile up on one thread.
    pub(crate) fn spawn<F>(&self, set: &mut JoinSet<()>, connection: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let Some(worker) = self
            .threads
            .iter()
            .min_by_key(|w| w.open.load(Ordering::Relaxed))
        else {
            // `start` makes at least one thread.
            return;
        };
        let open = Open::count(&worker.open);
        set.spawn_on(
            async move {
                let _open = open;
                connection.await;
            },
            &worker.handle,
        );
    }
}

/// One open connection in its thread's count, until dropped (the connection ended or
/// was cancelled).
struct Open(Arc<AtomicUsize>);

impl Open {
    fn count(open: &Arc<AtomicUsize>) -> Open {
        open.fetch_add(1, Ordering::Relaxed);
        Open(Arc::clone(open))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_name() -> String {
        std::thread::current().name().unwrap_or_default().to_owned()
    }

    #[tokio::test]
    async fn connections_go_to_the_least_busy_thread_and_stay_there() {
        let workers = Workers::start("test-worker", NonZeroUsize::new(2).unwrap()).unwrap();
        let mut set = JoinSet::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let (release, released) = tokio::sync::watch::channel(false);
        for _ in 0..4 {
            let tx = tx.clone();
            let mut released = released.clone();
            workers.spawn(&mut set, async move {
                let before = thread_name();
                let _ = released.wait_for(|r| *r).await;
                tokio::task::yield_now().await;
                let _ = tx.send((before, thread_name()));
            });
        }
        // Each connection was counted on its thread before the next was placed.
        let open: Vec<usize> = workers
            .threads
            .iter()
            .map(|w| w.open.load(Ordering::Relaxed))
            .collect();
        assert_eq!(open, vec![2, 2]);
        release.send(true).unwrap();
        while set.join_next().await.is_some() {}
        drop(tx);
        let mut names = Vec::new();
        while let Some((before, after)) = rx.recv().await {
            assert_eq!(before, after, "a connection moved between threads");
            names.push(before);
        }
        names.sort();
        assert_eq!(
            names,
            [
                "test-worker-0",
                "test-worker-0",
                "test-worker-1",
                "test-worker-1"
            ]
        );
        let open: Vec<usize> = workers
            .threads
            .iter()
            .map(|w| w.open.load(Ordering::Relaxed))
            .collect();
        assert_eq!(open, vec![0, 0], "ended connections still counted");
    }

    #[tokio::test]
    async fn dropping_the_workers_ends_their_connections() {
        let workers = Workers::start("test-worker", NonZeroUsize::MIN).unwrap();
        let mut set = JoinSet::new();
        let (alive, gone) = oneshot::channel::<()>();
        workers.spawn(&mut set, async move {
            let _alive = alive;
            std::future::pending::<()>().await;
        });
        drop(workers);
        // The pending connection was dropped with its runtime, so its sender is too.
        assert!(gone.await.is_err());
    }
}
