//! The run manifest: the trials planned to run in a run directory, written before any
//! of them starts, so that a trial whose record is missing, or a record nobody planned,
//! is found afterwards.
//!
//! `manifest.jsonl` holds one JSON object per line, one line per planned attempt:
//! `{"trial": …, "suite": …, "planned_at": …, "pid": …}` (and, for a qa trial, the
//! capability's `kind`, so a page can count a missing trial where it belongs). Lines
//! are only ever appended, each attempt's in a single `write` on a file opened with
//! `O_APPEND`, because under nextest every trial is its own process and none of them
//! knows the filter: each appends its own line before it starts anything. `gauntlet
//! run` knows its whole plan and appends every line at once, before the first trial.
//!
//! A retried trial (nextest `--retries`) appends one line per attempt and leaves one
//! trial directory per attempt (`<trial>`, `<trial>.2`, …): trials are matched by name,
//! attempts by count.
//!
//! When a trial's record is written (and its trial was not stopped part-way), a
//! `finished` line follows, naming the record's directory and hash: a finished record
//! deleted or rewritten afterwards is then found (`REMOVED`), and is never mistaken for a
//! trial that did not finish, which a resume would run again.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::header::{io, RecordError};
use super::unfinished::Unfinished;
use crate::spec::CapabilityKind;

pub const MANIFEST_FILE: &str = "manifest.jsonl";

/// One planned attempt of a trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedTrial {
    /// The test name, e.g. `qa::api-ledger::balance`.
    pub trial: String,
    /// `qa`, `challenge` or `scorecard`.
    pub suite: String,
    /// RFC 3339, when the line was written.
    pub planned_at: String,
    /// The process that planned it (under nextest, the trial's own process).
    pub pid: u32,
    /// A qa trial's capability kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<CapabilityKind>,
    /// This line is a resumed run's second try at an attempt that never finished
    /// (`gauntlet run --resume`): it replaces that attempt rather than adding one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// This line plans nothing: it says the trial finished, with this record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<FinishedRecord>,
}

/// A finished record as its trial left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishedRecord {
    /// The trial directory, inside the run directory.
    pub dir: String,
    /// The record file's SHA-256 (`sha256:<hex>`), as rescore hashes it.
    pub record_sha256: String,
}

impl PlannedTrial {
    /// An attempt planned now by this process.
    pub fn now(trial: &str, suite: &str, kind: Option<CapabilityKind>) -> PlannedTrial {
        PlannedTrial {
            trial: trial.to_owned(),
            suite: suite.to_owned(),
            planned_at: chrono::Utc::now().to_rfc3339(),
            pid: std::process::id(),
            kind,
            resumed: false,
            finished: None,
        }
    }

    /// The line saying `trial` finished with the record in `dir` that hashes to `sha256`.
    pub fn finished(trial: &str, suite: &str, dir: &str, sha256: &str) -> PlannedTrial {
        PlannedTrial {
            finished: Some(FinishedRecord {
                dir: dir.to_owned(),
                record_sha256: sha256.to_owned(),
            }),
            ..PlannedTrial::now(trial, suite, None)
        }
    }

    /// The same line, marked as the resumption of an attempt that never finished.
    pub fn resuming(mut self) -> PlannedTrial {
        self.resumed = true;
        self
    }
}

