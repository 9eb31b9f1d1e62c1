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
    let rel = Path::new(n.path);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err("the recorded path leaves the trial directory".into());
    }
    let mut f = open_plain(trial_dir, rel)?;
    let mut hash = crate::hash::Sha256Stream::default();
    let mut buf = vec![0u8; 64 << 10];
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
    let found = hash.finish();
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

/// Open `rel` below `trial_dir` for reading only if no component of it is a symlink and
/// it is a regular file: a trial directory holds what an agent wrote, and a raw file
/// swapped for a link to a host file, or for a FIFO that blocks the open forever, must
/// read as a problem, not as the host file or a hang.
fn open_plain(trial_dir: &Path, rel: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut at = trial_dir.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let meta = std::fs::symlink_metadata(&at).map_err(|e| format!("cannot be read: {e}"))?;
        if meta.file_type().is_symlink() {
            return Err("is a symlink; raw evidence is never read through a link".into());
        }
        if i + 1 < parts.len() && !meta.is_dir() {
            return Err("a component of its path is not a directory".into());
        }
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&at)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let meta = f.metadata().map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    Ok(f)
}

/// The first `limit` bytes of the raw file `rel` below `trial_dir`, and whether there
/// was more, read the way [`verify`] reads (never through a link, never a FIFO); `None`
/// when it cannot be read so. For pages and exports, which show raw files they do not
/// check.
pub fn read_plain(trial_dir: &Path, rel: &str, limit: u64) -> Option<(Vec<u8>, bool)> {
    use std::io::Read;
    let f = open_plain_file(trial_dir, rel)?;
    let mut buf = Vec::new();
    f.take(limit.saturating_add(1)).read_to_end(&mut buf).ok()?;
    let more = buf.len() as u64 > limit;
    buf.truncate(limit as usize);
    Some((buf, more))
}

/// The raw file `rel` below `trial_dir`, opened the way [`verify`] opens it, for a reader
/// that streams it (an agent's stdout through its parser); `None` when it cannot be.
pub fn open_plain_file(trial_dir: &Path, rel: &str) -> Option<std::fs::File> {
    let rel = Path::new(rel);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    open_plain(trial_dir, rel).ok()
}

/// [`verify`] for the record file `file` (its trial directory is the file's parent).
pub fn verify_record_file(file: &Path) -> Result<RawCheck, super::RecordError> {
    let bytes = std::fs::read(file).map_err(|source| super::RecordError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| super::RecordError::Invalid {
        file: file.to_path_buf(),
        reason: format!("not JSON: {e}"),
    })?;
    Ok(verify(file.parent().unwrap_or(Path::new(".")), &value))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let raw = |path: &str| crate::evidence::RawFile {
            path: path.into(),
            bytes: 5,
            bytes_seen: 5,
            sha256: crate::hash::sha256(b"hello"),
        };
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
