//! `gauntlet-reap --parent PID -- PROGRAM [ARGS…]`: runs one program outside any sandbox
//! so that its whole process tree ends with it, or with the harness.
//!
//! `gauntlet-reap --parent PID --from-stdin` is the same, with the program to run read
//! from standard input when it comes ([`read_program`]): the harness keeps such reapers
//! started ahead of need (`src/sys/warm.rs`), so that what is left of starting an app is
//! one fork and its exec. The program's standard input is what follows on the same
//! pipe.
//!
//! The kernel's `PR_SET_PDEATHSIG` only reaches a direct child: an app started through
//! a wrapper (`sh start.sh`, `npm start`), or one that forks helpers or detaches a
//! daemon, would leave them running (and holding their ports) after the harness that
//! started it is killed. This process stands between the harness and the program:
//!
//! 1. it is told SIGTERM when the harness dies (`PR_SET_PDEATHSIG`), and refuses to start
//!    if the harness `PID` is already gone;
//! 2. it is a child subreaper, so whatever the program's tree orphans (a double fork, a
//!    `setsid` daemon whose parent exited) becomes its child instead of init's;
//! 3. it runs the program as its only direct child, in the process group it leads (the
//!    harness starts it in a group of its own), with every signal disposition back to
//!    its default (a Rust process ignores SIGPIPE, and an ignored signal survives exec);
//!    with `--from-stdin`, in a control group of its own (`gauntlet::sys::cgroup`, the
//!    sandboxes' too), joined while it waits, that holds the program's whole tree to the
//!    task and memory limits that come with the program: outside a sandbox nothing else
//!    bounds what a test makes an app do, and the program runs as the harness's user
//!    (root), whom no per-user limit bounds;
//! 4. when the program exits, or on SIGTERM, SIGINT or SIGHUP from the harness (or from
//!    the kernel, on the harness's death), it kills every process still below it or in
//!    its group, until none is left (bounded: a process it may not kill is left), and
//!    exits as the program did (128 + the signal when it was stopped). The same signals
//!    from anyone else — an app that signals its own group to reload — are ignored.
//!    Before it exits it writes what its group counted (a failed fork, a kill for
//!    memory, the memory peak) to the report file the program came with, if any
//!    (`gauntlet::sys::lifeline::ReapReport`).
//!
//! Standard input, output and error are the program's own: the harness reads them as if
//! it had started the program itself.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

use gauntlet::sys::cgroup::Cgroups;
use gauntlet::sys::lifeline::ReapReport;
use gauntlet::sys::sandbox::Limits;
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{ForkResult, Pid};

/// Exit code when the program could not be started (like `env`'s 126/127).
const CANNOT_RUN: i32 = 127;

/// Rounds of kill-and-look (each at most 5 ms) before what is left is left.
const KILL_ROUNDS: usize = 400;

