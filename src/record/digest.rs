//! The hash of a record and the digest of a whole run.
//!
//! A record's hash covers everything the record states — verdict, exit codes, timings,
//! the hash of every raw file it names — so a run's records are pinned by one value per
//! record, and a whole run by one value over those: a rewrite of a run directory after
//! the fact, however consistent (verdicts changed and every hash recomputed), changes the
//! run digest that was printed when the run ended.

use std::path::Path;

use serde::Serialize;

use super::header::{io, trial_of, RecordError, RECORD_FILE};

/// The exact bytes a record is stored as: pretty JSON and a newline. The writer
/// ([`super::files::write_new_json`]) and [`value_sha256`] both use this, so the hash a trial
/// prints of its record in memory is the hash of the file on disk.
pub fn record_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// `sha256:<hex>` of the bytes `value` is stored as (see [`record_bytes`]).
pub fn value_sha256<T: Serialize>(value: &T) -> String {
    // A record is plain data with string keys: serializing it cannot fail.
    crate::hash::sha256(&record_bytes(value).unwrap_or_default())
}

/// `sha256:<hex>` of a file, read in pieces.
pub fn file_sha256(file: &Path) -> Result<String, RecordError> {
    use std::io::Read;
    let mut f = std::fs::File::open(file).map_err(io(file))?;
    let mut hash = crate::hash::Sha256Stream::default();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = f.read(&mut buf).map_err(io(file))?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    Ok(hash.finish())
}

/// One record's part in a run digest: its trial name and the hash of its file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DigestEntry {
    pub trial: String,
    /// `sha256:<hex>` of the `record.json` bytes as stored.
    pub record_sha256: String,
}

impl DigestEntry {
    /// The entry of the record in `trial_dir` (or the record file itself). The trial is
    /// the record's `trial` field; a record too broken to name its trial is entered
    /// under its trial directory's name, so it still counts.
    pub fn of(record: &Path) -> Result<DigestEntry, RecordError> {
        let file = if record.is_dir() {
            record.join(RECORD_FILE)
        } else {
            record.to_path_buf()
        };
        let record_sha256 = file_sha256(&file)?;
        Ok(DigestEntry::from_checked(
            &file,
            record_sha256,
            trial_of(&file).ok(),
        ))
    }

    /// The entry of the record file `file` whose bytes hash to `record_sha256` and
    /// whose `trial` field reads as `trial` (as [`super::any::check`] found them), so
    /// that a reader that checked the record need not read it again.
    pub fn from_checked(file: &Path, record_sha256: String, trial: Option<String>) -> DigestEntry {
        let trial = trial.unwrap_or_else(|| {
            file.parent()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        DigestEntry {
            trial,
            record_sha256,
        }
    }
}

/// The digest of a run.
///
/// Definition: take one entry per `record.json` of the run (every attempt of a retried
/// trial included), the line `<trial>\t<record sha256>\n` for each, where `<trial>` is
/// the record's `trial` field (e.g. `qa::api-ledger::balance`) and `<record sha256>` is
/// `sha256:<64 lowercase hex>` of the record file's bytes exactly as stored; sort the
/// entries by trial name, then by record hash (bytewise on both); concatenate the lines
/// in that order and take SHA-256 of the result (UTF-8). The digest is written
/// `sha256:<64 lowercase hex>`. A run with no record has the digest of the empty string.
///
/// Every trial's summary line carries its trial name and `record_sha256=`, so the digest
/// of a run split across processes (nextest) can be recomputed from its JUnit output.
pub fn run_digest(entries: &[DigestEntry]) -> String {
    let mut sorted: Vec<&DigestEntry> = entries.iter().collect();
    sorted.sort();
    let mut hash = crate::hash::Sha256Stream::default();
    for e in sorted {
        hash.update(e.trial.as_bytes());
        hash.update(b"\t");
        hash.update(e.record_sha256.as_bytes());
        hash.update(b"\n");
    }
    hash.finish()
}

/// Whether `s` has the form of a digest: `sha256:` and 64 lowercase hex digits.
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(trial: &str, h: &str) -> DigestEntry {
        DigestEntry {
            trial: trial.into(),
            record_sha256: h.into(),
        }
    }

    #[test]
    fn the_digest_is_order_free_and_follows_its_definition() {
        let a = [e("qa::b", "sha256:1"), e("qa::a", "sha256:2")];
        let b = [e("qa::a", "sha256:2"), e("qa::b", "sha256:1")];
        assert_eq!(run_digest(&a), run_digest(&b));
        assert_eq!(
            run_digest(&a),
            crate::hash::sha256(b"qa::a\tsha256:2\nqa::b\tsha256:1\n")
        );
        assert_eq!(run_digest(&[]), crate::hash::sha256(b""));
        assert!(is_digest(&run_digest(&a)));
        assert!(!is_digest("sha256:ABC") && !is_digest("md5:00"));
    }

    #[test]
    fn a_retried_trial_counts_every_attempt_and_any_change_shows() {
        let one = [e("qa::a", "sha256:1")];
        let two = [e("qa::a", "sha256:1"), e("qa::a", "sha256:0")];
        assert_ne!(run_digest(&one), run_digest(&two));
        assert_eq!(
            run_digest(&two),
            crate::hash::sha256(b"qa::a\tsha256:0\nqa::a\tsha256:1\n")
        );
    }

    #[test]
    fn the_hash_of_a_value_is_the_hash_of_the_file_written() {
        let dir = tempfile::tempdir().unwrap();
        let v = serde_json::json!({"trial": "qa::x", "wall_ms": 1.5});
        let f = super::super::write_new_json(dir.path(), "record.json", &v).unwrap();
        assert_eq!(file_sha256(&f).unwrap(), value_sha256(&v));
        assert_eq!(DigestEntry::of(dir.path()).unwrap().trial, "qa::x");
    }
}
