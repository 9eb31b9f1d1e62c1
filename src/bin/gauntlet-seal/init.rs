//! The sandbox's PID 1: builds the root, starts the program, reaps, and ends the
//! sandbox when the program ends.

use crate::failure::{At, Failure};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gauntlet::sys::sandbox::{SealReport, SealSpec};
use nix::errno::Errno;
use nix::sched::CloneFlags;
use nix::sys::signal::{self, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{ForkResult, Gid, Pid, Uid};

use crate::limits::{Cgroups, DiskFloor};

/// How long init waits for the processes it killed to be reaped before it exits (the
/// kernel kills and reaps whatever is left when init exits, in any case).
const REAP_WAIT: Duration = Duration::from_secs(2);

/// Processes the sandbox user may have at once (`RLIMIT_NPROC`), where the sandbox has
/// no control group of its own.
const MAX_PROCESSES: u64 = 4096;

/// The same, where it has one: a backstop over every sandbox running at once, well below
/// the machine's pid space (32,768 pids by default), so that fork bombs in several
/// sandboxes together cannot leave the harness unable to fork.
fn shared_max_processes() -> u64 {
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(32768);
    (pid_max / 2).clamp(MAX_PROCESSES, 65536)
}

/// How long processes still exiting when the program ended may take before they count
/// as stragglers.
const SETTLE: Duration = Duration::from_millis(50);

/// How often init looks at the free space under the program's writable binds.
const DISK_POLL: Duration = Duration::from_millis(100);

/// Exit code of the program's process when it could not be started (as `sh` does).
const NOT_STARTED: i32 = 127;

/// Largest spec accepted from the helper.
const MAX_SPEC: usize = 4 << 20;

/// Largest answer about the ports (a status byte and why they failed).
const MAX_PORTS_ANSWER: u64 = 64 << 10;

/// The spec, as the helper hands it on the go pipe: its length (4 bytes, little-endian),
/// then its JSON.
fn read_spec(mut go: &std::fs::File) -> Result<SealSpec, String> {
    use std::io::Read;
    let gone = |_| "the helper went away before the spec came".to_string();
    let mut len = [0u8; 4];
    go.read_exact(&mut len).map_err(gone)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_SPEC {
        return Err(format!(
            "the spec init was handed: {len} bytes, over the limit of {MAX_SPEC}"
        ));
    }
    let mut json = vec![0u8; len];
    go.read_exact(&mut json).map_err(gone)?;
    serde_json::from_slice(&json).map_err(|e| format!("the spec init was handed: {e}"))
}

pub fn run(
    ready: std::fs::File,
    go: std::fs::File,
    relayed: std::fs::File,
    report: &std::fs::File,
    helper: u32,
) -> SealReport {
    // A process group of its own: when the harness kills the helper's group (a helper
    // that did not answer at its deadline), init gets its SIGTERM (below) and ends the
    // sandbox in order rather than being killed in the middle of it.
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    // The kernel's OOM killer, when the sandbox reaches its memory bound, picks one of
    // the sandbox's processes: never init, which must report. The program
    // is put back to the default before it runs.
    let _ = std::fs::write("/proc/self/oom_score_adj", "-1000");
    // Joined first, so that everything init forks is in the sandbox's group.
    let cgroups = Cgroups::join(&format!("{}{helper}", crate::limits::GROUP_PREFIX));
    let limited = cgroups.applied();
    let mut outcome = sandbox(ready, go, relayed, report, &cgroups);
    outcome.limited = limited;
    outcome
}

/// Whether the read end of `pipe` is closed everywhere (its reader died).
fn no_reader(pipe: &std::fs::File) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::empty())];
    poll(&mut fds, PollTimeout::ZERO).is_ok()
        && fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLERR))
}

