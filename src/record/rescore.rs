//! Rescore: every record of a path checked ([`super::any::check`]), against the run's
//! manifest and plan when the path is a run, and the run digest; and the table it is
//! shown as.
//!
//! A verdict at run time and at rescore time come from one code path over the same
//! bytes: each suite's record re-derives its own ([`super::suite::SuiteRecord`]).

use std::path::Path;

pub use super::qa::derive_qa_verdict;
use super::row::{outcome_words, reasons};
pub use super::row::{AxesRescore, RescoreError, RescoreRow, VerdictAxis};

/// Rescore one record file: re-derive its verdict from its evidence, verify every raw
/// file it names, and hash it ([`super::any::check`]).
pub fn rescore_file(file: &Path) -> RescoreRow {
    super::any::check(file).row
}

/// Whether rescore could check a run directory's records against a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestState {
    /// The path is one record or one trial directory, not a run.
    NotARun,
    /// A run directory without `manifest.jsonl`: made before manifests existed (every
    /// run under `results/` published before then), or by a caller that plans nothing
    /// (tests calling a suite's `execute` directly).
    Absent,
    /// The manifest's planned attempts and distinct trials.
    Present { attempts: usize, trials: usize },
}

/// Everything rescore found in a path: one row per record, the manifest's findings,
/// and the run digest.
#[derive(Debug)]
pub struct RunRescore {
    pub rows: Vec<RescoreRow>,
    pub manifest: ManifestState,
    pub findings: Vec<super::manifest::Finding>,
    /// [`super::digest::run_digest`] over every record found.
    pub digest: String,
    /// For a run directory, what every record's spec was checked against
    /// ([`super::identity::check_record`]): `None` when it has no `run.json`,
    /// `Some(false)` when its `run.json` is from before trials' own specs were kept in
    /// it (apps' content hashes only), `Some(true)` when it pins every trial's spec.
    /// `None` for a record or a trial directory.
    pub planned: Option<Option<bool>>,
}

impl RunRescore {
    /// Every record agrees with its evidence and its raw files, and the records are
    /// exactly the planned ones.
    ///
    /// A run without a manifest passes on its records alone: runs published before
    /// manifests existed (and runs of callers that plan nothing) must keep rescoring,
    /// and nothing in them could tell a removed record from one never planned. What
    /// protects such a run, and a run whose manifest was deleted, is its digest:
    /// `--digest` with the value the run printed when it ended. The missing manifest is
    /// stated on its own line so that nobody mistakes the pass for a complete check.
    pub fn ok(&self) -> bool {
        self.findings.iter().all(super::manifest::Finding::is_note)
            && self.rows.iter().all(RescoreRow::agrees)
    }

    /// As [`RunRescore::ok`], for a run its user knows to be partial (interrupted, or
    /// to be resumed): trials that never finished or never started are still reported,
    /// but only disagreeing records and records nobody planned fail it.
    pub fn ok_partial(&self) -> bool {
        self.findings
            .iter()
            .all(|f| f.is_incomplete() || f.is_note())
            && self.rows.iter().all(RescoreRow::agrees)
    }

    /// Trials that started and never finished.
    pub fn interrupted(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| matches!(f, super::manifest::Finding::Interrupted { .. }))
            .count()
    }

    pub fn disagreeing(&self) -> usize {
        self.rows.iter().filter(|r| !r.agrees()).count()
    }
}

