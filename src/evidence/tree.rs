//! What a bounded walk of an agent-written tree saw, as evidence says it (pure: the walk
//! itself is `sys::walk`).
//!
//! An agent controls what lies in its workspace, its state directory and its test
//! directory, so reading "everything" there is reading what it chose: a terabyte of
//! holes, a million files, a chain of directories. Every walk the harness makes of such
//! a tree therefore reads at most so many bytes per file and in all, lists at most so
//! many entries, and stops at its deadline or when the run is asked to stop. What it did
//! not read is said, never passed off as read: a file hashed only in part carries a
//! [`Partial`], and a walk that stopped early carries a [`Cut`].
//!
//! Names are the agent's bytes, not text: a name need not be UTF-8. A path in evidence
//! is written with [`escape_name`] (bytes that are not UTF-8 as `\xNN`, a backslash as
//! `\\`), so that two names are two entries: a lossy conversion would make `\xff`,
//! `\xfe` and a real U+FFFD one name, and one file's record would stand for three.
//! [`unescape_path`] gives the bytes back, to open the same file again.

use serde::{Deserialize, Serialize};

/// How much one walk may read and list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes read of any one file, from its start.
    pub file_bytes: u64,
    /// Bytes read of a sparse file (one with fewer bytes on disk than its size): its
    /// holes read as zeros the agent never wrote, so only a prefix says anything.
    pub sparse_bytes: u64,
    /// Bytes read over the whole walk; files past it are recorded by size alone.
    pub total_bytes: u64,
    /// Entries listed over the whole walk, of any kind.
    pub entries: usize,
    /// Directories below the root that are entered; a deeper one stops the walk.
    pub depth: usize,
}

/// Why a file's hash covers only its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Fewer bytes on disk than its size: a prefix, not its holes.
    Sparse,
    /// Larger than [`Limits::file_bytes`].
    FileLimit,
    /// The walk had read [`Limits::total_bytes`] by the time it came to this file.
    TotalLimit,
}

/// A file hashed in part: its recorded hash is of its first `hashed_bytes` bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Partial {
    pub hashed_bytes: u64,
    pub why: Bound,
    /// A sparse file's bytes on disk (its size is the entry's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_bytes: Option<u64>,
}

impl std::fmt::Display for Partial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = match self.why {
            Bound::Sparse => "sparse",
            Bound::FileLimit => "over the per-file read limit",
            Bound::TotalLimit => "past the walk's read limit",
        };
        write!(
            f,
            "only its first {} bytes hashed ({why})",
            self.hashed_bytes
        )
    }
}

/// Why a walk stopped before it had listed the whole tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum CutWhy {
    /// The deadline of the trial step it observes passed.
    Deadline,
    /// The run was asked to stop (the signal's name).
    Shutdown { signal: String },
    /// More entries than [`Limits::entries`].
    Entries { limit: usize },
    /// A directory deeper than [`Limits::depth`].
    Depth { limit: usize, path: String },
    /// A directory the walk listed could not be opened or listed when its turn came
    /// (`path`, escaped; `error`, what the kernel said): what lies below it was not
    /// seen, so the walk is incomplete, never silently shorter. A directory that
    /// vanished in between is not this: it has nothing left to see.
    Unreadable { path: String, error: String },
}

/// A walk that stopped early: why, and how many entries it had listed by then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cut {
    #[serde(flatten)]
    pub why: CutWhy,
    pub after_entries: usize,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.why {
            CutWhy::Deadline => write!(f, "stopped at its deadline")?,
            CutWhy::Shutdown { signal } => write!(f, "stopped by {signal}")?,
            CutWhy::Entries { limit } => write!(f, "stopped at the limit of {limit} entries")?,
            CutWhy::Depth { limit, path } => write!(
                f,
                "stopped at `{path}`, deeper than the limit of {limit} directories"
            )?,
            CutWhy::Unreadable { path, error } => write!(
                f,
                "stopped at `{path}`, a directory it listed but could not read ({error})"
            )?,
        }
        write!(f, " after {} entries", self.after_entries)
    }
}

