//! `gauntlet-seal`: runs one program in a sandbox of its own.
//!
//! The harness starts helpers ahead of need (`agent::warm`) and writes on a helper's
//! stdin, first, its own pid on a line, and later, when it has a program to run, a
//! [`SealSpec`] (JSON, to end of file). Between the two the helper builds everything
//! that does not depend on the program, so that what is left when the spec arrives is a
//! few mounts and a fork:
//!
//! 1. it dies with the harness (`PR_SET_PDEATHSIG`), so a killed harness leaves no
//!    sandbox;
//! 2. it unshares a PID namespace and forks the sandbox's init, PID 1, which makes
//!    mount, IPC, UTS and network namespaces its own and pivots into a private staging
//!    root;
//! 3. with the spec, init builds the root the program sees (only the system paths,
//!    `/dev`, `/proc`, a private `/tmp` and the spec's binds: never ahead, as what it
//!    makes carries the time it was made), pivots into it, bounds its control group,
//!    and forks the program as an unprivileged user with no capabilities,
//!    `no_new_privs` and a seccomp filter (no kernel keyring);
//! 4. when the program ends (or the harness sends SIGTERM at its deadline: the program's
//!    process group is killed), init counts what is still alive, kills it, and reports;
//!    the kernel kills anything else in the namespace as init exits.
//!
//! The helper exits as the program did (same code, or the same signal), and writes a
//! [`SealReport`] to the spec's report path.

mod execs;
mod failure;
mod forward;
mod init;
mod limits;
mod observe;
mod root;
mod syscalls;

use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicI32, Ordering};

use failure::{At, Failure};
use gauntlet::sys::sandbox::{SealReport, SealSpec};
use nix::sched::CloneFlags;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::{ForkResult, Pid};

/// Exit code of the helper when the sandbox could not be built (like `env`'s 125).
pub const SETUP_FAILED: i32 = 125;

/// Largest spec accepted on stdin.
const MAX_SPEC: u64 = 4 << 20;

/// The sandbox's init, as the helper sees it: where SIGTERM is forwarded.
static INIT_PID: AtomicI32 = AtomicI32::new(0);

fn main() {
    // What a run asks before it starts any trial: which version this sandbox is.
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("gauntlet-seal {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let parent = match read_parent() {
        Ok(pid) => pid,
        Err(e) => fail_early(&format!("cannot read the harness's pid on stdin: {e}")),
    };
    // Everything that does not need the program; a failure here is reported once the
    // spec says where reports go.
    let staged = stage(parent);
    let spec = match read_spec() {
        Ok(spec) => spec,
        Err(e) => fail_early(&format!("cannot read the sandbox spec on stdin: {e}")),
    };
    let report_file = match std::fs::File::create(&spec.report) {
        Ok(f) => f,
        Err(e) => fail_early(&format!(
            "cannot create the report file {}: {e}",
            spec.report.display()
        )),
    };
    let report = match staged {
        Ok(sandbox) => sandbox.run(&spec),
        Err(e) => SealReport {
            setup_error: Some(e.to_string()),
            ..SealReport::default()
        },
    };
    let _ = (&report_file).write_all(&serde_json::to_vec(&report).unwrap_or_default());
    drop(report_file);
    exit_like(&report)
}

/// The first line on stdin: the pid of the harness that started this helper.
fn read_parent() -> Result<u32, Failure> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte: what follows the line is the spec, read later, and must stay in
    // the pipe until then.
    let mut stdin = std::io::stdin().lock();
    while line.len() < 16 {
        match stdin.read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => {
                return std::str::from_utf8(&line)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| {
                        Failure::refused(
                            "stdin",
                            format!("not a pid: {:?}", String::from_utf8_lossy(&line)),
                        )
                    });
            }
            Ok(_) => line.push(byte[0]),
            Err(e) => return Err(e).at("stdin"),
        }
    }
    Err(Failure::refused("stdin", "no pid line"))
}

fn read_spec() -> Result<SealSpec, Failure> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_SPEC)
        .read_to_end(&mut bytes)
        .at("reading stdin")?;
    let spec = serde_json::from_slice(&bytes).at("the spec")?;
    // The program's stdin is empty, as it is for an unsealed process.
    let null = std::fs::File::open("/dev/null").at("/dev/null")?;
    nix::unistd::dup2_stdin(&null).at("stdin")?;
    Ok(spec)
}

fn fail_early(message: &str) -> ! {
    eprintln!("gauntlet-seal: {message}");
    std::process::exit(SETUP_FAILED)
}

/// A sandbox whose init has staged its root and waits for the program.
struct Staged {
    init: Pid,
    /// Init → helper: its report, at its end.
    report: File,
    /// Init → helper: its network namespace exists (or, end of file: init failed).
    ready: File,
    /// Helper → init: the spec (its length, 4 bytes little-endian, then its JSON), then
    /// `1`, or `0` and why the ports could not be forwarded.
    go: File,
    /// Helper → init: a line per connection the relay accepts and per request it
    /// carried, which init writes into the observation.
    relayed: Option<File>,
}

