//! The one raw-file verifier: every raw file a record names is on disk, of the size it
//! recorded, and hashes to what it recorded.
//!
//! A record names a raw file with a [`RawFile`](crate::evidence::RawFile) object —
//! `{"path", "bytes", "bytes_seen", "sha256"}` — wherever it sits in the record: the
//! agent's streams, every gate run's streams, every scorecard turn, and whatever raw
//! file a suite records next. The verifier finds them by that shape in the record's
//! JSON, so no suite can add a raw file that escapes it. Exit codes, signals and
//! timings are fields of the record itself: the record's own hash covers them
//! ([`super::digest`]).

use std::borrow::Cow;
use std::io::Read;
use std::path::{Component, Path};

use serde_json::Value;

/// A raw file that does not match its record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct RawProblem {
    /// As the record names it, relative to the trial directory.
    pub path: String,
    pub problem: String,
}

/// What verifying one record's raw files found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawCheck {
    /// Raw files named (each distinct path once).
    pub checked: usize,
    pub problems: Vec<RawProblem>,
}

/// A raw-file reference found in a record.
struct Named<'a> {
    path: &'a str,
    bytes: u64,
    sha256: &'a str,
}

fn collect<'a>(v: &'a Value, out: &mut Vec<Named<'a>>) {
    match v {
        Value::Object(m) => {
            let raw = (
                m.get("path").and_then(Value::as_str),
                m.get("bytes").and_then(Value::as_u64),
                m.get("bytes_seen").and_then(Value::as_u64),
                m.get("sha256").and_then(Value::as_str),
            );
            if let (Some(path), Some(bytes), Some(_), Some(sha256)) = raw {
                out.push(Named {
                    path,
                    bytes,
                    sha256,
                });
                return;
            }
            for v in m.values() {
                collect(v, out);
            }
        }
        Value::Array(a) => {
            for v in a {
                collect(v, out);
            }
        }
        _ => {}
    }
}

/// Every distinct raw file `record` (a record's JSON) names, as (path, bytes, sha256),
/// in the order the record names them: what [`verify`] checks, for a page to list.
/// A file the harness wrote during a trial (an observation, a log), hashed, named
/// relative to `base`; `None` when it is not there to hash.
pub fn harness_file(path: &Path, base: &Path) -> Option<crate::evidence::RawFile> {
    let bytes = std::fs::metadata(path).ok()?.len();
    let sha256 = super::digest::file_sha256(path).ok()?;
    Some(crate::evidence::RawFile {
        path: path
            .strip_prefix(base)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned(),
        bytes,
        bytes_seen: bytes,
        sha256,
    })
}

