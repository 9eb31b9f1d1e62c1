//! How a claimed test reaches a CLI app without seeing which build answers.
//!
//! `APP_BIN` is `gauntlet-cli-relay` (the same bytes for the app and every mutant);
//! it sends its arguments and standard input over a Unix socket to this relay, which
//! runs the real app — with `--mutant <capability>` or not — outside the test's
//! sandbox, and streams back its standard output, standard error and exit status. So
//! the path, the bytes, the process list and the arguments a test can inspect are the
//! same whatever the target; only the app's behaviour differs.
//!
//! The wire format, both ways, is frames of `[tag: u8][length: u32 big-endian][bytes]`.
//! The relay binary sends one [`HEADER`] frame (a JSON array of its arguments), then
//! [`STDIN`] frames, an empty one at end of input. The relay answers with [`STDOUT`]
//! and [`STDERR`] frames and one [`EXIT`] frame (a big-endian `i32`: the exit code, or
//! 128 + the signal).
//!
//! The app runs outside the test's sandbox, so nothing of the sandbox's own bounds holds
//! it: each run is held to [`AppRunBounds`] instead — its tree's tasks and memory (a
//! control group of its reaper's own, as a sandbox has), its wall time, the bytes of
//! standard input passed to it, and how many runs of one target go at once. A run
//! that meets one is stopped (its whole tree) and answers exit [`EXCEEDED_EXIT`] with
//! a line naming the bound on its standard error, and the bound is kept for the record
//! of the run that drove it ([`CliRelay::app_runs`]).
//!
//! Limits of the relay (docs/sealing.md): the app runs in an empty scratch directory,
//! with a scrubbed environment; it sees none of the test's files, so a CLI app that
//! reads files named on its command line cannot be reached this way.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::task::JoinHandle;

use crate::evidence::RelayedRun;
use crate::sys::lifeline::{ReapReport, ReapedProgram};
use crate::sys::sandbox::Limits;
use crate::sys::spawned::Spawned;

/// The binary handed to tests as `APP_BIN`.
pub const RELAY_BINARY: &str = "gauntlet-cli-relay";

pub const HEADER: u8 = 0;
pub const STDIN: u8 = 1;
pub const STDOUT: u8 = 2;
pub const STDERR: u8 = 3;
pub const EXIT: u8 = 4;

/// Largest frame either side accepts.
pub const MAX_FRAME: u32 = 1 << 20;

/// Bytes of each output stream of one invocation passed on; the rest is dropped.
const OUTPUT_CAP: u64 = 16 << 20;

/// The exit status of an app run the relay stopped at one of its bounds (as `timeout`
/// answers a command it stopped).
pub const EXCEEDED_EXIT: i32 = 124;

/// Runs of one target at once, by default. With each run's share of the machine a
/// quarter of a sandbox's, a target's runs together get what one sandbox gets, and a
/// pipeline of up to four runs still works.
pub const RUNS_AT_ONCE: usize = 4;

/// What one app run of the relay may use: outside the test's sandbox nothing else holds
/// the app a test drives, and a test can hand it anything on its command line and its
/// standard input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppRunBounds {
    /// Tasks and memory of one run's whole tree, held by its reaper's control group
    /// where the machine has one.
    pub limits: Limits,
    /// Wall time of one run: an app run outlives no run of the test that started it.
    pub time: Duration,
    /// Bytes of standard input passed to one run. Input is streamed, never held by the
    /// relay; the bound keeps a test from making the app hold more than a test dir
    /// could (an input read whole is held whole), and as much as a run may answer.
    pub input_bytes: u64,
    /// Runs of one target at once: each run's bounds are its own.
    pub at_once: usize,
}

impl AppRunBounds {
    /// The bounds of app runs driven by a run whose deadline is `deadline`: half of it
    /// per app run, so that a run stopped at its bound still leaves the test time to say
    /// so.
    pub fn within(deadline: Duration) -> AppRunBounds {
        let sandbox = Limits::default();
        let share = RUNS_AT_ONCE as u64;
        AppRunBounds {
            limits: Limits {
                tasks: sandbox.tasks / share,
                memory_bytes: sandbox.memory_bytes / share,
            },
            time: (deadline / 2).max(Duration::from_secs(1)),
            input_bytes: OUTPUT_CAP,
            at_once: RUNS_AT_ONCE,
        }
    }
}