/// Append `name` (one component, as the filesystem holds it) to `out`, escaped so
/// that distinct byte strings stay distinct: valid UTF-8 is kept as it is, a backslash
/// is written `\\`, and each byte that is not part of valid UTF-8 is written `\xNN`
/// (two lowercase hex digits). A `/` never occurs in a name, so a path escaped
/// component by component and joined by `/` is as distinct as the paths were.
pub fn escape_name(name: &[u8], out: &mut String) {
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
}

/// [`escape_name`] of one name, as a new string.
pub fn escaped(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    escape_name(name, &mut out);
    out
}

/// The bytes of a path written by [`escape_name`]; `None` when `rel` holds a
/// backslash [`escape_name`] never writes (then it names no file of the tree).
pub fn unescape_path(rel: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(rel.len());
    let mut rest = rel.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b != b'\\' {
            out.push(b);
            rest = tail;
            continue;
        }
        match tail {
            [b'\\', more @ ..] => {
                out.push(b'\\');
                rest = more;
            }
            [b'x', hi, lo, more @ ..] => {
                let hex = |d: u8| (d as char).to_digit(16).filter(|_| !d.is_ascii_uppercase());
                out.push((hex(*hi)? * 16 + hex(*lo)?) as u8);
                rest = more;
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_and_a_partial_hash_say_what_was_not_read() {
        let cut = Cut {
            why: CutWhy::Entries { limit: 10 },
            after_entries: 10,
        };
        assert_eq!(
            cut.to_string(),
            "stopped at the limit of 10 entries after 10 entries"
        );
        let p = Partial {
            hashed_bytes: 65536,
            why: Bound::Sparse,
            allocated_bytes: Some(0),
        };
        assert_eq!(p.to_string(), "only its first 65536 bytes hashed (sparse)");
        let json = serde_json::to_value(&p).unwrap_or_default();
        assert_eq!(json["why"], "sparse");
        assert_eq!(json["allocated_bytes"], 0);
    }

    /// `\xff`, `\xfe`, a real U+FFFD, a name spelling `\xff` with a backslash, and
    /// invalid UTF-8 beside valid text: each its own string, and each given back.
    #[test]
    fn escaped_names_stay_distinct_and_give_their_bytes_back() {
        let names: [&[u8]; 8] = [
            b"\xff",
            b"\xfe",
            "\u{fffd}".as_bytes(),
            b"\\xff",
            b"\\",
            b"\xc3\x28bad",
            b"\xed\xa0\x80surrogate",
            "caf\u{e9} \n\t\"q\"".as_bytes(),
        ];
        let out: Vec<String> = names.iter().map(|n| escaped(n)).collect();
        assert_eq!(out[0], "\\xff");
        assert_eq!(out[1], "\\xfe");
        assert_eq!(out[2], "\u{fffd}");
        assert_eq!(out[3], "\\\\xff");
        assert_eq!(out[4], "\\\\");
        assert_eq!(out[5], "\\xc3(bad");
        assert_eq!(out[6], "\\xed\\xa0\\x80surrogate");
        assert_eq!(out[7], "caf\u{e9} \n\t\"q\"");
        let distinct: std::collections::BTreeSet<&String> = out.iter().collect();
        assert_eq!(distinct.len(), names.len());
        for (name, e) in names.iter().zip(&out) {
            assert_eq!(unescape_path(e).as_deref(), Some(*name), "{e}");
        }
        assert_eq!(
            unescape_path("a/\\xffdir/inner").as_deref(),
            Some(&b"a/\xffdir/inner"[..])
        );
        for never in ["\\q", "\\x4", "\\xFF", "trailing\\"] {
            assert_eq!(unescape_path(never), None, "{never}");
        }
    }

    #[test]
    fn an_unreadable_directory_cut_names_it_and_why() {
        let cut = Cut {
            why: CutWhy::Unreadable {
                path: "odd/\\xffdir".into(),
                error: "Permission denied (os error 13)".into(),
            },
            after_entries: 9,
        };
        assert_eq!(
            cut.to_string(),
            "stopped at `odd/\\xffdir`, a directory it listed but could not read \
             (Permission denied (os error 13)) after 9 entries"
        );
    }
}
