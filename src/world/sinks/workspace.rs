//! The workspace observer: a snapshot of every regular file under a root (path → size,
//! SHA-256, mtime) taken before and after a window, and a pure diff of the two that
//! says which files were written (new), changed, appended to, deleted, or only
//! touched (rewritten with the same bytes — what an idempotent re-run may do, P5.4).
//!
//! Appends are told apart from rewrites without keeping old contents: a snapshot taken
//! [`WorkspaceSnapshot::take_against`] an earlier one also hashes, for each file that
//! grew, its first `before.size` bytes.
//!
//! Symlinks are recorded as entries (their target, hashed) and never followed, so an
//! agent cannot make the observer read outside the root.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::SinkError;
use crate::sys::beneath::{BeneathError, Dir, Kind};

/// A snapshot refuses roots with more files than this.
pub const FILE_LIMIT: usize = 50_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub size: u64,
    /// `sha256:<hex>` of the content (of the link target's path for a symlink).
    pub sha256: String,
    /// Modification time, Unix epoch milliseconds.
    pub mtime_ms: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symlink: bool,
    /// `sha256:<hex>` of the first `size` bytes of the earlier snapshot's entry, when
    /// this file grew since then (see [`WorkspaceSnapshot::take_against`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_sha256: Option<String>,
}

/// Relative path (with `/`) → entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceSnapshot {
    pub taken_at_ms: u64,
    pub files: BTreeMap<String, FileEntry>,
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
        Self::walk(root, None)
    }

    /// [`WorkspaceSnapshot::take`], also recording prefix hashes of files that grew
    /// since `before`, so that [`diff`] can tell appends from rewrites.
    pub fn take_against(
        root: &Path,
        before: &WorkspaceSnapshot,
    ) -> Result<WorkspaceSnapshot, SinkError> {
        Self::walk(root, Some(before))
    }

    fn walk(
        root: &Path,
        before: Option<&WorkspaceSnapshot>,
    ) -> Result<WorkspaceSnapshot, SinkError> {
        let taken_at_ms = super::now_ms();
        let mut files = BTreeMap::new();
        // Walked by open directory descriptors (`sys::beneath`), never by path: a
        // directory swapped for a symlink mid-walk is not entered, a file swapped for
        // a symlink or a FIFO is not opened, and what is hashed is what was opened.
        let top = match Dir::open(root) {
            Ok(d) => d,
            Err(e) if e.is_not_found() => return Ok(WorkspaceSnapshot { taken_at_ms, files }),
            Err(e) => return Err(SinkError::Unsafe(e)),
        };
        let mut stack: Vec<(Dir, String)> = vec![(top, String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            for entry in dir.entries().map_err(SinkError::Unsafe)? {
                let name = Path::new(&entry.name);
                let rel = match prefix.as_str() {
                    "" => entry.name.to_string_lossy().into_owned(),
                    p => format!("{p}/{}", entry.name.to_string_lossy()),
                };
                match entry.kind {
                    Kind::Dir => {
                        match dir.sub(name) {
                            Ok(sub) => stack.push((sub, rel)),
                            Err(e) if e.is_race() => {}
                            Err(e) => return Err(SinkError::Unsafe(e)),
                        }
                        continue;
                    }
                    Kind::Other(_) => continue, // sockets, fifos: no content to compare
                    Kind::File | Kind::Symlink => {}
                }
                if files.len() >= FILE_LIMIT {
                    return Err(SinkError::TooManyFiles {
                        root: root.to_path_buf(),
                        limit: FILE_LIMIT,
                    });
                }
                let found = if entry.kind == Kind::Symlink {
                    dir.read_link(&entry.name).map(|target| {
                        let bytes = target.to_string_lossy().into_owned().into_bytes();
                        FileEntry {
                            size: bytes.len() as u64,
                            sha256: hex_digest(&bytes),
                            mtime_ms: entry.mtime_ms,
                            symlink: true,
                            prefix_sha256: None,
                        }
                    })
                } else {
                    dir.open_file(name).and_then(|(file, meta)| {
                        let grew_from = before
                            .and_then(|b| b.files.get(&rel))
                            .filter(|old| !old.symlink && old.size < meta.len())
                            .map(|old| old.size);
                        let mtime_ms = meta
                            .modified()
                            .ok()
                            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                            .map(|d| d.as_millis() as u64)
                            .unwrap_or(0);
                        let (sha256, prefix_sha256, size) =
                            hash_file(file, grew_from).map_err(|source| BeneathError::Io {
                                path: dir.path().join(name),
                                source,
                            })?;
                        Ok(FileEntry {
                            size,
                            sha256,
                            mtime_ms,
                            symlink: false,
                            prefix_sha256,
                        })
                    })
                };
                match found {
                    Ok(e) => {
                        files.insert(rel, e);
                    }
                    // Changed while looked at: left out of this snapshot.
                    Err(e) if e.is_race() => {}
                    Err(e) => return Err(SinkError::Unsafe(e)),
                }
            }
        }
        Ok(WorkspaceSnapshot { taken_at_ms, files })
    }
}

/// `sha256:<hex>` of `bytes`, as a snapshot's entries hash contents.
pub fn sha256_of(bytes: &[u8]) -> String {
    hex_digest(bytes)
}

fn hex_digest(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    let mut s = String::with_capacity(7 + digest.len() * 2);
    s.push_str("sha256:");
    for b in digest {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// The whole file's hash, the hash of its first `prefix` bytes if asked, and its size.
fn hash_file(
    mut file: std::fs::File,
    prefix: Option<u64>,
) -> std::io::Result<(String, Option<String>, u64)> {
    let mut whole = Sha256::new();
    let mut head = prefix.map(|n| (Sha256::new(), n));
    let mut buf = vec![0u8; 64 * 1024];
    let mut size: u64 = 0;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        whole.update(&buf[..n]);
        if let Some((h, limit)) = head.as_mut() {
            let left = limit.saturating_sub(size);
            let take = (n as u64).min(left) as usize;
            h.update(&buf[..take]);
        }
        size += n as u64;
    }
    let prefix_sha256 = head.and_then(|(h, limit)| (size >= limit).then(|| hex(&h.finalize())));
    Ok((hex(&whole.finalize()), prefix_sha256, size))
}

/// What changed from `before` to `after`: pure, no I/O.
pub fn diff(before: &WorkspaceSnapshot, after: &WorkspaceSnapshot) -> WorkspaceDiff {
    let mut d = WorkspaceDiff::default();
    for (path, new) in &after.files {
        match before.files.get(path) {
            None => d.written.push(path.clone()),
            Some(old) if old.sha256 == new.sha256 && old.symlink == new.symlink => {
                if new.mtime_ms != old.mtime_ms {
                    d.touched.push(path.clone());
                }
            }
            Some(old)
                if !old.symlink
                    && new.size > old.size
                    && new.prefix_sha256.as_deref() == Some(old.sha256.as_str()) =>
            {
                d.appended.push(path.clone())
            }
            Some(_) => d.changed.push(path.clone()),
        }
    }
    d.deleted = before
        .files
        .keys()
        .filter(|p| !after.files.contains_key(*p))
        .cloned()
        .collect();
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
}