fn sandbox(
    mut ready: std::fs::File,
    go: std::fs::File,
    relayed: std::fs::File,
    report: &std::fs::File,
    cgroups: &Cgroups,
) -> SealReport {
    let setup = |e: String| SealReport {
        setup_error: Some(e),
        ..SealReport::default()
    };
    // Forked before the spec was read, init still holds the helper's stdin, where the
    // spec arrives: neither init nor the program may read it.
    if let Err(e) = std::fs::File::open("/dev/null")
        .at("/dev/null")
        .and_then(|null| nix::unistd::dup2_stdin(&null).at("dup2"))
    {
        return setup(e.within("/dev/null as init's stdin").to_string());
    }
    let flags = CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWIPC
        | CloneFlags::CLONE_NEWUTS
        | CloneFlags::CLONE_NEWNET;
    if let Err(e) = nix::sched::unshare(flags) {
        return setup(format!("unshare(mount, ipc, uts, network namespaces): {e}"));
    }
    if let Err(e) = crate::forward::loopback_up() {
        return setup(format!("bringing up the sandbox's loopback: {e}"));
    }
    use std::io::{Read, Write};
    if ready.write_all(b"1").is_err() {
        return setup("the helper went away before the spec came".into());
    }
    drop(ready);
    if let Err(e) = crate::root::stage() {
        return setup(e.to_string());
    }
    let spec: SealSpec = match read_spec(&go) {
        Ok(spec) => spec,
        Err(why) => return setup(why),
    };
    // Init waits for signals synchronously: a SIGTERM (the deadline, or the helper's
    // death) or SIGCHLD that arrives at any moment is pending until `wait`, so none is
    // lost.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGCHLD);
    signals.add(Signal::SIGTERM);
    if let Err(e) = signals.thread_block() {
        return setup(format!("sigprocmask in init: {e}"));
    }
    // From here on the helper's death ends the sandbox: it reaches init as SIGTERM,
    // which kills the program's group like the deadline does, and init then kills the
    // rest and reaps it, so that its group is empty when it exits. Not before: a
    // helper started ahead of need and never used dies with the harness, and its init,
    // seeing the end of the go pipe above, simply exits. If the helper died just now,
    // its report pipe says so.
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGTERM)) {
        return setup(format!("prctl(PR_SET_PDEATHSIG) in init: {e}"));
    }
    if no_reader(report) {
        return setup("the helper went away before the program started".into());
    }
    let spec = &spec;
    // Only now, with the spec: what it makes carries the time it was made.
    if let Err(e) = crate::root::new_root(&cgroups.shown()) {
        return setup(e.to_string());
    }
    if let Err(e) = cgroups.limit(&spec.limits) {
        return setup(e.to_string());
    }
    // Opened while the host's root is still reachable: the file is outside the view,
    // and the filesystems' roots are where opens through the program's own mounts are
    // traced back.
    let observation = match spec.observe.as_deref().map(crate::observe::create) {
        None => None,
        Some(Ok(file)) => Some((file, crate::observe::FsRoots::open())),
        Some(Err(e)) => return setup(e.to_string()),
    };
    if let Err(e) = crate::root::finish(spec) {
        return setup(e.to_string());
    }
    let program = match Exec::prepare(spec, cgroups.applied()) {
        Ok(p) => p,
        Err(e) => return setup(e.to_string()),
    };
    // The signals init waits for, readable beside the observer's queue.
    let signal_fd =
        match SignalFd::with_flags(&signals, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC) {
            Ok(fd) => fd,
            Err(e) => return setup(format!("signalfd in init: {e}")),
        };
    // The helper opens the forwarded ports in this namespace while the root is built,
    // and the program starts only once they are open, so that it never finds its proxy
    // refusing connections.
    let mut ports = Vec::new();
    let _ = (&go).take(MAX_PORTS_ANSWER).read_to_end(&mut ports);
    match ports.split_first() {
        Some((b'1', _)) => {}
        Some((_, why)) => {
            let why = String::from_utf8_lossy(why).into_owned();
            return setup(format!("forwarding the sandbox's ports: {why}"));
        }
        None => return setup("the helper went away before the ports were open".into()),
    }
    // Watching starts before the fork, so the program's own exec is the first open seen.
    let mut observer = observation.map(|(file, roots)| {
        crate::observe::Observer::start(file, roots, Some((relayed, spec.forward.clone())))
    });
    // SAFETY: init is single-threaded.
    let child = match unsafe { nix::unistd::fork() } {
        Err(e) => return setup(format!("fork of the program: {e}")),
        Ok(ForkResult::Child) => program.exec(&signals),
        Ok(ForkResult::Parent { child }) => child,
    };
    let disk = DiskFloor::of(spec);
    let mut report = wait_for(child, &signal_fd, &disk, observer.as_mut());
    report.stragglers_killed = end_sandbox();
    // After every process of the sandbox is gone, so that its last opens are in.
    if let Some(o) = observer {
        o.finish();
    }
    report
}

