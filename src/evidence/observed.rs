//! Observed opens and execs: what a sealed trial's processes were seen by the kernel
//! to open (fanotify) and to execute (a seccomp notification of every `execve` and
//! `execveat`, answered by init once it has read the call's arguments), as the
//! sandbox's init recorded it (`gauntlet-seal`), and the pure parser that reads the
//! record back.
//!
//! The file is JSON lines written only by init, outside the sandbox's view: a `start`
//! line naming what is watched and what is not, one `open` line per distinct path and
//! access (the first time it was seen), one `exec` line per program executed (every
//! one, in order, up to a bound), and an `end` line with the counts. A file
//! without its `end` line (init was killed), with an overflow, with dropped entries or
//! with lines that do not parse is an *incomplete* observation: what it holds still
//! counts, but it cannot show that nothing else was opened.

use std::io::BufRead;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a path was used, as far as the kernel reports it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OpenAccess {
    /// A file was opened. The open is what is seen, not the bytes: reading it (by
    /// `read` or through `mmap`) adds nothing further, and an open for writing is also
    /// an open.
    Read,
    /// A directory was opened, which is how listings (`ls`, `readdir`, globs) start.
    List,
    /// A file was opened to be executed (a program, a script's interpreter, a library
    /// mapped by the loader counts as `read`).
    Exec,
    /// A file opened for writing was closed.
    Write,
}

impl OpenAccess {
    pub fn as_str(self) -> &'static str {
        match self {
            OpenAccess::Read => "read",
            OpenAccess::List => "list",
            OpenAccess::Exec => "exec",
            OpenAccess::Write => "write",
        }
    }
}

/// One line of the observation file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    Start {
        /// Mount points whose filesystems are watched (every open on them is seen).
        watched: Vec<String>,
        /// Mount points not watched, and why (`/proc`, `/sys`, `/dev`: nothing of the
        /// product lives there).
        unwatched: Vec<String>,
        /// Whether every exec is seen ([`Line::Exec`]); `false` in files written before
        /// execs were observed, and when init could not install its notification.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        execs: bool,
    },
    /// Every connection to a forwarded port is seen from here on, with who made it
    /// and the HTTP requests it carried ([`Line::Connection`], [`Line::Request`]).
    /// Written once, after the start; absent in files written before connections
    /// were observed, and where init had no line from the helper.
    Relaying {
        /// The forwarded ports.
        ports: Vec<u16>,
    },
    Open(Open),
    Exec(Exec),
    Connection(Connection),
    Request(Request),
    Unparsed(Unparsed),
    End(End),
}

/// A connection a process of the sandbox made to one of its forwarded ports (its
/// proxy, `APP_URL`, a sink), as the seal's helper accepted it: before any of its
/// bytes went on to the host, the process holding the connecting socket was found
/// (its port in the namespace's `/proc/net/tcp`, the socket's inode in the
/// processes' descriptors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Connection {
    /// Milliseconds since the helper began relaying, when it accepted the connection.
    pub ms: u64,
    /// The connection's number, which its requests name.
    pub conn: u64,
    /// The forwarded port it was made to.
    pub port: u16,
    /// Every process of the sandbox that held the connecting socket (a descriptor can
    /// be inherited or passed).
    pub clients: Vec<Client>,
    /// Why no process could be named (the socket was closed before the helper looked,
    /// `/proc` could not be read): the connection's requests are not attributed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unattributed: Option<String>,
}

/// A process holding a connection's socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Client {
    /// As numbered in the sandbox's PID namespace (the numbers of [`Exec::pid`]).
    pub pid: i32,
    /// Its executable (`/proc/<pid>/exe`, as the sandbox names it); `None` when it
    /// could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// Why the process may not be running its executable as shipped, as the helper
    /// found it when the connection waited: a mount namespace or root of its own
    /// (its path names whatever it bound there), an executable that is not the
    /// sandbox's file at that path, a preload in its environment, code mapped from
    /// outside the system's directories, a tracer, a browser launched with switches
    /// that let a page's requests pass for another origin's. Empty: none was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub altered: Vec<String>,
}

