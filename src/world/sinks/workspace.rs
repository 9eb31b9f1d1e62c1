//! The workspace observer: a snapshot of every regular file under a root (path → size,
//! SHA-256, mtime) taken before and after a window, and a pure diff of the two that
//! says which files were written (new), changed, appended to, deleted, or only
//! touched (rewritten with the same bytes — what an idempotent re-run may do, P5.4).
//!
//! Appends are told apart from rewrites without keeping old contents: a snapshot taken
//! [`WorkspaceSnapshot::take_against`] an earlier one also hashes, for each file that
//! grew, its first `before.size` bytes.
//!
//! The workspace is the agent's, so the snapshot is a bounded walk (`sys::walk`,
//! [`LIMITS`]): a sparse or huge file is hashed by a prefix and says so
//! ([`FileEntry::partial`]), and a walk stopped by its deadline or the run's stop says
//! so ([`WorkspaceSnapshot::cut`]). The diff claims no more than the snapshots hold:
//! a file hashed in part is unchanged only when nothing that was looked at moved, and
//! a cut snapshot reports no deletions (what it did not reach was not deleted).
//!
//! Symlinks are recorded as entries (their target's bytes, hashed) and never followed,
//! so an agent cannot make the observer read outside the root.
//!
//! Paths are keys as the walk writes them: components joined by `/`, each escaped
//! (`evidence::tree::escape_name`: bytes that are not UTF-8 as `\xNN`, a backslash as
//! `\\`), so that files whose names differ only in bytes that are not UTF-8 are as many
//! entries as there are files, and a file inside a directory so named is seen at all.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::SinkError;
use crate::evidence::tree::{Cut, Limits, Partial};
use crate::sys::walk::{self, ItemKind, WalkError};

/// What one snapshot may read and list. Files the scorer reads as text are at most
/// 64 KiB (`score::scorecard::FILE_TEXT_CAP`), so a per-file bound well above it loses
/// nothing a rule looks at; past it, hashes only tell changes apart.
pub const LIMITS: Limits = Limits {
    file_bytes: 8 << 20,
    sparse_bytes: 64 << 10,
    total_bytes: 64 << 20,
    entries: 50_000,
    depth: 128,
};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub size: u64,
    /// `sha256:<hex>` of the content (of the link target's path for a symlink), or of
    /// its first `partial.hashed_bytes` bytes.
    pub sha256: String,
    /// Modification time, Unix epoch milliseconds.
    pub mtime_ms: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symlink: bool,
    /// `sha256:<hex>` of the first `size` bytes of the earlier snapshot's entry, when
    /// this file grew since then (see [`WorkspaceSnapshot::take_against`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_sha256: Option<String>,
    /// Set when `sha256` covers only a prefix of the file (sparse, or past a bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
}

/// Relative path (with `/`, each name escaped: see the module's doc) → entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceSnapshot {
    pub taken_at_ms: u64,
    pub files: BTreeMap<String, FileEntry>,
    /// Set when the walk stopped before it had seen the whole workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
}

/// What happened to the files between two snapshots (relative paths, sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceDiff {
    /// New files.
    pub written: Vec<String>,
    /// Content differs, and is not the old content with more after it.
    pub changed: Vec<String>,
    /// The old content followed by more.
    pub appended: Vec<String>,
    pub deleted: Vec<String>,
    /// Same content, newer mtime: rewritten without a change.
    pub touched: Vec<String>,
}

impl WorkspaceDiff {
    /// Nothing written, changed, appended or deleted (touches do not count).
    pub fn is_unchanged(&self) -> bool {
        self.written.is_empty()
            && self.changed.is_empty()
            && self.appended.is_empty()
            && self.deleted.is_empty()
    }
}

impl WorkspaceSnapshot {
    /// Every regular file and symlink under `root`. A missing root is an empty snapshot
    /// (a workspace the agent never created has no files).
    pub fn take(root: &Path) -> Result<WorkspaceSnapshot, SinkError> {
        Self::take_until(root, None, None)
    }

    /// [`WorkspaceSnapshot::take`], also recording prefix hashes of files that grew
    /// since `before`, so that [`diff`] can tell appends from rewrites.
    pub fn take_against(
        root: &Path,
        before: &WorkspaceSnapshot,
    ) -> Result<WorkspaceSnapshot, SinkError> {
        Self::take_until(root, Some(before), None)
    }

