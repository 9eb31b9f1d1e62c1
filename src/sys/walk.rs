//! The one walk of a tree an agent wrote: its workspace, its state directory, a claimed
//! test directory. Hashing, measuring and copying such a tree all go through
//! [`walk`], so each is bounded the same way ([`Limits`], `evidence::tree`).
//!
//! Why each bound: the agent chose what is there, and the harness must end the trial
//! whatever it chose. A sparse file costs the agent one `truncate` and the reader
//! every byte of its size, so a sparse file is read only for a prefix; a dense one is
//! read up to a per-file bound, and the walk as a whole up to a total, past which a
//! file is recorded by its size alone. Listing is bounded by a count of entries and a
//! depth. Time is bounded by the deadline the caller passes (the trial step's) and by
//! the run being asked to stop (`sys::shutdown`), checked between entries and between
//! chunks of a file, so a walk that stops says so ([`Cut`]) and the caller can record
//! what it saw and why it is incomplete, instead of hanging past every deadline.
//!
//! Everything is opened through `sys::beneath`: no symlink is followed (a symlink is
//! reported with its target, never entered or read through), a FIFO, socket or device
//! is listed but never opened, and what is hashed or copied is what was opened.
//!
//! A directory is entered from its parent's open descriptor by its own name, as the
//! bytes the listing gave (`openat2` of one component, beneath the parent, no symlink
//! followed), never by a path from the root: such a path may be longer than PATH_MAX
//! (24 directories of 255-byte names make one), and a name made lossy UTF-8 opens
//! nothing, or another directory. So the walk holds one descriptor per level of the
//! directory it is in (at most [`Limits::depth`] + 1), however wide the tree is. Paths
//! handed to the visitor are escaped ([`crate::evidence::tree::escape_name`]) so that
//! distinct names stay distinct, and the bytes themselves come with them
//! ([`Item::raw`]). A directory that was listed but cannot be entered or listed when
//! its turn comes cuts the walk ([`CutWhy::Unreadable`]): what lies below it is unseen,
//! which is said, not skipped.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::evidence::tree::{escape_name, Bound, Cut, CutWhy, Limits, Partial};
use crate::sys::beneath::{BeneathError, Dir, Kind};

/// Why a walk could not go on (a limit or a deadline is a [`Cut`], not an error).
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error(transparent)]
    Unsafe(#[from] BeneathError),
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot write the copy: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {size} bytes, more than may be read of it ({limit})")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{path}: holds more than {limit} bytes")]
    TreeTooLarge { path: PathBuf, limit: u64 },
    /// A file's read was stopped by the deadline or the run's stop: [`walk`] turns it
    /// into the walk's [`Cut`].
    #[error("{path}: read stopped: {why:?}")]
    Stopped { path: PathBuf, why: CutWhy },
}

/// What one walk did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walked {
    /// Entries listed, of every kind.
    pub entries: usize,
    /// Bytes read of files.
    pub read_bytes: u64,
    /// Set when the walk stopped before it had listed the whole tree.
    pub cut: Option<Cut>,
}

/// One entry of the tree, as the visitor of [`walk`] gets it.
pub struct Item<'a> {
    /// Its path below the root, components joined by `/`, each escaped
    /// ([`escape_name`]): what evidence records, one string per distinct path.
    pub rel: &'a str,
    /// Its path below the root as the filesystem holds it (the bytes, not UTF-8 text):
    /// what a copy of the tree creates.
    pub raw: &'a Path,
    /// Its own modification time (a symlink's, not its target's), Unix epoch ms.
    pub mtime_ms: u64,
    pub kind: ItemKind<'a>,
}

pub enum ItemKind<'a> {
    /// Entered after its parent's other entries, if the walk goes on.
    Dir,
    Symlink {
        target: PathBuf,
    },
    /// Opened, not yet read: the visitor reads it (or not) through [`OpenFile`].
    File(&'a mut OpenFile),
    /// A FIFO, socket or device: never opened.
    Other {
        kind: &'static str,
    },
}

