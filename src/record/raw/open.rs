//! Opening a raw file below a trial directory the one way every reader opens it: never
//! through a link, never a FIFO, never outside the trial directory, and read to the
//! end it had when it was opened.

use std::io::Read;
use std::path::{Component, Path};

/// Directories below a trial directory already found to be real directories while
/// checking one record: a record names a dozen raw files in `gate/`, and the directory
/// need not be looked at a dozen times.
#[derive(Default)]
pub(super) struct SeenDirs(Vec<std::path::PathBuf>);

/// `rel` as a raw file's path: relative, and never leaving the trial directory.
pub(super) fn inside(rel: &str) -> Result<&Path, String> {
    let rel = Path::new(rel);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err("the recorded path leaves the trial directory".into());
    }
    Ok(rel)
}

pub(super) const LINK: &str = "is a symlink; raw evidence is never read through a link";

/// A raw file opened the way [`super::verify`] opens it (never through a link, never a FIFO),
/// read to the end it had when it was opened.
///
/// A read of a regular file that returns fewer bytes than asked has reached the file's
/// end, and when that end is the size the open file reported, the next read would only
/// say so: it is not made. Checking a run reads tens of thousands of small raw files,
/// and that read was one system call in four. A file that grew since it was opened is
/// still read to its new end.
pub struct PlainFile {
    file: std::fs::File,
    size: u64,
    read: u64,
    ended: bool,
}

impl PlainFile {
    /// `file`, read the same way, for a reader that checked what kind of file it is
    /// itself (or, like a record's reader, opened it without blocking) and took its
    /// size from the open file as it did.
    pub(crate) fn sized(file: std::fs::File, size: u64) -> PlainFile {
        PlainFile {
            file,
            size,
            read: 0,
            ended: false,
        }
    }

    /// The file's size when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// A read buffer that takes the whole file in one read, up to 64 KiB.
    pub fn buffer_size(&self) -> usize {
        (self.size.saturating_add(1)).min(64 << 10) as usize
    }
}

impl Read for PlainFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.ended || buf.is_empty() {
            return Ok(0);
        }
        let got = self.file.read(buf)?;
        self.read += got as u64;
        self.ended = got == 0 || (got < buf.len() && self.read == self.size);
        Ok(got)
    }
}

/// The directory `rel` lies in below `trial_dir`, each component checked to be a
/// directory and no link; then `rel` joined whole.
pub(super) fn plain_dirs(
    trial_dir: &Path,
    rel: &Path,
    seen: &mut SeenDirs,
) -> Result<std::path::PathBuf, String> {
    let mut at = trial_dir.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    let dirs = parts.split_last().map_or(&parts[..], |(_, dirs)| dirs);
    for part in dirs {
        at.push(part);
        if seen.0.contains(&at) {
            continue;
        }
        let meta = std::fs::symlink_metadata(&at).map_err(|e| format!("cannot be read: {e}"))?;
        if meta.file_type().is_symlink() {
            return Err(LINK.into());
        }
        if !meta.is_dir() {
            return Err("a component of its path is not a directory".into());
        }
        seen.0.push(at.clone());
    }
    Ok(trial_dir.join(rel))
}

/// Open `rel` below `trial_dir` for reading only if no component of it is a symlink and
/// it is a regular file: a trial directory holds what an agent wrote, and a raw file
/// swapped for a link to a host file, or for a FIFO that blocks the open forever, must
/// read as a problem, not as the host file or a hang.
pub(super) fn open_plain(
    trial_dir: &Path,
    rel: &Path,
    seen: &mut SeenDirs,
) -> Result<PlainFile, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let at = plain_dirs(trial_dir, rel, seen)?;
    let named_last = rel.file_name().is_some();
    // The last component is not looked at before it is opened: O_NOFOLLOW refuses it if
    // it is a link (ELOOP, as no earlier component is one), one system call fewer per
    // raw file of a run.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&at)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) if named_last => LINK.to_string(),
            _ => format!("cannot be read: {e}"),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    Ok(PlainFile::sized(file, meta.len()))
}

/// The raw file `rel` below `trial_dir` opened as [`super::verify`] opens it, for a reader that
/// streams it and then hands its hash to [`super::verify_record_bytes`] as [`super::Hashed`]; the
/// error says why it cannot be, in [`super::verify`]'s words.
pub fn open_raw(trial_dir: &Path, rel: &str) -> Result<PlainFile, String> {
    open_plain(trial_dir, inside(rel)?, &mut SeenDirs::default())
}

/// The first `limit` bytes of the raw file `rel` below `trial_dir`, and whether there
/// was more, read the way [`super::verify`] reads (never through a link, never a FIFO); `None`
/// when it cannot be read so. For pages and exports, which show raw files they do not
/// check.
pub fn read_plain(trial_dir: &Path, rel: &str, limit: u64) -> Option<(Vec<u8>, bool)> {
    let f = open_plain_file(trial_dir, rel)?;
    let mut buf = Vec::new();
    f.take(limit.saturating_add(1)).read_to_end(&mut buf).ok()?;
    let more = buf.len() as u64 > limit;
    buf.truncate(limit as usize);
    Some((buf, more))
}

/// The raw file `rel` below `trial_dir`, opened the way [`super::verify`] opens it, for a reader
/// that streams it (an agent's stdout through its parser); `None` when it cannot be.
pub fn open_plain_file(trial_dir: &Path, rel: &str) -> Option<PlainFile> {
    let rel = Path::new(rel);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    open_plain(trial_dir, rel, &mut SeenDirs::default()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_plain_file_is_read_to_its_end_even_when_it_grew_after_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out");
        std::fs::write(&file, b"abc").unwrap();
        let mut f = open_raw(dir.path(), "out").unwrap();
        assert_eq!(f.buffer_size(), 4);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(b"def")
            .unwrap();
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"abcdef");
        // Once ended, it stays ended.
        assert_eq!(f.read(&mut [0u8; 8]).unwrap(), 0);
    }
}