/// Append `planned` to the manifest of `run_dir` (created if missing) in one write, and
/// flush it to disk before returning: a trial starts only once its line is stored.
pub fn append(run_dir: &Path, planned: &[PlannedTrial]) -> Result<(), RecordError> {
    if planned.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(run_dir).map_err(io(run_dir))?;
    let file = run_dir.join(MANIFEST_FILE);
    let mut text = Vec::new();
    for p in planned {
        // Plain data with string keys: serializing cannot fail.
        serde_json::to_writer(&mut text, p).map_err(|e| RecordError::Invalid {
            file: file.clone(),
            reason: e.to_string(),
        })?;
        text.push(b'\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .map_err(io(&file))?;
    f.write_all(&text).map_err(io(&file))?;
    f.sync_data().map_err(io(&file))
}

/// A manifest as read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub entries: Vec<PlannedTrial>,
    /// Lines that are not a planned trial: (1-based line number, why).
    pub bad_lines: Vec<(usize, String)>,
}

impl Manifest {
    /// Planned attempts per trial name, with the suite and kind of the first line. A
    /// resumed line replaces an attempt that never finished, so it counts none; a trial
    /// planned only by resumed lines still counts one.
    pub fn planned(&self) -> BTreeMap<&str, Planned<'_>> {
        let mut out: BTreeMap<&str, Planned<'_>> = BTreeMap::new();
        for e in self.entries.iter().filter(|e| e.finished.is_none()) {
            out.entry(e.trial.as_str())
                .or_insert(Planned {
                    first: e,
                    attempts: 0,
                })
                .attempts += usize::from(!e.resumed);
        }
        for p in out.values_mut() {
            p.attempts = p.attempts.max(1);
        }
        out
    }

    /// Every `finished` line: the trial and the record it finished with.
    pub fn finished(&self) -> impl Iterator<Item = (&str, &FinishedRecord)> {
        self.entries
            .iter()
            .filter_map(|e| Some((e.trial.as_str(), e.finished.as_ref()?)))
    }

    /// Whether a resumed run planned `trial` again.
    pub fn resumed(&self, trial: &str) -> bool {
        self.entries.iter().any(|e| e.resumed && e.trial == trial)
    }
}

/// A trial of the manifest: its first line and how many attempts were planned.
#[derive(Debug, Clone, Copy)]
pub struct Planned<'a> {
    pub first: &'a PlannedTrial,
    pub attempts: usize,
}

/// The manifest of `run_dir`, or `None` when it has none (a run made before manifests,
/// or a directory that is not a run).
pub fn read(run_dir: &Path) -> Result<Option<Manifest>, RecordError> {
    use std::io::BufRead;
    let file = run_dir.join(MANIFEST_FILE);
    let f = match std::fs::File::open(&file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&file)(e)),
    };
    let mut m = Manifest::default();
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(io(&file))?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<PlannedTrial>(&line) {
            Ok(p) => m.entries.push(p),
            Err(e) => m.bad_lines.push((i + 1, e.to_string())),
        }
    }
    Ok(Some(m))
}

/// A way the records of a run and its manifest disagree. Every finding means the run's
/// evidence is not whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A planned trial that left no record at all.
    Missing { trial: String, suite: String },
    /// A planned trial with fewer records than planned attempts: an attempt vanished.
    AttemptMissing {
        trial: String,
        planned: usize,
        records: usize,
    },
    /// Records of a trial nobody planned, or more records than planned attempts.
    Unplanned {
        trial: String,
        /// The trial directories holding its records.
        dirs: Vec<String>,
        planned: usize,
    },
    /// A manifest line that is not a planned trial.
    BadLine { line: usize, reason: String },
    /// A trial directory without a record: the trial started and never finished (its
    /// harness was killed, or is still running). `trial` is the planned trial the
    /// directory belongs to, if any.
    Interrupted {
        trial: Option<(String, String)>,
        unfinished: Unfinished,
    },
    /// A finished record named by a `finished` line is gone, or is another record now:
    /// it was deleted or rewritten after its trial ended.
    Removed {
        trial: String,
        dir: String,
        /// The hash the line names.
        was: String,
        /// What the directory holds now: the record's hash, or `None` when it has none.
        now: Option<String>,
    },
    /// An unfinished trial directory of a trial that then finished in a resumed run:
    /// a note, not a failure (the finished record counts; this evidence is kept).
    Superseded {
        trial: String,
        suite: String,
        unfinished: Unfinished,
    },
}

impl Finding {
    /// Whether this finding only tells what a run went through (a trial interrupted
    /// and then finished by a resumed run), which no check fails on.
    pub fn is_note(&self) -> bool {
        matches!(self, Finding::Superseded { .. })
    }

