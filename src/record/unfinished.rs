//! Trial directories without a finished record: trials that started and never finished.
//!
//! A trial directory is created before anything of the trial runs and its record is
//! written last, so a directory without `record.json` is a trial whose harness was
//! killed (a cancelled CI job, a lost machine) or is still running. A harness asked to
//! stop (SIGINT, SIGTERM) writes the record of each trial in flight, marked
//! interrupted: its evidence is partial, so it is no more a result than a directory
//! without a record. Neither is ever skipped in silence: rescore and the pages name
//! them, with the evidence they left, and a resumed run runs them again.

use std::path::{Path, PathBuf};

pub use super::files::is_trial_dir_name;
use super::files::is_trial_dir_of;
use super::header::{io, RecordError, RECORD_FILE};

/// How many evidence entries a description names before it counts the rest.
const NAMED: usize = 8;

/// One trial directory without a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfinished {
    /// The directory's name inside the run directory.
    pub dir: String,
    /// What it holds, one entry per top-level file (`name (N bytes)`) or directory
    /// (`name/ (N files)`), sorted by name.
    pub evidence: Vec<String>,
    /// The signal its record names when the harness stopped the trial and wrote the
    /// record (`SIGINT`, `SIGTERM`); `None` for a directory without a record.
    pub stopped: Option<String>,
}

impl Unfinished {
    /// `<dir> has no record.json …; evidence kept: …`, for a page or a report.
    pub fn describe(&self) -> String {
        let kept = if self.evidence.is_empty() {
            "none".to_string()
        } else if self.evidence.len() > NAMED {
            format!(
                "{} and {} more",
                self.evidence[..NAMED].join(", "),
                self.evidence.len() - NAMED
            )
        } else {
            self.evidence.join(", ")
        };
        match &self.stopped {
            None => format!(
                "`{}` has no {RECORD_FILE} (the trial started and never finished, or its record was removed); evidence kept: {kept}",
                self.dir
            ),
            Some(signal) => format!(
                "`{}` was stopped part-way when the run was interrupted ({signal}): its {RECORD_FILE} keeps partial evidence, not a result; evidence kept: {kept}",
                self.dir
            ),
        }
    }

    /// Whether this directory is one `trial` could have made (see [`is_trial_dir_of`]).
    pub fn is_of(&self, trial: &str) -> bool {
        is_trial_dir_of(trial, &self.dir)
    }
}

/// Every trial directory of `run_dir` without a record, sorted by name. `recorded` says
/// which directories the caller has just read a record in (they are not looked at
/// again); any other is asked of the disk.
pub fn find(
    run_dir: &Path,
    recorded: impl Fn(&str) -> bool,
) -> Result<Vec<Unfinished>, RecordError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(run_dir).map_err(io(run_dir))? {
        let entry = entry.map_err(io(run_dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !is_trial_dir_name(&name) || recorded(&name) {
            continue;
        }
        let path = entry.path();
        // A record is a regular file: a directory or FIFO in its place is none.
        if !path.is_dir() || path.join(RECORD_FILE).is_file() {
            continue;
        }
        names.push(name);
    }
    of_dirs(run_dir, names)
}

/// The trial directories `names` of `run_dir`, which a caller that has just listed the
/// run found to hold no record, with what each kept; sorted by name.
pub fn of_dirs(
    run_dir: &Path,
    names: impl IntoIterator<Item = String>,
) -> Result<Vec<Unfinished>, RecordError> {
    let mut out = names
        .into_iter()
        .map(|name| {
            Ok(Unfinished {
                evidence: evidence(&run_dir.join(&name))?,
                dir: name,
                stopped: None,
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    Ok(out)
}

/// The trial directory `dir` of `run_dir`, whose record says the harness stopped the
/// trial part-way on `signal`.
pub fn stopped(run_dir: &Path, dir: &str, signal: &str) -> Result<Unfinished, RecordError> {
    Ok(Unfinished {
        evidence: evidence(&run_dir.join(dir))?,
        dir: dir.to_string(),
        stopped: Some(signal.to_string()),
    })
}

fn evidence(dir: &Path) -> Result<Vec<String>, RecordError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        // Symlinks are not followed: an agent's workspace may point anywhere.
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.is_dir() {
            out.push(format!("{name}/ ({} files)", count_files(&path)));
        } else {
            out.push(format!("{name} ({} bytes)", meta.len()));
        }
    }
    out.sort();
    Ok(out)
}

/// Regular files under `dir`, however deep; unreadable parts count as empty (a
/// sandbox's leftovers may be owned by another user), since this only describes.
fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => n += 1,
                _ => {}
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_dir_without_a_record_is_found_with_what_it_holds() {
        let run = tempfile::tempdir().unwrap();
        let done = run.path().join("qa.app.done");
        std::fs::create_dir(&done).unwrap();
        std::fs::write(done.join(RECORD_FILE), "{}").unwrap();
        let cut = run.path().join("qa.app.cut");
        std::fs::create_dir_all(cut.join("gate/run1")).unwrap();
        std::fs::write(cut.join("agent.stdout"), "hello").unwrap();
        std::fs::write(cut.join("gate/run1/out"), "x").unwrap();
        // A record's name on a directory is no record.
        let odd = run.path().join("qa.app.odd");
        std::fs::create_dir_all(odd.join(RECORD_FILE)).unwrap();
        // Not trial directories: files, and directories of no suite.
        std::fs::create_dir(run.path().join("transcripts")).unwrap();
        std::fs::write(run.path().join("manifest.jsonl"), "").unwrap();

        let found = find(run.path(), |_| false).unwrap();
        assert_eq!(
            found,
            vec![
                Unfinished {
                    dir: "qa.app.cut".into(),
                    evidence: vec!["agent.stdout (5 bytes)".into(), "gate/ (1 files)".into()],
                    stopped: None,
                },
                Unfinished {
                    dir: "qa.app.odd".into(),
                    evidence: vec!["record.json/ (0 files)".into()],
                    stopped: None,
                },
            ]
        );
        assert!(found[0].is_of("qa::app::cut"));
        assert!(!found[0].is_of("qa::app::done"));
        let text = found[0].describe();
        assert!(
            text.starts_with("`qa.app.cut` has no record.json"),
            "{text}"
        );
        assert!(
            text.ends_with("evidence kept: agent.stdout (5 bytes), gate/ (1 files)"),
            "{text}"
        );
        // A record the harness wrote on its way down is as unfinished, and says why.
        let stopped = stopped(run.path(), "qa.app.done", "SIGTERM").unwrap();
        let text = stopped.describe();
        assert!(
            text.starts_with(
                "`qa.app.done` was stopped part-way when the run was interrupted (SIGTERM)"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("evidence kept: record.json (2 bytes)"),
            "{text}"
        );
    }
}