/// One HTTP request a connection carried: its request line, read by the helper
/// before the bytes went on to the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Request {
    pub ms: u64,
    pub conn: u64,
    pub method: String,
    /// The request target, cut at [`MAX_REQUEST_PATH_BYTES`] (non-UTF-8 bytes
    /// replaced).
    pub path: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub path_cut: bool,
    /// Its `Origin` header (several joined by `, `), cut at [`MAX_ORIGIN_BYTES`]: the
    /// page a browser sent it for (`null` for a `data:` or `file:` page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// From here on a connection's bytes were not read as HTTP requests (not HTTP at
/// all, a body the reader does not follow, a protocol the connection switched to):
/// what they held is not known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unparsed {
    pub ms: u64,
    pub conn: u64,
    pub why: String,
}

/// The most bytes of a request's target recorded.
pub const MAX_REQUEST_PATH_BYTES: usize = 2048;

/// The most bytes of a request's `Origin` recorded.
pub const MAX_ORIGIN_BYTES: usize = 256;

/// The most connection, request and unparsed lines init writes; the rest are counted.
pub const MAX_REQUEST_LINES: u64 = 20_000;

/// The most bytes of such lines init writes.
pub const MAX_REQUEST_LINE_BYTES: u64 = 8 << 20;

/// One program a process of the sandbox asked the kernel to execute, read by init
/// from the process's memory while the call waited for init's answer. Whether the
/// exec then succeeded is not known here: the file it ran shows as an `exec` open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Exec {
    /// Milliseconds since the program started, when init read the call.
    pub ms: u64,
    /// The calling process, as numbered in the sandbox's PID namespace.
    pub pid: i32,
    /// The program's path as the call named it, made absolute against the caller's
    /// working directory (or the directory descriptor `execveat` was given).
    pub path: String,
    /// The arguments, `argv[0]` first, each cut at [`MAX_ARG_BYTES`], at most
    /// [`MAX_ARGS`] of them (non-UTF-8 bytes replaced).
    pub argv: Vec<String>,
    /// Arguments or bytes past the bounds were left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub argv_cut: bool,
    /// Why the call's path or arguments could not be read (the process went away, or
    /// passed a pointer it does not own); what could be read is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Init answered the call with EPERM and the kernel ran nothing: its path or
    /// arguments could not be read from a caller still alive, so what would run could
    /// not be recorded (memory the caller hid from other processes, such as
    /// `memfd_secret`). No program of a trial has a reason to do that.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub refused: bool,
    /// The caller had a mount namespace or a root of its own (it bound or chrooted
    /// something): the path names whatever it put there, not the sandbox's file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_root: bool,
    /// The dynamic loader's variables (`LD_PRELOAD=…`, `LD_LIBRARY_PATH=…`) in the
    /// environment the call passed, read with its arguments: what the loader would
    /// run in the program before its own code, whatever the program does to its
    /// environment afterwards.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loader: Vec<String>,
    /// Why not all of the call's environment was read: a loader variable may be
    /// among what was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_unread: Option<String>,
    /// The remote ports of TCP connections the caller carried into the program (its
    /// sockets without close-on-exec, connected when it called): connections the
    /// program did not make.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<u16>,
}

/// Directories whose files no program of the sandbox can write: code mapped or loaded
/// from them is the system's.
pub const SYSTEM_CODE: &[&str] = &["/usr/", "/lib/", "/lib64/", "/lib32/", "/opt/"];

/// Why the loader variables of an exec make its program run code it does not ship:
/// a preload or audit library, or a library path outside [`SYSTEM_CODE`]. `None`:
/// they do not.
pub fn loader_alters(e: &Exec) -> Option<String> {
    if let Some(why) = &e.loader_unread {
        return Some(format!("its environment was not all read ({why})"));
    }
    for var in &e.loader {
        let (name, value) = var.split_once('=').unwrap_or((var, ""));
        let foreign = match name {
            "LD_PRELOAD" | "LD_AUDIT" => !value.trim().is_empty(),
            // A directory is the system's only as an absolute path with no way back
            // up (`/usr/../tmp` is `/tmp`).
            "LD_LIBRARY_PATH" => value.split([':', ';']).any(|d| {
                !d.is_empty()
                    && (!d.starts_with('/')
                        || d.split('/').any(|c| c == "..")
                        || !SYSTEM_CODE.iter().any(|s| format!("{d}/").starts_with(s)))
            }),
            _ => false,
        };
        if foreign {
            return Some(format!("it was executed with {var}"));
        }
    }
    None
}