/// Every reaper's control group is named this and its pid.
const GROUP_PREFIX: &str = "gauntlet-reap-";

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    // What a run asks before it starts any trial: which version this reaper is.
    if args.len() == 1 && args[0] == "--version" {
        println!("gauntlet-reap {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let (parent, source) = match parse(&args) {
        Ok(p) => p,
        Err(why) => fail(&why),
    };
    let harness = parent.unwrap_or_else(|| nix::unistd::getppid().as_raw());
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGTERM)) {
        fail(&format!("prctl(PR_SET_PDEATHSIG): {e}"));
    }
    // The harness may have died before the line above: then nobody would stop us.
    if parent.is_some_and(|p| nix::unistd::getppid().as_raw() != p) {
        fail("the harness that started this process is gone");
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        fail(&format!("prctl(PR_SET_CHILD_SUBREAPER): {e}"));
    }
    // Joined while the reaper waits for its program, not once it has it: a move into a
    // group waits on a lock every cgroup change of the machine takes. Only a reaper
    // started ahead of need gets limits with its program.
    let groups = matches!(source, Source::Stdin)
        .then(|| Cgroups::join(&format!("{GROUP_PREFIX}{}", std::process::id())));
    if groups.is_some() {
        // At the memory bound the kernel kills a process of the group: never this one,
        // which must report (best effort: it takes CAP_SYS_RESOURCE). The program is put
        // back to the default before it runs.
        let _ = std::fs::write("/proc/self/oom_score_adj", "-1000");
    }
    // Taken synchronously below; blocked before the fork so none is lost in between.
    let mut waited = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        waited.add(s);
    }
    if let Err(e) = nix::sys::signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&waited), None) {
        fail(&format!("sigprocmask: {e}"));
    }
    // Waiting here for a program costs nothing: a harness that dies meanwhile closes the
    // pipe, and the read ends.
    let program = match source {
        Source::Argv(program) => Program {
            argv: program.to_vec(),
            limits: None,
            report: None,
        },
        Source::Stdin => match read_program() {
            Ok(program) => program,
            Err(why) => fail(&format!("the program on stdin: {why}")),
        },
    };
    if let (Some(groups), Some(limits)) = (&groups, &program.limits) {
        if let Err(e) = groups.limit(limits) {
            fail(&e.to_string());
        }
    }
    let argv: Vec<CString> = match program
        .argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
    {
        Ok(v) => v,
        Err(_) => fail("an argument holds a NUL byte"),
    };
    // SAFETY: this process is single-threaded, so the child may run any code.
    let child = match unsafe { nix::unistd::fork() } {
        Err(e) => fail(&format!("fork: {e}")),
        Ok(ForkResult::Child) => {
            for sig in Signal::iterator() {
                if sig != Signal::SIGKILL && sig != Signal::SIGSTOP {
                    // SAFETY: restoring a default disposition in the child before exec.
                    let _ = unsafe {
                        nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl)
                    };
                }
            }
            let _ = nix::sys::signal::sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&waited), None);
            // Dies with this process if it is ever killed outright.
            let _ = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL));
            if groups.is_some() {
                let _ = std::fs::write("/proc/self/oom_score_adj", "0");
            }
            let e = nix::unistd::execvp(&argv[0], &argv).err();
            eprintln!(
                "gauntlet-reap: cannot run {}: {}",
                argv[0].to_string_lossy(),
                e.map(|e| e.to_string()).unwrap_or_default()
            );
            // SAFETY: _exit in a forked child, as after a failed exec.
            unsafe { libc::_exit(CANNOT_RUN) }
        }
        Ok(ForkResult::Parent { child }) => child,
    };
    let end = loop {
        match wait_signal(&waited) {
            Some((Signal::SIGCHLD, _)) => {
                if let Some(end) = reap(child) {
                    break end;
                }
            }
            // Only the harness, or the kernel on its behalf, stops the app.
            Some((stop, from)) if from == 0 || from == harness => break End::Stopped(stop),
            Some(_) | None => {}
        }
    };
    // Told to stop, the program is still running; otherwise it was reaped above.
    kill_tree(matches!(end, End::Stopped(_)).then_some(child));
    report(&program, groups.as_ref());
    match end {
        End::Exited(code) => std::process::exit(code),
        // Ended as the program did, so the harness reads the same status it would have.
        End::Killed(sig) | End::Stopped(sig) => {
            // SAFETY: resetting a disposition and raising a signal on ourselves.
            unsafe {
                let _ = nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl);
            }
            // No core of ours where the app's may be.
            let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
            let mut only = SigSet::empty();
            only.add(sig);
            let _ = nix::sys::signal::sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&only), None);
            let _ = nix::sys::signal::raise(sig);
            std::process::exit(128 + sig as i32)
        }
    }
}

/// The next of `set`'s signals and the pid that sent it (0 from the kernel).
fn wait_signal(set: &SigSet) -> Option<(Signal, i32)> {
    // SAFETY: siginfo_t is plain data that sigwaitinfo fills.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call.
    let n = unsafe { libc::sigwaitinfo(set.as_ref(), &mut info) };
    if n < 0 {
        return None;
    }
    // SAFETY: si_pid is set for the signals waited on here (kill, sigqueue, SIGCHLD).
    let from = unsafe { info.si_pid() };
    Signal::try_from(n).ok().map(|s| (s, from))
}

/// How the program's run ended.
enum End {
    Exited(i32),
    Killed(Signal),
    /// This process was told to stop (the harness stopping the app, or dying).
    Stopped(Signal),
}

/// Where the program to run comes from.
enum Source<'a> {
    Argv(&'a [std::ffi::OsString]),
    /// [`read_program`].
    Stdin,
}

/// Say what `groups` counted: in the report file the program came with (a new file),
/// or, without one, on the program's stderr (an app's log), when a bound was met: the
/// exit status alone (a SIGKILL, a failed fork) does not say that a bound ended it.
fn report(program: &Program, groups: Option<&Cgroups>) {
    use std::io::Write;
    let usage = groups.map(Cgroups::usage).unwrap_or_default();
    let report = ReapReport {
        limited: groups.is_some_and(Cgroups::applied),
        tasks_exceeded: usage.tasks_exceeded,
        memory_exceeded: usage.memory_exceeded,
        memory_peak_bytes: usage.memory_peak_bytes,
    };
    let Some(path) = &program.report else {
        let limits = program.limits.unwrap_or_default();
        if report.memory_exceeded {
            eprintln!(
                "gauntlet-reap: stopped: the program exceeded its memory bound of {} bytes",
                limits.memory_bytes
            );
        }
        if report.tasks_exceeded {
            eprintln!(
                "gauntlet-reap: the program exceeded its task bound of {} tasks (a fork failed)",
                limits.tasks
            );
        }
        return;
    };
    let bytes = serde_json::to_vec(&report).unwrap_or_default();
    // A new file: never through a link the program may have left at the path.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(&bytes));
    if let Err(e) = written {
        eprintln!(
            "gauntlet-reap: cannot write the report {}: {e}",
            path.display()
        );
    }
}