impl Default for AppRunBounds {
    /// Within the gate's default deadline (`GAUNTLET_GATE_TIMEOUT_SECS`).
    fn default() -> AppRunBounds {
        AppRunBounds::within(Duration::from_secs(60))
    }
}

/// The bound an app run met. Its text is what the test reads on the run's stderr and
/// what the record of the gate run keeps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Exceeded {
    #[error("the app run exceeded its input bound of {0} bytes")]
    Input(u64),
    #[error("the app run exceeded its time bound of {} ms", .0.as_millis())]
    Time(Duration),
    #[error("the app run exceeded its memory bound of {0} bytes")]
    Memory(u64),
    #[error("the app run exceeded its task bound of {0} tasks")]
    Tasks(u64),
    #[error("the app runs of one target exceeded their bound of {0} at once")]
    AtOnce(usize),
}

/// What a relay's app runs met, for the record of the run that drove them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppRuns {
    /// Runs asked for (refused ones too).
    pub runs: u64,
    /// The bounds runs met, in the order they were met (the first [`KEPT_EXCEEDED`]).
    pub exceeded: Vec<Exceeded>,
    /// The most memory one run's tree held at once, where the kernel keeps the figure.
    pub memory_peak_bytes: Option<u64>,
    /// Runs whose tasks and memory no control group held (the machine offers none).
    pub unlimited: u64,
    /// Each run that started, in the order they ended (the first [`KEPT_RUNS`]).
    pub log: Vec<RelayedRun>,
    /// Runs past [`KEPT_RUNS`], counted.
    pub log_dropped: u64,
}

/// Runs kept in [`AppRuns::log`] per relay.
pub const KEPT_RUNS: usize = 10_000;

/// Bounds kept per relay: a test that meets one in a loop must not grow the harness.
pub const KEPT_EXCEEDED: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error("cannot listen on the CLI relay socket {}: {source}", path.display())]
    Listen {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the CLI relay's directory {}: {source}", path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} does not exist: install gauntlet's programs with `{}` (every app run of the CLI relay starts under it)", path.display(), crate::binaries::INSTALL_HELPERS)]
    NoReaper { path: PathBuf },
}

/// A running relay for one target. Dropping it stops accepting and kills running
/// invocations.
pub struct CliRelay {
    accept: JoinHandle<()>,
    relay: Arc<Relay>,
}

/// What every invocation of one relay shares.
struct Relay {
    binary: PathBuf,
    prefix: Vec<String>,
    /// The app's working directory.
    cwd: PathBuf,
    /// Where the runs' reapers write their reports, one file per run.
    reports: PathBuf,
    next_report: AtomicU64,
    bounds: AppRunBounds,
    at_once: Arc<Semaphore>,
    runs: Mutex<AppRuns>,
}

impl Relay {
    /// Keep what a run met; before its test hears of it, so that the record of the run
    /// that drove it, made once that has ended, has it.
    fn note(
        &self,
        exceeded: Option<&Exceeded>,
        report: Option<&ReapReport>,
        run: Option<RelayedRun>,
    ) {
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        runs.runs += 1;
        if let Some(run) = run {
            if runs.log.len() < KEPT_RUNS {
                runs.log.push(run);
            } else {
                runs.log_dropped += 1;
            }
        }
        if let Some(e) = exceeded {
            if runs.exceeded.len() < KEPT_EXCEEDED {
                runs.exceeded.push(e.clone());
            }
        }
        if let Some(r) = report {
            if !r.limited {
                runs.unlimited += 1;
            }
            runs.memory_peak_bytes = runs.memory_peak_bytes.max(r.memory_peak_bytes);
        }
    }
}