/// The most arguments of one exec recorded.
pub const MAX_ARGS: usize = 64;

/// The most bytes of one argument (or of the path) recorded.
pub const MAX_ARG_BYTES: usize = 1024;

/// The most bytes of all the arguments of one exec recorded: a line stays small
/// whatever the arguments hold (JSON may write a byte as six).
pub const MAX_ARGV_BYTES: usize = 4096;

/// The most bytes of exec lines init writes. Execs are counted past it, not written,
/// so that a flood of execs never crowds the opens out of the file (whose parser reads
/// at most [`MAX_FILE_BYTES`]).
pub const MAX_EXEC_LINE_BYTES: u64 = 16 << 20;

/// The most exec lines init writes; the rest are counted.
pub const MAX_EXECS: u64 = 20_000;

/// A path first seen opened in a given way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Open {
    /// Milliseconds since the program started, when init read the event (at most a
    /// few milliseconds after the open, unless init was busy).
    pub ms: u64,
    /// The process, as numbered in the sandbox's PID namespace.
    pub pid: i32,
    /// The program it last executed (as seen: its file's name), else its command
    /// name (`comm`) when it was still alive to be asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    pub access: OpenAccess,
    /// The path of the opened file as the sandbox sees it (symlinks resolved: a link
    /// the agent made shows as its target); ` (deleted)` when it was removed since. A
    /// file opened through a mount the agent made is named by its real path, found
    /// again from its file handle.
    pub path: String,
    /// Opened through a mount of the agent's own (a namespace it made, an overlay, a
    /// detached tree), not one of the sandbox's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub foreign_mount: bool,
    /// On a filesystem the sandbox was given empty (its own tmpfs: `/tmp`, the cover
    /// over `target/`): whatever its path, nothing of the host's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
    /// Its real path could not be found again: `path` is only what the agent's mount
    /// calls it, and the observation is incomplete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unresolved: bool,
}

/// The counts init ends the file with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct End {
    /// Events read from the kernel that were the trial's (not init's, not the host's).
    pub events: u64,
    /// Distinct (path, access) pairs written.
    pub distinct: u64,
    /// Distinct pairs seen past the file's bound, counted but not written.
    pub dropped: u64,
    /// The kernel's queue overflowed: events were lost.
    pub overflow: bool,
    /// Reads of the kernel's queue that failed, and events whose file could not be
    /// named (a path longer than the kernel will print): each may have lost an open.
    pub read_errors: u64,
    /// Opens through the agent's own mounts whose real path could not be found.
    #[serde(default)]
    pub unresolved: u64,
    /// Exec calls seen, written or not.
    #[serde(default)]
    pub execs: u64,
    /// Exec calls past [`MAX_EXECS`], counted but not written.
    #[serde(default)]
    pub execs_dropped: u64,
    /// Why execs stopped being seen, or never were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_error: Option<String>,
    /// Why observing stopped or never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Connection, request and unparsed lines past [`MAX_REQUEST_LINES`] or
    /// [`MAX_REQUEST_LINE_BYTES`] (or longer than a line may be), counted but not
    /// written.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_dropped: u64,
    /// Why connections stopped being seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_error: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most distinct (path, access) pairs init writes; the rest are counted.
pub const MAX_OPENS: u64 = 50_000;