    /// [`WorkspaceSnapshot::take_against`] `before` when given, stopping at `deadline`
    /// (and when the run is asked to stop) with [`WorkspaceSnapshot::cut`] set.
    pub fn take_until(
        root: &Path,
        before: Option<&WorkspaceSnapshot>,
        deadline: Option<Instant>,
    ) -> Result<WorkspaceSnapshot, SinkError> {
        let taken_at_ms = super::now_ms();
        let mut files = BTreeMap::new();
        let walked = walk::walk(root, &LIMITS, deadline, |item| {
            let entry = match item.kind {
                ItemKind::Dir | ItemKind::Other { .. } => return Ok(()),
                ItemKind::Symlink { target } => {
                    // The target's own bytes: a lossy one would hash two targets alike.
                    let bytes = {
                        use std::os::unix::ffi::OsStrExt;
                        target.as_os_str().as_bytes().to_vec()
                    };
                    FileEntry {
                        size: bytes.len() as u64,
                        sha256: crate::hash::sha256(&bytes),
                        mtime_ms: item.mtime_ms,
                        symlink: true,
                        prefix_sha256: None,
                        partial: None,
                    }
                }
                ItemKind::File(file) => {
                    let grew_from = before
                        .and_then(|b| b.files.get(item.rel))
                        .filter(|old| {
                            !old.symlink && old.partial.is_none() && old.size < file.size()
                        })
                        .map(|old| old.size);
                    let d = file.digest(grew_from)?;
                    FileEntry {
                        size: d.size,
                        sha256: d.sha256,
                        mtime_ms: file.mtime_ms(),
                        symlink: false,
                        prefix_sha256: d.prefix_sha256,
                        partial: d.partial,
                    }
                }
            };
            files.insert(item.rel.to_string(), entry);
            Ok(())
        })
        .map_err(|e| match e {
            WalkError::Unsafe(e) => SinkError::Unsafe(e),
            e => SinkError::Walk(e),
        })?;
        Ok(WorkspaceSnapshot {
            taken_at_ms,
            files,
            cut: walked.cut,
        })
    }
}

/// `sha256:<hex>` of `bytes`, as a snapshot's entries hash contents.
pub fn sha256_of(bytes: &[u8]) -> String {
    crate::hash::sha256(bytes)
}

/// Whether two entries of one path hold the same bytes: `Some` when the hashes show it
/// either way, `None` when a partial hash leaves it open.
fn same_bytes(old: &FileEntry, new: &FileEntry) -> Option<bool> {
    if old.symlink != new.symlink || old.size != new.size {
        return Some(false);
    }
    match (&old.partial, &new.partial) {
        (None, None) => Some(old.sha256 == new.sha256),
        (Some(a), Some(b)) if a.hashed_bytes == b.hashed_bytes && old.sha256 != new.sha256 => {
            Some(false)
        }
        _ => None,
    }
}

