//! The `shell` tool: `sh -c` in the workspace, stdout and stderr through one pipe (so
//! the model sees them interleaved as a terminal would show them), in its own process
//! group so that a timeout kills everything the command started.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::Deserialize;

use super::{truncate, ToolOutcome, OUTPUT_CAP};

/// After the command exits, how long to wait for output still buffered in the pipe.
/// A background process that keeps the pipe open is not waited for beyond this.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Deserialize)]
pub struct Args {
    pub command: String,
}

/// How one command ended, and what it wrote (at most `cap` bytes kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRun {
    pub output: Vec<u8>,
    pub output_total: usize,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
}

pub fn call(cwd: &Path, app_url: &str, timeout: Duration, args: &Args) -> ToolOutcome {
    let run = match run_shell(
        cwd,
        &[("APP_URL", app_url)],
        &args.command,
        timeout,
        OUTPUT_CAP,
    ) {
        Ok(run) => run,
        Err(e) => return ToolOutcome::failed(format!("cannot run `sh -c`: {e}")),
    };
    let mut text = truncate(&run.output, run.output_total, OUTPUT_CAP);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let status = if run.timed_out {
        format!(
            "[timed out after {} s; the process group was killed]",
            timeout.as_secs()
        )
    } else if let Some(code) = run.exit_code {
        format!("[exit code: {code}]")
    } else {
        format!("[killed by signal {}]", run.signal.unwrap_or_default())
    };
    text.push_str(&status);
    let failed = run.timed_out || run.exit_code != Some(0);
    ToolOutcome {
        output: text,
        failed,
    }
}

/// Runs `command` with `sh -c` in `cwd` (the environment inherited, plus `env`),
/// killing its process group at `timeout`.
pub fn run_shell(
    cwd: &Path,
    env: &[(&str, &str)],
    command: &str,
    timeout: Duration,
    cap: usize,
) -> std::io::Result<ShellRun> {
    let (read_end, write_end) = pipe()?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end.try_clone()?))
        .stderr(Stdio::from(write_end))
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn()?;
    // The parent's copies of the write end live in `cmd`; drop them so EOF can come.
    drop(cmd);
    let pgid = child.id() as libc::pid_t;

    let (out_tx, out_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = out_tx.send(read_capped(std::fs::File::from(read_end), cap));
    });
    let (wait_tx, wait_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = wait_tx.send(child.wait());
    });

    let (status, timed_out) = match wait_rx.recv_timeout(timeout) {
        Ok(status) => (status?, false),
        Err(_) => {
            kill_group(pgid);
            match wait_rx.recv() {
                Ok(status) => (status?, true),
                Err(_) => return Err(std::io::Error::other("lost the child's exit status")),
            }
        }
    };
    if timed_out {
        // Anything left in the group holds the pipe; it is already being killed.
        kill_group(pgid);
    }
    let (output, output_total) = out_rx
        .recv_timeout(DRAIN_GRACE)
        .unwrap_or_else(|_| (Vec::new(), 0));
    Ok(ShellRun {
        output,
        output_total,
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
    })
}

/// Reads to EOF, keeping the first `cap` bytes and counting the rest.
fn read_capped(mut r: impl Read, cap: usize) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut total = 0;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                total += n;
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (kept, total)
}

fn kill_group(pgid: libc::pid_t) {
    // SAFETY: kill(2) with a negative pid signals the process group we created.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// A close-on-exec pipe (read end, write end): only the child's stdio gets a copy.
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe(2) to fill.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe(2) succeeded, so both descriptors are open and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in fds {
        // SAFETY: fd is open (owned above); F_SETFD only changes its flags.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok((r, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cmd: &str, timeout: Duration, cap: usize) -> ShellRun {
        run_shell(
            &std::env::temp_dir(),
            &[("GA_TEST", "v")],
            cmd,
            timeout,
            cap,
        )
        .unwrap()
    }

    #[test]
    fn combines_output_and_reports_exit_code() {
        let r = run(
            "echo out; echo err >&2; echo $GA_TEST; exit 3",
            Duration::from_secs(60),
            1024,
        );
        assert_eq!(String::from_utf8_lossy(&r.output), "out\nerr\nv\n");
        assert_eq!(r.exit_code, Some(3));
        assert!(!r.timed_out);
    }

    #[test]
    fn output_is_capped_but_counted() {
        let r = run("head -c 5000 /dev/zero", Duration::from_secs(60), 100);
        assert_eq!(r.output.len(), 100);
        assert_eq!(r.output_total, 5000);
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        // The backgrounded sleep holds the pipe: the output only arrives (EOF) if the
        // whole group was killed, not just `sh`.
        let r = run(
            "sleep 300 & echo started; sleep 300",
            Duration::from_secs(2),
            1024,
        );
        assert!(r.timed_out);
        assert_eq!(r.exit_code, None);
        assert_eq!(String::from_utf8_lossy(&r.output), "started\n");
    }

    #[test]
    fn tool_result_fails_on_non_zero_exit() {
        let dir = std::env::temp_dir();
        let ok = call(
            &dir,
            "http://x",
            Duration::from_secs(60),
            &Args {
                command: "echo $APP_URL".into(),
            },
        );
        assert_eq!(ok.output, "http://x\n[exit code: 0]");
        assert!(!ok.failed);
        let bad = call(
            &dir,
            "http://x",
            Duration::from_secs(60),
            &Args {
                command: "false".into(),
            },
        );
        assert!(bad.failed);
        assert_eq!(bad.output, "[exit code: 1]");
    }
}
