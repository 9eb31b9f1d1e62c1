//! Running one observed process (an agent, a gate run) with bounds on time, output
//! and lifetime.
//!
//! Evidence is only as good as its bounds: an agent that hangs, floods its output or
//! leaves daemons behind must not hang the harness, exhaust its memory, or leak into
//! the next trial. So the child gets its own process group and a trial marker in its
//! environment; its output is streamed to disk through a fixed-size buffer with a cap;
//! at its deadline the whole group is killed; and once it ends — however it ends —
//! everything left in its group or carrying its marker is killed and counted.

use std::collections::{BTreeMap, HashSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::evidence::{ProcessEnd, RawFile};
use crate::hash::Sha256Stream;
use crate::sys::sandbox::{self, SandboxError, SealReport, SealSpec, View};
use crate::sys::spawned::Spawned;
use crate::sys::warm;

/// The environment variable that tags every process of one trial, so that processes
/// which left the group (`setsid`) can still be found in `/proc/*/environ`.
pub const MARKER_VAR: &str = "GAUNTLET_TRIAL_MARKER";

/// How long the output copiers may keep draining after every known writer was killed.
/// Only a writer that escaped both the group kill and the marker sweep (it cleared its
/// environment and left the group) can hold a pipe open longer; we stop listening then
/// rather than hang the trial.
pub(crate) const COPY_GRACE: Duration = Duration::from_secs(2);

/// How long to wait for killed processes to actually disappear, so that callers (and
/// the next trial) never see a process that was already signalled.
const GONE_WAIT: Duration = Duration::from_secs(2);

/// Size of the one buffer each copier reads through: the memory bound per stream.
const COPY_BUF: usize = 64 * 1024;

/// Scan rounds per sweep: a process forked between a scan and the kill is caught by
/// the next round; a killed process cannot fork any more, so this converges fast.
const SWEEP_ROUNDS: usize = 8;

/// What to run and how to bound it.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The complete environment: the child gets exactly this (env_clear first) plus
    /// GAUNTLET_TRIAL_MARKER=<marker>.
    pub env: BTreeMap<String, String>,
    pub deadline: Duration,
    /// Where stdout / stderr are streamed; relative paths in the returned RawFile are
    /// made relative to `rel_base`.
    pub stdout_path: PathBuf,
    pub stderr_path: PathBuf,
    pub rel_base: PathBuf,
    /// Bytes kept per stream; the rest is read and counted but not written.
    pub output_cap: u64,
    /// A unique string (e.g. trial name + random) put in the child's environment as
    /// GAUNTLET_TRIAL_MARKER so stragglers can be found after the group is gone. Only
    /// unsealed: a sealed process's stragglers are its sandbox's, and a marker would be
    /// one more thing a test could read.
    pub marker: String,
    /// The sandbox it runs in (see [`crate::sys::sandbox`]): exactly this view, plus the
    /// system paths and the harness's own binaries read-only. `None` runs it unsealed
    /// (`GAUNTLET_SANDBOX=off`).
    pub seal: Option<View>,
}

