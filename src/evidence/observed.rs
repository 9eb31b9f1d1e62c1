//! Observed opens: what a sealed trial's processes were seen by the kernel to open,
//! as the sandbox's init recorded it (`gauntlet-seal`, fanotify), and the pure parser
//! that reads the record back.
//!
//! The file is JSON lines written only by init, outside the sandbox's view: a `start`
//! line naming what is watched and what is not, one `open` line per distinct path and
//! access (the first time it was seen), and an `end` line with the counts. A file
//! without its `end` line (init was killed), with an overflow, with dropped entries or
//! with lines that do not parse is an *incomplete* observation: what it holds still
//! counts, but it cannot show that nothing else was opened.

use std::io::BufRead;

use serde::{Deserialize, Serialize};

/// How a path was used, as far as the kernel reports it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
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
    },
    Open(Open),
    End(End),
}

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
    /// Why observing stopped or never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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
    pub opens: Vec<Open>,
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
            Ok(Line::Start { watched, unwatched }) if !started && o.opens.is_empty() => {
                o.watched = watched;
                o.unwatched = unwatched;
            }
            Ok(Line::Open(open)) if o.end.is_none() => o.opens.push(open),
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
        }
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
