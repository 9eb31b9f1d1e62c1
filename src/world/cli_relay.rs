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
//! Limits of the relay (docs/sealing.md): the app runs in an empty scratch directory,
//! with a scrubbed environment; it sees none of the test's files, so a CLI app that
//! reads files named on its command line cannot be reached this way.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::sys::lifeline::ReapedProgram;
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
    #[error("{} does not exist: run `cargo build --bins` (every app run of the CLI relay starts under it)", path.display())]
    NoReaper { path: PathBuf },
}

/// A running relay for one target. Dropping it stops accepting and kills running
/// invocations.
pub struct CliRelay {
    accept: JoinHandle<()>,
}

impl CliRelay {
    /// Listen on `socket` and run `binary prefix... <args>` per connection, in the
    /// scratch directory `scratch`. The app can print its working directory, so its
    /// path must say no more about the target than the locators do: never a label such
    /// as `mutant-1`.
    pub async fn start(
        binary: &Path,
        prefix: &[String],
        socket: &Path,
        scratch: &Path,
    ) -> Result<CliRelay, RelayError> {
        let reaper = crate::binaries::bin_path(crate::sys::lifeline::REAPER);
        if !reaper.is_file() {
            return Err(RelayError::NoReaper { path: reaper });
        }
        let scratch = scratch.to_path_buf();
        std::fs::create_dir_all(&scratch).map_err(|source| RelayError::Dir {
            path: scratch.clone(),
            source,
        })?;
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
        let binary = binary.to_path_buf();
        let prefix = prefix.to_vec();
        let accept = tokio::spawn(async move {
            // Aborting this task drops the set, which aborts every invocation in it
            // (their apps are killed on drop).
            let mut calls = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                calls.spawn(serve(
                    stream,
                    binary.clone(),
                    prefix.clone(),
                    scratch.clone(),
                ));
                while calls.try_join_next().is_some() {}
            }
        });
        Ok(CliRelay { accept })
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

/// One invocation: read the arguments, run the app, stream both ways.
async fn serve(stream: UnixStream, binary: PathBuf, prefix: Vec<String>, cwd: PathBuf) {
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
    let (frames, mut outbox) = mpsc::channel::<(u8, Vec<u8>)>(16);
    let writer = tokio::spawn(async move {
        let mut tx = tx;
        while let Some((tag, body)) = outbox.recv().await {
            if write_frame(&mut tx, tag, &body).await.is_err() {
                break;
            }
        }
    });
    // Under the reaper: whatever the app starts ends with its run, or with the harness.
    let argv: Vec<String> = prefix.iter().chain(&args).cloned().collect();
    let started = crate::sys::lifeline::start_reaped(&ReapedProgram {
        program: &binary,
        args: &argv,
        cwd: &cwd,
        env: &[
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("LANG", "C.UTF-8"),
        ],
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
    let mut stdin = reaped.stdin;
    let feed = tokio::spawn(async move {
        while let Ok(Some((STDIN, chunk))) = read_frame(&mut rx).await {
            if chunk.is_empty() || stdin.write_all(&chunk).await.is_err() {
                break;
            }
        }
        // Dropping stdin closes it: the app sees end of input.
    });
    let out = tokio::spawn(pump(stdout, STDOUT, frames.clone()));
    let err = tokio::spawn(pump(stderr, STDERR, frames.clone()));
    let status = match running.0.as_mut() {
        Some(child) => child.wait().await,
        None => Err(std::io::Error::other("no app to wait for")),
    };
    // Ended and reaped: nothing left to stop.
    running.0 = None;
    crate::sys::warm::REAPERS.replenish();
    let _ = tokio::join!(out, err);
    feed.abort();
    let code = match status {
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            s.code()
                .or_else(|| s.signal().map(|sig| 128 + sig))
                .unwrap_or(1)
        }
        Err(_) => 1,
    };
    let _ = frames.send((EXIT, code.to_be_bytes().to_vec())).await;
    drop(frames);
    let _ = writer.await;
}

/// SIGTERM to the reaper of an app run that is still going when its invocation ends,
/// which then ends in its own time (not killed: it ends the app's tree first).
struct StopOnDrop(Option<Spawned>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let Some(mut reaper) = self.0.take() else {
            return;
        };
        // Not reaped yet, so its pid is still its own.
        if let (Ok(None), Ok(pid)) = (reaper.try_wait(), i32::try_from(reaper.id())) {
            if pid > 1 {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
        }
        reaper.reap_when_ended();
    }
}

async fn pump<R: AsyncRead + Unpin>(
    reader: Option<R>,
    tag: u8,
    frames: mpsc::Sender<(u8, Vec<u8>)>,
) {
    let Some(mut reader) = reader else { return };
    let mut buf = vec![0u8; 64 * 1024];
    let mut sent: u64 = 0;
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_CAP.saturating_sub(sent) as usize;
                let take = room.min(n);
                if take > 0 {
                    sent += take as u64;
                    if frames.send((tag, buf[..take].to_vec())).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
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