pub fn named(record: &Value) -> Vec<(String, u64, String)> {
    let mut found = Vec::new();
    collect(record, &mut found);
    let mut out: Vec<(String, u64, String)> = Vec::new();
    for n in found {
        let entry = (n.path.to_owned(), n.bytes, n.sha256.to_owned());
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    out
}

/// Verify every raw file `record` (a record's JSON) names against the files in
/// `trial_dir`. Each file is streamed, never held whole.
pub fn verify(trial_dir: &Path, record: &Value) -> RawCheck {
    let mut named = Vec::new();
    collect(record, &mut named);
    let mut check = RawCheck::default();
    let mut seen: Vec<(&str, u64, &str)> = Vec::new();
    for n in named {
        let key = (n.path, n.bytes, n.sha256);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        check.checked += 1;
        if let Err(problem) = verify_one(trial_dir, &n) {
            check.problems.push(RawProblem {
                path: n.path.to_owned(),
                problem,
            });
        }
    }
    check
}

/// Verify one raw file against `trial_dir`: the path stays inside it, the bytes hash to
/// what was recorded and are as many.
pub fn verify_file(trial_dir: &Path, raw: &crate::evidence::RawFile) -> Result<(), RawProblem> {
    let n = Named {
        path: &raw.path,
        bytes: raw.bytes,
        sha256: &raw.sha256,
    };
    verify_one(trial_dir, &n).map_err(|problem| RawProblem {
        path: raw.path.clone(),
        problem,
    })
}

fn verify_one(trial_dir: &Path, n: &Named<'_>) -> Result<(), String> {
    verify_named(trial_dir, n, None, &mut SeenDirs::default())
}

/// Directories below a trial directory already found to be real directories while
/// checking one record: a record names a dozen raw files in `gate/`, and the directory
/// need not be looked at a dozen times.
#[derive(Default)]
struct SeenDirs(Vec<std::path::PathBuf>);

/// `rel` as a raw file's path: relative, and never leaving the trial directory.
fn inside(rel: &str) -> Result<&Path, String> {
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

/// [`verify_one`], taking the hash and length of a file the caller already read
/// (`hashed`, which it opened with [`open_raw`]) instead of opening it again.
fn verify_named(
    trial_dir: &Path,
    n: &Named<'_>,
    hashed: Option<&Hashed>,
    seen: &mut SeenDirs,
) -> Result<(), String> {
    let rel = inside(n.path)?;
    let (found, len) = match hashed {
        // Sizes first, as for a file read here, so that every reader names a mismatch
        // alike.
        Some(h) if h.bytes != n.bytes => return Err(other_size(h.bytes, n)),
        Some(h) => (h.sha256.clone(), h.bytes),
        // An empty file is checked by its metadata alone (most of a run's stderr files
        // are empty): a plain file of no bytes hashes to the empty hash, and opening
        // and reading it would add three system calls for nothing.
        None if n.bytes == 0 => {
            let at = plain_dirs(trial_dir, rel, seen)?;
            let meta =
                std::fs::symlink_metadata(&at).map_err(|e| format!("cannot be read: {e}"))?;
            if meta.file_type().is_symlink() {
                return Err(LINK.into());
            }
            if !meta.is_file() {
                return Err("is not a regular file".into());
            }
            if meta.len() == 0 {
                (crate::hash::sha256(&[]), 0)
            } else {
                return Err(other_size(meta.len(), n));
            }
        }
        None => {
            let f = open_plain(trial_dir, rel, seen)?;
            if f.size() != n.bytes {
                return Err(other_size(f.size(), n));
            }
            hash_plain(f)?
        }
    };
    if found != n.sha256 {
        return Err(format!(
            "does not match its recorded hash (recorded {}, found {found})",
            n.sha256
        ));
    }
    if len != n.bytes {
        return Err(format!("{len} bytes on disk, {} recorded", n.bytes));
    }
    Ok(())
}

/// A raw file whose size on disk is not the size its record gives: it cannot hash to
/// the recorded hash either, so it is not read. A trial directory is where an agent's
/// files lie, and a sparse file there may say any size: a check never reads more of a
/// raw file than its record says it holds.
fn other_size(size: u64, n: &Named<'_>) -> String {
    format!(
        "does not match its recorded hash: {size} bytes on disk, {} recorded",
        n.bytes
    )
}

/// The hash and length of a plain file, read to its end.
fn hash_plain(mut f: PlainFile) -> Result<(String, u64), String> {
    let mut hash = crate::hash::Sha256Stream::default();
    let mut buf = vec![0u8; f.buffer_size()];
    let mut len = 0u64;
    loop {
        let got = f
            .read(&mut buf)
            .map_err(|e| format!("cannot be read: {e}"))?;
        if got == 0 {
            break;
        }
        len += got as u64;
        hash.update(&buf[..got]);
    }
    Ok((hash.finish(), len))
}

const LINK: &str = "is a symlink; raw evidence is never read through a link";

/// A raw file opened the way [`verify`] opens it (never through a link, never a FIFO),
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
fn plain_dirs(
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
fn open_plain(trial_dir: &Path, rel: &Path, seen: &mut SeenDirs) -> Result<PlainFile, String> {
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

/// The raw file `rel` below `trial_dir` opened as [`verify`] opens it, for a reader that
/// streams it and then hands its hash to [`verify_record_bytes`] as [`Hashed`]; the
/// error says why it cannot be, in [`verify`]'s words.
pub fn open_raw(trial_dir: &Path, rel: &str) -> Result<PlainFile, String> {
    open_plain(trial_dir, inside(rel)?, &mut SeenDirs::default())
}

/// The first `limit` bytes of the raw file `rel` below `trial_dir`, and whether there
/// was more, read the way [`verify`] reads (never through a link, never a FIFO); `None`
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

/// The raw file `rel` below `trial_dir`, opened the way [`verify`] opens it, for a reader
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

/// [`verify`] for the record file `file` (its trial directory is the file's parent).
pub fn verify_record_file(file: &Path) -> Result<RawCheck, super::RecordError> {
    let bytes = std::fs::read(file).map_err(|source| super::RecordError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    verify_record_bytes(file, &bytes, &[], None)
}

/// A raw file a reader already opened with [`open_raw`] and hashed while reading it
/// (rescore's parse of the agent's stdout): its path as the record names it, the hash
/// found and the bytes read. [`verify_record_bytes`] neither opens nor reads such a file
/// again: [`open_raw`] made the checks it would make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hashed {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

/// [`verify_record_file`] of a record already read into `bytes`, without building a
/// JSON tree: the record is scanned once for raw-file references (in the order and
/// with the duplicate-key rule of a `serde_json::Value`, so the same files are named in
/// the same order), and files in `known` are not re-read.
///
/// `listed` is what the typed record read from `bytes` holds, when there is one
/// ([`crate::evidence::QaEvidence::raw_files`]): where it can be shown to be every raw
/// file the bytes name ([`verify_listed`]), those are verified without the scan.
pub fn verify_record_bytes(
    file: &Path,
    bytes: &[u8],
    known: &[Hashed],
    listed: Option<&[&crate::evidence::RawFile]>,
) -> Result<RawCheck, super::RecordError> {
    let trial_dir = file.parent().unwrap_or(Path::new("."));
    if let Some(check) = listed.and_then(|l| verify_listed(trial_dir, bytes, known, l)) {
        return Ok(check);
    }
    let found = scan(bytes).map_err(|e| super::RecordError::Invalid {
        file: file.to_path_buf(),
        reason: format!("not JSON: {e}"),
    })?;
    let mut check = RawCheck::default();
    let mut seen: Vec<(&str, u64, &str)> = Vec::new();
    let mut dirs = SeenDirs::default();
    for n in &found {
        let key = (n.path.as_ref(), n.bytes, n.sha256.as_ref());
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        check.checked += 1;
        let named = Named {
            path: &n.path,
            bytes: n.bytes,
            sha256: &n.sha256,
        };
        let hashed = known.iter().find(|k| k.path == n.path);
        if let Err(problem) = verify_named(trial_dir, &named, hashed, &mut dirs) {
            check.problems.push(RawProblem {
                path: n.path.to_string(),
                problem,
            });
        }
    }
    Ok(check)
}

/// The raw files `listed` (a typed record's, read from `bytes`) verified as the scan
/// would verify them, when they are provably every raw file `bytes` names and all of
/// them match; `None` otherwise, for the scan to say (it names every problem, in its
/// order). Half the cost of checking a record was scanning it a second time.
///
/// The proof, by counting: when `bytes` holds no `\u` escape, a `sha256` key can only
/// be written as the eight bytes `"sha256"`, and a key's quotes are never shared with
/// a neighbouring match (a key follows `{`, `,` or a space and precedes `:` or a
/// space). Every listed raw file was read from an object holding one `sha256` key
/// (a [`crate::evidence::RawFile`] is read from nothing else), so distinct listed
/// files are distinct objects, each with its own such eight bytes. When there are as
/// many distinct files as occurrences, every occurrence is the key of a listed file,
/// and the scan, which finds a raw file only in an object with a `sha256` key, finds
/// exactly those; it takes each of them for one, as each has its four members with the
/// types the scan asks for, and none lies inside another raw file (whose key would be
/// an occurrence belonging to no listed file).
fn verify_listed(
    trial_dir: &Path,
    bytes: &[u8],
    known: &[Hashed],
    listed: &[&crate::evidence::RawFile],
) -> Option<RawCheck> {
    if memchr::memmem::find(bytes, b"\\u").is_some() {
        return None;
    }
    let mut distinct: Vec<&crate::evidence::RawFile> = Vec::with_capacity(listed.len());
    for raw in listed {
        let same = |d: &&crate::evidence::RawFile| {
            d.path == raw.path && d.bytes == raw.bytes && d.sha256 == raw.sha256
        };
        if !distinct.iter().any(same) {
            distinct.push(raw);
        }
    }
    if memchr::memmem::find_iter(bytes, b"\"sha256\"").count() != distinct.len() {
        return None;
    }
    let mut dirs = SeenDirs::default();
    for raw in &distinct {
        let named = Named {
            path: &raw.path,
            bytes: raw.bytes,
            sha256: &raw.sha256,
        };
        let hashed = known.iter().find(|k| k.path == raw.path);
        verify_named(trial_dir, &named, hashed, &mut dirs).ok()?;
    }
    Some(RawCheck {
        checked: distinct.len(),
        problems: Vec::new(),
    })
}

/// A raw-file reference scanned from a record's bytes.
#[derive(Default)]
struct Found<'a> {
    path: Cow<'a, str>,
    bytes: u64,
    sha256: Cow<'a, str>,
}

/// Every raw-file reference in a record's JSON, as [`collect`] finds them in its
/// `Value`: an object with a string `path`, an unsigned `bytes` and `bytes_seen` and a
/// string `sha256` is one (and is not searched further); any other object is searched
/// in key order (the last of duplicate keys counting), arrays in order.
fn scan(bytes: &[u8]) -> Result<Vec<Found<'_>>, serde_json::Error> {
    // As `crate::json::from_bytes` parses: text checked once is not checked per string.
    match std::str::from_utf8(bytes) {
        Ok(text) => scan_from(serde_json::Deserializer::from_str(text)),
        Err(_) => scan_from(serde_json::Deserializer::from_slice(bytes)),
    }
}

fn scan_from<'a, R: serde_json::de::Read<'a>>(
    mut de: serde_json::Deserializer<R>,
) -> Result<Vec<Found<'a>>, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut state = ScanState::default();
    Scan {
        state: &mut state,
        want: Want::Nothing,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(state.found)
}

/// What a scan has found so far, and the room it works in: one scan of a record visits
/// hundreds of objects, and each used to allocate its own list of members.
#[derive(Default)]
struct ScanState<'a> {
    found: Vec<Found<'a>>,
    /// The members of every object being scanned, innermost last.
    members: Vec<Member<'a>>,
    /// An object's members that found something, while it puts them in key order.
    order: Vec<usize>,
    /// An object's findings, while it puts them in key order.
    moved: Vec<Found<'a>>,
}

/// One member of a scanned object: its key, what its value is to the object, and the
/// findings below it (`found[from..to]`).
struct Member<'a> {
    key: Cow<'a, str>,
    value: Scalar<'a>,
    from: usize,
    to: usize,
}

/// What a scanned value is to the object holding it.
enum Scalar<'a> {
    Str(Cow<'a, str>),
    U64(u64),
    Other,
}

/// Which scalar the key of a scanned value asks for.
#[derive(Clone, Copy)]
enum Want {
    Str,
    U64,
    Nothing,
}

struct Scan<'s, 'a> {
    state: &'s mut ScanState<'a>,
    want: Want,
}

impl<'de, 's> serde::de::DeserializeSeed<'de> for Scan<'s, 'de> {
    type Value = Scalar<'de>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Scalar<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 's> serde::de::Visitor<'de> for Scan<'s, 'de> {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar<'de>, E> {
        Ok(match self.want {
            Want::U64 => Scalar::U64(v),
            _ => Scalar::Other,
        })
    }
    fn visit_f64<E>(self, _: f64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Scalar<'de>, E> {
        Ok(match self.want {
            Want::Str => Scalar::Str(Cow::Borrowed(v)),
            _ => Scalar::Other,
        })
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar<'de>, E> {
        Ok(match self.want {
            Want::Str => Scalar::Str(Cow::Owned(v.to_owned())),
            _ => Scalar::Other,
        })
    }
    fn visit_unit<E>(self) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'de>, A::Error> {
        while seq
            .next_element_seed(Scan {
                state: &mut *self.state,
                want: Want::Nothing,
            })?
            .is_some()
        {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'de>, A::Error> {
        let st = self.state;
        // This object's members go on the shared list, its findings on `found` in the
        // order the record holds them; once the object is known they are kept (in key
        // order) or replaced by the reference the object is.
        let base = st.members.len();
        let start = st.found.len();
        while let Some(key) = map.next_key_seed(Key)? {
            let want = match key.as_ref() {
                "path" | "sha256" => Want::Str,
                "bytes" | "bytes_seen" => Want::U64,
                _ => Want::Nothing,
            };
            let from = st.found.len();
            let value = map.next_value_seed(Scan {
                state: &mut *st,
                want,
            })?;
            let to = st.found.len();
            st.members.push(Member {
                key,
                value,
                from,
                to,
            });
        }
        let mine = &st.members[base..];
        // The last of duplicate keys counts, as in a `Value`'s map.
        let live = |i: usize| !mine[i + 1..].iter().any(|m| m.key == mine[i].key);
        let last = |name: &str| mine.iter().rev().find(|m| m.key == name).map(|m| &m.value);
        let str_of = |name: &str| match last(name) {
            Some(Scalar::Str(s)) => Some(s.clone()),
            _ => None,
        };
        let u64_of = |name: &str| match last(name) {
            Some(Scalar::U64(n)) => Some(*n),
            _ => None,
        };
        if let (Some(path), Some(bytes), Some(_), Some(sha256)) = (
            str_of("path"),
            u64_of("bytes"),
            u64_of("bytes_seen"),
            str_of("sha256"),
        ) {
            st.found.truncate(start);
            st.found.push(Found {
                path,
                bytes,
                sha256,
            });
            st.members.truncate(base);
            return Ok(Scalar::Other);
        }
        // Findings of members that count, in key order: most objects have them in that
        // order already (or have one member with any), and are left as they are.
        st.order.clear();
        let mut dropped = false;
        for (i, m) in mine.iter().enumerate() {
            if m.from < m.to {
                if live(i) {
                    st.order.push(i);
                } else {
                    dropped = true;
                }
            }
        }
        let sorted = st.order.windows(2).all(|w| mine[w[0]].key < mine[w[1]].key);
        if dropped || !sorted {
            st.order.sort_by(|&a, &b| mine[a].key.cmp(&mine[b].key));
            st.moved.clear();
            st.moved.extend(st.found.drain(start..));
            for &i in &st.order {
                let m = &mine[i];
                for f in &mut st.moved[m.from - start..m.to - start] {
                    st.found.push(std::mem::take(f));
                }
            }
        }
        st.members.truncate(base);
        Ok(Scalar::Other)
    }
}