    /// Whether this finding only says the run is incomplete (trials that never
    /// finished or never started), which `--partial` accepts; records nobody planned
    /// and unreadable manifest lines are never accepted.
    pub fn is_incomplete(&self) -> bool {
        matches!(
            self,
            Finding::Missing { .. } | Finding::AttemptMissing { .. } | Finding::Interrupted { .. }
        )
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Missing { trial, suite } => {
                write!(f, "MISSING: {trial} ({suite}): planned but no record")
            }
            Finding::AttemptMissing {
                trial,
                planned,
                records,
            } => write!(
                f,
                "MISSING: {trial}: {planned} attempts planned but {records} record(s): an attempt left no record"
            ),
            Finding::Unplanned {
                trial,
                dirs,
                planned: 0,
            } => write!(
                f,
                "UNPLANNED: {trial} ({}): a record nobody planned",
                dirs.join(", ")
            ),
            Finding::Unplanned {
                trial,
                dirs,
                planned,
            } => write!(
                f,
                "UNPLANNED: {trial} ({}): {} records but {planned} attempt(s) planned: a record nobody planned",
                dirs.join(", "),
                dirs.len()
            ),
            Finding::BadLine { line, reason } => {
                write!(f, "MANIFEST: {MANIFEST_FILE} line {line}: not a planned trial: {reason}")
            }
            Finding::Interrupted {
                trial: Some((trial, suite)),
                unfinished,
            } => write!(f, "INTERRUPTED: {trial} ({suite}): {}", unfinished.describe()),
            Finding::Interrupted {
                trial: None,
                unfinished,
            } => write!(
                f,
                "INTERRUPTED: a directory of no planned trial: {}",
                unfinished.describe()
            ),
            Finding::Removed {
                trial,
                dir,
                was,
                now,
            } => write!(
                f,
                "REMOVED: {trial}: `{dir}` held its finished record ({was}), and {}: a finished record was deleted or rewritten after its trial ended",
                match now {
                    None => "holds none now".to_string(),
                    Some(h) => format!("holds another now ({h})"),
                }
            ),
            Finding::Superseded {
                trial,
                suite,
                unfinished,
            } => write!(
                f,
                "SUPERSEDED: {trial} ({suite}): {}; the trial then finished in a resumed run, and that record counts",
                unfinished.describe()
            ),
        }
    }
}

/// A record of the run as [`check`] compares it with the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub trial: String,
    /// Its trial directory.
    pub dir: String,
    /// The record file's hash.
    pub sha256: String,
    /// The trial was stopped part-way: partial evidence, not a finished record.
    pub stopped: bool,
}

