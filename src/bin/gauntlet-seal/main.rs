//! `gauntlet-seal`: runs one program in a sandbox of its own.
//!
//! The harness writes a [`SealSpec`] (JSON) on this helper's stdin. The helper then
//!
//! 1. dies with the harness (`PR_SET_PDEATHSIG`), so a killed harness leaves no sandbox;
//! 2. unshares PID, mount, IPC and UTS namespaces and forks the sandbox's init, PID 1;
//! 3. init builds a new root on a tmpfs that holds only the system paths, `/dev`,
//!    `/proc`, a private `/tmp` and the spec's binds, pivots into it, and forks the
//!    program as an unprivileged user with no capabilities and `no_new_privs`;
//! 4. when the program ends (or the harness sends SIGTERM at its deadline: the program's
//!    process group is killed), init counts what is still alive, kills it, and reports;
//!    the kernel kills anything else in the namespace as init exits.
//!
//! The helper exits as the program did (same code, or the same signal), and writes a
//! [`SealReport`] to the spec's report path.

mod forward;
mod init;
mod root;

use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicI32, Ordering};

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
    let report = run(&spec);
    let _ = (&report_file).write_all(&serde_json::to_vec(&report).unwrap_or_default());
    drop(report_file);
    exit_like(&report)
}

fn read_spec() -> Result<SealSpec, String> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_SPEC)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let spec = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    // The program's stdin is empty, as it is for an unsealed process.
    let null = std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    nix::unistd::dup2_stdin(&null).map_err(|e| format!("stdin: {e}"))?;
    Ok(spec)
}

fn fail_early(message: &str) -> ! {
    eprintln!("gauntlet-seal: {message}");
    std::process::exit(SETUP_FAILED)
}

/// Everything from the namespaces on; any failure becomes the report's setup error.
fn run(spec: &SealSpec) -> SealReport {
    let setup = |e: String| SealReport {
        setup_error: Some(e),
        ..SealReport::default()
    };
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Some(Signal::SIGKILL)) {
        return setup(format!("prctl(PR_SET_PDEATHSIG): {e}"));
    }
    // The harness may have died before the line above: then nobody waits for us.
    if nix::unistd::getppid().as_raw() != spec.parent_pid as i32 {
        return setup("the harness that started this sandbox is gone".into());
    }
    let pipe = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC);
    // Init → helper: its report. Init → helper: its network namespace exists. Helper
    // → init: the ports are forwarded (`1`) or could not be (`0`).
    let (Ok((report_rx, report_tx)), Ok((ready_rx, ready_tx)), Ok((go_rx, go_tx))) =
        (pipe(), pipe(), pipe())
    else {
        return setup(format!("pipe: {}", std::io::Error::last_os_error()));
    };
    // Only the PID namespace is entered here (it takes effect for our children); init
    // makes the others its own, so that tearing them down is init's exit, not ours.
    let own_pid_ns = match File::open("/proc/self/ns/pid") {
        Ok(f) => f,
        Err(e) => return setup(format!("/proc/self/ns/pid: {e}")),
    };
    if let Err(e) = nix::sched::unshare(CloneFlags::CLONE_NEWPID) {
        return setup(format!("unshare(CLONE_NEWPID): {e}"));
    }
    // SAFETY: this process is single-threaded (no thread was started), so the child
    // may run any code after fork.
    match unsafe { nix::unistd::fork() } {
        Err(e) => setup(format!("fork of the sandbox init: {e}")),
        Ok(ForkResult::Child) => {
            drop((report_rx, ready_rx, go_tx));
            let report = init::run(spec, File::from(ready_tx), File::from(go_rx));
            let mut tx = std::fs::File::from(report_tx);
            let _ = tx.write_all(&serde_json::to_vec(&report).unwrap_or_default());
            drop(tx);
            std::process::exit(0)
        }
        Ok(ForkResult::Parent { child }) => {
            drop((report_tx, ready_tx, go_rx));
            // Back to our own PID namespace for children: the kernel refuses threads
            // to a process whose children would be born elsewhere, and the port relays
            // are threads.
            if let Err(e) = nix::sched::setns(&own_pid_ns, CloneFlags::CLONE_NEWPID) {
                let _ = signal::kill(child, Signal::SIGKILL);
                return setup(format!("setns back to the helper's PID namespace: {e}"));
            }
            INIT_PID.store(child.as_raw(), Ordering::SeqCst);
            forward_sigterm();
            let mut ready = [0u8; 1];
            // End of file instead: init failed before its network existed, and says why
            // in its report.
            if File::from(ready_rx).read_exact(&mut ready).is_ok() {
                let go = match forward::start(child.as_raw(), &spec.forward) {
                    Ok(()) => b"1".to_vec(),
                    Err(e) => format!("0{e}").into_bytes(),
                };
                let _ = File::from(go_tx).write_all(&go);
            }
            let mut bytes = Vec::new();
            let mut rx = std::fs::File::from(report_rx);
            // End of file: init wrote its report and closed it on exit, after it killed
            // and reaped everything. Init's own exit (tearing down its mount
            // namespace) is not waited for: it holds nothing the harness needs.
            let read = rx.read_to_end(&mut bytes);
            match read.ok().and_then(|_| serde_json::from_slice(&bytes).ok()) {
                Some(report) => report,
                None => setup("the sandbox init died without a report".into()),
            }
        }
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