/// What was observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutcome {
    pub end: ProcessEnd,
    pub stdout: RawFile,
    pub stderr: RawFile,
    /// Processes (by group kill or marker sweep, or in its sandbox) still alive after
    /// the child ended.
    pub stragglers_killed: u32,
    /// Whether it ran sealed.
    pub sealed: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("process marker for {} is empty: stragglers could not be found by it", program.display())]
    EmptyMarker { program: PathBuf },
    #[error("working directory {} for {} is not a directory", cwd.display(), program.display())]
    MissingCwd { program: PathBuf, cwd: PathBuf },
    #[error("cannot create output file {}: {source}", path.display())]
    CreateOutput {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot spawn {}: {source}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot wait for {}: {source}", program.display())]
    Wait {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write output file {}: {source}", path.display())]
    WriteOutput {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the output stream bound for {}: {source}", path.display())]
    ReadOutput {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("output copier for {} failed: {reason}", path.display())]
    Copier { path: PathBuf, reason: String },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("cannot seal {}: {cause}", program.display())]
    Seal { program: PathBuf, cause: String },
}

/// Run `spec` to completion (or its deadline) and report what happened.
///
/// Whatever happens, when this returns (or its future is dropped) nothing from the
/// child's process group or carrying its marker is left alive.
pub async fn run(spec: ProcessSpec) -> Result<ProcessOutcome, ProcessError> {
    if spec.marker.is_empty() {
        return Err(ProcessError::EmptyMarker {
            program: spec.program,
        });
    }
    if !spec.cwd.is_dir() {
        return Err(ProcessError::MissingCwd {
            program: spec.program,
            cwd: spec.cwd,
        });
    }
    let stdout_file = create_output(&spec.stdout_path)?;
    let stderr_file = create_output(&spec.stderr_path)?;

    let sealed = match &spec.seal {
        Some(view) => Some(seal_spec(&spec, view)?),
        None => None,
    };
    let started = Instant::now();
    let spawn_err = |source| ProcessError::Spawn {
        program: spec.program.clone(),
        source,
    };
    let mut child = match &sealed {
        Some(seal) => {
            let mut helper = warm::SEAL_HELPERS.take().await.map_err(spawn_err)?;
            let bytes = serde_json::to_vec(seal).map_err(|e| ProcessError::Seal {
                program: spec.program.clone(),
                cause: e.to_string(),
            })?;
            if let Some(mut stdin) = helper.stdin().map_err(spawn_err)? {
                // A helper that died before reading is seen below as its exit.
                let _ = stdin.write_all(&bytes).await;
            }
            helper
        }
        None => {
            let mut cmd = std::process::Command::new(&spec.program);
            cmd.args(&spec.args)
                .current_dir(&spec.cwd)
                .env_clear()
                .envs(&spec.env)
                .env(MARKER_VAR, &spec.marker)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0);
            let child = super::lifeline::spawn_std(cmd).map_err(spawn_err)?;
            Spawned::new(child).map_err(spawn_err)?
        }
    };
    // With process_group(0) the group id is the child's pid.
    let pgid = i32::try_from(child.id()).ok().filter(|pid| *pid > 0);
    // From here on, dropping this future still kills everything the child started.
    let mut reaper = Reaper::new(pgid, Some(&spec.marker));

    let stdout = spawn_capture(
        child.stdout().map_err(spawn_err)?,
        stdout_file,
        &spec.stdout_path,
        spec.output_cap,
        |_| {},
    );
    let stderr = spawn_capture(
        child.stderr().map_err(spawn_err)?,
        stderr_file,
        &spec.stderr_path,
        spec.output_cap,
        |_| {},
    );

    let deadline = tokio::time::Instant::from_std(started) + spec.deadline;
    // Biased: when the exit and the deadline are both ready (a busy runtime polls late),
    // the deadline wins, so that a process that overran is never recorded as on time.
    // A run asked to stop (SIGINT, SIGTERM) kills the process as its deadline would,
    // keeping what it wrote; the end names the signal instead of a timeout.
    let waited = tokio::select! {
        biased;
        _ = tokio::time::sleep_until(deadline) => Waited::Deadline,
        stop = super::shutdown::stopping() => Waited::Stopped(stop),
        status = child.wait() => Waited::Exited(status),
    };
    let interrupted = match waited {
        Waited::Stopped(stop) => Some(stop.name().to_string()),
        _ => None,
    };
    let (status, timed_out) = match waited {
        // Observed after the deadline had passed (the runtime was late to poll): the
        // process had its whole time and did not end within it.
        Waited::Exited(status) => (status, tokio::time::Instant::now() >= deadline),
        Waited::Deadline | Waited::Stopped(_) if sealed.is_some() => {
            // The helper's init kills the program's group and counts what left it; a
            // helper that does not answer is killed with its whole sandbox.
            if let Some(pid) = pgid {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            let timed_out = interrupted.is_none();
            match tokio::time::timeout(GONE_WAIT, child.wait()).await {
                Ok(status) => (status, timed_out),
                Err(_) => {
                    reaper.sweep_group();
                    (child.wait().await, timed_out)
                }
            }
        }
        Waited::Deadline | Waited::Stopped(_) => {
            // The deadline kills the group: these are the trial, not stragglers. What
            // left the group (setsid) is found by the marker below and counted.
            reaper.sweep_group();
            (child.wait().await, interrupted.is_none())
        }
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);

    // Anything still alive now outlived the child: fork-and-exit, setsid daemons. In a
    // sandbox its init counted and killed them, and nothing of it can be outside the
    // sandbox (the helper's group holds only the helper and init): no /proc scan, just
    // the group kill, which is cheap.
    let (stragglers_killed, seal_error) = match &sealed {
        Some(seal) => {
            if let Some(pgid) = pgid {
                kill_group(pgid);
            }
            let report = read_report(&seal.report);
            let _ = std::fs::remove_file(&seal.report);
            warm::SEAL_HELPERS.replenish();
            (report.stragglers_killed, report.setup_error)
        }
        None => (reaper.sweep(), None),
    };
    let until = Instant::now() + GONE_WAIT;
    while reaper.any_alive() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    reaper.disarm();

    // Collect both streams before reporting any error, so neither copier is left behind.
    let (stdout, stderr) = tokio::join!(stdout.finish(), stderr.finish());
    let status = status.map_err(|source| ProcessError::Wait {
        program: spec.program.clone(),
        source,
    })?;
    let (stdout, stderr) = (stdout?, stderr?);
    if let Some(cause) = seal_error {
        return Err(ProcessError::Seal {
            program: spec.program.clone(),
            cause,
        });
    }

    Ok(ProcessOutcome {
        end: ProcessEnd {
            interrupted,
            ..process_end(status, timed_out, duration_ms)
        },
        stdout: stdout.into_raw_file(&spec.stdout_path, &spec.rel_base),
        stderr: stderr.into_raw_file(&spec.stderr_path, &spec.rel_base),
        stragglers_killed,
        sealed: sealed.is_some(),
    })
}

/// The helper's spec for `spec` sealed in `view`: the view, plus what every sealed
/// process needs to run (the harness's binaries, the pinned CLIs, the program itself).
/// The writable directories are handed to the sandbox user first.
fn seal_spec(spec: &ProcessSpec, view: &View) -> Result<SealSpec, ProcessError> {
    sandbox::probe()?;
    let view = view
        .clone()
        .extend(sandbox::runtime_view(&spec.program, &spec.args, view));
    sandbox::hand_over(&view)?;
    let mut report = spec.stdout_path.clone().into_os_string();
    report.push(".seal");
    Ok(SealSpec {
        program: spec.program.clone(),
        args: spec.args.clone(),
        env: spec.env.clone(),
        cwd: spec.cwd.clone(),
        mounts: view.mounts,
        uid: sandbox::SANDBOX_UID,
        gid: sandbox::SANDBOX_GID,
        report: PathBuf::from(report),
        forward: sandbox::loopback_ports(&spec.env),
        limits: view.limits,
        observe: view.observe,
    })
}

/// The helper's report; an unreadable one (the helper was killed) reports nothing.
fn read_report(path: &Path) -> SealReport {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Kill every process whose environment holds GAUNTLET_TRIAL_MARKER=<marker>
/// (scan /proc/*/environ); returns how many were signalled.
///
/// Waits (briefly, bounded) until the signalled processes are gone, so a caller that
/// scans right after sees none of them.
pub fn sweep_marker(marker: &str) -> u32 {
    if marker.is_empty() {
        return 0;
    }
    let mut reaper = Reaper::new(None, Some(marker));
    let killed = reaper.sweep();
    reaper.wait_gone(GONE_WAIT);
    reaper.disarm();
    killed
}

/// SIGKILL a whole process group. Used for apps and at deadlines; a group id of 0 or 1
/// would mean "our own group" or init's, never a child's, so those are refused.
pub(crate) fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: killpg has no memory-safety preconditions; failure (ESRCH: the group
        // is already gone) is the expected outcome when everything exited.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Live (non-zombie) processes in process group `pgid`, by scanning /proc.
pub fn group_members(pgid: i32) -> Vec<i32> {
    scan_proc(|pid| proc_stat(pid).is_some_and(|s| s.alive() && s.pgrp == pgid))
}

/// Live processes whose environment carries exactly `GAUNTLET_TRIAL_MARKER=<marker>`.
pub fn marker_holders(marker: &str) -> Vec<i32> {
    if marker.is_empty() {
        return Vec::new();
    }
    let needle = marker_entry(marker);
    scan_proc(|pid| proc_stat(pid).is_some_and(|s| s.alive()) && environ_has(pid, &needle))
}

enum Waited {
    Exited(std::io::Result<ExitStatus>),
    Deadline,
    Stopped(super::shutdown::Stop),
}

fn process_end(status: ExitStatus, timed_out: bool, duration_ms: u64) -> ProcessEnd {
    use std::os::unix::process::ExitStatusExt;
    ProcessEnd {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        duration_ms,
        interrupted: None,
    }
}

fn create_output(path: &Path) -> Result<tokio::fs::File, ProcessError> {
    create_capture_file(path).map_err(|source| ProcessError::CreateOutput {
        path: path.to_path_buf(),
        source,
    })
}

/// A new file for a stream's copier ([`spawn_capture`]), its directory made if need be.
///
/// Created in place rather than on tokio's blocking pool: creating a file in a
/// directory the trial just made takes microseconds, while handing the creation to a
/// pool thread waits for one to be free, which in a trial (the pool busy) cost every
/// app start far more (docs/sealing.md, "Started ahead of need").
pub(crate) fn create_capture_file(path: &Path) -> std::io::Result<tokio::fs::File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::File::create(path).map(tokio::fs::File::from_std)
}

// ---------------------------------------------------------------------------
// Output capture
// ---------------------------------------------------------------------------

/// What one stream's copier saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    pub bytes: u64,
    pub bytes_seen: u64,
    pub sha256: String,
}

impl Captured {
    pub(crate) fn into_raw_file(self, path: &Path, rel_base: &Path) -> RawFile {
        RawFile {
            path: relative(path, rel_base),
            bytes: self.bytes,
            bytes_seen: self.bytes_seen,
            sha256: self.sha256,
        }
    }
}

/// A running copier and the means to stop it.
pub(crate) struct Capture {
    path: PathBuf,
    task: Option<JoinHandle<Result<Captured, ProcessError>>>,
    cancel: Option<oneshot::Sender<()>>,
}

impl Capture {
    /// Wait for the copier to reach end of stream, but at most [`COPY_GRACE`]; after
    /// that, tell it to stop and keep what it has. Call after the writers were killed.
    pub(crate) async fn finish(mut self) -> Result<Captured, ProcessError> {
        let Some(mut task) = self.task.take() else {
            return Err(self.copier_error("stream was not piped".to_string()));
        };
        let joined = match tokio::time::timeout(COPY_GRACE, &mut task).await {
            Ok(joined) => joined,
            Err(_) => {
                if let Some(cancel) = self.cancel.take() {
                    let _ = cancel.send(());
                }
                task.await
            }
        };
        joined.map_err(|e| self.copier_error(e.to_string()))?
    }

    fn copier_error(&self, reason: String) -> ProcessError {
        ProcessError::Copier {
            path: self.path.clone(),
            reason,
        }
    }
}

/// Start copying `reader` into `file` on a task. `observe` sees every chunk read
/// (kept or not), e.g. to watch for a line; it must not buffer without bound.
pub(crate) fn spawn_capture<R, F>(
    reader: Option<R>,
    file: tokio::fs::File,
    path: &Path,
    cap: u64,
    observe: F,
) -> Capture
where
    R: AsyncRead + Unpin + Send + 'static,
    F: FnMut(&[u8]) + Send + 'static,
{
    let (cancel, cancelled) = oneshot::channel();
    let task = reader.map(|reader| {
        tokio::spawn(copy_capped(
            reader,
            file,
            path.to_path_buf(),
            cap,
            cancelled,
            observe,
        ))
    });
    Capture {
        path: path.to_path_buf(),
        task,
        cancel: Some(cancel),
    }
}

/// Copy until end of stream or cancellation (an explicit send, or the sender dropped:
/// the owner went away). Keeps the first `cap` bytes, hashes exactly those, counts all.
///
/// A write error does not stop the reading: the child must never block on a full
/// pipe because our disk is full; the error is reported once the stream ends.
async fn copy_capped<R, F>(
    mut reader: R,
    mut file: tokio::fs::File,
    path: PathBuf,
    cap: u64,
    mut cancelled: oneshot::Receiver<()>,
    mut observe: F,
) -> Result<Captured, ProcessError>
where
    R: AsyncRead + Unpin,
    F: FnMut(&[u8]),
{
    let mut buf = vec![0u8; COPY_BUF];
    let mut hash = Sha256Stream::default();
    let mut kept: u64 = 0;
    let mut seen: u64 = 0;
    let mut write_error: Option<std::io::Error> = None;
    let mut read_error: Option<std::io::Error> = None;

    loop {
        let n = tokio::select! {
            read = reader.read(&mut buf) => match read {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    read_error = Some(e);
                    break;
                }
            },
            _ = &mut cancelled => break,
        };
        let chunk = &buf[..n];
        seen += n as u64;
        observe(chunk);
        let room = cap.saturating_sub(kept);
        let take = usize::try_from(room).map_or(n, |room| room.min(n));
        if take > 0 && write_error.is_none() {
            let piece = &chunk[..take];
            match file.write_all(piece).await {
                Ok(()) => {
                    hash.update(piece);
                    kept += take as u64;
                }
                Err(e) => write_error = Some(e),
            }
        }
    }
    if write_error.is_none() {
        // tokio's File completes writes in the background; flush surfaces their errors.
        if let Err(e) = file.flush().await {
            write_error = Some(e);
        }
    }
    if let Some(source) = write_error {
        return Err(ProcessError::WriteOutput { path, source });
    }
    if let Some(source) = read_error {
        return Err(ProcessError::ReadOutput { path, source });
    }
    Ok(Captured {
        bytes: kept,
        bytes_seen: seen,
        sha256: hash.finish(),
    })
}