/// A regular file of the tree, opened (never through a link, never blocking), that
/// reads at most what the walk's limits leave for it.
pub struct OpenFile {
    file: std::fs::File,
    path: PathBuf,
    size: u64,
    allocated: u64,
    mode: u32,
    mtime_ms: u64,
    allowance: u64,
    bound: Option<Bound>,
    deadline: Option<Instant>,
    read: u64,
}

/// A file's hash as far as the walk read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigest {
    pub size: u64,
    /// `sha256:<hex>` of the whole file, or of its first `partial.hashed_bytes`.
    pub sha256: String,
    pub partial: Option<Partial>,
    /// `sha256:<hex>` of its first `n` bytes, when asked for `n` and that many were read.
    pub prefix_sha256: Option<String>,
}

const CHUNK: usize = 64 << 10;

impl OpenFile {
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Permission bits (no set-id bits: a copy made by the harness never carries them).
    pub fn mode(&self) -> u32 {
        self.mode & 0o777
    }

    pub fn mtime_ms(&self) -> u64 {
        self.mtime_ms
    }

    fn partial(&self, hashed: u64) -> Option<Partial> {
        let why = self.bound?;
        Some(Partial {
            hashed_bytes: hashed,
            why,
            allocated_bytes: (why == Bound::Sparse).then_some(self.allocated),
        })
    }

    /// Hash what may be read of the file; and, when `prefix` is given and at least
    /// that many bytes are read, the hash of its first `prefix` bytes too (so that an
    /// append can be told from a rewrite without keeping old contents).
    pub fn digest(&mut self, prefix: Option<u64>) -> Result<FileDigest, WalkError> {
        let mut whole = crate::hash::Sha256Stream::default();
        let mut head = prefix.map(|n| (crate::hash::Sha256Stream::default(), n));
        let mut at = 0u64;
        let read = self.read_allowed(|chunk| {
            whole.update(chunk);
            if let Some((h, n)) = head.as_mut() {
                let take = (*n).saturating_sub(at).min(chunk.len() as u64) as usize;
                h.update(&chunk[..take]);
            }
            at += chunk.len() as u64;
            Ok(())
        })?;
        let prefix_sha256 = head.and_then(|(h, n)| (read >= n).then(|| h.finish()));
        let partial = self.partial(read);
        // A file that shrank while read is as long as what was read; one that grew is
        // as long as it was when opened (never read past that).
        let size = if partial.is_none() { read } else { self.size };
        Ok(FileDigest {
            size,
            sha256: whole.finish(),
            partial,
            prefix_sha256,
        })
    }

    /// Copy the whole file to `out`; refused when the walk's limits leave less than all
    /// of it to read (a copy of a prefix would be a different file).
    pub fn copy_to(&mut self, out: &mut impl Write, to: &Path) -> Result<u64, WalkError> {
        if self.bound.is_some() {
            return Err(WalkError::TooLarge {
                path: self.path.clone(),
                size: self.size,
                limit: self.allowance,
            });
        }
        self.read_allowed(|chunk| {
            out.write_all(chunk).map_err(|source| WalkError::Write {
                path: to.to_path_buf(),
                source,
            })
        })
    }

    /// Read up to the allowance, chunk by chunk, stopping at the deadline or the run's
    /// stop; the number of bytes read.
    fn read_allowed(
        &mut self,
        mut sink: impl FnMut(&[u8]) -> Result<(), WalkError>,
    ) -> Result<u64, WalkError> {
        let mut buf = vec![0u8; (self.allowance.min(CHUNK as u64) as usize).max(1)];
        let mut got = 0u64;
        while got < self.allowance {
            if let Some(why) = stop_reason(self.deadline) {
                self.read += got;
                return Err(WalkError::Stopped {
                    path: self.path.clone(),
                    why,
                });
            }
            let want = (self.allowance - got).min(buf.len() as u64) as usize;
            let n = match self.file.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(WalkError::Read {
                        path: self.path.clone(),
                        source,
                    })
                }
            };
            sink(&buf[..n])?;
            got += n as u64;
        }
        self.read += got;
        Ok(got)
    }
}