impl CliRelay {
    /// Listen on `socket` and run `binary prefix... <args>` per connection, in the
    /// scratch directory `scratch`, each run held to `bounds`. The app can print its
    /// working directory, so its path must say no more about the target than the
    /// locators do: never a label such as `mutant-1`. The runs' reports go in a
    /// directory beside it, out of the app's sight.
    pub async fn start(
        binary: &Path,
        prefix: &[String],
        socket: &Path,
        scratch: &Path,
        bounds: AppRunBounds,
    ) -> Result<CliRelay, RelayError> {
        let reaper = crate::binaries::bin_path(crate::sys::warm::REAPER);
        if !reaper.is_file() {
            return Err(RelayError::NoReaper { path: reaper });
        }
        let scratch = scratch.to_path_buf();
        let reports = scratch.with_extension("reports");
        for dir in [&scratch, &reports] {
            std::fs::create_dir_all(dir).map_err(|source| RelayError::Dir {
                path: dir.clone(),
                source,
            })?;
        }
        let (_dir, short) = short_socket_path(socket).map_err(|source| RelayError::Listen {
            path: socket.to_path_buf(),
            source,
        })?;
        let listener = UnixListener::bind(&short).map_err(|source| RelayError::Listen {
            path: socket.to_path_buf(),
            source,
        })?;
        // The sandbox user must be able to connect.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o777)).map_err(
            |source| RelayError::Listen {
                path: socket.to_path_buf(),
                source,
            },
        )?;
        let relay = Arc::new(Relay {
            binary: binary.to_path_buf(),
            prefix: prefix.to_vec(),
            cwd: scratch,
            reports,
            next_report: AtomicU64::new(1),
            bounds,
            at_once: Arc::new(Semaphore::new(bounds.at_once)),
            runs: Mutex::new(AppRuns::default()),
        });
        let shared = Arc::clone(&relay);
        let accept = tokio::spawn(async move {
            // Aborting this task drops the set, which aborts every invocation in it
            // (their apps are killed on drop).
            let mut calls = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                calls.spawn(serve(stream, Arc::clone(&shared)));
                while calls.try_join_next().is_some() {}
            }
        });
        Ok(CliRelay { accept, relay })
    }

    /// What the app runs so far met.
    pub fn app_runs(&self) -> AppRuns {
        self.relay
            .runs
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    pub async fn stop(self) {
        self.accept.abort();
    }
}

