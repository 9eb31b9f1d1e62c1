//! Children that die with the harness, however it dies.
//!
//! A harness killed with SIGKILL runs no destructor: `kill_on_drop` and the reapers
//! never get their turn, and an app, a mutant or a browser it started would keep
//! running (and keep its port) after a cancelled CI job. So every process the harness
//! starts outside a sandbox is started here: the kernel sends it SIGKILL when its
//! parent goes (`PR_SET_PDEATHSIG`), or, for the reaper ([`start_reaped`]), the reaper
//! asks for its own signal first thing. Sandboxed processes need nothing from here: their
//! helper does the same for itself, and its PID namespace takes everything inside.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child ends, not the
//! process, and a trial's runtime threads come and go (one runtime per trial under
//! libtest). So the fork happens on one thread that lives as long as the process: the
//! spawner thread here, or, for reapers, which are started ahead of need, their pool's
//! starter thread ([`super::warm::REAPERS`]).

use std::io;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use super::sandbox::Limits;
use super::warm::REAPERS;

type Job = Box<dyn FnOnce() + Send>;

/// What to run under a reaper ([`start_reaped`]): the program, its arguments, where it
/// starts and its whole environment (it inherits nothing of the harness's, which holds
/// the provider key in byok mode).
pub struct ReapedProgram<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a [(&'a str, &'a str)],
    /// The share of the machine of the program's whole tree, held by a control group of
    /// the reaper's own (`sys::cgroup`) where the machine has one: outside a sandbox
    /// nothing else bounds what a test can make an app do, and the reaped programs run
    /// as root, whom no per-user limit bounds.
    pub limits: Limits,
    /// Where the reaper writes its [`ReapReport`] once the program's tree has ended (a
    /// new file, in a directory of the harness's); `None`: no report.
    pub report: Option<&'a Path>,
}

/// What the reaper saw of its program's share of the machine, written when the
/// program's tree has ended: the harness learns from it which bound, if any, ended the
/// program, which its exit status alone (a SIGKILL, a failed fork) does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReapReport {
    /// Whether a group of the reaper's own held the program to its [`Limits`].
    pub limited: bool,
    /// A fork of the program's tree failed at its task bound.
    pub tasks_exceeded: bool,
    /// The kernel killed a process of the tree at its memory bound.
    pub memory_exceeded: bool,
    /// The most memory the tree held at once, where the kernel keeps the figure.
    pub memory_peak_bytes: Option<u64>,
}

impl ReapReport {
    /// The report at `path`; `None` when the reaper wrote none (it was killed, or could
    /// not start the program) or it is not one.
    pub fn read(path: &Path) -> Option<ReapReport> {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .ok()?
            .take(64 << 10)
            .read_to_end(&mut bytes)
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// A program running under its reaper: the reaper's process (which leads the program's
/// process group, and whose streams are the program's), and the program's stdin.
pub struct Reaped {
    pub process: super::spawned::Spawned,
    pub stdin: tokio::net::unix::pipe::Sender,
}

/// Start `program` under a reaper, for this harness process: for anything the harness
/// runs outside a sandbox whose tree must end with it (an app, a CLI app's run for a
/// claimed test). The reaper comes started from [`super::warm::REAPERS`], already tied
/// to this process (its own `PR_SET_PDEATHSIG`, then a check that its parent is still
/// this process), so that what is left is the program's fork and exec; the caller
/// replenishes the pool when the program has ended. Dropping `stdin` gives the program
/// end of input. Must be called inside a tokio runtime: the pipes are registered with
/// the caller's.
pub async fn start_reaped(p: &ReapedProgram<'_>) -> io::Result<Reaped> {
    use tokio::io::AsyncWriteExt;
    let frame = program_frame(p)?;
    let mut process = REAPERS.take().await?;
    let mut stdin = process
        .stdin()?
        .ok_or_else(|| io::Error::other("the reaper's stdin is not piped"))?;
    // A reaper that died waiting is seen here, or as its exit.
    stdin.write_all(&frame).await?;
    Ok(Reaped { process, stdin })
}

/// The program as `gauntlet-reap --from-stdin` reads it: a 4-byte little-endian length,
/// then NUL-terminated strings: the working directory, the report's path (empty for
/// none), the task and memory limits (decimal), the argument count, the program and its
/// arguments, the environment's `NAME=value` entries.
fn program_frame(p: &ReapedProgram<'_>) -> io::Result<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let mut body = Vec::new();
    let mut push = |s: &[u8]| -> io::Result<()> {
        if s.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{:?} holds a NUL byte, which no program can be given",
                    String::from_utf8_lossy(s)
                ),
            ));
        }
        body.extend_from_slice(s);
        body.push(0);
        Ok(())
    };
    push(p.cwd.as_os_str().as_bytes())?;
    push(
        p.report
            .map(|r| r.as_os_str().as_bytes())
            .unwrap_or_default(),
    )?;
    push(p.limits.tasks.to_string().as_bytes())?;
    push(p.limits.memory_bytes.to_string().as_bytes())?;
    push((1 + p.args.len()).to_string().as_bytes())?;
    push(p.program.as_os_str().as_bytes())?;
    for a in p.args {
        push(a.as_bytes())?;
    }
    for (k, v) in p.env {
        push(format!("{k}={v}").as_bytes())?;
    }
    let len = u32::try_from(body.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the program is too long"))?;
    let mut frame = len.to_le_bytes().to_vec();
    frame.extend(body);
    Ok(frame)
}