/// An object key, borrowed from the record's bytes when it has no escapes.
struct Key;

impl<'de> serde::de::DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Key {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The reference a record holds to `path` with `content`, all of it seen.
    fn raw_file(path: &str, content: &[u8]) -> crate::evidence::RawFile {
        crate::evidence::RawFile {
            path: path.into(),
            bytes: content.len() as u64,
            bytes_seen: content.len() as u64,
            sha256: crate::hash::sha256(content),
        }
    }

    #[test]
    fn a_raw_file_swapped_for_a_link_or_a_fifo_is_a_problem_not_a_read() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("host.txt");
        std::fs::write(&host, b"hello").unwrap();
        let trial = dir.path().join("trial");
        std::fs::create_dir(&trial).unwrap();
        std::os::unix::fs::symlink(&host, trial.join("agent.out")).unwrap();
        std::os::unix::fs::symlink(dir.path(), trial.join("ws")).unwrap();
        nix::unistd::mkfifo(&trial.join("fifo.out"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let raw = |path: &str| raw_file(path, b"hello");
        let link = verify_file(&trial, &raw("agent.out")).unwrap_err();
        assert!(link.problem.contains("symlink"), "{link}");
        let through = verify_file(&trial, &raw("ws/host.txt")).unwrap_err();
        assert!(through.problem.contains("symlink"), "{through}");
        // Would block forever if opened as a plain read.
        let fifo = verify_file(&trial, &raw("fifo.out")).unwrap_err();
        assert!(fifo.problem.contains("not a regular file"), "{fifo}");
        std::fs::copy(&host, trial.join("real.out")).unwrap();
        verify_file(&trial, &raw("real.out")).unwrap();
    }

    /// A raw file replaced by a terabyte of holes is refused by its size, unread.
    #[test]
    fn a_raw_file_of_another_size_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::File::create(dir.path().join("agent.out")).unwrap();
        f.set_len(1 << 40).unwrap();
        let why = verify_file(dir.path(), &raw_file("agent.out", b"hello")).unwrap_err();
        assert!(
            why.problem.contains("recorded hash")
                && why
                    .problem
                    .contains("1099511627776 bytes on disk, 5 recorded"),
            "{why}"
        );
        let why = verify_file(dir.path(), &raw_file("agent.out", b"")).unwrap_err();
        assert!(why.problem.contains("bytes on disk, 0 recorded"), "{why}");
    }

    #[test]
    fn an_empty_raw_file_is_checked_by_its_metadata_yet_refuses_links_fifos_and_content() {
        let dir = tempfile::tempdir().unwrap();
        let trial = dir.path().join("trial");
        std::fs::create_dir_all(trial.join("gate")).unwrap();
        std::fs::write(trial.join("gate/empty.err"), b"").unwrap();
        std::fs::write(trial.join("gate/grew.err"), b"x").unwrap();
        std::fs::write(dir.path().join("host.err"), b"").unwrap();
        std::os::unix::fs::symlink(dir.path().join("host.err"), trial.join("link.err")).unwrap();
        std::os::unix::fs::symlink(trial.join("gate"), trial.join("via")).unwrap();
        nix::unistd::mkfifo(&trial.join("fifo.err"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let empty = |path: &str| raw_file(path, b"");
        verify_file(&trial, &empty("gate/empty.err")).unwrap();
        let grew = verify_file(&trial, &empty("gate/grew.err")).unwrap_err();
        assert!(grew.problem.contains("recorded hash"), "{grew}");
        let link = verify_file(&trial, &empty("link.err")).unwrap_err();
        assert!(link.problem.contains("symlink"), "{link}");
        let via = verify_file(&trial, &empty("via/empty.err")).unwrap_err();
        assert!(via.problem.contains("symlink"), "{via}");
        let fifo = verify_file(&trial, &empty("fifo.err")).unwrap_err();
        assert!(fifo.problem.contains("not a regular file"), "{fifo}");
        let gone = verify_file(&trial, &empty("gone.err")).unwrap_err();
        assert!(gone.problem.contains("cannot be read"), "{gone}");
        let up = verify_file(&trial, &empty("../host.err")).unwrap_err();
        assert!(up.problem.contains("leaves the trial directory"), "{up}");
        // A reader's open refuses a FIFO at once instead of blocking on it.
        let why = open_raw(&trial, "fifo.err").err().unwrap();
        assert!(why.contains("not a regular file"), "{why}");
    }

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

    /// Assert that the scan of `doc` names what the walk of its `Value` names, in the
    /// same order; how many references that is.
    fn scan_matches_walk(doc: &str) -> usize {
        let Ok(value) = serde_json::from_str::<Value>(doc) else {
            panic!("not JSON: {doc}");
        };
        let mut want = Vec::new();
        collect(&value, &mut want);
        let want: Vec<_> = want.iter().map(|n| (n.path, n.bytes, n.sha256)).collect();
        let found = scan(doc.as_bytes()).unwrap();
        let got: Vec<_> = found
            .iter()
            .map(|n| (n.path.as_ref(), n.bytes, n.sha256.as_ref()))
            .collect();
        assert_eq!(got, want, "{doc}");
        want.len()
    }

    #[test]
    fn the_scan_of_a_records_bytes_finds_what_its_value_holds_in_the_same_order() {
        let docs = [
            // Nested references, keys out of order, an array, escapes in a path.
            r#"{"z":{"path":"a\u0062.out","bytes":1,"bytes_seen":1,"sha256":"s1"},
                "a":[{"sha256":"s2","bytes_seen":0,"bytes":2,"path":"gate/x"},7,"str",null,true],
                "m":{"inner":{"path":"p3","bytes":3,"bytes_seen":3,"sha256":"s3"}}}"#,
            // A reference is not searched further; a near miss is.
            r#"{"r":{"path":"outer","bytes":1,"bytes_seen":1,"sha256":"o",
                     "x":{"path":"inner","bytes":1,"bytes_seen":1,"sha256":"i"}},
                "near":{"path":"n","bytes":-1,"bytes_seen":1,"sha256":"n",
                        "y":{"path":"deep","bytes":5,"bytes_seen":5,"sha256":"d"}},
                "float":{"path":"f","bytes":1.0,"bytes_seen":1,"sha256":"f"}}"#,
            // The last of duplicate keys counts.
            r#"{"d":{"path":1,"path":"late","bytes":4,"bytes_seen":4,"sha256":"l"},
                "d":{"path":"last","bytes":4,"bytes_seen":4,"sha256":"ll"},
                "e":{"path":"gone","path":2,"bytes":4,"bytes_seen":4,"sha256":"g"}}"#,
            r#"[{"path":"top","bytes":0,"bytes_seen":0,"sha256":"t"}]"#,
            // Members out of key order; a duplicate whose first holds findings, and
            // one whose last does; findings at several depths of one member.
            r#"{"z":{"path":"z1","bytes":1,"bytes_seen":1,"sha256":"z"},
                "b":[{"path":"b1","bytes":1,"bytes_seen":1,"sha256":"b"},
                     {"q":{"path":"b2","bytes":2,"bytes_seen":2,"sha256":"b"}}],
                "m":{"y":{"path":"m1","bytes":1,"bytes_seen":1,"sha256":"m"},
                     "x":{"path":"m2","bytes":1,"bytes_seen":1,"sha256":"m"}},
                "dup":{"path":"first","bytes":1,"bytes_seen":1,"sha256":"f"},
                "a":1,
                "dup":2,
                "again":{"path":"early","bytes":1,"bytes_seen":1,"sha256":"e"},
                "again":{"path":"later","bytes":1,"bytes_seen":1,"sha256":"l"}}"#,
            r#""just a string""#,
        ];
        for doc in docs {
            scan_matches_walk(doc);
        }
        for bad in ["{", "{} x", "[1,]"] {
            let v = serde_json::from_str::<Value>(bad).unwrap_err().to_string();
            assert_eq!(scan(bad.as_bytes()).err().map(|e| e.to_string()), Some(v));
        }
    }

    /// A random JSON text, written by hand so that it can hold what a `Value` cannot
    /// (duplicate keys), made of the keys and values a raw-file reference is made of.
    fn random_doc(rng: &mut u64, depth: u32, out: &mut String) {
        fn below(rng: &mut u64, n: u64) -> u64 {
            *rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = *rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % n
        }
        let pick = below(rng, if depth == 0 { 4 } else { 7 });
        match pick {
            0 => out
                .push_str(["1", "0", "-1", "2.5", "18446744073709551615"][below(rng, 5) as usize]),
            1 => out.push_str(
                [r#""a""#, r#""p\u0031""#, r#""gate/x""#, r#""""#][below(rng, 4) as usize],
            ),
            2 => out.push_str(["null", "true"][below(rng, 2) as usize]),
            3 => out.push_str("{}"),
            4 => {
                // Mostly a reference, its members in any order, with near misses
                // (a wrong type, a duplicate key) and other members among them.
                let mut members: Vec<(&str, String)> = Vec::new();
                for key in ["path", "bytes", "bytes_seen", "sha256"] {
                    if below(rng, 8) == 0 {
                        continue;
                    }
                    let good = match key {
                        "path" => format!("\"f{}\"", below(rng, 3)),
                        "sha256" => format!("\"s{}\"", below(rng, 3)),
                        _ => below(rng, 3).to_string(),
                    };
                    let mut value = good;
                    if below(rng, 6) == 0 {
                        value.clear();
                        random_doc(rng, depth - 1, &mut value);
                    }
                    members.push((key, value));
                }
                for _ in 0..below(rng, 3) {
                    let keys = ["a", "z", "path", "bytes", "x"];
                    let mut value = String::new();
                    random_doc(rng, depth - 1, &mut value);
                    members.push((keys[below(rng, keys.len() as u64) as usize], value));
                }
                for i in (1..members.len()).rev() {
                    members.swap(i, below(rng, i as u64 + 1) as usize);
                }
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&format!("\"{key}\":{value}"));
                }
                out.push('}');
            }
            5 => {
                let keys = [
                    "path",
                    "bytes",
                    "bytes_seen",
                    "sha256",
                    "a",
                    "b",
                    "z",
                    "p\\u0061th",
                ];
                out.push('{');
                for i in 0..below(rng, 7) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('"');
                    out.push_str(keys[below(rng, keys.len() as u64) as usize]);
                    out.push_str("\":");
                    random_doc(rng, depth - 1, out);
                }
                out.push('}');
            }
            _ => {
                out.push('[');
                for i in 0..below(rng, 4) {
                    if i > 0 {
                        out.push(',');
                    }
                    random_doc(rng, depth - 1, out);
                }
                out.push(']');
            }
        }
    }

    #[test]
    fn the_scan_agrees_with_a_values_walk_on_thousands_of_random_documents() {
        let mut rng = 7u64;
        let mut refs = 0;
        for _ in 0..20_000 {
            let mut doc = String::new();
            random_doc(&mut rng, 4, &mut doc);
            refs += scan_matches_walk(&doc);
        }
        // The documents are not all near misses: many hold references.
        assert!(refs > 1000, "only {refs} references in 20,000 documents");
    }

    #[test]
    fn every_raw_file_named_anywhere_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.out"), b"hello").unwrap();
        std::fs::create_dir(dir.path().join("gate")).unwrap();
        std::fs::write(dir.path().join("gate/1.out"), b"x").unwrap();
        let raw = |path: &str, content: &[u8]| {
            serde_json::json!({
                "path": path, "bytes": content.len(), "bytes_seen": content.len(),
                "sha256": crate::hash::sha256(content),
            })
        };
        let rec = serde_json::json!({
            "evidence": {
                "agent": {"stdout": raw("a.out", b"hello"), "end": {"exit_code": 0}},
                "gate": {"runs": [{"stdout": raw("gate/1.out", b"x")}]},
            }
        });
        let ok = verify(dir.path(), &rec);
        assert_eq!(ok.checked, 2);
        assert!(ok.problems.is_empty(), "{:?}", ok.problems);

        std::fs::write(dir.path().join("gate/1.out"), b"y").unwrap();
        let bad = verify(dir.path(), &rec);
        assert_eq!(bad.problems.len(), 1);
        assert_eq!(bad.problems[0].path, "gate/1.out");
        assert!(bad.problems[0].problem.contains("recorded hash"));

        let escaping = serde_json::json!({"x": raw("../a.out", b"hello")});
        let esc = verify(&dir.path().join("gate"), &escaping);
        assert!(esc.problems[0]
            .problem
            .contains("leaves the trial directory"));

        std::fs::remove_file(dir.path().join("a.out")).unwrap();
        let gone = verify(dir.path(), &rec);
        assert!(gone.problems.iter().any(|p| p.path == "a.out"));
    }
}