/// Reap until the program itself has ended; SIGTERM kills its process group first, and
/// so does a disk its writable binds are on running out of room. Meanwhile, what the
/// observer's queue holds is written out as it comes.
fn wait_for(
    child: Pid,
    signals: &SignalFd,
    disk: &DiskFloor,
    mut observer: Option<&mut crate::observe::Observer>,
) -> SealReport {
    let mut disk_checked = Instant::now();
    loop {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == child => {
                    return SealReport {
                        exit_code: Some(code),
                        ..SealReport::default()
                    }
                }
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == child => {
                    return SealReport {
                        signal: Some(sig as i32),
                        ..SealReport::default()
                    }
                }
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(e) => {
                    return SealReport {
                        setup_error: Some(format!("waiting for the program: {e}")),
                        ..SealReport::default()
                    }
                }
            }
        }
        let (signalled, observed) = wait_ready(signals, observer.as_deref(), DISK_POLL);
        if signalled {
            while let Ok(Some(info)) = signals.read_signal() {
                if info.ssi_signo == libc::SIGTERM as u32 {
                    let _ = signal::killpg(child, Signal::SIGKILL);
                    let _ = signal::kill(child, Signal::SIGKILL);
                }
            }
        }
        if observed {
            if let Some(o) = observer.as_deref_mut() {
                // Execs first: their callers wait for the answer.
                o.drain_execs();
                o.drain();
                o.drain_relayed();
            }
        }
        if disk_checked.elapsed() >= DISK_POLL {
            disk_checked = Instant::now();
            if let Some(why) = disk.low() {
                // On the program's stderr, where its record keeps it.
                eprintln!("gauntlet-seal: stopped: {why}");
                let _ = signal::killpg(child, Signal::SIGKILL);
                let _ = signal::kill(child, Signal::SIGKILL);
            }
        }
    }
}

/// Wait until a signal is pending or the observer has events, at most `timeout`: which
/// of the two is ready.
fn wait_ready(
    signals: &SignalFd,
    observer: Option<&crate::observe::Observer>,
    timeout: Duration,
) -> (bool, bool) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = vec![PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
    if let Some(o) = observer {
        for fd in [o.fd(), o.exec_fd(), o.relay_fd()].into_iter().flatten() {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
        }
    }
    let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
    match poll(&mut fds, PollTimeout::from(ms)) {
        Ok(n) if n > 0 => {
            let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
            (ready(&fds[0]), fds[1..].iter().any(ready))
        }
        // A timeout, or EINTR: look again.
        _ => (false, false),
    }
}

/// Kill everything still alive in the sandbox and say how many there were.
fn end_sandbox() -> u32 {
    // A process already on its way out when the program ended (a tool child the
    // program killed without waiting for) is not a straggler: give such processes a
    // moment to finish dying, reaping them, before counting what is really left.
    let settle = Instant::now() + SETTLE;
    let mut alive = live_processes();
    while alive > 0 && Instant::now() < settle {
        while matches!(
            waitpid(None, Some(WaitPidFlag::WNOHANG)),
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..))
        ) {}
        std::thread::sleep(Duration::from_millis(1));
        alive = live_processes();
    }
    if alive > 0 {
        // From PID 1, -1 reaches every other process of the namespace.
        let _ = signal::kill(Pid::from_raw(-1), Signal::SIGKILL);
    }
    let until = Instant::now() + REAP_WAIT;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                if Instant::now() > until {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(_) | Err(Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
    alive
}

/// Processes of this namespace other than init that are not yet dead.
fn live_processes() -> u32 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut n = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if pid <= 1 {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .unwrap_or("Z");
        if !matches!(state, "Z" | "X" | "x") {
            n += 1;
        }
    }
    n
}

/// Everything the program's process needs, prepared before fork so that the child
/// only makes system calls.
struct Exec {
    path: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: PathBuf,
    uid: Uid,
    gid: Gid,
    display: String,
    max_processes: u64,
    filters: crate::syscalls::Filters,
}

