//! Where a trial's wall-clock goes, phase by phase: workspace, proxy, target starts,
//! the agent, gate runs, scoring and the record.
//!
//! The overhead benchmark (`benches/overhead.rs`) must say which part of a trial's
//! overhead costs what, and a benchmark that re-enacts the trial's steps on its own
//! measures its copy, not the trial. So the trial's own code marks its phases, always;
//! the marks cost nothing unless a caller collects them ([`collect`]): outside a
//! collecting scope each mark is one failed task-local lookup and no clock read. The
//! figures are never part of a record (a record holds evidence, and these are the
//! harness's own costs).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A part of a trial's wall-clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Trial directory, workspace, HOME and TMPDIR, the corpus graph and prompt, each
    /// gate run's copy of the test directory.
    Workspace,
    /// The metering proxy's start and its shutdown with the calls file.
    Proxy,
    /// Starting and stopping a target (the app, each gate run's app or mutant).
    Target,
    /// The agent's own process.
    Agent,
    /// The gate's runs of the claimed test (processes only; their targets are
    /// [`Phase::Target`]).
    Gate,
    /// Reading the agent's output for its claim and deriving the verdict.
    Score,
    /// Writing the record.
    Record,
}

impl Phase {
    pub const ALL: [Phase; 7] = [
        Phase::Workspace,
        Phase::Proxy,
        Phase::Target,
        Phase::Agent,
        Phase::Gate,
        Phase::Score,
        Phase::Record,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Workspace => "workspace",
            Phase::Proxy => "proxy",
            Phase::Target => "target starts",
            Phase::Agent => "agent",
            Phase::Gate => "gate runs",
            Phase::Score => "scoring",
            Phase::Record => "record",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Time spent per phase and how often it was entered.
#[derive(Debug, Default)]
pub struct Phases {
    nanos: [AtomicU64; 7],
    entered: [AtomicU64; 7],
}

impl Phases {
    pub fn get(&self, p: Phase) -> Duration {
        Duration::from_nanos(self.nanos[p.index()].load(Ordering::Relaxed))
    }

    pub fn entered(&self, p: Phase) -> u64 {
        self.entered[p.index()].load(Ordering::Relaxed)
    }

    fn add(&self, p: Phase, d: Duration) {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.nanos[p.index()].fetch_add(n, Ordering::Relaxed);
        self.entered[p.index()].fetch_add(1, Ordering::Relaxed);
    }
}

tokio::task_local! {
    static PHASES: Arc<Phases>;
}

/// Run `f`, collecting the phases its marks record. Marks inside tasks `f` spawns are
/// not collected (a task-local does not cross a spawn): a trial marks its own steps.
pub async fn collect<F: Future>(f: F) -> (F::Output, Arc<Phases>) {
    let phases = Arc::new(Phases::default());
    let out = PHASES.scope(Arc::clone(&phases), f).await;
    (out, phases)
}

fn collecting() -> Option<Arc<Phases>> {
    PHASES.try_with(Arc::clone).ok()
}

/// Await `f` as part of `phase`.
pub async fn timed<F: Future>(phase: Phase, f: F) -> F::Output {
    match collecting() {
        None => f.await,
        Some(p) => {
            let t = Instant::now();
            let out = f.await;
            p.add(phase, t.elapsed());
            out
        }
    }
}

/// Run `f` as part of `phase`.
pub fn timed_sync<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    match collecting() {
        None => f(),
        Some(p) => {
            let t = Instant::now();
            let out = f();
            p.add(phase, t.elapsed());
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn marks_count_inside_a_collecting_scope_only() {
        // Outside any scope a mark is a plain call.
        assert_eq!(timed_sync(Phase::Record, || 7), 7);
        let (out, phases) = collect(async {
            timed(Phase::Proxy, tokio::time::sleep(Duration::from_millis(2))).await;
            timed_sync(Phase::Score, || 1) + timed_sync(Phase::Score, || 2)
        })
        .await;
        assert_eq!(out, 3);
        assert!(phases.get(Phase::Proxy) >= Duration::from_millis(2));
        assert_eq!(phases.entered(Phase::Score), 2);
        assert_eq!(phases.entered(Phase::Agent), 0);
    }
}
