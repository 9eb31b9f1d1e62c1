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
    verify_named(trial_dir, n, None)
}

/// [`verify_one`], taking the hash and length of a file the caller already read
/// (`hashed`) instead of reading it again; the path and the file's kind are checked
/// all the same.
fn verify_named(trial_dir: &Path, n: &Named<'_>, hashed: Option<&Hashed>) -> Result<(), String> {
    let rel = Path::new(n.path);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err("the recorded path leaves the trial directory".into());
    }
    let mut f = open_plain(trial_dir, rel)?;
    let (found, len) = match hashed {
        Some(h) => (h.sha256.clone(), h.bytes),
        None => {
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
            (hash.finish(), len)
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

/// Open `rel` below `trial_dir` for reading only if no component of it is a symlink and
/// it is a regular file: a trial directory holds what an agent wrote, and a raw file
/// swapped for a link to a host file, or for a FIFO that blocks the open forever, must
/// read as a problem, not as the host file or a hang.
fn open_plain(trial_dir: &Path, rel: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    const LINK: &str = "is a symlink; raw evidence is never read through a link";
    let mut at = trial_dir.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    let (last, dirs) = match parts.split_last() {
        Some((last, dirs)) => (Some(last), dirs),
        None => (None, &parts[..]),
    };
    for part in dirs {
        at.push(part);
        let meta = std::fs::symlink_metadata(&at).map_err(|e| format!("cannot be read: {e}"))?;
        if meta.file_type().is_symlink() {
            return Err(LINK.into());
        }
        if !meta.is_dir() {
            return Err("a component of its path is not a directory".into());
        }
    }
    if let Some(last) = last {
        at.push(last);
    }
    // The last component is not looked at before it is opened: O_NOFOLLOW refuses it if
    // it is a link (ELOOP, as no earlier component is one), one system call fewer per
    // raw file of a run.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&at)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) if last.is_some() => LINK.to_string(),
            _ => format!("cannot be read: {e}"),
        })?;
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
    verify_record_bytes(file, &bytes, &[])
}

/// A raw file a reader already streamed and hashed while reading it (rescore's parse of
/// the agent's stdout): its path as the record names it, the hash found and the bytes
/// read. [`verify_record_bytes`] does not read such a file twice; it still checks that
/// the file is a plain file below the trial directory, as it does for every other.
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
pub fn verify_record_bytes(
    file: &Path,
    bytes: &[u8],
    known: &[Hashed],
) -> Result<RawCheck, super::RecordError> {
    let found = scan(bytes).map_err(|e| super::RecordError::Invalid {
        file: file.to_path_buf(),
        reason: format!("not JSON: {e}"),
    })?;
    let trial_dir = file.parent().unwrap_or(Path::new("."));
    let mut check = RawCheck::default();
    let mut seen: Vec<(&str, u64, &str)> = Vec::new();
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
        if let Err(problem) = verify_named(trial_dir, &named, hashed) {
            check.problems.push(RawProblem {
                path: n.path.to_string(),
                problem,
            });
        }
    }
    Ok(check)
}

/// A raw-file reference scanned from a record's bytes.
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
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut found = Vec::new();
    Scan {
        found: &mut found,
        want: Want::Nothing,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(found)
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
    found: &'s mut Vec<Found<'a>>,
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
                found: &mut *self.found,
                want: Want::Nothing,
            })?
            .is_some()
        {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'de>, A::Error> {
        // Each member's findings are kept apart until the object is known: a raw-file
        // reference is not searched further, any other object is searched in key order.
        let mut members: Vec<(Cow<'de, str>, Scalar<'de>, Vec<Found<'de>>)> = Vec::new();
        while let Some(key) = map.next_key_seed(Key)? {
            let want = match key.as_ref() {
                "path" | "sha256" => Want::Str,
                "bytes" | "bytes_seen" => Want::U64,
                _ => Want::Nothing,
            };
            let mut inner = Vec::new();
            let value = map.next_value_seed(Scan {
                found: &mut inner,
                want,
            })?;
            // The last of duplicate keys counts, as in a `Value`'s map.
            members.retain(|(k, _, _)| *k != key);
            members.push((key, value, inner));
        }
        let str_of = |name: &str| {
            members.iter().find_map(|(k, v, _)| match v {
                Scalar::Str(s) if k == name => Some(s.clone()),
                _ => None,
            })
        };
        let u64_of = |name: &str| {
            members.iter().find_map(|(k, v, _)| match v {
                Scalar::U64(n) if k == name => Some(*n),
                _ => None,
            })
        };
        if let (Some(path), Some(bytes), Some(_), Some(sha256)) = (
            str_of("path"),
            u64_of("bytes"),
            u64_of("bytes_seen"),
            str_of("sha256"),
        ) {
            self.found.push(Found {
                path,
                bytes,
                sha256,
            });
            return Ok(Scalar::Other);
        }
        members.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, _, inner) in members {
            self.found.extend(inner);
        }
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
            r#""just a string""#,
        ];
        for doc in docs {
            let value: Value = serde_json::from_str(doc).unwrap();
            let mut want = Vec::new();
            collect(&value, &mut want);
            let want: Vec<_> = want.iter().map(|n| (n.path, n.bytes, n.sha256)).collect();
            let found = scan(doc.as_bytes()).unwrap();
            let got: Vec<_> = found
                .iter()
                .map(|n| (n.path.as_ref(), n.bytes, n.sha256.as_ref()))
                .collect();
            assert_eq!(got, want, "{doc}");
        }
        for bad in ["{", "{} x", "[1,]"] {
            let v = serde_json::from_str::<Value>(bad).unwrap_err().to_string();
            assert_eq!(scan(bad.as_bytes()).err().map(|e| e.to_string()), Some(v));
        }
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