/// Why a walk must stop now, if it must.
fn stop_reason(deadline: Option<Instant>) -> Option<CutWhy> {
    if let Some(stop) = crate::sys::shutdown::requested() {
        return Some(CutWhy::Shutdown {
            signal: stop.name().to_string(),
        });
    }
    deadline
        .filter(|d| Instant::now() >= *d)
        .map(|_| CutWhy::Deadline)
}

/// Walk the tree under `root` (a directory the harness made; a missing one is an
/// empty tree) in name order, each directory's entries before what lies below them,
/// handing every entry to `visit`. Stops early, with [`Walked::cut`] saying why, at
/// `limits`' entries or depth, at `deadline`, when the run is asked to stop, or at a
/// listed directory it cannot enter or list. An entry that changes while looked at
/// (vanishes, becomes a symlink or a FIFO) is left out, and so is a directory that
/// vanished before its turn came.
pub fn walk(
    root: &Path,
    limits: &Limits,
    deadline: Option<Instant>,
    mut visit: impl FnMut(Item<'_>) -> Result<(), WalkError>,
) -> Result<Walked, WalkError> {
    let mut w = Walker {
        limits,
        deadline,
        done: Walked::default(),
    };
    let top = match Dir::open(root) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(w.done),
        Err(e) => return Err(e.into()),
    };
    // The directories on the way down to the one being listed, each open, with the
    // subdirectories of it still to enter, in name order.
    let mut stack: Vec<Frame> = Vec::new();
    let mut next = Some((top, String::new(), PathBuf::new(), 1usize));
    loop {
        if let Some((dir, rel, raw, depth)) = next.take() {
            match w.list(&dir, &rel, &raw, depth, &mut visit)? {
                Some(subdirs) => stack.push(Frame {
                    dir,
                    depth,
                    subdirs: subdirs.into_iter(),
                }),
                None => return Ok(w.done),
            }
        }
        let Some(frame) = stack.last_mut() else {
            return Ok(w.done);
        };
        let Some(sub) = frame.subdirs.next() else {
            stack.pop();
            continue;
        };
        if let Some(why) = stop_reason(deadline) {
            w.cut(why);
            return Ok(w.done);
        }
        match frame.dir.sub(Path::new(&sub.name)) {
            Ok(dir) => next = Some((dir, sub.rel, sub.raw, frame.depth + 1)),
            // Gone since it was listed: nothing is left below it to see.
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                w.cut(CutWhy::Unreadable {
                    path: sub.rel,
                    error: reason(&e),
                });
                return Ok(w.done);
            }
        }
    }
}

/// A directory being walked: open, with the subdirectories it listed still to enter.
struct Frame {
    dir: Dir,
    /// Depth of its entries (the root's are at 1).
    depth: usize,
    subdirs: std::vec::IntoIter<Subdir>,
}

/// A subdirectory listed and not yet entered: its name as the listing gave it, and
/// its path below the root, escaped and raw.
struct Subdir {
    name: OsString,
    rel: String,
    raw: PathBuf,
}

struct Walker<'l> {
    limits: &'l Limits,
    deadline: Option<Instant>,
    done: Walked,
}

