//! Helper processes started ahead of need: sandbox helpers and reapers.
//!
//! Most of what a sandbox costs does not depend on the program it will run: creating
//! its namespaces (a network namespace alone takes most of a millisecond here) and
//! staging its root. A helper does all of that as soon as it starts, then waits on its
//! stdin for a spec ([`super::sandbox`]). Likewise the reaper an app runs under
//! ([`super::lifeline`]): its own start (an exec, the loader, tying itself to the
//! harness) was a millisecond of every app start, and it does not depend on the app.
//! A pool ([`SEAL_HELPERS`], [`REAPERS`]) keeps one or two of them started
//! ([`expect_side_by_side`]), so that a sealed process only pays for its own binds and
//! its fork, and an app for its fork and exec; every user takes its helper from here,
//! the first one of a process too (it waits for the helper's start like any other), and
//! [`Warm::replenish`]es the pool when it ends. Neither kind makes anything a program can see before it has its
//! program: they run outside every sandbox, and their own start time is nobody's to
//! read.
//!
//! The helpers are started from one thread per pool that lives as long as the process:
//! a helper dies with the thread that started it (`PR_SET_PDEATHSIG` is per thread),
//! and a trial's runtime threads come and go.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use tokio::sync::Notify;

use super::sandbox;
use super::spawned::Spawned;

/// Helpers kept started and waiting, at most: a trial's gate runs one sealed process
/// after another, so one ready helper serves a trial, and a second serves the trials a
/// process runs side by side (`cargo test` runs a binary's trials on threads).
const MOST_READY: usize = 2;

/// Helpers each pool keeps ready in this process ([`expect_side_by_side`]). Those still
/// waiting when the process ends were started for nothing: under nextest, where a
/// process runs one trial, a second one was a sandbox (its namespaces, its control
/// groups) and a reaper built and torn down for every trial.
static READY: AtomicUsize = AtomicUsize::new(MOST_READY);

/// Say how many trials this process runs at once, before it takes a helper.
pub fn expect_side_by_side(trials: usize) {
    READY.store(trials.clamp(1, MOST_READY), Ordering::Relaxed);
}

/// One kind of helper, started ahead of need by a thread of its own.
pub struct Warm {
    /// The starter thread's name.
    thread: &'static str,
    start: fn() -> io::Result<Spawned>,
    pool: OnceLock<Arc<Pool>>,
}

/// Sandbox helpers (`gauntlet-seal`), waiting for a spec.
pub static SEAL_HELPERS: Warm = Warm {
    thread: "gauntlet-seal-starter",
    start: start_seal_helper,
    pool: OnceLock::new(),
};

/// The binary a process's whole tree runs under so that it ends with it, or with the
/// harness (src/bin/gauntlet-reap): `PR_SET_PDEATHSIG` alone reaches only the process
/// the harness started, not what it forks or detaches. Named here, where reapers are
/// started, so that the lifeline, which takes them from [`REAPERS`], is the only one of
/// the two that imports the other.
pub const REAPER: &str = "gauntlet-reap";

/// Reapers (`gauntlet-reap --from-stdin`), waiting for the program to run.
pub static REAPERS: Warm = Warm {
    thread: "gauntlet-reap-starter",
    start: start_reaper,
    pool: OnceLock::new(),
};

struct Pool {
    state: Mutex<State>,
    /// The starter thread waits here for a helper to be taken.
    taken: Condvar,
    /// Takers wait here for a helper to be started.
    started: Notify,
}

#[derive(Default)]
struct State {
    helpers: VecDeque<Spawned>,
    /// Why the last start failed, for the next taker.
    failed: Option<io::Error>,
    /// Takers that found none and wait for a start: the starter starts one for each,
    /// however few it keeps ready (a taker's wake-up of the starter while it is busy
    /// starting another is not seen by it).
    waiting: usize,
}

impl Warm {
    fn pool(&self) -> &Arc<Pool> {
        self.pool.get_or_init(|| {
            let pool = Arc::new(Pool {
                state: Mutex::new(State::default()),
                taken: Condvar::new(),
                started: Notify::new(),
            });
            let starter = Arc::clone(&pool);
            let start = self.start;
            // If the thread cannot be started, takers find no helper and no error: say so.
            if let Err(e) = std::thread::Builder::new()
                .name(self.thread.into())
                .spawn(move || start_forever(&starter, start))
            {
                if let Ok(mut state) = pool.state.lock() {
                    state.failed = Some(e);
                }
            }
            pool
        })
    }

    /// A started helper, waiting on its stdin.
    pub async fn take(&self) -> io::Result<Spawned> {
        take(self.pool(), self.thread).await
    }

    /// Start helpers to replace those taken. Called when the process that took one has
    /// ended, not when it starts: building a sandbox (its namespaces, joining its
    /// control groups, which takes a lock every fork and exit of the machine waits on),
    /// or a reaper's exec, would otherwise compete with the start of the very process
    /// that took a helper.
    pub fn replenish(&self) {
        self.pool().taken.notify_one();
    }
}

