//! The run's way down on SIGINT or SIGTERM.
//!
//! A cancelled CI job or a Ctrl-C must not cost the evidence of the trials in flight:
//! the default action (die at once) would leave their agents' output unrecorded. So the
//! first SIGINT or SIGTERM only asks the run to stop: every bounded process is killed as
//! it would be at its deadline and its partial output kept, with the signal named in
//! its end, trials not yet started do not start, and each trial in flight writes its
//! record, marked interrupted. The second signal is the user saying "now": the process
//! exits at once, and [`super::lifeline`] takes its children with it.
//!
//! One thread owns the signals for the whole process, because trials run on runtimes of
//! their own (one per trial under libtest) and must all hear the same request.

use std::sync::OnceLock;

use tokio::sync::watch;

/// The signal that asked the run to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Interrupt,
    Terminate,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// The exit status of a process that this signal killed, as shells report it.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
        }
    }
}

fn state() -> &'static watch::Sender<Option<Stop>> {
    static STATE: OnceLock<watch::Sender<Option<Stop>>> = OnceLock::new();
    STATE.get_or_init(|| watch::channel(None).0)
}

/// Take over SIGINT and SIGTERM for this process (idempotent). Returns once the
/// handlers are in place, so a signal that arrives after it is never the default death.
/// A process that cannot install them keeps the default action, and says so.
pub fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Result<(), String>>(1);
        let spawned = std::thread::Builder::new()
            .name("gauntlet-signals".into())
            .spawn(move || listen(ready_tx));
        let ready = match spawned {
            Ok(_) => ready_rx
                .recv()
                .unwrap_or_else(|_| Err("the signal thread ended".into())),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = ready {
            eprintln!("gauntlet: SIGINT/SIGTERM keep their default action (no partial records on the way down): {e}");
        }
    });
}

fn listen(ready: std::sync::mpsc::SyncSender<Result<(), String>>) {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return;
        }
    };
    rt.block_on(async move {
        let handlers = signal(SignalKind::interrupt())
            .and_then(|int| Ok((int, signal(SignalKind::terminate())?)));
        let (mut int, mut term) = match handlers {
            Ok(h) => h,
            Err(e) => {
                let _ = ready.send(Err(e.to_string()));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        let first = tokio::select! {
            _ = int.recv() => Stop::Interrupt,
            _ = term.recv() => Stop::Terminate,
        };
        state().send_replace(Some(first));
        eprintln!(
            "gauntlet: {} received: stopping the agents and keeping what they wrote; a second signal exits at once",
            first.name()
        );
        let second = tokio::select! {
            _ = int.recv() => Stop::Interrupt,
            _ = term.recv() => Stop::Terminate,
        };
        eprintln!("gauntlet: {} again: exiting now", second.name());
        // SAFETY: _exit has no preconditions; it runs no destructor, which is the point:
        // every child the harness started dies with it (lifeline, sandbox helpers).
        unsafe { libc::_exit(i32::from(second.exit_code())) }
    });
}

/// The signal that asked the run to stop, if one has.
pub fn requested() -> Option<Stop> {
    *state().borrow()
}

/// Resolves when the run is asked to stop (never, in a process that is not).
pub async fn stopping() -> Stop {
    let mut rx = state().subscribe();
    loop {
        if let Some(stop) = *rx.borrow_and_update() {
            return stop;
        }
        if rx.changed().await.is_err() {
            // The sender is a static: it is never dropped.
            std::future::pending::<()>().await;
        }
    }
}