/// `path` relative to `base` when it lies under it; otherwise as given, so the record
/// still says where the file is.
fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

// ---------------------------------------------------------------------------
// Finding and killing the child's processes
// ---------------------------------------------------------------------------

/// Kills a child's group and marker holders, remembering whom it signalled so that a
/// process killed at the deadline is not counted again as a straggler. Armed until
/// `disarm`: dropping it (a cancelled trial) kills everything it would have.
struct Reaper {
    pgid: Option<i32>,
    marker: Option<Vec<u8>>,
    signalled: HashSet<i32>,
    armed: bool,
}

impl Reaper {
    fn new(pgid: Option<i32>, marker: Option<&str>) -> Self {
        Reaper {
            pgid: pgid.filter(|&p| p > 1),
            marker: marker.filter(|m| !m.is_empty()).map(marker_entry),
            signalled: HashSet::new(),
            armed: true,
        }
    }

    /// Kill every live process in the group or with the marker not killed before;
    /// returns how many new ones were signalled.
    fn sweep(&mut self) -> u32 {
        self.sweep_matching(true)
    }

    /// Like [`Reaper::sweep`], but only the process group.
    fn sweep_group(&mut self) -> u32 {
        self.sweep_matching(false)
    }

    fn sweep_matching(&mut self, by_marker: bool) -> u32 {
        let me = std::process::id();
        let mut killed = 0;
        for _ in 0..SWEEP_ROUNDS {
            let found = scan_proc(|pid| self.matches(pid, by_marker));
            let fresh: Vec<i32> = found
                .into_iter()
                .filter(|&pid| pid > 1 && u32::try_from(pid) != Ok(me))
                .filter(|pid| !self.signalled.contains(pid))
                .collect();
            // Also catches group members forked between the scan and now.
            if let Some(pgid) = self.pgid {
                kill_group(pgid);
            }
            if fresh.is_empty() {
                break;
            }
            for pid in fresh {
                // SAFETY: kill has no memory-safety preconditions. ESRCH means it
                // exited on its own meanwhile: not counted.
                if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                    killed += 1;
                }
                self.signalled.insert(pid);
            }
        }
        killed
    }

    fn matches(&self, pid: i32, by_marker: bool) -> bool {
        let Some(stat) = proc_stat(pid) else {
            return false;
        };
        if !stat.alive() {
            return false;
        }
        if self.pgid == Some(stat.pgrp) {
            return true;
        }
        by_marker
            && self
                .marker
                .as_ref()
                .is_some_and(|needle| environ_has(pid, needle))
    }

    /// Whether any signalled process is still running. SIGKILL is delivered
    /// asynchronously; callers wait (bounded) on this so that a scan right after a
    /// sweep does not still see the processes it killed.
    fn any_alive(&self) -> bool {
        self.signalled
            .iter()
            .any(|&pid| proc_stat(pid).is_some_and(|s| s.alive()))
    }

    /// Blocking form of the wait, for the synchronous [`sweep_marker`].
    fn wait_gone(&self, limit: Duration) {
        let until = Instant::now() + limit;
        while self.any_alive() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        if self.armed {
            self.sweep();
        }
    }
}