impl Walker<'_> {
    fn cut(&mut self, why: CutWhy) {
        self.done.cut = Some(Cut {
            why,
            after_entries: self.done.entries,
        });
    }

    /// List `dir` (at `rel`, escaped, and `raw` below the root; its entries at
    /// `depth`), handing each entry to `visit`: its subdirectories, in name order, to
    /// enter next, or `None` when the walk was cut here.
    fn list(
        &mut self,
        dir: &Dir,
        rel_dir: &str,
        raw_dir: &Path,
        depth: usize,
        visit: &mut impl FnMut(Item<'_>) -> Result<(), WalkError>,
    ) -> Result<Option<Vec<Subdir>>, WalkError> {
        let (limits, deadline) = (self.limits, self.deadline);
        if let Some(why) = stop_reason(deadline) {
            self.cut(why);
            return Ok(None);
        }
        let left = limits.entries.saturating_sub(self.done.entries);
        let (listed, more) = match dir.entries_at_most(left) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(Some(Vec::new())),
            Err(e) => {
                let path = if rel_dir.is_empty() { "." } else { rel_dir };
                self.cut(CutWhy::Unreadable {
                    path: path.to_string(),
                    error: reason(&e),
                });
                return Ok(None);
            }
        };
        let mut subdirs = Vec::new();
        for entry in listed {
            if let Some(why) = stop_reason(deadline) {
                self.cut(why);
                return Ok(None);
            }
            let mut rel = String::with_capacity(rel_dir.len() + entry.name.len() + 1);
            if !rel_dir.is_empty() {
                rel.push_str(rel_dir);
                rel.push('/');
            }
            {
                use std::os::unix::ffi::OsStrExt;
                escape_name(entry.name.as_bytes(), &mut rel);
            }
            let raw = raw_dir.join(&entry.name);
            let kind = match entry.kind {
                Kind::Dir => {
                    if depth > limits.depth {
                        self.cut(CutWhy::Depth {
                            limit: limits.depth,
                            path: rel,
                        });
                        return Ok(None);
                    }
                    subdirs.push(Subdir {
                        name: entry.name.clone(),
                        rel: rel.clone(),
                        raw: raw.clone(),
                    });
                    ItemKind::Dir
                }
                Kind::Symlink => match dir.read_link(&entry.name) {
                    Ok(target) => ItemKind::Symlink { target },
                    // Gone, or no longer a link (EINVAL) since it was listed.
                    Err(e) if e.is_race() || is_errno(&e, libc::EINVAL) => continue,
                    Err(e) => return Err(e.into()),
                },
                Kind::Other(kind) => ItemKind::Other { kind },
                Kind::File => {
                    let mut file = match open(dir, &entry.name, limits, &self.done, deadline) {
                        Ok(f) => f,
                        Err(WalkError::Unsafe(e)) if e.is_race() => continue,
                        Err(e) => return Err(e),
                    };
                    self.done.entries += 1;
                    let visited = visit(Item {
                        rel: &rel,
                        raw: &raw,
                        mtime_ms: entry.mtime_ms,
                        kind: ItemKind::File(&mut file),
                    });
                    self.done.read_bytes += file.read;
                    match visited {
                        Ok(()) => {}
                        Err(WalkError::Stopped { why, .. }) => {
                            // The file being read when time ran out is not counted as seen.
                            self.done.entries -= 1;
                            self.cut(why);
                            return Ok(None);
                        }
                        Err(e) => return Err(e),
                    }
                    continue;
                }
            };
            self.done.entries += 1;
            visit(Item {
                rel: &rel,
                raw: &raw,
                mtime_ms: entry.mtime_ms,
                kind,
            })?;
        }
        if more {
            self.cut(CutWhy::Entries {
                limit: limits.entries,
            });
            return Ok(None);
        }
        Ok(Some(subdirs))
    }
}

/// What the kernel said of a directory that could not be entered or listed, without
/// its path (the cut names it, escaped).
fn reason(e: &BeneathError) -> String {
    match e {
        BeneathError::Io { source, .. } => source.to_string(),
        BeneathError::Symlink { .. } => "it became a symlink".into(),
        BeneathError::NotRegular { kind, .. } => format!("it became a {kind}"),
        e => e.to_string(),
    }
}

fn is_errno(e: &BeneathError, errno: i32) -> bool {
    matches!(e, BeneathError::Io { source, .. } if source.raw_os_error() == Some(errno))
}