/// Rescore `path`: a record file, a trial directory, or a run directory (every
/// `*/record.json`, checked against the run's manifest when it has one).
pub fn rescore_path(path: &Path) -> Result<RunRescore, RescoreError> {
    // Each candidate is asked whether it holds a record as it is opened to be checked,
    // on every core, not looked at once more beforehand.
    let (files, checks): (Vec<_>, Vec<_>) = {
        let candidates = super::files::record_candidates(path)?;
        let checks = super::any::check_present(&candidates);
        candidates
            .into_iter()
            .zip(checks)
            .filter_map(|(f, c)| c.map(|c| (f, c)))
            .unzip()
    };
    let is_run = path.is_dir() && !path.join(super::header::RECORD_FILE).is_file();
    // One read of each record answers both the check and its digest entry.
    let mut rows: Vec<RescoreRow> = Vec::with_capacity(files.len());
    let mut entries: Vec<super::digest::DigestEntry> = Vec::with_capacity(files.len());
    let dir_of = |f: &Path| {
        f.parent()
            .and_then(|d| d.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    // Every record as the manifest check sees it; a record the harness wrote as it was
    // stopped is checked like any, and counted as no finished record.
    let mut found: Vec<super::manifest::Found> = Vec::with_capacity(files.len());
    let mut stopped: Vec<(String, String)> = Vec::new();
    // What the run planned (`run.json`): each record's spec is checked against it.
    let planned = if is_run {
        super::identity::read(path)?
    } else {
        None
    };
    for (f, mut checked) in files.iter().zip(checks) {
        if let (Some(id), Some(rec)) = (&planned, &checked.record) {
            let at = format!("{}/{}", dir_of(f), super::header::RECORD_FILE);
            for problem in super::identity::check_record(id, rec) {
                checked.row.raw_problems.push(format!("{at}: {problem}"));
            }
        }
        let signal = checked
            .record
            .as_ref()
            .and_then(|r| r.interrupted().map(str::to_string));
        if let Some(sha) = &checked.row.record_sha256 {
            // As the digest names it: a record that names no trial goes by its directory.
            found.push(super::manifest::Found {
                trial: checked.named_trial.clone().unwrap_or_else(|| dir_of(f)),
                dir: dir_of(f),
                sha256: sha.clone(),
                stopped: signal.is_some(),
            });
            entries.push(super::digest::DigestEntry::from_checked(
                f,
                sha.clone(),
                checked.named_trial,
            ));
        }
        if let Some(signal) = signal {
            stopped.push((dir_of(f), signal));
        }
        rows.push(checked.row);
    }
    let digest = super::digest::run_digest(&entries);
    let mut unfinished = if is_run {
        let recorded: std::collections::HashSet<String> = files.iter().map(|f| dir_of(f)).collect();
        super::unfinished::find(path, |name| recorded.contains(name))?
    } else {
        Vec::new()
    };
    if is_run {
        for (dir, signal) in &stopped {
            unfinished.push(super::unfinished::stopped(path, dir, signal)?);
        }
        unfinished.sort_by(|a, b| a.dir.cmp(&b.dir));
    }
    let (manifest, findings) = if !is_run {
        (ManifestState::NotARun, Vec::new())
    } else {
        match super::manifest::read(path)? {
            // Without a manifest a trial directory without a record is still a trial
            // that never finished: say so.
            None => (
                ManifestState::Absent,
                unfinished
                    .into_iter()
                    .map(|u| super::manifest::Finding::Interrupted {
                        trial: None,
                        unfinished: u,
                    })
                    .collect(),
            ),
            Some(m) => {
                let findings = super::manifest::check(&m, &found, &unfinished);
                let planned = m.planned();
                let state = ManifestState::Present {
                    attempts: planned.values().map(|p| p.attempts).sum(),
                    trials: planned.len(),
                };
                (state, findings)
            }
        }
    };
    Ok(RunRescore {
        rows,
        manifest,
        findings,
        digest,
        planned: is_run.then(|| {
            planned
                .as_ref()
                .map(super::identity::RunIdentity::pins_trials)
        }),
    })
}

/// The whole rescore report: the table, the manifest's findings, the digest, a total.
pub fn render_run(r: &RunRescore) -> String {
    let mut out = render_table(&r.rows);
    match &r.manifest {
        ManifestState::NotARun => {}
        ManifestState::Absent => out.push_str(&format!(
            "manifest: none ({} absent: a run made before manifests, or by a caller that plans nothing); \
             missing or unplanned records cannot be detected, only a rewrite against the run digest\n",
            super::manifest::MANIFEST_FILE
        )),
        ManifestState::Present { attempts, trials } => out.push_str(&format!(
            "manifest: {trials} planned trials ({attempts} attempts)\n"
        )),
    }
    let plan = super::identity::IDENTITY_FILE;
    match r.planned {
        Some(Some(true)) => out.push_str(&format!(
            "plan: every record's spec checked against {plan}\n"
        )),
        Some(Some(false)) => out.push_str(&format!(
            "plan: records' apps checked against {plan}, which is from before it kept each trial's spec \
             (capability, script, challenge and probe hashes are not checked)\n"
        )),
        Some(None) => out.push_str(&format!(
            "plan: none ({plan} absent: a run made before it existed, or by a caller that plans nothing); \
             records' specs are not checked against a plan\n"
        )),
        None => {}
    }
    for f in &r.findings {
        out.push_str(&format!("{f}\n"));
    }
    let raw: usize = r.rows.iter().map(|row| row.raw_files).sum();
    out.push_str(&format!("run digest: {}\n", r.digest));
    let bad = r.disagreeing();
    out.push_str(&format!(
        "{} records, {} agree, {} disagree or unreadable; {raw} raw files verified; {} manifest findings ({} interrupted)\n",
        r.rows.len(),
        r.rows.len() - bad,
        bad,
        r.findings.len(),
        r.interrupted()
    ));
    out
}

/// Render rows as a plain table. Each verdict is shown in its suite's outcome words,
/// whatever its shape, so that a suite's verdict needs no column of its own.
pub fn render_table(rows: &[RescoreRow]) -> String {
    let mut out = format!(
        "{:<44} {:<20} {:<20} {}\n",
        "trial", "stored", "rescored", "status"
    );
    for r in rows {
        let stored = r
            .stored_words()
            .map_or_else(|| "-".to_string(), |s| outcome_words(&s));
        let (derived, status) = match r.derived_words() {
            _ if !r.raw_problems.is_empty() => ("-".to_string(), altered(r)),
            Ok(d) if r.agrees() => (outcome_words(&d), "agrees".to_string()),
            Ok(d) => (
                outcome_words(&d),
                format!(
                    "DISAGREES: stored verdict does not follow from the evidence ({})",
                    reasons(&d)
                ),
            ),
            Err(e) => ("-".to_string(), format!("UNREADABLE: {e}")),
        };
        out.push_str(&format!(
            "{:<44} {:<20} {:<20} {}\n",
            r.trial, stored, derived, status
        ));
    }
    out
}

fn altered(r: &RescoreRow) -> String {
    format!(
        "ALTERED: raw evidence does not match the record: {}",
        r.raw_problems.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verdict of two axes is one row, its axes joined as the suite's outcome words.
    #[test]
    fn a_verdict_of_axes_is_one_row_in_outcome_words() {
        let row = |derived| crate::record::row::test_rows::row(("success", "clean"), Ok(derived));
        let table = render_table(&[row(("success", "clean")), row(("failed", "clean"))]);
        let line = |derived: &str, status: &str| {
            format!(
                "{:<44} {:<20} {:<20} {}",
                "t", "success/clean", derived, status
            )
        };
        let lines: Vec<&str> = table.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                line("success/clean", "agrees"),
                line(
                    "failed/clean",
                    "DISAGREES: stored verdict does not follow from the evidence \
                     (the report is wrong; nothing disallowed was read)"
                ),
            ]
        );
    }
}