/// The most bytes of an observation file the parser reads (a complete file within
/// [`MAX_OPENS`] is far smaller).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// A parsed observation file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Observation {
    pub watched: Vec<String>,
    pub unwatched: Vec<String>,
    /// Whether init saw every exec ([`Line::Start`]'s `execs`).
    #[serde(default)]
    pub execs_watched: bool,
    pub opens: Vec<Open>,
    #[serde(default)]
    pub execs: Vec<Exec>,
    /// Whether connections to the forwarded ports were seen ([`Line::Start`]'s
    /// `requests`).
    #[serde(default)]
    pub requests_watched: bool,
    #[serde(default)]
    pub connections: Vec<Connection>,
    #[serde(default)]
    pub requests: Vec<Request>,
    #[serde(default)]
    pub unparsed: Vec<Unparsed>,
    pub end: Option<End>,
    /// Lines that did not parse or came out of order (1-based line numbers, bounded).
    pub bad_lines: Vec<u64>,
    /// Whether the file was longer than [`MAX_FILE_BYTES`] and cut there.
    pub cut: bool,
}

impl Observation {
    /// Why this observation cannot show that nothing else was opened; `None` when it
    /// is complete.
    pub fn incomplete(&self) -> Option<String> {
        if self.cut {
            return Some(format!(
                "the observation is longer than {MAX_FILE_BYTES} bytes"
            ));
        }
        if let Some(n) = self.bad_lines.first() {
            return Some(format!(
                "{} line(s) of the observation do not parse, first line {n}",
                self.bad_lines.len()
            ));
        }
        if self.watched.is_empty() {
            return Some("the observation watched no filesystem".into());
        }
        let Some(end) = &self.end else {
            return Some("the observation has no end: its observer was stopped".into());
        };
        if let Some(e) = &end.error {
            return Some(format!("observing failed: {e}"));
        }
        if end.overflow {
            return Some("the kernel's event queue overflowed: opens were lost".into());
        }
        if end.read_errors > 0 {
            return Some(format!(
                "{} event(s) of the kernel's queue could not be read or their file named",
                end.read_errors
            ));
        }
        if end.unresolved > 0 {
            return Some(format!(
                "{} open(s) through the agent's own mounts could not be traced to a real path",
                end.unresolved
            ));
        }
        if end.dropped > 0 {
            return Some(format!(
                "{} distinct opens past the bound of {MAX_OPENS} were not recorded",
                end.dropped
            ));
        }
        None
    }

    /// Why this observation cannot show every program that was executed; `None` when
    /// it can. Execs are read from the same file as opens, so a file cut short, with
    /// lines that do not parse or without its end is incomplete for both.
    pub fn execs_incomplete(&self) -> Option<String> {
        if !self.execs_watched {
            return Some("execs were not observed".into());
        }
        if self.cut || !self.bad_lines.is_empty() || self.end.is_none() {
            return self.incomplete();
        }
        let end = self.end.as_ref()?;
        if let Some(e) = &end.exec_error {
            return Some(format!("observing execs failed: {e}"));
        }
        if end.execs_dropped > 0 {
            return Some(format!(
                "{} execs past the bound of {MAX_EXECS} execs or {MAX_EXEC_LINE_BYTES} bytes were not recorded",
                end.execs_dropped
            ));
        }
        None
    }
}

impl Observation {
    /// Why this observation cannot show every connection made to the forwarded ports
    /// and every request they carried; `None` when it can.
    pub fn requests_incomplete(&self) -> Option<String> {
        if !self.requests_watched {
            return Some("connections to the forwarded ports were not observed".into());
        }
        if self.cut || !self.bad_lines.is_empty() || self.end.is_none() {
            return self.incomplete();
        }
        let end = self.end.as_ref()?;
        if let Some(e) = &end.request_error {
            return Some(format!("observing connections failed: {e}"));
        }
        if end.requests_dropped > 0 {
            return Some(format!(
                "{} connection or request line(s) past the bound of {MAX_REQUEST_LINES} lines or {MAX_REQUEST_LINE_BYTES} bytes were not recorded",
                end.requests_dropped
            ));
        }
        None
    }
}