fn open(
    dir: &Dir,
    name: &std::ffi::OsStr,
    limits: &Limits,
    done: &Walked,
    deadline: Option<Instant>,
) -> Result<OpenFile, WalkError> {
    use std::os::unix::fs::MetadataExt;
    let (file, meta) = dir.open_file(Path::new(name))?;
    let size = meta.len();
    let allocated = meta.blocks().saturating_mul(512);
    let mut allowance = size;
    let mut bound = None;
    if allocated < size && size > limits.sparse_bytes {
        allowance = limits.sparse_bytes;
        bound = Some(Bound::Sparse);
    }
    if allowance > limits.file_bytes {
        allowance = limits.file_bytes;
        bound = Some(Bound::FileLimit);
    }
    let left = limits.total_bytes.saturating_sub(done.read_bytes);
    if allowance > left {
        allowance = left;
        bound = Some(Bound::TotalLimit);
    }
    let mtime_ms =
        (meta.mtime().max(0) as u64) * 1000 + (meta.mtime_nsec().max(0) as u64) / 1_000_000;
    Ok(OpenFile {
        file,
        path: dir.path().join(name),
        size,
        allocated,
        mode: meta.mode(),
        mtime_ms,
        allowance,
        bound,
        deadline,
        read: 0,
    })
}