/// Compare a manifest with the records found (every record of the run). Findings come
/// sorted by trial. `unfinished` are the run's trial directories without a finished
/// record: a planned trial with such a directory and too few records was interrupted,
/// not merely missing; a directory a `finished` line names was emptied (`REMOVED`).
pub fn check(manifest: &Manifest, found: &[Found], unfinished: &[Unfinished]) -> Vec<Finding> {
    let mut out: Vec<Finding> = manifest
        .bad_lines
        .iter()
        .map(|(line, reason)| Finding::BadLine {
            line: *line,
            reason: reason.clone(),
        })
        .collect();
    let planned = manifest.planned();
    let removed = removed(manifest, found);
    let unfinished: Vec<&Unfinished> = unfinished
        .iter()
        .filter(|u| {
            !removed
                .iter()
                .any(|r| matches!(r, Finding::Removed { dir, .. } if *dir == u.dir))
        })
        .collect();
    let mut records: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in found.iter().filter(|r| !r.stopped) {
        records
            .entry(r.trial.as_str())
            .or_default()
            .push(r.dir.as_str());
    }
    for (trial, p) in &planned {
        // A removed record was a finished attempt: it is reported as removed, not missing.
        let gone = removed
            .iter()
            .filter(|r| matches!(r, Finding::Removed { trial: t, now: None, .. } if t == trial))
            .count();
        let n = records.get(trial).map_or(0, Vec::len) + gone;
        let cut: Vec<_> = unfinished.iter().filter(|u| u.is_of(trial)).collect();
        if n < p.attempts && !cut.is_empty() {
            out.extend(cut.into_iter().map(|u| Finding::Interrupted {
                trial: Some((trial.to_string(), p.first.suite.clone())),
                unfinished: (*u).clone(),
            }));
            continue;
        }
        // Here a cut directory means the trial finished since, in a resumed run.
        out.extend(cut.into_iter().map(|u| Finding::Superseded {
            trial: trial.to_string(),
            suite: p.first.suite.clone(),
            unfinished: (*u).clone(),
        }));
        if n == 0 {
            out.push(Finding::Missing {
                trial: trial.to_string(),
                suite: p.first.suite.clone(),
            });
        } else if n < p.attempts {
            out.push(Finding::AttemptMissing {
                trial: trial.to_string(),
                planned: p.attempts,
                records: n,
            });
        }
    }
    out.extend(
        unfinished
            .iter()
            .filter(|u| !planned.keys().any(|t| u.is_of(t)))
            .map(|u| Finding::Interrupted {
                trial: None,
                unfinished: (*u).clone(),
            }),
    );
    out.extend(removed);
    for (trial, dirs) in &records {
        let attempts = planned.get(trial).map_or(0, |p| p.attempts);
        if dirs.len() > attempts {
            let mut dirs: Vec<String> = dirs.iter().map(|d| d.to_string()).collect();
            dirs.sort();
            out.push(Finding::Unplanned {
                trial: trial.to_string(),
                dirs,
                planned: attempts,
            });
        }
    }
    out
}

/// The `finished` lines of `manifest` whose record is no longer what they name.
pub fn removed(manifest: &Manifest, found: &[Found]) -> Vec<Finding> {
    manifest
        .finished()
        .filter_map(|(trial, f)| {
            let now = found.iter().find(|r| r.dir == f.dir).map(|r| &r.sha256);
            (now != Some(&f.record_sha256)).then(|| Finding::Removed {
                trial: trial.to_string(),
                dir: f.dir.clone(),
                was: f.record_sha256.clone(),
                now: now.cloned(),
            })
        })
        .collect()
}