impl Drop for CliRelay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// One invocation: read the arguments, run the app within its bounds, stream both ways.
async fn serve(stream: UnixStream, relay: Arc<Relay>) {
    let (mut rx, tx) = stream.into_split();
    let Ok(Some((HEADER, header))) = read_frame(&mut rx).await else {
        return;
    };
    let Ok(args) = serde_json::from_slice::<Vec<String>>(&header) else {
        return;
    };
    if let Some(refusal) = refuse(&args) {
        let mut tx = tx;
        let _ = write_frame(&mut tx, STDERR, refusal.as_bytes()).await;
        let _ = write_frame(&mut tx, EXIT, &2i32.to_be_bytes()).await;
        return;
    }
    // Held until the app's tree has ended.
    let Ok(_slot) = Arc::clone(&relay.at_once).try_acquire_owned() else {
        let bound = Exceeded::AtOnce(relay.bounds.at_once);
        relay.note(Some(&bound), None, None);
        let mut tx = tx;
        let msg = format!("gauntlet-cli-relay: {bound}: refused\n");
        let _ = write_frame(&mut tx, STDERR, msg.as_bytes()).await;
        let _ = write_frame(&mut tx, EXIT, &EXCEEDED_EXIT.to_be_bytes()).await;
        return;
    };
    let (frames, mut outbox) = mpsc::channel::<(u8, Vec<u8>)>(16);
    let writer = tokio::spawn(async move {
        let mut tx = tx;
        while let Some((tag, body)) = outbox.recv().await {
            if write_frame(&mut tx, tag, &body).await.is_err() {
                break;
            }
        }
    });
    let report = relay.reports.join(format!(
        "{}.json",
        relay.next_report.fetch_add(1, Ordering::Relaxed)
    ));
    // Under the reaper: whatever the app starts ends with its run, or with the harness,
    // and is held to the run's tasks and memory.
    let argv: Vec<String> = relay.prefix.iter().chain(&args).cloned().collect();
    let started = crate::sys::lifeline::start_reaped(&ReapedProgram {
        program: &relay.binary,
        args: &argv,
        cwd: &relay.cwd,
        env: &[
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("LANG", "C.UTF-8"),
        ],
        limits: relay.bounds.limits,
        report: Some(&report),
    })
    .await;
    let started = started.and_then(|mut r| {
        let out = r.process.stdout()?;
        let err = r.process.stderr()?;
        Ok((r, out, err))
    });
    let (reaped, stdout, stderr) = match started {
        Ok(started) => started,
        Err(e) => {
            relay.note(None, None, None);
            let msg = format!("gauntlet-cli-relay: cannot run the app: {e}\n");
            let _ = frames.send((STDERR, msg.into_bytes())).await;
            let _ = frames.send((EXIT, 127i32.to_be_bytes().to_vec())).await;
            drop(frames);
            let _ = writer.await;
            return;
        }
    };
    // An invocation dropped part-way (the relay stopped) asks the reaper to end the
    // app's tree: a SIGKILL of the reaper alone would orphan what the app started.
    let mut running = StopOnDrop(Some(reaped.process));
    let input_bound = relay.bounds.input_bytes;
    // The app's stdin comes back when the input bound is met: held open until the app
    // is stopped, so that it never takes the input cut short for the whole of it.
    let (over, mut input_over) = oneshot::channel();
    let mut stdin = reaped.stdin;
    // What was passed on, counted and hashed as it goes: the run's entry in the log.
    let fed_in = Arc::new(Mutex::new((0u64, crate::hash::Sha256Stream::default())));
    let fed_log = Arc::clone(&fed_in);
    let feed = tokio::spawn(async move {
        let mut fed: u64 = 0;
        while let Ok(Some((STDIN, chunk))) = read_frame(&mut rx).await {
            fed = fed.saturating_add(chunk.len() as u64);
            if fed > input_bound {
                // Nothing more is read: the rest stays with the test, blocked.
                let _ = over.send((stdin, rx));
                return;
            }
            if chunk.is_empty() || stdin.write_all(&chunk).await.is_err() {
                break;
            }
            if let Ok(mut log) = fed_log.lock() {
                log.0 += chunk.len() as u64;
                log.1.update(&chunk);
            }
        }
        // Dropping stdin closes it: the app sees end of input.
    });
    let out = tokio::spawn(pump(stdout, STDOUT, frames.clone()));
    let err = tokio::spawn(pump(stderr, STDERR, frames.clone()));
    let Some(child) = running.0.as_mut() else {
        return;
    };
    let deadline = tokio::time::sleep(relay.bounds.time);
    let mut held = None;
    let (status, mut exceeded) = tokio::select! {
        status = child.wait() => (status, None),
        Ok(input) = &mut input_over => {
            held = Some(input);
            (stop(child).await, Some(Exceeded::Input(input_bound)))
        }
        () = deadline => (stop(child).await, Some(Exceeded::Time(relay.bounds.time))),
    };
    drop(held);
    // Ended and reaped: nothing left to stop.
    running.0 = None;
    crate::sys::warm::REAPERS.replenish();
    let (out, _) = tokio::join!(out, err);
    let (stdout_bytes, stdout_sha256) = out.unwrap_or_default();
    feed.abort();
    // Awaited, an aborted task has dropped what it held.
    let _ = feed.await;
    let (stdin_bytes, stdin_sha256) = match Arc::try_unwrap(fed_in) {
        Ok(m) => m.into_inner().map(|(n, h)| (n, h.finish())),
        Err(shared) => Ok((shared.lock().map(|l| l.0).unwrap_or(0), String::new())),
    }
    .unwrap_or_default();
    let reaped = ReapReport::read(&report);
    let _ = std::fs::remove_file(&report);
    if exceeded.is_none() {
        exceeded = match reaped {
            Some(r) if r.memory_exceeded => {
                Some(Exceeded::Memory(relay.bounds.limits.memory_bytes))
            }
            Some(r) if r.tasks_exceeded => Some(Exceeded::Tasks(relay.bounds.limits.tasks)),
            _ => None,
        };
    }
    let code = match (&exceeded, &status) {
        (Some(bound), _) => {
            let msg = format!("gauntlet-cli-relay: {bound}: stopped\n");
            let _ = frames.send((STDERR, msg.into_bytes())).await;
            EXCEEDED_EXIT
        }
        (None, Ok(s)) => {
            use std::os::unix::process::ExitStatusExt;
            s.code()
                .or_else(|| s.signal().map(|sig| 128 + sig))
                .unwrap_or(1)
        }
        (None, Err(_)) => 1,
    };
    let (args, args_cut) = logged_args(&args);
    // Kept before the caller hears the exit, like the bound.
    relay.note(
        exceeded.as_ref(),
        reaped.as_ref(),
        Some(RelayedRun {
            args,
            args_cut,
            stdin_bytes,
            stdin_sha256,
            stdout_bytes,
            stdout_sha256,
            exit_code: code,
            exceeded: exceeded.as_ref().map(ToString::to_string),
        }),
    );
    let _ = frames.send((EXIT, code.to_be_bytes().to_vec())).await;
    drop(frames);
    let _ = writer.await;
}