/// A helper from `pool`, whose starter thread is `starter` (named in errors).
async fn take(pool: &Pool, starter: &str) -> io::Result<Spawned> {
    let mut waiting = Waiting {
        pool,
        counted: false,
    };
    loop {
        // Registered before looking, so a start between the look and the wait wakes us.
        let started = pool.started.notified();
        {
            let mut state = pool
                .state
                .lock()
                .map_err(|_| io::Error::other(format!("the pool of {starter} is poisoned")))?;
            if let Some(e) = state.failed.take() {
                waiting.leave(&mut state);
                // The starter waits until a taker has seen its error: wake it, or a
                // second taker waiting for the same start would wait forever.
                pool.taken.notify_one();
                return Err(e);
            }
            while let Some(mut helper) = state.helpers.pop_front() {
                // One that died waiting (killed from outside) is no use.
                if let Ok(None) = helper.try_wait() {
                    waiting.leave(&mut state);
                    return Ok(helper);
                }
            }
            // None waiting: start one now, whatever it competes with.
            waiting.enter(&mut state);
            pool.taken.notify_one();
        }
        started.await;
    }
}

/// A taker counted in its pool's [`State::waiting`] while it waits, and no longer once
/// it has a helper, an error, or is dropped while it waits (its trial was stopped).
struct Waiting<'a> {
    pool: &'a Pool,
    counted: bool,
}

impl Waiting<'_> {
    fn enter(&mut self, state: &mut State) {
        if !self.counted {
            state.waiting += 1;
            self.counted = true;
        }
    }

    fn leave(&mut self, state: &mut State) {
        if self.counted {
            state.waiting -= 1;
            self.counted = false;
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.counted {
            if let Ok(mut state) = self.pool.state.lock() {
                state.waiting -= 1;
            }
        }
    }
}

fn start_forever(pool: &Pool, start: fn() -> io::Result<Spawned>) {
    let Ok(mut state) = pool.state.lock() else {
        return;
    };
    loop {
        // Wait for room, and after a failed start until a taker has seen the error (a
        // helper that cannot start is not retried in a loop).
        let wanted = |state: &State| READY.load(Ordering::Relaxed).max(state.waiting);
        while state.helpers.len() >= wanted(&state) || state.failed.is_some() {
            state = match pool.taken.wait(state) {
                Ok(state) => state,
                Err(_) => return,
            };
        }
        drop(state);
        let started = start();
        state = match pool.state.lock() {
            Ok(state) => state,
            Err(_) => return,
        };
        match started {
            Ok(helper) => state.helpers.push_back(helper),
            Err(e) => state.failed = Some(e),
        }
        pool.started.notify_one();
    }
}

/// One sandbox helper, with nothing but its pipes: its command line and environment are
/// the sandbox's PID 1's, which the program can read.
fn start_seal_helper() -> io::Result<Spawned> {
    let mut child = helper_command(sandbox::helper()).spawn()?;
    let told = match child.stdin.as_mut() {
        Some(stdin) => stdin.write_all(&sandbox::parent_line()),
        None => Err(io::Error::other("the helper's stdin is not piped")),
    };
    if let Err(e) = told {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    Spawned::new(child)
}

/// One reaper, tied to this process, in a process group of its own (the app's), with an
/// empty environment: the program's comes with it.
fn start_reaper() -> io::Result<Spawned> {
    let child = helper_command(crate::binaries::bin_path(REAPER))
        .arg("--parent")
        .arg(std::process::id().to_string())
        .arg("--from-stdin")
        .spawn()?;
    Spawned::new(child)
}

/// A helper of either kind: no environment, started at `/`, every stream a pipe, in a
/// process group of its own.
fn helper_command(program: std::path::PathBuf) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start_sleeper() -> io::Result<Spawned> {
        Spawned::new(
            // Those left in the pool when the test ends exit on their own.
            Command::new("sleep")
                .arg("30")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?,
        )
    }

    /// Two takers at once from a pool that keeps one ready (a process that runs one
    /// trial): both get a helper without waiting for a replenish, which only comes
    /// when a helper's process ends. Before, the second taker's wake-up of the busy
    /// starter was lost, and it waited until some other run ended.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn takers_at_once_each_get_a_helper_from_a_pool_that_keeps_one() {
        static POOL: Warm = Warm {
            thread: "test-starter",
            start: start_sleeper,
            pool: OnceLock::new(),
        };
        expect_side_by_side(1);
        for _ in 0..5 {
            // Hung before this change: nothing here replenishes the pool.
            let got = futures_util::future::join_all((0..3).map(|_| POOL.take())).await;
            assert!(got.iter().all(Result::is_ok));
            let state = POOL.pool().state.lock().expect("pool");
            assert_eq!(state.waiting, 0, "no taker is left counted");
        }
    }
}