/// The spawner thread's queue; `None` when the thread could not be started.
fn queue() -> &'static Option<Mutex<mpsc::Sender<Job>>> {
    static QUEUE: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("gauntlet-spawner".into())
            .spawn(move || {
                // A panicking job must not end this thread: its end would SIGKILL
                // every child it ever spawned.
                for job in rx {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    })
}

/// Run `spawn` on the process-long spawner thread and hand back what it returned.
fn on_spawner<T: Send + 'static>(
    spawn: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    let Some(queue) = queue() else {
        return Err(io::Error::other(
            "the spawner thread could not be started, so no child could be tied to the harness's life",
        ));
    };
    let (tx, rx) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = tx.send(spawn());
    });
    queue
        .lock()
        .map_err(|_| io::Error::other("the spawner queue is poisoned"))?
        .send(job)
        .map_err(|_| io::Error::other("the spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| io::Error::other("the spawner thread dropped a spawn"))?
}

/// In the child between fork and exec: die with the parent, and refuse to start if the
/// parent already died before the line above took effect (nobody would kill us then).
fn tie_to(parent: i32) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL)).map_err(io::Error::from)?;
    // No allocation after fork: a plain errno says the harness is gone.
    if nix::unistd::getppid().as_raw() != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

fn harness_pid() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(i32::MAX)
}

/// Spawn `cmd` (a tokio command) so that it dies with the harness. Must be called
/// inside a tokio runtime: the child is registered with the caller's.
pub fn spawn_tokio(mut cmd: tokio::process::Command) -> io::Result<tokio::process::Child> {
    let parent = harness_pid();
    // SAFETY: the hook only makes two system calls (prctl, getppid), both
    // async-signal-safe, and allocates nothing on its success path.
    unsafe {
        cmd.pre_exec(move || tie_to(parent));
    }
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|e| io::Error::other(format!("spawning outside a tokio runtime: {e}")))?;
    on_spawner(move || {
        let _entered = runtime.enter();
        cmd.spawn()
    })
}

/// Spawn `cmd` (a std command) so that it dies with the harness.
pub fn spawn_std(mut cmd: std::process::Command) -> io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    let parent = harness_pid();
    // SAFETY: as in `spawn_tokio`.
    unsafe {
        cmd.pre_exec(move || tie_to(parent));
    }
    on_spawner(move || cmd.spawn())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread that asked for the child ends at once; the child must still be alive
    /// (the kernel's signal on the forking thread's exit lands shortly after the join,
    /// hence the pause before looking).
    #[test]
    fn a_child_outlives_the_thread_that_asked_for_it() {
        // Spawned from a thread that ends at once: with a plain fork on that thread,
        // PR_SET_PDEATHSIG would kill the child as soon as the thread is gone.
        let child = std::thread::spawn(|| {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30");
            spawn_std(cmd)
        })
        .join()
        .unwrap()
        .unwrap();
        let pid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let state = status
            .lines()
            .find(|l| l.starts_with("State:"))
            .unwrap_or_default()
            .to_string();
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            !state.contains("zombie"),
            "the child died with its thread: {state}"
        );
    }

    #[tokio::test]
    async fn a_tokio_child_is_registered_with_the_callers_runtime() {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.args(["-c", "exit 7"]);
        let status = spawn_tokio(cmd).unwrap().wait().await.unwrap();
        assert_eq!(status.code(), Some(7));
    }
}