/// Parse an observation file. Never fails: what does not parse is kept as a bad line
/// and makes the observation incomplete.
pub fn parse(reader: &mut dyn BufRead) -> Observation {
    let mut o = Observation::default();
    let mut read = 0u64;
    let mut n = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(k) => read += k as u64,
            Err(_) => {
                o.bad_lines.push(n + 1);
                break;
            }
        }
        if read > MAX_FILE_BYTES {
            o.cut = true;
            break;
        }
        n += 1;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let started = !o.watched.is_empty() || !o.unwatched.is_empty();
        match serde_json::from_slice::<Line>(&buf) {
            Ok(Line::Start {
                watched,
                unwatched,
                execs,
            }) if !started && o.opens.is_empty() && o.execs.is_empty() => {
                o.watched = watched;
                o.unwatched = unwatched;
                o.execs_watched = execs;
            }
            Ok(Line::Relaying { .. }) if started && !o.requests_watched && o.end.is_none() => {
                o.requests_watched = true;
            }
            Ok(Line::Open(open)) if o.end.is_none() => o.opens.push(open),
            Ok(Line::Exec(exec)) if o.end.is_none() && o.execs_watched => o.execs.push(exec),
            Ok(Line::Connection(c)) if o.end.is_none() && o.requests_watched => {
                o.connections.push(c)
            }
            Ok(Line::Request(r)) if o.end.is_none() && o.requests_watched => o.requests.push(r),
            Ok(Line::Unparsed(u)) if o.end.is_none() && o.requests_watched => o.unparsed.push(u),
            Ok(Line::End(end)) if o.end.is_none() => o.end = Some(end),
            _ => {
                if o.bad_lines.len() < 100 {
                    o.bad_lines.push(n);
                }
            }
        }
    }
    o
}

