//! Every file the harness (root, outside any sandbox) reads or writes inside a
//! directory an agent controls goes through here: its workspace, HOME, state dir, a
//! claimed test dir.
//!
//! The agent may plant anything there, and a background process may swap it while the
//! harness looks: a symlink to a host file, a FIFO that blocks a read forever, a hard
//! link. So a path is never resolved twice and never by name from `/`: a [`Dir`] is an
//! open directory (the root the harness created and trusts), and every path below it is
//! resolved by the kernel with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`: no component may be a symlink, none may leave the root.
//! What is checked (regular file, size, link count) is checked on the opened
//! descriptor, so there is nothing left to swap.
//!
//! - reads: regular files only, opened `O_NOFOLLOW | O_NONBLOCK` (a FIFO cannot block
//!   the open), then `fstat`; at most `limit` bytes.
//! - writes: created or truncated through the same resolution; an existing file must be
//!   a regular file with one link (a hard link to another trial's record is refused)
//!   before it is truncated; missing parents are created one component at a time.
//! - listings: an open directory's entries, each classified without following it.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fstatat, mkdirat, Mode, SFlag};

/// Why a path below an agent's directory was not read or written.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    #[error("{path}: refused: a symlink on the way (never followed by the harness)")]
    Symlink { path: PathBuf },
    #[error("{path}: refused: the path leaves its root directory")]
    Escapes { path: PathBuf },
    #[error("{path}: refused: a {kind}, which the harness neither reads nor writes there")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path}: refused: a regular file with {links} hard links")]
    HardLinked { path: PathBuf, links: u64 },
    #[error("{path}: refused: over the limit of {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl BeneathError {
    /// The file was not there (or vanished while the harness looked).
    pub fn is_not_found(&self) -> bool {
        matches!(self, BeneathError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }

    /// The entry changed under the harness while it looked (vanished, became a
    /// symlink, a FIFO, or no longer a directory): what a racing agent causes.
    pub fn is_race(&self) -> bool {
        match self {
            BeneathError::Symlink { .. }
            | BeneathError::NotRegular { .. }
            | BeneathError::HardLinked { .. } => true,
            BeneathError::Io { source, .. } => {
                source.kind() == std::io::ErrorKind::NotFound
                    || source.raw_os_error() == Some(libc::ENOTDIR)
            }
            _ => false,
        }
    }

    /// The path the error names.
    pub fn path(&self) -> &Path {
        match self {
            BeneathError::Symlink { path }
            | BeneathError::Escapes { path }
            | BeneathError::NotRegular { path, .. }
            | BeneathError::HardLinked { path, .. }
            | BeneathError::TooLarge { path, .. }
            | BeneathError::Io { path, .. } => path,
        }
    }
}

/// What an entry of a directory is, as `fstatat(AT_SYMLINK_NOFOLLOW)` saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// FIFO, socket, device: nothing the harness reads.
    Other(&'static str),
}

/// One entry of [`Dir::entries`].
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
    /// The entry's own modification time (a symlink's, not its target's), Unix epoch
    /// milliseconds.
    pub mtime_ms: u64,
}

/// An open directory the harness trusts; every path below it is untrusted.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

const RESOLVE: ResolveFlag = ResolveFlag::RESOLVE_BENEATH
    .union(ResolveFlag::RESOLVE_NO_SYMLINKS)
    .union(ResolveFlag::RESOLVE_NO_MAGICLINKS);

fn kind_of(mode: u32) -> Kind {
    let fmt = SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits());
    match fmt {
        SFlag::S_IFREG => Kind::File,
        SFlag::S_IFDIR => Kind::Dir,
        SFlag::S_IFLNK => Kind::Symlink,
        SFlag::S_IFIFO => Kind::Other("FIFO"),
        SFlag::S_IFSOCK => Kind::Other("socket"),
        SFlag::S_IFCHR => Kind::Other("character device"),
        SFlag::S_IFBLK => Kind::Other("block device"),
        _ => Kind::Other("special file"),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "regular file",
        Kind::Dir => "directory",
        Kind::Symlink => "symlink",
        Kind::Other(k) => k,
    }
}