/// A program to run, as the harness hands it over.
struct Program {
    argv: Vec<std::ffi::OsString>,
    /// Its tree's limits; `None` (a program on the command line): the group's as made.
    limits: Option<Limits>,
    /// Where the [`ReapReport`] goes.
    report: Option<std::path::PathBuf>,
}

/// The largest program description accepted on stdin.
const MAX_PROGRAM: usize = 1 << 20;

/// Read the program from stdin: a 4-byte little-endian length, then that many bytes of
/// NUL-terminated strings: the working directory, the report's path (empty for none),
/// the task and memory limits (decimal), the count of what follows as the program's
/// argv (in decimal), the program and its arguments, and the environment's
/// `NAME=value` entries. Read unbuffered, so that nothing after it, which is the
/// program's own input, is taken. Changes to the working directory and takes the
/// environment (this process has none of its own), so that the program inherits both.
fn read_program() -> Result<Program, String> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStringExt;
    // SAFETY: fd 0 is open for the life of the process; ManuallyDrop leaves it open.
    let mut stdin = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
    let mut len = [0u8; 4];
    stdin
        .read_exact(&mut len)
        .map_err(|e| format!("no length: {e}"))?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_PROGRAM {
        return Err(format!("{len} bytes, over the limit of {MAX_PROGRAM}"));
    }
    let mut bytes = vec![0u8; len];
    stdin
        .read_exact(&mut bytes)
        .map_err(|e| format!("cut short: {e}"))?;
    let Some(body) = bytes.strip_suffix(b"\0") else {
        return Err("does not end with a NUL".into());
    };
    let mut strings = body.split(|b| *b == 0);
    let cwd = strings.next().unwrap_or_default();
    let report = strings
        .next()
        .filter(|p| !p.is_empty())
        .map(|p| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(p)));
    let mut number = |what: &str| {
        strings
            .next()
            .and_then(|s| std::str::from_utf8(s).ok())
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| format!("no {what}"))
    };
    let limits = Limits {
        tasks: number("task limit")?,
        memory_bytes: number("memory limit")?,
    };
    let argc = usize::try_from(number("argument count")?).map_err(|e| e.to_string())?;
    let argv: Vec<std::ffi::OsString> = strings
        .by_ref()
        .take(argc)
        .map(|s| std::ffi::OsString::from_vec(s.to_vec()))
        .collect();
    if argv.len() != argc || argc == 0 {
        return Err(format!(
            "{} of {argc} arguments, and a program is needed",
            argv.len()
        ));
    }
    std::env::set_current_dir(std::ffi::OsStr::from_bytes(cwd))
        .map_err(|e| format!("working directory {}: {e}", String::from_utf8_lossy(cwd)))?;
    for entry in strings {
        let Some(eq) = entry.iter().position(|b| *b == b'=').filter(|&i| i > 0) else {
            return Err(format!(
                "environment entry {:?} is not NAME=value",
                String::from_utf8_lossy(entry)
            ));
        };
        // Single-threaded: nothing reads the environment meanwhile.
        std::env::set_var(
            std::ffi::OsStr::from_bytes(&entry[..eq]),
            std::ffi::OsStr::from_bytes(&entry[eq + 1..]),
        );
    }
    Ok(Program {
        argv,
        limits: Some(limits),
        report,
    })
}

/// `--parent PID` (optional), then `--from-stdin` or `--` and the program's argv.
fn parse(args: &[std::ffi::OsString]) -> Result<(Option<i32>, Source<'_>), String> {
    let usage = "usage: gauntlet-reap [--parent PID] (--from-stdin | -- PROGRAM [ARGS...])";
    let mut i = 0;
    let mut parent = None;
    while i < args.len() {
        match args[i].to_str() {
            Some("--parent") => {
                let pid = args
                    .get(i + 1)
                    .and_then(|p| p.to_str())
                    .and_then(|p| p.parse::<i32>().ok())
                    .ok_or_else(|| format!("--parent needs a pid; {usage}"))?;
                parent = Some(pid);
                i += 2;
            }
            Some("--from-stdin") if i + 1 == args.len() => return Ok((parent, Source::Stdin)),
            Some("--") => {
                let program = &args[i + 1..];
                if program.is_empty() {
                    return Err(usage.into());
                }
                return Ok((parent, Source::Argv(program)));
            }
            _ => return Err(usage.into()),
        }
    }
    Err(usage.into())
}

