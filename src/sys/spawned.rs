//! A child process that any tokio runtime can wait for and read from.
//!
//! `tokio::process::Child` belongs to the runtime that spawned it: its pipes and its
//! exit are watched by that runtime's driver. Sandbox helpers and reapers are started
//! ahead of need on a thread of their own ([`super::warm`]) and used later by whichever
//! trial takes them, so their handle must not be tied to a runtime: the exit is watched through a
//! pidfd and the pipes are registered by the runtime that reads them, when it does.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, ExitStatus};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::unix::pipe;

/// A spawned child: its pid, a pidfd for its exit, and the harness's ends of its pipes.
pub struct Spawned {
    /// `None` once reaped.
    child: Option<Child>,
    status: Option<ExitStatus>,
    pidfd: OwnedFd,
    stdin: Option<OwnedFd>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
}

impl Spawned {
    /// Take over `child`: its piped streams, and a pidfd opened on it (its pid cannot be
    /// reused before it is reaped, which only this handle does).
    pub fn new(mut child: Child) -> io::Result<Spawned> {
        let pid = child.id() as libc::pid_t;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        // SAFETY: `fd` was just returned by pidfd_open and is owned by nobody else.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        Ok(Spawned {
            stdin: child.stdin.take().map(OwnedFd::from),
            stdout: child.stdout.take().map(OwnedFd::from),
            stderr: child.stderr.take().map(OwnedFd::from),
            child: Some(child),
            status: None,
            pidfd,
        })
    }

    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The write end of its stdin, registered with the current runtime.
    pub fn stdin(&mut self) -> io::Result<Option<pipe::Sender>> {
        self.stdin
            .take()
            .map(pipe::Sender::from_owned_fd)
            .transpose()
    }

    /// The read end of its stdout, registered with the current runtime.
    pub fn stdout(&mut self) -> io::Result<Option<pipe::Receiver>> {
        self.stdout
            .take()
            .map(pipe::Receiver::from_owned_fd)
            .transpose()
    }

    /// The read end of its stderr, registered with the current runtime.
    pub fn stderr(&mut self) -> io::Result<Option<pipe::Receiver>> {
        self.stderr
            .take()
            .map(pipe::Receiver::from_owned_fd)
            .transpose()
    }

    /// Its exit status if it has exited (reaping it), without waiting.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let Some(child) = self.child.as_mut() else {
            return Ok(None);
        };
        let status = child.try_wait()?;
        if status.is_some() {
            self.status = status;
            self.child = None;
        }
        Ok(status)
    }

    /// Wait for it to exit; cancel-safe (dropping the future leaves it running).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.try_wait()? {
            return Ok(status);
        }
        // SAFETY: the pidfd is owned by `self`, which this borrow keeps alive and open
        // for as long as `exited` exists.
        let exited =
            unsafe { AsyncFd::register_with_interest(self.pidfd.as_raw_fd(), Interest::READABLE) }?;
        loop {
            let mut ready = exited.readable().await?;
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            ready.clear_ready();
        }
    }

    /// Let it end in its own time (a reaper told to stop, which ends its program's tree
    /// first), reaping it off the caller's thread; not killed, unlike a drop.
    pub fn reap_when_ended(mut self) {
        if let Some(mut child) = self.child.take() {
            std::thread::spawn(move || {
                let _ = child.wait();
            });
        }
    }
}

impl Drop for Spawned {
    /// A handle dropped before its child was reaped (its trial was cancelled) kills the
    /// child and reaps it off the caller's thread, leaving neither a process nor a
    /// zombie.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            std::thread::spawn(move || {
                let _ = child.wait();
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn waits_and_reads_from_a_runtime_other_than_the_spawning_thread() {
        // Spawned on a plain thread, read and waited for here.
        let spawned = std::thread::spawn(|| {
            let child = Command::new("sh")
                .args(["-c", "printf hello; exit 3"])
                .stdout(Stdio::piped())
                .spawn()
                .expect("sh runs");
            Spawned::new(child).expect("pidfd")
        })
        .join()
        .expect("thread");
        let mut spawned = spawned;
        let mut out = String::new();
        let mut stdout = spawned.stdout().expect("pipe").expect("piped");
        stdout.read_to_string(&mut out).await.expect("read");
        assert_eq!(out, "hello");
        let status = spawned.wait().await.expect("wait");
        assert_eq!(status.code(), Some(3));
        // Waiting again answers the same, from the recorded status.
        assert_eq!(spawned.wait().await.expect("wait").code(), Some(3));
    }

    #[tokio::test]
    async fn a_dropped_handle_kills_its_child() {
        let child = Command::new("sleep").arg("30").spawn().expect("sleep runs");
        let pid = child.id() as i32;
        drop(Spawned::new(child).expect("pidfd"));
        let gone = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            // Reaped by the drop's thread: the pid no longer exists.
            // SAFETY: signal 0 only checks for existence.
            unsafe { libc::kill(pid, 0) != 0 }
        });
        assert!(gone, "the child of a dropped handle is still there");
    }
}