/// The planned trials of `manifest` that left no record among `recorded` (trial names):
/// what a results page counts as errors.
pub fn missing<'m>(manifest: &'m Manifest, recorded: &[&str]) -> Vec<&'m PlannedTrial> {
    let recorded: std::collections::BTreeSet<&str> = recorded.iter().copied().collect();
    manifest
        .planned()
        .into_values()
        .filter(|p| !recorded.contains(p.first.trial.as_str()))
        .map(|p| p.first)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(trial: &str, dir: &str) -> Found {
        Found {
            trial: trial.into(),
            dir: dir.into(),
            sha256: format!("sha256:{dir}"),
            stopped: false,
        }
    }

    #[test]
    fn lines_are_appended_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        assert_eq!(read(&run).unwrap(), None);
        append(&run, &[PlannedTrial::now("qa::a::b", "qa", None)]).unwrap();
        append(
            &run,
            &[
                PlannedTrial::now("qa::a::c", "qa", Some(CapabilityKind::Ambiguous)),
                PlannedTrial::now("scorecard::m::p", "scorecard", None),
            ],
        )
        .unwrap();
        let m = read(&run).unwrap().expect("a manifest");
        let names: Vec<&str> = m.entries.iter().map(|e| e.trial.as_str()).collect();
        assert_eq!(names, ["qa::a::b", "qa::a::c", "scorecard::m::p"]);
        assert_eq!(m.entries[1].kind, Some(CapabilityKind::Ambiguous));
        assert!(m.bad_lines.is_empty());
    }

    #[test]
    fn missing_unplanned_and_retried_trials_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path();
        for t in ["qa::a", "qa::b", "qa::b", "qa::c", "qa::d"] {
            append(run, &[PlannedTrial::now(t, "qa", None)]).unwrap();
        }
        std::fs::OpenOptions::new()
            .append(true)
            .open(run.join(MANIFEST_FILE))
            .unwrap()
            .write_all(b"{\"trial\": 1}\n")
            .unwrap();
        let m = read(run).unwrap().unwrap();
        let records = [
            rec("qa::a", "qa.a"),
            // A retry: two attempts planned, two records.
            rec("qa::b", "qa.b"),
            rec("qa::b", "qa.b.2"),
            // qa::c planned once, recorded twice: a forged second attempt.
            rec("qa::c", "qa.c"),
            rec("qa::c", "qa.c.2"),
            rec("qa::z", "qa.z"),
        ];
        let f = check(&m, &records, &[]);
        assert!(
            matches!(&f[0], Finding::BadLine { line: 6, .. }),
            "{:?}",
            f[0]
        );
        assert_eq!(
            f[1..],
            vec![
                Finding::Missing {
                    trial: "qa::d".into(),
                    suite: "qa".into()
                },
                Finding::Unplanned {
                    trial: "qa::c".into(),
                    dirs: vec!["qa.c".into(), "qa.c.2".into()],
                    planned: 1
                },
                Finding::Unplanned {
                    trial: "qa::z".into(),
                    dirs: vec!["qa.z".into()],
                    planned: 0
                },
            ]
        );
        assert!(f[1].to_string().contains("planned but no record"));
        assert!(f[3].to_string().contains("a record nobody planned"));
        // One attempt of two left nothing.
        let f = check(&m, &[rec("qa::a", "qa.a"), rec("qa::b", "qa.b.2")], &[]);
        assert!(f.contains(&Finding::AttemptMissing {
            trial: "qa::b".into(),
            planned: 2,
            records: 1
        }));
        let gone: Vec<&str> = missing(&m, &["qa::a", "qa::b"])
            .iter()
            .map(|p| p.trial.as_str())
            .collect();
        assert_eq!(gone, ["qa::c", "qa::d"]);
    }

    #[test]
    fn a_finished_record_deleted_or_rewritten_is_removed_not_missing() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path();
        append(
            run,
            &[
                PlannedTrial::now("qa::a", "qa", None),
                PlannedTrial::now("qa::b", "qa", None),
                PlannedTrial::now("qa::c", "qa", None),
            ],
        )
        .unwrap();
        for t in ["a", "b", "c"] {
            let d = format!("qa.{t}");
            let sha = format!("sha256:{d}");
            append(
                run,
                &[PlannedTrial::finished(&format!("qa::{t}"), "qa", &d, &sha)],
            )
            .unwrap();
        }
        let m = read(run).unwrap().unwrap();
        // The finished lines plan nothing.
        assert!(m.planned().values().all(|p| p.attempts == 1));
        let mut rewritten = rec("qa::b", "qa.b");
        rewritten.sha256 = "sha256:other".into();
        // qa.c's record was deleted: its directory is left without one.
        let emptied = crate::record::unfinished::Unfinished {
            dir: "qa.c".into(),
            evidence: vec![],
            stopped: None,
        };
        let f = check(&m, &[rec("qa::a", "qa.a"), rewritten], &[emptied]);
        assert_eq!(
            f,
            vec![
                Finding::Removed {
                    trial: "qa::b".into(),
                    dir: "qa.b".into(),
                    was: "sha256:qa.b".into(),
                    now: Some("sha256:other".into()),
                },
                Finding::Removed {
                    trial: "qa::c".into(),
                    dir: "qa.c".into(),
                    was: "sha256:qa.c".into(),
                    now: None,
                },
            ]
        );
        assert!(
            !f[1].is_incomplete() && !f[1].is_note(),
            "a removal fails even --partial"
        );
        assert!(f[1].to_string().starts_with(
            "REMOVED: qa::c: `qa.c` held its finished record (sha256:qa.c), and holds none now"
        ));
    }
}
