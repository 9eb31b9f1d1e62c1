//! Sandbox helpers started ahead of need.
//!
//! Most of what a sandbox costs does not depend on the program it will run: creating
//! its namespaces (a network namespace alone takes most of a millisecond here) and
//! staging its root. A helper does all of that as soon as it starts, then waits on its
//! stdin for a spec ([`super::sandbox`]). This pool keeps up to [`READY`] such helpers
//! started, so that a sealed process only pays for its own binds and its fork; every
//! sealed process takes its helper from here, the first one of a process too (it waits
//! for the helper's start like any other), and [`replenish`]es the pool when it ends.
//!
//! The helpers are started from one thread that lives as long as the process: a
//! helper dies with the thread that started it (`PR_SET_PDEATHSIG` is per thread), and
//! a trial's runtime threads come and go.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use tokio::sync::Notify;

use super::sandbox;
use super::spawned::Spawned;

/// Helpers kept started and waiting. Two: a trial's gate runs one sealed process after
/// another, and trials run side by side.
pub const READY: usize = 2;

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
}

fn pool() -> &'static Arc<Pool> {
    static POOL: OnceLock<Arc<Pool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let pool = Arc::new(Pool {
            state: Mutex::new(State::default()),
            taken: Condvar::new(),
            started: Notify::new(),
        });
        let starter = Arc::clone(&pool);
        // If the thread cannot be started, takers find no helper and no error: say so.
        if let Err(e) = std::thread::Builder::new()
            .name("gauntlet-seal-starter".into())
            .spawn(move || start_forever(&starter))
        {
            if let Ok(mut state) = pool.state.lock() {
                state.failed = Some(e);
            }
        }
        pool
    })
}

/// A started helper, waiting for its spec; its stdin has had the harness's pid.
pub async fn take() -> io::Result<Spawned> {
    let pool = pool();
    loop {
        // Registered before looking, so a start between the look and the wait wakes us.
        let started = pool.started.notified();
        {
            let mut state = pool
                .state
                .lock()
                .map_err(|_| io::Error::other("the sandbox helper pool is poisoned"))?;
            if let Some(e) = state.failed.take() {
                // The starter waits until a taker has seen its error: wake it, or a
                // second taker waiting for the same start would wait forever.
                pool.taken.notify_one();
                return Err(e);
            }
            while let Some(mut helper) = state.helpers.pop_front() {
                // One that died waiting (killed from outside) is no use.
                if let Ok(None) = helper.try_wait() {
                    return Ok(helper);
                }
            }
            // None waiting: start one now, whatever it competes with.
            pool.taken.notify_one();
        }
        started.await;
    }
}

/// Start helpers to replace those taken. Called when a sealed process has ended, not
/// when it starts: building a sandbox (its namespaces, joining its control groups,
/// which takes a lock every fork and exit of the machine waits on) would otherwise
/// compete with the start of the very process that took a helper.
pub fn replenish() {
    pool().taken.notify_one();
}

fn start_forever(pool: &Pool) {
    let Ok(mut state) = pool.state.lock() else {
        return;
    };
    loop {
        // Wait for room, and after a failed start until a taker has seen the error (a
        // helper that cannot start is not retried in a loop).
        while state.helpers.len() >= READY || state.failed.is_some() {
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

/// One helper, with nothing but its pipes: its command line and environment are the
/// sandbox's PID 1's, which the program can read.
fn start() -> io::Result<Spawned> {
    let mut child = Command::new(sandbox::helper())
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()?;
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