/// What changed from `before` to `after`: pure, no I/O.
///
/// A file hashed in part (in either snapshot) whose size and mtime did not move is
/// unchanged, and changed otherwise: the bytes that were not read cannot show a touch
/// or an append. A path of `before` missing from a cut `after` is not reported deleted.
pub fn diff(before: &WorkspaceSnapshot, after: &WorkspaceSnapshot) -> WorkspaceDiff {
    let mut d = WorkspaceDiff::default();
    for (path, new) in &after.files {
        let Some(old) = before.files.get(path) else {
            d.written.push(path.clone());
            continue;
        };
        match same_bytes(old, new) {
            Some(true) => {
                if new.mtime_ms != old.mtime_ms {
                    d.touched.push(path.clone());
                }
            }
            None if new.mtime_ms == old.mtime_ms => {}
            _ if !old.symlink
                && old.partial.is_none()
                && new.size > old.size
                && new.prefix_sha256.as_deref() == Some(old.sha256.as_str()) =>
            {
                d.appended.push(path.clone())
            }
            _ => d.changed.push(path.clone()),
        }
    }
    if after.cut.is_none() {
        d.deleted = before
            .files
            .keys()
            .filter(|p| !after.files.contains_key(*p))
            .cloned()
            .collect();
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(path, content).unwrap_or_else(|e| panic!("{e}"));
    }

    fn bump_mtime(path: &Path) {
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        let f = std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("{e}"));
        f.set_modified(later).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn diff_tells_written_changed_appended_deleted_and_touched_apart() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        write(root, "keep.txt", "same");
        write(root, "log.txt", "line 1\n");
        write(root, "edit.csv", "a,b\n");
        write(root, "gone.txt", "bye");
        write(root, "touch.txt", "t");
        let before = WorkspaceSnapshot::take(root).unwrap_or_else(|e| panic!("{e}"));

        write(root, "sub/new.txt", "hello");
        write(root, "log.txt", "line 1\nline 2\n");
        write(root, "edit.csv", "a,c\nmore\n");
        std::fs::remove_file(root.join("gone.txt")).unwrap_or_else(|e| panic!("{e}"));
        write(root, "touch.txt", "t");
        bump_mtime(&root.join("touch.txt"));
        let after =
            WorkspaceSnapshot::take_against(root, &before).unwrap_or_else(|e| panic!("{e}"));

        let d = diff(&before, &after);
        assert_eq!(d.written, ["sub/new.txt"]);
        assert_eq!(d.appended, ["log.txt"]);
        assert_eq!(d.changed, ["edit.csv"]);
        assert_eq!(d.deleted, ["gone.txt"]);
        assert_eq!(d.touched, ["touch.txt"]);
        assert!(!d.is_unchanged());
        assert_eq!(after.files["sub/new.txt"].size, 5);
        assert_eq!(
            after.files["sub/new.txt"].sha256,
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
    }

    #[test]
    fn a_missing_root_is_empty_and_identical_snapshots_diff_to_nothing() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let missing =
            WorkspaceSnapshot::take(&dir.path().join("nope")).unwrap_or_else(|e| panic!("{e}"));
        assert!(missing.files.is_empty());
        write(dir.path(), "a", "1");
        let a = WorkspaceSnapshot::take(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let b = WorkspaceSnapshot::take_against(dir.path(), &a).unwrap_or_else(|e| panic!("{e}"));
        assert!(diff(&a, &b).is_unchanged());
        assert!(diff(&a, &b).touched.is_empty());
    }

    #[test]
    fn symlinks_are_recorded_not_followed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link"))
            .unwrap_or_else(|e| panic!("{e}"));
        let s = WorkspaceSnapshot::take(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.files["link"].symlink);
        assert_eq!(s.files["link"].size, "/etc/passwd".len() as u64);
    }

    /// A FIFO (a reader would block on it forever) and a directory symlinked outside
    /// are in the watched root: the snapshot neither blocks nor enters them.
    #[test]
    fn a_fifo_does_not_block_and_a_linked_dir_is_not_entered() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        write(outside.path(), "secret.txt", "SECRET");
        write(dir.path(), "ok.txt", "fine");
        nix::unistd::mkfifo(
            &dir.path().join("pipe"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out"))
            .unwrap_or_else(|e| panic!("{e}"));
        let (tx, rx) = std::sync::mpsc::channel();
        let root = dir.path().to_path_buf();
        std::thread::spawn(move || {
            let _ = tx.send(WorkspaceSnapshot::take(&root));
        });
        let s = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("the snapshot blocked on a FIFO"))
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = s.files.keys().map(String::as_str).collect();
        assert_eq!(names, ["ok.txt", "out"]);
        assert!(s.files["out"].symlink);
    }

    /// A terabyte of holes is recorded by its size and a prefix hash, marked sparse,
    /// and a second snapshot of the untouched file sees no change.
    #[test]
    fn a_sparse_file_is_recorded_by_size_and_seen_unchanged() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let before = WorkspaceSnapshot::take(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let f = std::fs::File::create(dir.path().join("big")).unwrap_or_else(|e| panic!("{e}"));
        f.set_len(1 << 40).unwrap_or_else(|e| panic!("{e}"));
        drop(f);
        let first =
            WorkspaceSnapshot::take_against(dir.path(), &before).unwrap_or_else(|e| panic!("{e}"));
        let big = &first.files["big"];
        assert_eq!(big.size, 1 << 40);
        let partial = big.partial.clone().unwrap_or_else(|| panic!("not partial"));
        assert_eq!(partial.why, crate::evidence::tree::Bound::Sparse);
        assert_eq!(partial.hashed_bytes, LIMITS.sparse_bytes);
        assert_eq!(diff(&before, &first).written, ["big"]);
        let again =
            WorkspaceSnapshot::take_against(dir.path(), &first).unwrap_or_else(|e| panic!("{e}"));
        assert!(diff(&first, &again).is_unchanged());
        // Grown by a byte at its far end: a change the prefix cannot show, the size does.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("big"))
            .unwrap_or_else(|e| panic!("{e}"));
        f.set_len((1 << 40) + 1).unwrap_or_else(|e| panic!("{e}"));
        drop(f);
        let grown =
            WorkspaceSnapshot::take_against(dir.path(), &again).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(diff(&again, &grown).changed, ["big"]);
    }

    /// A snapshot stopped by its deadline says so, and a diff against it reports no
    /// deletion of what it did not reach.
    #[test]
    fn a_cut_snapshot_says_so_and_reports_no_deletions() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        write(dir.path(), "a.txt", "1");
        let before = WorkspaceSnapshot::take(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let past = std::time::Instant::now()
            .checked_sub(std::time::Duration::from_millis(1))
            .unwrap_or_else(std::time::Instant::now);
        let cut = WorkspaceSnapshot::take_until(dir.path(), Some(&before), Some(past))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(cut.files.is_empty());
        assert_eq!(
            cut.cut.as_ref().map(|c| &c.why),
            Some(&crate::evidence::tree::CutWhy::Deadline)
        );
        assert!(diff(&before, &cut).is_unchanged());
    }
}
