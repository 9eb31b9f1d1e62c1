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

mod open;
mod scan;

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::header::RecordError;
use open::{inside, open_plain, plain_dirs, SeenDirs, LINK};
pub use open::{open_plain_file, open_raw, read_plain, PlainFile};
use scan::scan;

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

/// Every distinct raw file `record` (a record's JSON) names, as (path, bytes, sha256),
/// in the order the record names them: what [`verify`] checks, for a page to list.
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
        Some(h) => (Cow::Borrowed(h.sha256.as_str()), h.bytes),
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
                (Cow::Borrowed(crate::hash::EMPTY_SHA256), 0)
            } else {
                return Err(other_size(meta.len(), n));
            }
        }
        None => {
            let f = open_plain(trial_dir, rel, seen)?;
            if f.size() != n.bytes {
                return Err(other_size(f.size(), n));
            }
            let (found, len) = hash_plain(f)?;
            (Cow::Owned(found), len)
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

/// [`verify`] for the record file `file` (its trial directory is the file's parent).
pub fn verify_record_file(file: &Path) -> Result<RawCheck, RecordError> {
    let bytes = std::fs::read(file).map_err(|source| RecordError::Io {
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
) -> Result<RawCheck, RecordError> {
    let trial_dir = file.parent().unwrap_or(Path::new("."));
    if let Some(check) = listed.and_then(|l| verify_listed(trial_dir, bytes, known, l)) {
        return Ok(check);
    }
    let found = scan(bytes).map_err(|e| RecordError::Invalid {
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

#[cfg(test)]
mod tests {
    use super::*;

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