/// One line, newline-terminated, as init writes it.
pub fn line(l: &Line) -> Vec<u8> {
    let mut v = serde_json::to_vec(l).unwrap_or_default();
    v.push(b'\n');
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(lines: &[Line]) -> Vec<u8> {
        lines.iter().flat_map(line).collect()
    }

    fn open(path: &str) -> Line {
        Line::Open(Open {
            ms: 1,
            pid: 2,
            process: Some("cat".into()),
            access: OpenAccess::Read,
            path: path.into(),
            foreign_mount: false,
            private: false,
            unresolved: false,
        })
    }

    fn start() -> Line {
        Line::Start {
            watched: vec!["/".into()],
            unwatched: vec!["/proc".into()],
            execs: true,
        }
    }

    fn exec(path: &str, argv: &[&str]) -> Line {
        Line::Exec(crate::evidence::test_support::exec(3, 4, path, argv))
    }

    #[test]
    fn execs_are_kept_in_order_and_their_completeness_is_their_own() {
        let bytes = file(&[
            start(),
            exec("/bin/sh", &["sh", "-c", "ls"]),
            open("/a"),
            exec("/bin/ls", &["ls"]),
            Line::End(End {
                execs: 2,
                ..End::default()
            }),
        ]);
        let o = parse(&mut &bytes[..]);
        assert_eq!(o.execs.len(), 2);
        assert_eq!(o.execs[1].argv, ["ls"]);
        assert_eq!((o.incomplete(), o.execs_incomplete()), (None, None));
        // Dropped execs or a failed notification leave the opens complete.
        for end in [
            End {
                execs_dropped: 1,
                ..End::default()
            },
            End {
                exec_error: Some("seccomp: EBUSY".into()),
                ..End::default()
            },
        ] {
            let bytes = file(&[start(), Line::End(end)]);
            let o = parse(&mut &bytes[..]);
            assert_eq!(o.incomplete(), None);
            assert!(o.execs_incomplete().is_some());
        }
        // A file from before execs were observed says so, and an exec line in a file
        // whose start did not announce them is garbage, not evidence.
        let old = br#"{"kind":"start","watched":["/"],"unwatched":[]}
{"kind":"end","events":0,"distinct":0,"dropped":0,"overflow":false,"read_errors":0}
"#;
        let o = parse(&mut &old[..]);
        assert_eq!(o.incomplete(), None);
        assert_eq!(
            o.execs_incomplete().as_deref(),
            Some("execs were not observed")
        );
        let mut forged = old[..old.iter().position(|b| *b == b'\n').unwrap_or(0) + 1].to_vec();
        forged.extend(file(&[exec("/x", &["x"]), Line::End(End::default())]));
        let o = parse(&mut &forged[..]);
        assert!(o.execs.is_empty());
        assert_eq!(o.bad_lines, [2]);
    }

    #[test]
    fn connections_and_requests_count_only_once_announced_and_their_losses_are_their_own() {
        let conn = Line::Connection(Connection {
            ms: 1,
            conn: 0,
            port: 8080,
            clients: vec![Client {
                pid: 5,
                exe: Some("/usr/bin/curl".into()),
                altered: vec![],
            }],
            unattributed: None,
        });
        let req = Line::Request(Request {
            ms: 2,
            conn: 0,
            method: "DELETE".into(),
            path: "/api/notes/3".into(),
            path_cut: false,
            origin: Some("null".into()),
        });
        let relaying = Line::Relaying { ports: vec![8080] };
        let bytes = file(&[
            start(),
            relaying.clone(),
            conn.clone(),
            req.clone(),
            Line::End(End::default()),
        ]);
        let o = parse(&mut &bytes[..]);
        assert_eq!((o.connections.len(), o.requests.len()), (1, 1));
        assert_eq!((o.incomplete(), o.requests_incomplete()), (None, None));
        let bytes = file(&[
            start(),
            relaying.clone(),
            Line::End(End {
                requests_dropped: 2,
                ..End::default()
            }),
        ]);
        let o = parse(&mut &bytes[..]);
        assert_eq!(o.incomplete(), None);
        assert!(o
            .requests_incomplete()
            .is_some_and(|w| w.contains("2 connection")));
        // Without the announcement (a file from before), or before the start, they are
        // garbage, and the requests were not observed.
        let bytes = file(&[start(), conn, req, Line::End(End::default())]);
        let o = parse(&mut &bytes[..]);
        assert_eq!(o.bad_lines, [2, 3]);
        assert!(o.requests_incomplete().is_some());
        let bytes = file(&[relaying, start(), Line::End(End::default())]);
        assert!(parse(&mut &bytes[..]).requests_incomplete().is_some());
    }

    #[test]
    fn a_whole_file_is_complete_and_keeps_every_open() {
        let bytes = file(&[start(), open("/a"), open("/b"), Line::End(End::default())]);
        let o = parse(&mut &bytes[..]);
        assert_eq!(o.opens.len(), 2);
        assert_eq!(o.incomplete(), None);
    }

    #[test]
    fn a_file_without_its_end_or_with_garbage_or_losses_is_incomplete_but_keeps_its_opens() {
        let bytes = file(&[start(), open("/a")]);
        let o = parse(&mut &bytes[..]);
        assert_eq!(o.opens.len(), 1);
        assert!(o.incomplete().is_some_and(|w| w.contains("no end")));

        let mut bytes = file(&[start(), open("/a")]);
        bytes.extend_from_slice(b"{not json\n");
        bytes.extend(file(&[Line::End(End::default())]));
        let o = parse(&mut &bytes[..]);
        assert_eq!(o.bad_lines, [3]);
        assert!(o.incomplete().is_some_and(|w| w.contains("line 3")));

        for end in [
            End {
                overflow: true,
                ..End::default()
            },
            End {
                dropped: 3,
                ..End::default()
            },
            End {
                read_errors: 1,
                ..End::default()
            },
            End {
                unresolved: 1,
                ..End::default()
            },
            End {
                error: Some("fanotify_init: EPERM".into()),
                ..End::default()
            },
        ] {
            let bytes = file(&[start(), open("/a"), Line::End(end.clone())]);
            let o = parse(&mut &bytes[..]);
            assert!(o.incomplete().is_some(), "{end:?}");
            assert_eq!(o.opens.len(), 1);
        }
        // Nothing after the end counts, and a second start is garbage.
        let bytes = file(&[start(), Line::End(End::default()), open("/late"), start()]);
        let o = parse(&mut &bytes[..]);
        assert!(o.opens.is_empty());
        assert_eq!(o.bad_lines, [3, 4]);
        // An empty file watched nothing.
        assert!(parse(&mut &b""[..]).incomplete().is_some());
    }
}