/// How long a reaper asked to stop gets to end the app's tree before its group is
/// killed.
const REAPER_WAIT: Duration = Duration::from_secs(5);

/// Stop an app run at a bound: SIGTERM to its reaper, which ends the app's whole tree
/// and then itself; one that does not answer is killed with its group.
async fn stop(reaper: &mut Spawned) -> std::io::Result<std::process::ExitStatus> {
    ask_to_end(reaper);
    match tokio::time::timeout(REAPER_WAIT, reaper.wait()).await {
        Ok(status) => status,
        Err(_) => {
            if let Ok(pgid) = i32::try_from(reaper.id()) {
                crate::sys::process::kill_group(pgid);
            }
            reaper.wait().await
        }
    }
}

/// SIGTERM to the reaper of an app run that is still going when its invocation ends,
/// which then ends in its own time (not killed: it ends the app's tree first).
struct StopOnDrop(Option<Spawned>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let Some(mut reaper) = self.0.take() else {
            return;
        };
        ask_to_end(&mut reaper);
        reaper.reap_when_ended();
    }
}

/// SIGTERM to a reaper still running: what it is told when the harness dies, too.
fn ask_to_end(reaper: &mut Spawned) {
    // Not reaped yet, so its pid is still its own.
    if let (Ok(None), Ok(pid)) = (reaper.try_wait(), i32::try_from(reaper.id())) {
        if pid > 1 {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }
}

/// Pass one output stream on, to the cap: how many bytes went, and their hash.
async fn pump<R: AsyncRead + Unpin>(
    reader: Option<R>,
    tag: u8,
    frames: mpsc::Sender<(u8, Vec<u8>)>,
) -> (u64, String) {
    let mut hash = crate::hash::Sha256Stream::default();
    let mut sent: u64 = 0;
    let Some(mut reader) = reader else {
        return (sent, hash.finish());
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(sent) as usize;
                let take = room.min(n);
                if take > 0 {
                    sent += take as u64;
                    hash.update(&buf[..take]);
                    if frames.send((tag, buf[..take].to_vec())).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
    (sent, hash.finish())
}

/// A run's arguments as the log keeps them: bounded like an exec's.
fn logged_args(args: &[String]) -> (Vec<String>, bool) {
    use crate::evidence::observed::{MAX_ARGS, MAX_ARG_BYTES};
    let mut cut = args.len() > MAX_ARGS;
    let kept = args
        .iter()
        .take(MAX_ARGS)
        .map(|a| {
            if a.len() <= MAX_ARG_BYTES {
                return a.clone();
            }
            cut = true;
            let mut end = MAX_ARG_BYTES;
            while !a.is_char_boundary(end) {
                end -= 1;
            }
            a[..end].to_owned()
        })
        .collect();
    (kept, cut)
}

/// A path to `socket` that fits a Unix socket address (108 bytes): the path itself when
/// short, else the same file reached through an open descriptor of its directory,
/// `/proc/self/fd/<n>/<name>`. Keep the returned directory open while using the path.
pub fn short_socket_path(socket: &Path) -> std::io::Result<(Option<std::fs::File>, PathBuf)> {
    use std::os::fd::AsRawFd;
    if socket.as_os_str().len() < 100 {
        return Ok((None, socket.to_path_buf()));
    }
    let (Some(dir), Some(name)) = (socket.parent(), socket.file_name()) else {
        return Ok((None, socket.to_path_buf()));
    };
    let dir = std::fs::File::open(dir)?;
    let short = Path::new("/proc/self/fd")
        .join(dir.as_raw_fd().to_string())
        .join(name);
    Ok((Some(dir), short))
}

/// The harness's own flags (`--mutant`, and for every app the flags the harness uses to
/// start it) are the relay's, never a test's: a mutant is the app started with
/// `--mutant <capability>` in front, so a test passing the flag itself would see the
/// mutant refuse a repeated option where the app accepts it — a tell that is not the
/// capability's behaviour. Such an invocation gets the same answer from every target.
/// An abbreviation of a flag (`--mut`) is refused too: option parsers that accept
/// unambiguous prefixes (Python's argparse, getopt_long) would read it as the flag, and
/// an app in any language may be one.
fn refuse(args: &[String]) -> Option<String> {
    const HARNESS_FLAGS: &[&str] = &["--mutant", "--extension-out"];
    let names_a_flag = |a: &str| {
        let name = a.split('=').next().unwrap_or(a);
        HARNESS_FLAGS
            .iter()
            .any(|f| a.starts_with(f) || (name.len() >= 3 && f.starts_with(name)))
    };
    let bad = args.iter().find(|a| names_a_flag(a))?;
    Some(format!(
        "gauntlet-cli-relay: `{bad}` is the harness's flag, not the app's: refused\n"
    ))
}

/// Read one frame; `None` at a clean end of stream.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {len} bytes is over the relay's limit"),
        ));
    }
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body).await?;
    Ok(Some((head[0], body)))
}