/// Reap every child that has ended; the program's end once it is among them.
fn reap(program: Pid) -> Option<End> {
    let mut end = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, c)) if pid == program => end = Some(End::Exited(c)),
            Ok(WaitStatus::Signaled(pid, s, _)) if pid == program => end = Some(End::Killed(s)),
            Ok(WaitStatus::StillAlive) | Err(_) => return end,
            Ok(_) => {}
        }
    }
}

/// SIGKILL everything below this process or in its group, and reap it, until nothing
/// is left: what is killed may orphan more, which then becomes ours.
///
/// `running` is the program when it has not been reaped yet. It is killed first, and
/// if that leaves this process with no child at all, nothing is left: everything in
/// the tree descends from us (whatever it orphans becomes ours, as we are a subreaper),
/// and so does everything in our group (only our descendants are born into it, and
/// nothing outside our session may join it). Only a tree that forked something
/// else is looked for in `/proc`, whose scans were most of an app's stop
/// (docs/sealing.md, "Started ahead of need").
fn kill_tree(running: Option<Pid>) {
    if let Some(program) = running {
        let _ = nix::sys::signal::kill(program, Signal::SIGKILL);
    }
    if reap_program(running) == Left::Nothing {
        return;
    }
    let me = std::process::id() as i32;
    // Our group is the program's only if we lead it (the harness starts us in a group
    // of our own); never a group we merely belong to, such as the harness's.
    let group = (nix::unistd::getpgrp().as_raw() == me).then_some(me);
    // Bounded: a process this one may not kill (EPERM), or one that does not die, is
    // left rather than waited on for ever, which would also leave this process deaf to
    // the harness's death.
    let mut untouchable = std::collections::BTreeSet::new();
    for _ in 0..KILL_ROUNDS {
        let left: Vec<i32> = tree(me, group)
            .into_iter()
            .filter(|p| !untouchable.contains(p))
            .collect();
        if left.is_empty() {
            break;
        }
        for pid in &left {
            if nix::sys::signal::kill(Pid::from_raw(*pid), Signal::SIGKILL)
                == Err(nix::errno::Errno::EPERM)
            {
                untouchable.insert(*pid);
            }
        }
        settle();
    }
}

/// What is left below this process once its program has been reaped.
#[derive(PartialEq)]
enum Left {
    Nothing,
    /// Other children, or the program did not die within one settle round.
    Unknown,
}

/// Reap `program` (killed, so waited for at most one settle round) and whatever else has
/// ended; whether any child is left.
fn reap_program(program: Option<Pid>) -> Left {
    let step = std::time::Duration::from_micros(200);
    let mut reaped = program.is_none();
    for _ in 0..25 {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _)) => {
                    reaped |= Some(pid) == program;
                }
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(nix::errno::Errno::ECHILD) => return Left::Nothing,
                Err(_) => return Left::Unknown,
            }
        }
        // Children other than the program are alive: the scan finds them.
        if reaped {
            return Left::Unknown;
        }
        std::thread::sleep(step);
    }
    Left::Unknown
}

/// Reap what was killed, looking every 200 µs for at most one round (5 ms): a killed
/// process is gone within a few hundred microseconds, and the app's stop (which the
/// trial's record waits for) used to wait out the whole round every time.
fn settle() {
    let step = std::time::Duration::from_micros(200);
    for _ in 0..25 {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) => continue,
                // No child left: what was below us is gone (what is in our group but not
                // below us is looked for again by the caller).
                Err(_) => return,
            }
        }
        std::thread::sleep(step);
    }
}

/// Live processes whose parent chain reaches `me`, or in process group `group`
/// (not `me`).
fn tree(me: i32, group: Option<i32>) -> Vec<i32> {
    use gauntlet::sys::process::{proc_stat, scan_proc};
    let mut parent = std::collections::BTreeMap::new();
    scan_proc(|pid| {
        if let Some(s) = proc_stat(pid).filter(|s| s.alive()) {
            parent.insert(pid, (s.ppid, s.pgrp));
        }
        false
    });
    let below = |mut pid: i32| {
        for _ in 0..4096 {
            match parent.get(&pid) {
                Some((ppid, _)) if *ppid == me => return true,
                Some((ppid, _)) if *ppid > 1 => pid = *ppid,
                _ => return false,
            }
        }
        false
    };
    parent
        .iter()
        .filter(|(pid, (_, pgrp))| **pid != me && (Some(*pgrp) == group || below(**pid)))
        .map(|(pid, _)| *pid)
        .collect()
}

fn fail(why: &str) -> ! {
    eprintln!("gauntlet-reap: {why}");
    std::process::exit(CANNOT_RUN)
}
