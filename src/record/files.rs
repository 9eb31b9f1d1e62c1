//! Where records are written and found: a fresh directory per trial, the create-new
//! atomic write no record is ever overwritten by, and the search for a path's records.
//!
//! A record is created with create-new semantics and written atomically (a temporary
//! file hard-linked into place, which fails if the name exists), so a record is never
//! overwritten and never seen half-written.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::header::{io, RecordError, RECORD_FILE};

/// Suites whose trials have directories of their own (`<suite>.<…>`).
const SUITES: [&str; 3] = ["qa.", "challenge.", "scorecard."];

/// Whether a run directory's entry of this name is a trial's directory.
pub fn is_trial_dir_name(name: &str) -> bool {
    SUITES.iter().any(|s| name.starts_with(s))
}

/// Whether `dir_name` is a directory [`create_trial_dir`] could have made for `trial`:
/// a record in any other directory was moved or written there by someone else.
pub fn is_trial_dir_of(trial: &str, dir_name: &str) -> bool {
    let base = trial.replace("::", ".");
    dir_name == base
        || dir_name
            .strip_prefix(base.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n >= 2 && n.to_string().len() == dir_name.len() - base.len() - 1)
}

/// Create a fresh directory for a trial under `run_dir`: `<name>`, or `<name>.2`,
/// `<name>.3`… when a retry already used the name. Never reuses a directory.
pub fn create_trial_dir(run_dir: &Path, trial: &str) -> Result<PathBuf, RecordError> {
    std::fs::create_dir_all(run_dir).map_err(io(run_dir))?;
    let base = trial.replace("::", ".");
    for attempt in 1..10_000u32 {
        let dir = if attempt == 1 {
            run_dir.join(&base)
        } else {
            run_dir.join(format!("{base}.{attempt}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&dir)(e)),
        }
    }
    Err(RecordError::Exists {
        file: run_dir.join(base),
    })
}

/// Write `value` as `dir/name` atomically and only if `dir/name` does not exist.
pub fn write_new_json<T: Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> Result<PathBuf, RecordError> {
    let target = dir.join(name);
    let bytes = super::digest::record_bytes(value).map_err(|e| RecordError::Invalid {
        file: target.clone(),
        reason: e.to_string(),
    })?;
    let mut tmp = tempfile_in(dir)?;
    tmp.1.write_all(&bytes).map_err(io(&tmp.0))?;
    tmp.1.sync_all().map_err(io(&tmp.0))?;
    let linked = std::fs::hard_link(&tmp.0, &target);
    let _ = std::fs::remove_file(&tmp.0);
    match linked {
        Ok(()) => Ok(target),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(RecordError::Exists { file: target })
        }
        Err(e) => Err(io(&target)(e)),
    }
}

fn tempfile_in(dir: &Path) -> Result<(PathBuf, std::fs::File), RecordError> {
    for i in 0..1000u32 {
        let path = dir.join(format!(".tmp-{}-{i}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&path)(e)),
        }
    }
    Err(RecordError::Exists {
        file: dir.join(".tmp"),
    })
}

/// Every record file under `path`: `path` itself if it is a record, otherwise each
/// `*/record.json` below it (sorted, so output is deterministic).
pub fn find_records(path: &Path) -> Result<Vec<PathBuf>, RecordError> {
    let mut out = record_candidates(path)?;
    out.retain(|f| f.is_file());
    Ok(out)
}

/// Where [`find_records`] looks for records, before it asks which are there: `path`
/// itself if it is a record file or a trial directory holding one, otherwise
/// `<entry>/record.json` for every entry of the directory `path`, in the order of the
/// entries' names (the order of the paths, as they share a parent). A reader that opens
/// each record anyway ([`super::any::check_present`]) asks whether it is there as it
/// opens it, on every core, instead of looking at every path once more beforehand.
pub fn record_candidates(path: &Path) -> Result<Vec<PathBuf>, RecordError> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if path.join(RECORD_FILE).is_file() {
        return Ok(vec![path.join(RECORD_FILE)]);
    }
    // A trial directory without its record (an interrupted trial) holds no records:
    // what lies below it (the agent's workspace) is the agent's to write, and a
    // `record.json` there is a forgery, never a trial's record.
    if path
        .file_name()
        .is_some_and(|n| is_trial_dir_name(&n.to_string_lossy()))
    {
        return Ok(Vec::new());
    }
    // Each entry's name is taken once: a sort of paths compares them component by
    // component, and a sort by `DirEntry::file_name` makes a new name at every
    // comparison.
    let mut names = Vec::new();
    for e in std::fs::read_dir(path).map_err(io(path))? {
        names.push(e.map_err(io(path))?.file_name());
    }
    names.sort_unstable();
    Ok(names
        .into_iter()
        .map(|n| path.join(n).join(RECORD_FILE))
        .collect())
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn a_trial_has_exactly_the_directories_create_trial_dir_makes() {
        let run = tempfile::tempdir().unwrap();
        for _ in 0..3 {
            let dir = create_trial_dir(run.path(), "qa::app::cap").unwrap();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(is_trial_dir_of("qa::app::cap", &name), "{name}");
        }
        for other in [
            "qa.app.cap2",
            "qa.app",
            "qa.app.cap.1",
            "qa.app.cap.02",
            "qa.app.cap.x",
            "",
        ] {
            assert!(!is_trial_dir_of("qa::app::cap", other), "{other}");
        }
    }

    #[test]
    fn records_are_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        write_new_json(dir.path(), "r.json", &serde_json::json!({"a": 1})).unwrap();
        let err = write_new_json(dir.path(), "r.json", &serde_json::json!({"a": 2})).unwrap_err();
        assert!(matches!(err, RecordError::Exists { .. }));
        let kept: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
        assert_eq!(kept["a"], 1);
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_interrupted_trial_dir_yields_no_record_from_the_agents_workspace() {
        let run = tempfile::tempdir().unwrap();
        let trial = run.path().join("qa.app.cap");
        std::fs::create_dir_all(trial.join("workspace")).unwrap();
        std::fs::write(trial.join("workspace").join(RECORD_FILE), "{}").unwrap();
        assert_eq!(find_records(&trial).unwrap(), Vec::<PathBuf>::new());
        // From the run directory too: only `<trial>/record.json` is a record.
        assert_eq!(find_records(run.path()).unwrap(), Vec::<PathBuf>::new());
    }

    #[test]
    fn trial_dirs_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let a = create_trial_dir(dir.path(), "qa::x::y").unwrap();
        let b = create_trial_dir(dir.path(), "qa::x::y").unwrap();
        assert_ne!(a, b);
        assert!(a.ends_with("qa.x.y") && b.ends_with("qa.x.y.2"));
    }
}
