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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// A walk that stopped early: why, and how many entries it had listed by then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
        }
        write!(f, " after {} entries", self.after_entries)
    }
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
}