/// Copy the tree under `from` to `to` (created; it must not exist): directories,
/// regular files (permission bits only) and symlinks as symlinks, never followed;
/// FIFOs, sockets and devices are left out. A file the limits do not let be read whole
/// refuses the copy. A copy cut short is returned with its [`Walked::cut`]: what was
/// copied by then is left for the caller to remove or keep.
pub fn copy_tree(
    from: &Path,
    to: &Path,
    limits: &Limits,
    deadline: Option<Instant>,
) -> Result<Walked, WalkError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let made = |path: &Path| {
        let path = path.to_path_buf();
        move |source| WalkError::Write { path, source }
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(to)
        .map_err(made(to))?;
    walk(from, limits, deadline, |item| {
        let dst = to.join(item.raw);
        match item.kind {
            ItemKind::Dir => std::fs::DirBuilder::new()
                .mode(0o755)
                .create(&dst)
                .map_err(made(&dst)),
            ItemKind::Symlink { target } => {
                std::os::unix::fs::symlink(target, &dst).map_err(made(&dst))
            }
            ItemKind::File(file) => {
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(file.mode())
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&dst)
                    .map_err(made(&dst))?;
                file.copy_to(&mut out, &dst)?;
                // `mode` at creation is masked by the umask: give the bits back.
                use std::os::unix::fs::PermissionsExt;
                out.set_permissions(std::fs::Permissions::from_mode(file.mode()))
                    .map_err(made(&dst))
            }
            ItemKind::Other { .. } => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    const ROOMY: Limits = Limits {
        file_bytes: 1 << 20,
        sparse_bytes: 4096,
        total_bytes: 1 << 20,
        entries: 1000,
        depth: 16,
    };

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
    }

    fn write(root: &Path, rel: &str, content: &[u8]) {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(path, content).unwrap_or_else(|e| panic!("{e}"));
    }

    /// Every entry's relative path and what the walk made of it.
    fn digests(
        root: &Path,
        limits: &Limits,
        deadline: Option<Instant>,
    ) -> (BTreeMap<String, String>, Walked) {
        let mut seen = BTreeMap::new();
        let walked = walk(root, limits, deadline, |item| {
            let what = match item.kind {
                ItemKind::Dir => "dir".to_string(),
                ItemKind::Symlink { target } => format!("-> {}", target.display()),
                ItemKind::Other { kind } => kind.to_string(),
                ItemKind::File(f) => {
                    let d = f.digest(None)?;
                    match d.partial {
                        None => format!("{} {}", d.size, d.sha256),
                        Some(p) => format!("{} {} {p}", d.size, d.sha256),
                    }
                }
            };
            seen.insert(item.rel.to_string(), what);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        (seen, walked)
    }

    #[test]
    fn a_file_over_the_per_file_bound_is_hashed_by_its_prefix() {
        let d = tmp();
        write(d.path(), "small", b"abc");
        write(d.path(), "big", &[b'x'; 10_000]);
        let limits = Limits {
            file_bytes: 100,
            ..ROOMY
        };
        let (seen, walked) = digests(d.path(), &limits, None);
        assert_eq!(seen["small"], format!("3 {}", crate::hash::sha256(b"abc")));
        assert_eq!(
            seen["big"],
            format!(
                "10000 {} only its first 100 bytes hashed (over the per-file read limit)",
                crate::hash::sha256(&[b'x'; 100])
            )
        );
        assert_eq!(walked.read_bytes, 103);
        assert_eq!(walked.cut, None);
    }

    #[test]
    fn past_the_total_bound_files_are_recorded_by_size_alone() {
        let d = tmp();
        write(d.path(), "a", &[b'a'; 60]);
        write(d.path(), "b", &[b'b'; 60]);
        write(d.path(), "c", &[b'c'; 60]);
        let limits = Limits {
            total_bytes: 100,
            ..ROOMY
        };
        let (seen, walked) = digests(d.path(), &limits, None);
        assert_eq!(
            seen["a"],
            format!("60 {}", crate::hash::sha256(&[b'a'; 60]))
        );
        assert!(
            seen["b"].ends_with("only its first 40 bytes hashed (past the walk's read limit)"),
            "{}",
            seen["b"]
        );
        assert!(
            seen["c"].ends_with("only its first 0 bytes hashed (past the walk's read limit)"),
            "{}",
            seen["c"]
        );
        assert_eq!(walked.read_bytes, 100);
    }

    /// A terabyte of holes is recorded by its size and the hash of a prefix, read in no
    /// more than that prefix (the walk reads a few KiB, whatever the size says).
    #[test]
    fn a_sparse_file_is_recorded_by_size_and_a_prefix_hash() {
        let d = tmp();
        let f = std::fs::File::create(d.path().join("holes")).unwrap_or_else(|e| panic!("{e}"));
        f.set_len(1 << 40).unwrap_or_else(|e| panic!("{e}"));
        drop(f);
        let mut got = None;
        let walked = walk(d.path(), &ROOMY, None, |item| {
            if let ItemKind::File(f) = item.kind {
                got = Some(f.digest(Some(10))?);
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let got = got.unwrap_or_else(|| panic!("no file"));
        assert_eq!(got.size, 1 << 40);
        assert_eq!(got.sha256, crate::hash::sha256(&[0u8; 4096]));
        assert_eq!(got.prefix_sha256, Some(crate::hash::sha256(&[0u8; 10])));
        let p = got.partial.unwrap_or_else(|| panic!("not partial"));
        assert_eq!((p.hashed_bytes, p.why), (4096, Bound::Sparse));
        assert!(p.allocated_bytes.is_some_and(|a| a < 1 << 20));
        assert_eq!(walked.read_bytes, 4096);
    }

    #[test]
    fn a_symlink_is_reported_not_followed_and_a_fifo_is_not_opened() {
        let d = tmp();
        let outside = tmp();
        write(outside.path(), "secret", b"SECRET");
        write(d.path(), "ok", b"fine");
        std::os::unix::fs::symlink(outside.path().join("secret"), d.path().join("file-link"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path(), d.path().join("dir-link"))
            .unwrap_or_else(|e| panic!("{e}"));
        nix::unistd::mkfifo(
            &d.path().join("pipe"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (tx, rx) = std::sync::mpsc::channel();
        let root = d.path().to_path_buf();
        std::thread::spawn(move || {
            let _ = tx.send(digests(&root, &ROOMY, None));
        });
        let (seen, _) = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("the walk blocked on a FIFO"));
        let names: Vec<&str> = seen.keys().map(String::as_str).collect();
        assert_eq!(names, ["dir-link", "file-link", "ok", "pipe"]);
        assert_eq!(seen["pipe"], "FIFO");
        assert_eq!(
            seen["file-link"],
            format!("-> {}", outside.path().join("secret").display())
        );
        assert!(seen["dir-link"].starts_with("-> "));
        assert!(!seen
            .values()
            .any(|v| v.contains(&crate::hash::sha256(b"SECRET"))));
    }

    #[test]
    fn a_passed_deadline_stops_the_walk_and_says_so() {
        let d = tmp();
        write(d.path(), "a", b"1");
        let past = Instant::now()
            .checked_sub(Duration::from_millis(1))
            .unwrap_or_else(Instant::now);
        let (seen, walked) = digests(d.path(), &ROOMY, Some(past));
        assert!(seen.is_empty());
        assert_eq!(
            walked.cut,
            Some(Cut {
                why: CutWhy::Deadline,
                after_entries: 0
            })
        );
        let later = Instant::now() + Duration::from_secs(60);
        assert_eq!(digests(d.path(), &ROOMY, Some(later)).1.cut, None);
    }

    #[test]
    fn too_many_entries_or_too_deep_a_tree_stops_the_walk() {
        let d = tmp();
        for i in 0..10 {
            write(d.path(), &format!("f{i}"), b"x");
        }
        let few = Limits {
            entries: 4,
            ..ROOMY
        };
        let (seen, walked) = digests(d.path(), &few, None);
        assert_eq!(seen.len(), 4);
        assert_eq!(
            walked.cut.map(|c| c.why),
            Some(CutWhy::Entries { limit: 4 })
        );
        let deep = tmp();
        write(deep.path(), "a/b/c/d/e", b"x");
        let shallow = Limits { depth: 2, ..ROOMY };
        let (seen, walked) = digests(deep.path(), &shallow, None);
        assert!(seen.contains_key("a/b"));
        assert!(!seen.contains_key("a/b/c"));
        assert_eq!(
            walked.cut.map(|c| c.why),
            Some(CutWhy::Depth {
                limit: 2,
                path: "a/b/c".into()
            })
        );
    }

    /// Names that are not UTF-8 (`\xff`, `\xfe`), a real U+FFFD beside them, a
    /// backslash, and a file inside a directory whose name is not UTF-8 (red team,
    /// round five): every one is listed under a path of its own, the directory is
    /// entered, and a copy holds the same bytes under the same names.
    #[test]
    fn names_that_are_not_utf8_stay_distinct_and_are_entered() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let d = tmp();
        let raw = |b: &[u8]| d.path().join(OsStr::from_bytes(b));
        for (name, body) in [
            (&b"\xff"[..], &b"ff"[..]),
            (b"\xfe", b"fe"),
            ("\u{fffd}".as_bytes(), b"real"),
            (b"a\\b", b"slash"),
        ] {
            std::fs::write(raw(name), body).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::create_dir(raw(b"\xffdir")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(raw(b"\xffdir/inner"), b"inner").unwrap_or_else(|e| panic!("{e}"));
        let (seen, walked) = digests(d.path(), &ROOMY, None);
        assert_eq!(walked.cut, None);
        let names: Vec<&str> = seen.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "\\xfe",
                "\\xff",
                "\\xffdir",
                "\\xffdir/inner",
                "a\\\\b",
                "\u{fffd}"
            ]
        );
        assert_eq!(
            seen["\\xffdir/inner"],
            format!("5 {}", crate::hash::sha256(b"inner"))
        );
        assert_eq!(seen["\\xfe"], format!("2 {}", crate::hash::sha256(b"fe")));
        let out = tmp();
        let to = out.path().join("copy");
        copy_tree(d.path(), &to, &ROOMY, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read(to.join(OsStr::from_bytes(b"\xffdir/inner"))).ok(),
            Some(b"inner".to_vec())
        );
        assert_eq!(
            std::fs::read(to.join(OsStr::from_bytes(b"\xfe"))).ok(),
            Some(b"fe".to_vec())
        );
    }

    /// 24 directories of 255-byte names: a path of 6 KiB, past PATH_MAX, within the
    /// depth bound. Each directory is entered from its parent, so the walk reaches the
    /// bottom (before: ENAMETOOLONG, an error of the whole walk).
    #[test]
    fn a_path_longer_than_path_max_is_walked_to_its_bottom() {
        let d = tmp();
        let mut rel = PathBuf::new();
        for i in 0..24 {
            rel.push(format!("{i:02}{}", "L".repeat(253)));
        }
        assert!(rel.as_os_str().len() > libc::PATH_MAX as usize);
        Dir::open(d.path())
            .and_then(|root| root.create_dirs(&rel))
            .and_then(|bottom| bottom.write(Path::new("bottom.txt"), b"bottom\n"))
            .unwrap_or_else(|e| panic!("{e}"));
        let deep = Limits { depth: 32, ..ROOMY };
        let (seen, walked) = digests(d.path(), &deep, None);
        assert_eq!(walked.cut, None);
        assert_eq!(seen.len(), 25);
        let bottom = format!("{}/bottom.txt", rel.display());
        assert_eq!(
            seen.get(&bottom),
            Some(&format!("7 {}", crate::hash::sha256(b"bottom\n")))
        );
    }

    /// A directory listed, then gone before its turn came, has nothing left to see:
    /// left out. One listed, then swapped for a symlink, is not entered, and what lay
    /// below it was not seen: the walk is cut there, naming it (before: both were
    /// skipped without a word).
    #[test]
    fn a_listed_directory_that_cannot_be_entered_cuts_the_walk() {
        let d = tmp();
        write(d.path(), "a/in-a", b"1");
        write(d.path(), "b/in-b", b"2");
        write(d.path(), "c/in-c", b"3");
        let root = d.path().to_path_buf();
        let mut seen = Vec::new();
        let walked = walk(d.path(), &ROOMY, None, |item| {
            seen.push(item.rel.to_string());
            let swap = || -> std::io::Result<()> {
                match item.rel {
                    "a" => std::fs::remove_dir_all(root.join("a")),
                    "b" => {
                        std::fs::rename(root.join("b"), root.join("b.real"))?;
                        std::os::unix::fs::symlink("b.real", root.join("b"))
                    }
                    _ => Ok(()),
                }
            };
            swap().map_err(|source| WalkError::Write {
                path: root.clone(),
                source,
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(seen, ["a", "b", "c"]);
        assert_eq!(
            walked.cut,
            Some(Cut {
                why: CutWhy::Unreadable {
                    path: "b".into(),
                    error: "it became a symlink".into()
                },
                after_entries: 3
            })
        );
    }

    #[test]
    fn a_copy_keeps_files_dirs_links_and_modes_and_refuses_what_it_cannot_read_whole() {
        use std::os::unix::fs::PermissionsExt;
        let d = tmp();
        write(d.path(), "t/run.sh", b"#!/bin/sh\nexit 0\n");
        std::fs::set_permissions(
            d.path().join("t/run.sh"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("t/link"))
            .unwrap_or_else(|e| panic!("{e}"));
        nix::unistd::mkfifo(
            &d.path().join("t/pipe"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let out = tmp();
        let to = out.path().join("copy");
        let walked = copy_tree(d.path(), &to, &ROOMY, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(walked.cut, None);
        assert_eq!(
            std::fs::read(to.join("t/run.sh")).ok().as_deref(),
            Some(&b"#!/bin/sh\nexit 0\n"[..])
        );
        let mode = std::fs::metadata(to.join("t/run.sh"))
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0);
        assert_eq!(mode, 0o755, "no set-id bit is copied");
        assert_eq!(
            std::fs::read_link(to.join("t/link")).ok(),
            Some(PathBuf::from("/etc/passwd"))
        );
        assert!(!to.join("t/pipe").exists());

        let f = std::fs::File::create(d.path().join("t/holes")).unwrap_or_else(|e| panic!("{e}"));
        f.set_len(1 << 40).unwrap_or_else(|e| panic!("{e}"));
        let e = copy_tree(d.path(), &out.path().join("again"), &ROOMY, None).err();
        assert!(
            matches!(&e, Some(WalkError::TooLarge { size, .. }) if *size == 1 << 40),
            "{e:?}"
        );
        assert!(e
            .map(|e| e.to_string())
            .unwrap_or_default()
            .contains("t/holes"));
    }
}