/// Namespaces and the staged root, before any spec exists.
fn stage(parent: u32) -> Result<Staged, Failure> {
    nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL)).at("prctl(PR_SET_PDEATHSIG)")?;
    // The harness may have died before the line above: then nobody waits for us.
    if nix::unistd::getppid().as_raw() != parent as i32 {
        return Err(Failure::refused(
            "starting",
            "the harness that started this sandbox is gone",
        ));
    }
    let pipe = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).at("pipe");
    let ((report_rx, report_tx), (ready_rx, ready_tx), (go_rx, go_tx)) =
        (pipe()?, pipe()?, pipe()?);
    let (relayed_rx, relayed_tx) = pipe()?;
    // Only the PID namespace is entered here (it takes effect for our children); init
    // makes the others its own, so that tearing them down is init's exit, not ours.
    let own_pid_ns = File::open("/proc/self/ns/pid").at("/proc/self/ns/pid")?;
    nix::sched::unshare(CloneFlags::CLONE_NEWPID).at("unshare(CLONE_NEWPID)")?;
    let helper = std::process::id();
    // SAFETY: this process is single-threaded (no thread was started), so the child
    // may run any code after fork.
    match unsafe { nix::unistd::fork() } {
        Err(e) => Err(e).at("fork of the sandbox init"),
        Ok(ForkResult::Child) => {
            drop((report_rx, ready_rx, go_tx, relayed_tx));
            let mut tx = File::from(report_tx);
            let report = init::run(
                File::from(ready_tx),
                File::from(go_rx),
                File::from(relayed_rx),
                &tx,
                helper,
            );
            let _ = tx.write_all(&serde_json::to_vec(&report).unwrap_or_default());
            drop(tx);
            std::process::exit(0)
        }
        Ok(ForkResult::Parent { child }) => {
            drop((report_tx, ready_tx, go_rx, relayed_rx));
            // Back to our own PID namespace for children: the kernel refuses threads
            // to a process whose children would be born elsewhere, and the port relay
            // is a thread.
            if let Err(e) = nix::sched::setns(&own_pid_ns, CloneFlags::CLONE_NEWPID) {
                let _ = signal::kill(child, Signal::SIGKILL);
                return Err(e).at("setns back to the helper's PID namespace");
            }
            INIT_PID.store(child.as_raw(), Ordering::SeqCst);
            forward_sigterm();
            Ok(Staged {
                init: child,
                report: File::from(report_rx),
                ready: File::from(ready_rx),
                go: File::from(go_tx),
                relayed: Some(File::from(relayed_tx)),
            })
        }
    }
}

impl Staged {
    /// Hand init the spec, forward the spec's ports while init builds the root (init
    /// starts the program only once they are open), and wait for its report.
    fn run(mut self, spec: &SealSpec) -> SealReport {
        let mut ready = [0u8; 1];
        // End of file instead: init failed before its network existed, and says why
        // in its report.
        if self.ready.read_exact(&mut ready).is_ok() {
            let json = serde_json::to_vec(spec).unwrap_or_default();
            let mut frame = u32::try_from(json.len())
                .unwrap_or(u32::MAX)
                .to_le_bytes()
                .to_vec();
            frame.extend(json);
            if self.go.write_all(&frame).is_ok() {
                // Init writes what the relay says only into an observation.
                let relayed = self.relayed.take().filter(|_| spec.observe.is_some());
                let ports = match forward::start(self.init.as_raw(), &spec.forward, relayed) {
                    Ok(()) => b"1".to_vec(),
                    Err(e) => format!("0{e}").into_bytes(),
                };
                let _ = self.go.write_all(&ports);
            }
        }
        drop(self.go);
        let mut bytes = Vec::new();
        // End of file: init wrote its report and closed it on exit, after it killed
        // and reaped everything. Init's own exit (tearing down its mount namespace) is
        // not waited for: it holds nothing the harness needs.
        let read = self.report.read_to_end(&mut bytes);
        match read.ok().and_then(|_| serde_json::from_slice(&bytes).ok()) {
            Some(report) => report,
            None => lost_init(self.init),
        }
    }
}

/// Init ended without a report. Killed by a signal once the program ran (the OOM
/// killer, where the machine will not let init exempt itself), the sandbox and its
/// program died with it: that is the program's end, not a failed setup.
fn lost_init(init: Pid) -> SealReport {
    use nix::sys::wait::{waitpid, WaitStatus};
    match waitpid(init, None) {
        Ok(WaitStatus::Signaled(_, Signal::SIGKILL, _)) => {
            eprintln!(
                "gauntlet-seal: stopped: the sandbox's init was killed (out of memory?), \
                 and everything in the sandbox with it"
            );
            SealReport {
                signal: Some(Signal::SIGKILL as i32),
                ..SealReport::default()
            }
        }
        _ => SealReport {
            setup_error: Some("the sandbox init died without a report".into()),
            ..SealReport::default()
        },
    }
}

extern "C" fn on_sigterm(_: i32) {
    let pid = INIT_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // kill(2) is async-signal-safe.
        let _ = signal::kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

/// SIGTERM to the helper (the harness's deadline) stops the program, through init.
fn forward_sigterm() {
    let action = SigAction::new(
        SigHandler::Handler(on_sigterm),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only reads an atomic and calls kill(2).
    let _ = unsafe { signal::sigaction(Signal::SIGTERM, &action) };
}

/// Exit as the program did, so the harness reads the same status it would unsealed.
fn exit_like(report: &SealReport) -> ! {
    if let Some(e) = &report.setup_error {
        eprintln!("gauntlet-seal: {e}");
        std::process::exit(SETUP_FAILED)
    }
    if let Some(sig) = report.signal.and_then(|s| Signal::try_from(s).ok()) {
        // SAFETY: restoring the default action has no preconditions.
        let _ = unsafe { signal::signal(sig, SigHandler::SigDfl) };
        let _ = signal::raise(sig);
        // A signal whose default is to continue (or that is blocked): say so by code.
        std::process::exit(128 + sig as i32)
    }
    std::process::exit(report.exit_code.unwrap_or(SETUP_FAILED))
}