impl Exec {
    fn prepare(spec: &SealSpec, limited: bool) -> Result<Exec, Failure> {
        let cstr = |s: &[u8], what: &str| {
            CString::new(s).map_err(|_| Failure::refused(what, "contains a NUL byte"))
        };
        let path =
            resolve(&spec.program, spec.env.get("PATH").map(String::as_str)).ok_or_else(|| {
                Failure::refused(
                    format!("cannot run {}", spec.program.display()),
                    format!(
                        "not found in the sandbox (PATH={})",
                        spec.env.get("PATH").map(String::as_str).unwrap_or("")
                    ),
                )
            })?;
        let mut argv = vec![cstr(spec.program.as_os_str().as_bytes(), "the program")?];
        for a in &spec.args {
            argv.push(cstr(a.as_bytes(), "an argument")?);
        }
        let envp = spec
            .env
            .iter()
            .map(|(k, v)| cstr(format!("{k}={v}").as_bytes(), "a variable"))
            .collect::<Result<_, _>>()?;
        Ok(Exec {
            path: cstr(path.as_os_str().as_bytes(), "the program")?,
            argv,
            envp,
            cwd: spec.cwd.clone(),
            uid: Uid::from_raw(spec.uid),
            gid: Gid::from_raw(spec.gid),
            display: spec.program.display().to_string(),
            // With a group of its own the sandbox's tasks are bounded there; the
            // per-user count is then only a backstop across all sandboxes.
            filters: crate::syscalls::Filters::compile()?,
            max_processes: if limited {
                shared_max_processes()
            } else {
                spec.limits.tasks.min(MAX_PROCESSES)
            },
        })
    }

    /// In the program's process: become the sandbox user, then exec.
    fn exec(self, blocked: &SigSet) -> ! {
        let fail = |what: &str, e: Errno| -> ! {
            eprintln!("gauntlet-seal: cannot run {}: {what}: {e}", self.display);
            std::process::exit(NOT_STARTED)
        };
        // The signal mask survives exec: give the program the one it would have had.
        if let Err(e) = blocked.thread_unblock() {
            fail("sigprocmask", e);
        }
        // A cgroup namespace of its own: its group is its `/`, and the host's hierarchy
        // is not named in its `/proc/self/cgroup`. The program's alone: init keeps the
        // host's view, through which it made and shows the group.
        if let Err(e) = nix::sched::unshare(CloneFlags::CLONE_NEWCGROUP) {
            fail("unshare(CLONE_NEWCGROUP)", e);
        }
        // Its own session: the harness's deadline kills this process group, and
        // anything that left it is counted as a straggler.
        if let Err(e) = nix::unistd::setsid() {
            fail("setsid", e);
        }
        if let Err(e) = nix::unistd::chdir(&self.cwd) {
            fail(&format!("working directory {}", self.cwd.display()), e);
        }
        // A fork bomb is bounded before the deadline. The count is per user, and every
        // sandbox runs as the same one: without a group of its own, the bound is shared
        // by sandboxes running at once.
        use nix::sys::resource::{setrlimit, Resource};
        if let Err(e) = setrlimit(
            Resource::RLIMIT_NPROC,
            self.max_processes,
            self.max_processes,
        ) {
            fail("setrlimit(RLIMIT_NPROC)", e);
        }
        if let Err(e) = std::fs::write("/proc/self/oom_score_adj", "0") {
            eprintln!(
                "gauntlet-seal: cannot run {}: oom_score_adj: {e}",
                self.display
            );
            std::process::exit(NOT_STARTED)
        }
        if let Err(e) = nix::unistd::setgroups(&[]) {
            fail("setgroups", e);
        }
        if let Err(e) = nix::unistd::setgid(self.gid) {
            fail("setgid", e);
        }
        // Leaving uid 0 clears every capability: nothing can remount the view.
        if let Err(e) = nix::unistd::setuid(self.uid) {
            fail("setuid", e);
        }
        // Only stdin, stdout and stderr go on: a descriptor that whoever started the
        // harness left open (a file of the repository, a log pipe) would be read or
        // written without an open anyone could see. Init's own are close-on-exec.
        // SAFETY: close_range has no memory-safety preconditions.
        if unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) } != 0 {
            fail("close_range", Errno::last());
        }
        if let Err(e) = nix::sys::prctl::set_no_new_privs() {
            fail("no_new_privs", e);
        }
        if let Err(e) = self.filters.apply() {
            eprintln!("gauntlet-seal: cannot run {}: {e}", self.display);
            std::process::exit(NOT_STARTED)
        }
        // The program must not inherit init's handler-less death signal setting; it
        // gets its own: it dies with init.
        let _ = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL));
        let Err(e) = nix::unistd::execve(&self.path, &self.argv, &self.envp);
        fail("exec", e)
    }
}

/// `program` as exec would find it: a path as given, a bare name on `path` (the
/// program's own PATH, inside the sandbox).
fn resolve(program: &Path, path: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.as_os_str().as_bytes().contains(&b'/') {
        return Some(program.to_path_buf());
    }
    path.unwrap_or("/usr/local/bin:/usr/bin:/bin")
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| runnable(p))
}