pub async fn write_frame<W: AsyncWrite + Unpin>(
    w: &mut W,
    tag: u8,
    body: &[u8],
) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut frame = Vec::with_capacity(5 + body.len());
    frame.push(tag);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(body);
    w.write_all(&frame).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_flags_are_refused_the_same_way_for_every_target() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(refuse(&args(&["sum", "1", "2"])).is_none());
        assert!(refuse(&args(&["--mutant", "version", "sum"])).is_some());
        assert!(refuse(&args(&["sum", "--mutant=sum"])).is_some());
        assert!(refuse(&args(&["--json", "sum", "--mutantx"])).is_some());
        // Abbreviations an option parser may expand to the flag.
        for abbrev in ["--mut", "--mu=sum", "--m", "--ext"] {
            assert!(refuse(&args(&[abbrev, "sum"])).is_some(), "{abbrev}");
        }
        assert!(refuse(&args(&["--", "--json", "--max", "sum"])).is_none());
    }

    #[tokio::test]
    async fn frames_round_trip_and_refuse_oversized_ones() {
        let mut buf = Vec::new();
        write_frame(&mut buf, STDOUT, b"hello")
            .await
            .expect("write");
        write_frame(&mut buf, EXIT, &3i32.to_be_bytes())
            .await
            .expect("write");
        let mut r = &buf[..];
        assert_eq!(
            read_frame(&mut r).await.expect("read"),
            Some((STDOUT, b"hello".to_vec()))
        );
        assert_eq!(
            read_frame(&mut r).await.expect("read"),
            Some((EXIT, 3i32.to_be_bytes().to_vec()))
        );
        assert_eq!(read_frame(&mut r).await.expect("read"), None);
        let big = [STDIN, 0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut &big[..]).await.is_err());
    }
}