/// `GAUNTLET_TRIAL_MARKER=<marker>` as it appears as one entry of /proc/*/environ.
fn marker_entry(marker: &str) -> Vec<u8> {
    format!("{MARKER_VAR}={marker}").into_bytes()
}

/// The pids in /proc for which `keep` holds. Unreadable entries are skipped: a process
/// that vanished, or one of another user we could not kill anyway.
/// Every pid in /proc that `keep` accepts.
pub fn scan_proc(mut keep: impl FnMut(i32) -> bool) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|&pid| keep(pid))
        .collect()
}

/// The fields of /proc/<pid>/stat we need.
pub struct ProcStat {
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
}

impl ProcStat {
    /// Zombies (and dead tasks) are already gone in every sense that matters: they
    /// cannot run, write or hold a pipe.
    pub fn alive(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// `/proc/<pid>/stat`, read; `None` once the process is gone.
pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parse `pid (comm) state ppid pgrp ...`; `comm` may hold spaces and parentheses, so
/// split after the last `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat { state, ppid, pgrp })
}

fn environ_has(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|e| e == entry))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_parentheses_in_comm() {
        let s = parse_stat("123 (a) b (c)) S 1 456 456 0 -1").expect("parses");
        assert_eq!(s.state, 'S');
        assert_eq!(s.pgrp, 456);
        assert!(s.alive());
        let z = parse_stat("9 (sleep) Z 1 9 9").expect("parses");
        assert!(!z.alive());
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative(Path::new("/t/trial/agent.stdout"), Path::new("/t/trial")),
            "agent.stdout"
        );
        assert_eq!(
            relative(Path::new("/elsewhere/x"), Path::new("/t/trial")),
            "/elsewhere/x"
        );
    }

    #[test]
    fn marker_entry_is_exact() {
        assert_eq!(marker_entry("m1"), b"GAUNTLET_TRIAL_MARKER=m1".to_vec());
        assert!(sweep_marker("") == 0);
    }

    #[tokio::test]
    async fn capped_copy_keeps_prefix_and_counts_all() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out");
        let file = tokio::fs::File::create(&path).await.expect("create");
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let (_tx, rx) = oneshot::channel();
        let got = copy_capped(&data[..], file, path.clone(), 100_000, rx, |_| {})
            .await
            .expect("copy");
        assert_eq!(got.bytes, 100_000);
        assert_eq!(got.bytes_seen, 200_000);
        let on_disk = std::fs::read(&path).expect("read");
        assert_eq!(on_disk, &data[..100_000]);
        assert_eq!(got.sha256, crate::hash::sha256(&on_disk));
    }
}