impl Dir {
    /// Open `path`, a directory the harness made (its own path is trusted).
    pub fn open(path: &Path) -> Result<Dir, BeneathError> {
        let fd = nix::fcntl::open(
            path,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io(path, e))?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// [`Dir::open`], creating `path` first if it is missing.
    pub fn create(path: &Path) -> Result<Dir, BeneathError> {
        std::fs::create_dir_all(path).map_err(|source| BeneathError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Dir::open(path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn full(&self, rel: &Path) -> PathBuf {
        if rel == Path::new(".") {
            return self.path.clone();
        }
        self.path.join(rel)
    }

    /// `rel` made safe to hand to `openat2`: relative, no `..`, not empty.
    fn check(&self, rel: &Path) -> Result<PathBuf, BeneathError> {
        let mut out = PathBuf::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::CurDir => {}
                _ => {
                    return Err(BeneathError::Escapes {
                        path: self.full(rel),
                    })
                }
            }
        }
        if out.as_os_str().is_empty() {
            out.push(".");
        }
        Ok(out)
    }

    fn open_at(&self, rel: &Path, flags: OFlag, mode: Mode) -> Result<OwnedFd, BeneathError> {
        let checked = self.check(rel)?;
        let how = OpenHow::new()
            .flags(flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
            .mode(mode)
            .resolve(RESOLVE);
        openat2(self.fd.as_fd(), &checked, how).map_err(|e| self.error(rel, e))
    }

    fn error(&self, rel: &Path, e: Errno) -> BeneathError {
        let path = self.full(rel);
        match e {
            Errno::ELOOP => BeneathError::Symlink { path },
            Errno::EXDEV => BeneathError::Escapes { path },
            // O_WRONLY | O_NONBLOCK on a FIFO nobody reads.
            Errno::ENXIO => BeneathError::NotRegular {
                path,
                kind: "FIFO or device",
            },
            e => io(&path, e),
        }
    }

    /// The directory `rel` below this one.
    pub fn sub(&self, rel: &Path) -> Result<Dir, BeneathError> {
        let fd = self
            .open_at(rel, OFlag::O_DIRECTORY | OFlag::O_RDONLY, Mode::empty())
            .map_err(|e| match e {
                // `O_DIRECTORY | O_NOFOLLOW` on a symlink says ENOTDIR: say which it was
                // (a stat of one name in this directory, nothing followed).
                BeneathError::Io { ref source, .. }
                    if source.raw_os_error() == Some(libc::ENOTDIR)
                        && rel.components().count() == 1 =>
                {
                    match self.kind(rel.as_os_str()) {
                        Ok((Kind::Symlink, _)) => BeneathError::Symlink {
                            path: self.full(rel),
                        },
                        Ok((kind, _)) => BeneathError::NotRegular {
                            path: self.full(rel),
                            kind: kind_name(kind),
                        },
                        Err(_) => e,
                    }
                }
                e => e,
            })?;
        Ok(Dir {
            fd,
            path: self.full(rel),
        })
    }

    /// The directory `rel` below this one, creating each missing component; a
    /// component that is a symlink (or anything but a directory) is refused.
    pub fn create_dirs(&self, rel: &Path) -> Result<Dir, BeneathError> {
        let checked = self.check(rel)?;
        let mut dir = self.sub(Path::new("."))?;
        for c in checked.components() {
            let name = Path::new(c.as_os_str());
            if name == Path::new(".") {
                continue;
            }
            match mkdirat(dir.fd.as_fd(), name, Mode::from_bits_truncate(0o755)) {
                Ok(()) | Err(Errno::EEXIST) => {}
                Err(e) => return Err(dir.error(name, e)),
            }
            dir = dir.sub(name)?;
        }
        Ok(dir)
    }

    /// The regular file `rel`, opened for reading, with its metadata (from the open
    /// descriptor). A FIFO, socket or device is refused without blocking.
    pub fn open_file(&self, rel: &Path) -> Result<(File, std::fs::Metadata), BeneathError> {
        let fd = self.open_at(rel, OFlag::O_RDONLY | OFlag::O_NONBLOCK, Mode::empty())?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|source| BeneathError::Io {
            path: self.full(rel),
            source,
        })?;
        if !meta.is_file() {
            use std::os::unix::fs::MetadataExt;
            return Err(BeneathError::NotRegular {
                path: self.full(rel),
                kind: kind_name(kind_of(meta.mode())),
            });
        }
        Ok((file, meta))
    }

    /// The contents of the regular file `rel`, at most `limit` bytes (a file that
    /// holds more, or grows past it while read, is refused).
    pub fn read(&self, rel: &Path, limit: u64) -> Result<Vec<u8>, BeneathError> {
        let (file, meta) = self.open_file(rel)?;
        let too_large = || BeneathError::TooLarge {
            path: self.full(rel),
            limit,
        };
        if meta.len() > limit {
            return Err(too_large());
        }
        let mut out = Vec::with_capacity(meta.len() as usize);
        file.take(limit.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(|source| BeneathError::Io {
                path: self.full(rel),
                source,
            })?;
        if out.len() as u64 > limit {
            return Err(too_large());
        }
        Ok(out)
    }

    /// Create or replace the contents of the file `rel` (missing parent directories
    /// are created). An existing `rel` must be a regular file with a single link.
    pub fn write(&self, rel: &Path, contents: &[u8]) -> Result<(), BeneathError> {
        let checked = self.check(rel)?;
        let (parent, name) = match (checked.parent(), checked.file_name()) {
            (Some(p), Some(n)) => (p, n),
            _ => {
                return Err(BeneathError::NotRegular {
                    path: self.full(rel),
                    kind: "directory",
                })
            }
        };
        let dir = self.create_dirs(parent)?;
        let name = Path::new(name);
        let fd = dir.open_at(
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NONBLOCK,
            Mode::from_bits_truncate(0o644),
        )?;
        let mut file = File::from(fd);
        let fail = |source| BeneathError::Io {
            path: self.full(rel),
            source,
        };
        let meta = file.metadata().map_err(fail)?;
        {
            use std::os::unix::fs::MetadataExt;
            if !meta.is_file() {
                return Err(BeneathError::NotRegular {
                    path: self.full(rel),
                    kind: kind_name(kind_of(meta.mode())),
                });
            }
            if meta.nlink() > 1 {
                return Err(BeneathError::HardLinked {
                    path: self.full(rel),
                    links: meta.nlink(),
                });
            }
        }
        file.set_len(0).map_err(fail)?;
        file.write_all(contents).map_err(fail)?;
        Ok(())
    }

    /// What the entry `name` of this directory is, and its mtime, not following it.
    pub fn kind(&self, name: &OsStr) -> Result<(Kind, u64), BeneathError> {
        let st = fstatat(
            self.fd.as_fd(),
            Path::new(name),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(|e| io(&self.full(Path::new(name)), e))?;
        let mtime_ms =
            (st.st_mtime.max(0) as u64) * 1000 + (st.st_mtime_nsec.max(0) as u64) / 1_000_000;
        Ok((kind_of(st.st_mode), mtime_ms))
    }

    /// The target of the symlink `name` of this directory (read, never followed).
    pub fn read_link(&self, name: &OsStr) -> Result<PathBuf, BeneathError> {
        nix::fcntl::readlinkat(self.fd.as_fd(), Path::new(name))
            .map(PathBuf::from)
            .map_err(|e| io(&self.full(Path::new(name)), e))
    }

    /// Change the owner of the entry `name` of this directory (a symlink itself, never
    /// what it points to).
    pub fn chown(&self, name: &OsStr, uid: u32, gid: u32) -> Result<(), BeneathError> {
        nix::unistd::fchownat(
            self.fd.as_fd(),
            Path::new(name),
            Some(nix::unistd::Uid::from_raw(uid)),
            Some(nix::unistd::Gid::from_raw(gid)),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(|e| io(&self.full(Path::new(name)), e))
    }

    /// This directory's entries (without `.` and `..`), sorted by name, each
    /// classified without following it. An entry that vanishes while listed is left out.
    pub fn entries(&self) -> Result<Vec<Entry>, BeneathError> {
        Ok(self.entries_at_most(usize::MAX)?.0)
    }

    /// [`Dir::entries`], listing at most `max` of them, and whether there were more.
    /// An agent's directory may hold millions of names: listing stops at `max + 1`,
    /// before any more are looked at or held.
    pub fn entries_at_most(&self, max: usize) -> Result<(Vec<Entry>, bool), BeneathError> {
        let fd = self.open_at(
            Path::new("."),
            OFlag::O_DIRECTORY | OFlag::O_RDONLY,
            Mode::empty(),
        )?;
        let mut listing = nix::dir::Dir::from_fd(fd).map_err(|e| io(&self.path, e))?;
        let mut out = Vec::new();
        let mut more = false;
        for entry in listing.iter() {
            let entry = entry.map_err(|e| io(&self.path, e))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            if out.len() >= max {
                more = true;
                break;
            }
            match self.kind(name) {
                Ok((kind, mtime_ms)) => out.push(Entry {
                    name: name.to_os_string(),
                    kind,
                    mtime_ms,
                }),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok((out, more))
    }
}

fn io(path: &Path, e: Errno) -> BeneathError {
    BeneathError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::from(e),
    }
}

/// [`Dir::read`] of `rel` below the trusted directory `root`.
pub fn read(root: &Path, rel: &Path, limit: u64) -> Result<Vec<u8>, BeneathError> {
    Dir::open(root)?.read(rel, limit)
}

/// [`Dir::write`] of `rel` below the trusted directory `root` (created if missing).
pub fn write(root: &Path, rel: &Path, contents: &[u8]) -> Result<(), BeneathError> {
    Dir::create(root)?.write(rel, contents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
    }

    fn mkfifo(path: &Path) {
        nix::unistd::mkfifo(path, Mode::from_bits_truncate(0o644))
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn reads_and_writes_below_the_root() {
        let d = tmp();
        write(d.path(), Path::new("a/b/c.txt"), b"hello").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read(d.path(), Path::new("a/b/c.txt"), 5).unwrap_or_else(|e| panic!("{e}")),
            b"hello"
        );
        // Rewriting truncates.
        write(d.path(), Path::new("a/b/c.txt"), b"hi").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read(d.path().join("a/b/c.txt")).ok().as_deref(),
            Some(&b"hi"[..])
        );
        let e = read(d.path(), Path::new("a/b/c.txt"), 1).err();
        assert!(
            matches!(e, Some(BeneathError::TooLarge { limit: 1, .. })),
            "{e:?}"
        );
    }

    #[test]
    fn a_symlinked_file_is_never_written_through() {
        let d = tmp();
        let outside = tmp();
        let victim = outside.path().join("record.json");
        std::fs::write(&victim, b"original").unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(d.path().join(".agent")).unwrap_or_else(|e| panic!("{e}"));
        symlink(&victim, d.path().join(".agent/prompt.md")).unwrap_or_else(|e| panic!("{e}"));
        let e = write(d.path(), Path::new(".agent/prompt.md"), b"pwned").err();
        assert!(matches!(e, Some(BeneathError::Symlink { .. })), "{e:?}");
        assert!(e
            .map(|e| e.to_string())
            .unwrap_or_default()
            .contains(".agent/prompt.md"));
        assert_eq!(
            std::fs::read(&victim).ok().as_deref(),
            Some(&b"original"[..])
        );
        let e = read(d.path(), Path::new(".agent/prompt.md"), 100).err();
        assert!(matches!(e, Some(BeneathError::Symlink { .. })), "{e:?}");
    }

    #[test]
    fn a_symlinked_directory_on_the_way_is_refused() {
        let d = tmp();
        let outside = tmp();
        symlink(outside.path(), d.path().join(".agent")).unwrap_or_else(|e| panic!("{e}"));
        let e = write(d.path(), Path::new(".agent/prompt.md"), b"x").err();
        assert!(matches!(e, Some(BeneathError::Symlink { .. })), "{e:?}");
        assert!(!outside.path().join("prompt.md").exists());
        // Also a symlink to a directory inside the root, and a relative one.
        std::fs::create_dir_all(d.path().join("real")).unwrap_or_else(|e| panic!("{e}"));
        symlink("real", d.path().join("alias")).unwrap_or_else(|e| panic!("{e}"));
        let e = write(d.path(), Path::new("alias/f"), b"x").err();
        assert!(matches!(e, Some(BeneathError::Symlink { .. })), "{e:?}");
    }

    #[test]
    fn dot_dot_and_absolute_paths_are_refused() {
        let d = tmp();
        for rel in ["../x", "a/../../x", "/etc/passwd"] {
            let e = read(d.path(), Path::new(rel), 10).err();
            assert!(
                matches!(e, Some(BeneathError::Escapes { .. })),
                "{rel}: {e:?}"
            );
        }
    }

    #[test]
    fn a_fifo_neither_blocks_a_read_nor_a_write() {
        let d = tmp();
        mkfifo(&d.path().join("pipe"));
        let e = read(d.path(), Path::new("pipe"), 10).err();
        assert!(
            matches!(e, Some(BeneathError::NotRegular { kind: "FIFO", .. })),
            "{e:?}"
        );
        let e = write(d.path(), Path::new("pipe"), b"x").err();
        assert!(matches!(e, Some(BeneathError::NotRegular { .. })), "{e:?}");
    }

    #[test]
    fn a_hard_link_is_not_truncated() {
        let d = tmp();
        std::fs::write(d.path().join("a"), b"keep").unwrap_or_else(|e| panic!("{e}"));
        std::fs::hard_link(d.path().join("a"), d.path().join("b"))
            .unwrap_or_else(|e| panic!("{e}"));
        let e = write(d.path(), Path::new("b"), b"x").err();
        assert!(
            matches!(e, Some(BeneathError::HardLinked { links: 2, .. })),
            "{e:?}"
        );
        assert_eq!(
            std::fs::read(d.path().join("a")).ok().as_deref(),
            Some(&b"keep"[..])
        );
    }

    #[test]
    fn entries_are_classified_without_following() {
        let d = tmp();
        std::fs::write(d.path().join("f"), b"1").unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(d.path().join("sub")).unwrap_or_else(|e| panic!("{e}"));
        symlink("/etc", d.path().join("l")).unwrap_or_else(|e| panic!("{e}"));
        mkfifo(&d.path().join("p"));
        let dir = Dir::open(d.path()).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(String, Kind)> = dir
            .entries()
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("f".to_string(), Kind::File),
                ("l".to_string(), Kind::Symlink),
                ("p".to_string(), Kind::Other("FIFO")),
                ("sub".to_string(), Kind::Dir),
            ]
        );
        assert_eq!(
            dir.read_link(OsStr::new("l")).ok(),
            Some(PathBuf::from("/etc"))
        );
        assert!(matches!(
            dir.sub(Path::new("l")),
            Err(BeneathError::Symlink { .. })
        ));
    }

    /// A file swapped for a symlink to a secret, over and over, while the harness reads
    /// it: every read gets the real file's bytes or a refusal, never the secret.
    #[test]
    fn a_racing_swap_to_a_symlink_is_never_followed() {
        let d = tmp();
        let outside = tmp();
        let secret = outside.path().join("environ");
        std::fs::write(&secret, b"SECRET").unwrap_or_else(|e| panic!("{e}"));
        let root = d.path().to_path_buf();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (root, secret, stop) = (root.clone(), secret.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::write(root.join("next"), b"plain");
                    let _ = std::fs::rename(root.join("next"), root.join("f"));
                    let _ = symlink(&secret, root.join("link"));
                    let _ = std::fs::rename(root.join("link"), root.join("f"));
                }
            })
        };
        let dir = Dir::open(&root).unwrap_or_else(|e| panic!("{e}"));
        let (mut plain, mut refused) = (0, 0);
        for _ in 0..5000 {
            match dir.read(Path::new("f"), 100) {
                Ok(b) => {
                    assert_eq!(b, b"plain");
                    plain += 1;
                }
                Err(_) => refused += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = swapper.join();
        assert!(plain + refused == 5000, "{plain} {refused}");
    }
}
