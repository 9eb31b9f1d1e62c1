//! Reading a run directory for a report: every record, every verdict re-derived from
//! its evidence, and every file that does not belong named as a problem — never a
//! reason to drop the rest of the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::record::merge::{IdentityCheck, MERGE_FILE};
use crate::record::rescore::derive_qa_verdict;
use crate::record::{self, QaRecord, RECORD_FILE};

use super::{io, ReportError, REPORT_HTML, REPORT_MD, SUMMARY_JSON};

/// Files a run directory may hold besides trial directories: the pages written into
/// it and the merge manifest.
pub const KNOWN_FILES: &[&str] = &[REPORT_MD, REPORT_HTML, SUMMARY_JSON, MERGE_FILE];

/// A file of the run that the report could not use, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Relative to the run directory.
    pub file: String,
    pub cause: String,
}

/// The records a report is computed from.
#[derive(Debug, Clone, Default)]
pub struct LoadedRun {
    pub dir: PathBuf,
    /// One record per trial (the last attempt when nextest retried), sorted by app,
    /// capability and repeat.
    pub records: Vec<QaRecord>,
    pub problems: Vec<Problem>,
    /// Earlier attempts of retried trials, by trial directory: kept on disk, not counted.
    pub superseded: Vec<String>,
}

impl LoadedRun {
    /// A run from records already in memory (no evidence is re-read).
    pub fn from_records(dir: &Path, records: Vec<QaRecord>) -> LoadedRun {
        let mut run = LoadedRun {
            dir: dir.to_path_buf(),
            ..LoadedRun::default()
        };
        let with_names = records
            .into_iter()
            .map(|r| (r.trial.replace("::", "."), r))
            .collect();
        run.accept(with_names);
        run
    }

    /// Keep one record per trial and one identity per run; name everything else.
    fn accept(&mut self, mut found: Vec<(String, QaRecord)>) {
        found.sort_by(|a, b| sort_key(&a.1).cmp(&sort_key(&b.1)).then(a.0.cmp(&b.0)));
        // The run's identity is its first record's; a record made under another
        // config or spec is not part of this run.
        let mut identity = IdentityCheck::default();
        let mut latest: BTreeMap<String, (String, QaRecord)> = BTreeMap::new();
        for (name, rec) in found {
            if let Err(diff) = identity.check(&format!("`{name}`"), &rec) {
                self.problems.push(Problem {
                    file: format!("{name}/{RECORD_FILE}"),
                    cause: format!("made under another config or spec than the run: {diff}"),
                });
                continue;
            }
            match latest.get(&rec.trial) {
                Some((_, prev)) if prev.finished_at > rec.finished_at => {
                    self.superseded.push(name);
                }
                Some((prev_name, _)) => {
                    self.superseded.push(prev_name.clone());
                    latest.insert(rec.trial.clone(), (name, rec));
                }
                None => {
                    latest.insert(rec.trial.clone(), (name, rec));
                }
            }
        }
        let mut records: Vec<QaRecord> = latest.into_values().map(|(_, r)| r).collect();
        records.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        self.records = records;
        self.superseded.sort();
        self.problems.sort_by(|a, b| a.file.cmp(&b.file));
    }
}

fn sort_key(r: &QaRecord) -> (&str, &str, u32, &str) {
    (&r.spec.app, &r.spec.capability, r.repeat, &r.finished_at)
}

/// Read every trial of `dir`. Only an unreadable directory is an error; a truncated
/// record, a foreign file, a trial without a record or a verdict that does not
/// follow from its evidence is a [`Problem`] and the rest is still reported.
pub fn load_run(dir: &Path) -> Result<LoadedRun, ReportError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io(dir))?;
    entries.sort_by_key(|e| e.file_name());
    let mut run = LoadedRun {
        dir: dir.to_path_buf(),
        ..LoadedRun::default()
    };
    let mut found = Vec::new();
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if name.starts_with('.') {
            continue;
        }
        if !path.is_dir() {
            if !KNOWN_FILES.contains(&name.as_str()) {
                run.problems.push(Problem {
                    file: name,
                    cause: "foreign file: not part of a gauntlet run; ignored".into(),
                });
            }
            continue;
        }
        let file = path.join(RECORD_FILE);
        let rel = format!("{name}/{RECORD_FILE}");
        if !file.is_file() {
            run.problems.push(Problem {
                file: name,
                cause: format!("no {RECORD_FILE}: the trial never finished writing its record"),
            });
            continue;
        }
        // Scorecard probes are aggregated by `gauntlet leaderboard`, not this page.
        if crate::run::scorecard::record::is_scorecard_record(&file) {
            continue;
        }
        match check(&file) {
            Ok(rec) => found.push((name, rec)),
            Err(cause) => run.problems.push(Problem { file: rel, cause }),
        }
    }
    run.accept(found);
    Ok(run)
}

/// Load a record and re-derive its verdict from the evidence beside it.
fn check(file: &Path) -> Result<QaRecord, String> {
    let rec = record::load(file).map_err(|e| match e {
        record::RecordError::Invalid { reason, .. } => format!("not a gauntlet record: {reason}"),
        other => other.to_string(),
    })?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let derived = derive_qa_verdict(dir, &rec.spec, &rec.evidence).map_err(|e| e.to_string())?;
    if derived != rec.verdict {
        return Err(format!(
            "stored verdict `{}` does not follow from the evidence (it gives `{}`: {}); not counted",
            rec.verdict.outcome, derived.outcome, derived.reason
        ));
    }
    Ok(rec)
}
