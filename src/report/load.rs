//! Reading a run directory for a report: every record, every verdict re-derived from
//! its evidence, and every file that does not belong named as a problem — never a
//! reason to drop the rest of the run.

use std::collections::hash_map::Entry as Slot;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::record::any::{AnyRecord, Projection};
use crate::record::challenge::ChallengeRecord;
use crate::record::manifest::{Manifest, PlannedTrial, MANIFEST_FILE};
use crate::record::merge::{IdentityCheck, MERGE_FILE};
use crate::record::rescore::{RescoreError, RescoreRow, VerdictAxis};
use crate::record::row::reasons;
use crate::record::scorecard::ScorecardRecord;
use crate::record::{self, QaRecord, SuiteRecord, RECORD_FILE};
use crate::spec::{CapabilityKind, Suite};

use super::base::{
    io, ReportError, HACKABILITY_HTML, HACKABILITY_MD, REPORT_HTML, REPORT_MD, SUMMARY_JSON,
};

/// Files a run directory may hold besides trial directories: the pages written into
/// it, the merge manifest and the run manifest.
pub const KNOWN_FILES: &[&str] = &[
    REPORT_MD,
    REPORT_HTML,
    SUMMARY_JSON,
    HACKABILITY_MD,
    HACKABILITY_HTML,
    MERGE_FILE,
    MANIFEST_FILE,
    record::identity::IDENTITY_FILE,
    super::provider::PROVIDER_FILE,
];

/// Why a planned trial without a record is counted as an error.
pub const MISSING_REASON: &str = "planned but no record";

/// A planned qa trial that left no record: counted as an error, never dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingQa {
    pub trial: String,
    pub app: String,
    pub capability: String,
    pub repeat: u32,
    /// From the manifest, else from another repeat's record; a trial of a kind nobody
    /// recorded counts as verifiable, the count that cannot flatter the run.
    pub kind: CapabilityKind,
}

/// The head of a record of another suite, for the per-suite counts (its own section
/// re-derives and shows it).
#[derive(Debug, Clone, PartialEq)]
pub struct OtherRecord {
    pub suite: String,
    pub trial: String,
    /// A challenge passes on the manual audit's outcome when there is one.
    pub passed: bool,
    /// A challenge whose manual audit decided otherwise than its evidence: the verdict
    /// the evidence gives, as (label, passed). An audit is a person's word, not hashed
    /// evidence; `gauntlet compare` never lets one raise a candidate's verdict.
    pub automatic: Option<(String, bool)>,
    /// The verdict's outcome is `error` (suites whose verdict has an outcome), and
    /// the agent's: not the provider's ([`OtherRecord::infra`]).
    pub error: bool,
    /// Why the verdict is the provider's failure, not the agent's, when it is.
    pub infra: Option<crate::evidence::infra::InfraCause>,
    /// The verdict in its suite's words: a probe's outcome, a challenge's
    /// `task_outcome/evaluation_validity` (the manual audit's when there is one).
    pub label: String,
    /// What the trial was made from, as (what, hash) pairs, so that two runs can be
    /// told apart by their data (`gauntlet compare`).
    pub subjects: Vec<(String, String)>,
    pub usage: Vec<crate::evidence::usage::UsageEntry>,
    /// Its record's header: run, version, config and wall-clock.
    pub header: crate::record::Header,
    /// Its trial directory, by name in the run directory.
    pub dir: String,
}

impl OtherRecord {
    fn of(dir: &Path, name: &str, rec: &AnyRecord) -> OtherRecord {
        let h = rec.header();
        let mut automatic = None;
        let subjects = subject_pairs(rec.as_suite());
        let (passed, label, usage) = rec.project(Projection {
            challenge: |c: &ChallengeRecord| {
                let (o, v, audited) = super::challenge::authoritative(dir, c);
                let auto = (
                    format!(
                        "{}/{}",
                        c.verdict.task_outcome.as_str(),
                        c.verdict.evaluation_validity.as_str()
                    ),
                    c.verdict.passed,
                );
                let label = format!("{}/{}", o.as_str(), v.as_str());
                if audited && auto.0 != label {
                    automatic = Some(auto);
                }
                (
                    o == crate::score::challenge::TaskOutcome::Success
                        && v == crate::score::challenge::Validity::Clean,
                    label,
                    c.evidence.usage.clone(),
                )
            },
            scorecard: |p: &ScorecardRecord| {
                (
                    p.verdict.passed,
                    p.verdict.outcome.as_str().to_owned(),
                    p.usage.clone(),
                )
            },
            qa: |q: &QaRecord| {
                (
                    q.verdict.passed,
                    q.verdict.outcome.as_str().to_owned(),
                    q.evidence.usage.clone(),
                )
            },
        });
        let infra = rec.as_suite().infra().filter(|_| !passed);
        OtherRecord {
            suite: h.suite.as_str().to_owned(),
            trial: h.trial.clone(),
            passed,
            automatic,
            error: rec.errored() && infra.is_none(),
            infra,
            label,
            subjects,
            usage,
            header: h.clone(),
            dir: name.to_owned(),
        }
    }
}

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
    /// The directory (its name in the run directory) of each counted qa record, by
    /// trial: where its transcript page is.
    pub record_dirs: BTreeMap<String, String>,
    /// One qa record per trial (the last attempt when nextest retried), sorted by app,
    /// capability and repeat.
    pub records: Vec<Box<QaRecord>>,
    pub problems: Vec<Problem>,
    /// Earlier attempts of retried trials, by trial directory: kept on disk, not counted.
    pub superseded: Vec<String>,
    /// Trial directories of the other suites (challenge, scorecard), by suite: they have
    /// their own pages; this one counts only qa trials.
    pub other_suites: BTreeMap<String, Vec<String>>,
    /// The other suites' records (the last attempt of each trial), for the per-suite counts.
    pub other_records: Vec<OtherRecord>,
    /// The run manifest, if the run has one.
    pub manifest: Option<Manifest>,
    /// Planned trials of every suite that left no record, in name order.
    pub missing: Vec<PlannedTrial>,
    /// The qa ones among them, as the qa figures count them.
    pub missing_qa: Vec<MissingQa>,
    /// Why a missing trial is missing, for those that started and never finished (by
    /// trial): their directory and the evidence it kept.
    pub interrupted: BTreeMap<String, String>,
    /// What served the model, as the publisher of the run states it (a published run
    /// only; [`super::provider`]).
    pub provider: Option<super::provider::Statement>,
}

/// One counted record of any suite, as the per-suite counts and `gauntlet compare`
/// see it.
#[derive(Debug, Clone, Copy)]
pub struct Counted<'a> {
    pub suite: &'a str,
    pub trial: &'a str,
    /// Its trial directory, by name in the run directory.
    pub dir: &'a str,
    pub header: &'a crate::record::Header,
    pub passed: bool,
    /// The verdict is `error`, and the agent's ([`Counted::infra`] is not).
    pub errored: bool,
    /// The provider's fault that made the verdict the provider's failure, not the
    /// agent's (docs/provider-faults.md).
    pub infra: Option<crate::evidence::provider::ProviderFault>,
    /// The verdict in its suite's words (a challenge's manual audit's, when audited).
    pub label: &'a str,
    /// The verdict its evidence gives, as (label, passed), where a manual audit
    /// decided otherwise ([`OtherRecord::automatic`]).
    pub automatic: Option<&'a (String, bool)>,
    pub usage: &'a [crate::evidence::usage::UsageEntry],
    pub repeat: u32,
    pub kind: Option<CapabilityKind>,
    record: CountedRecord<'a>,
}

/// Where a counted record's answers come from: the page keeps qa's records whole (its
/// summary is theirs) and the other suites' as their projection.
#[derive(Debug, Clone, Copy)]
enum CountedRecord<'a> {
    Whole(&'a QaRecord),
    Projected(&'a OtherRecord),
}

impl Counted<'_> {
    /// What the trial was made from: per subject ([`crate::record::suite::Subject::label`]), the digests of
    /// its fields.
    pub fn subjects(&self) -> Vec<(String, String)> {
        match self.record {
            CountedRecord::Whole(r) => subject_pairs(r),
            CountedRecord::Projected(r) => r.subjects.clone(),
        }
    }
}

/// A record's subjects, one pair per subject with every field's digest beside its name.
fn subject_pairs(rec: &dyn SuiteRecord) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for s in rec.subjects() {
        let label = s.label();
        let digest = format!("{} `{}`", s.field, s.digest);
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, d)) => {
                d.push_str(", ");
                d.push_str(&digest);
            }
            None => out.push((label, digest)),
        }
    }
    out
}

impl LoadedRun {
    /// The header of every counted record of every suite, qa's first.
    pub fn headers(&self) -> impl Iterator<Item = &crate::record::Header> {
        self.counted().map(|c| c.header)
    }

    /// Every counted record of every suite: qa's and the other suites' alike.
    pub fn counted(&self) -> impl Iterator<Item = Counted<'_>> {
        let qa = self.records.iter().map(|r| {
            let infra = r.infra().filter(|_| !r.passed()).map(|c| c.fault);
            Counted {
                suite: r.header().suite.as_str(),
                trial: &r.header.trial,
                dir: self
                    .record_dirs
                    .get(&r.header.trial)
                    .map_or("", String::as_str),
                header: &r.header,
                passed: r.passed(),
                errored: r.errored() && infra.is_none(),
                infra,
                label: r.verdict.outcome.as_str(),
                automatic: None,
                usage: r.metered_usage(),
                repeat: r.repeat,
                kind: r.kind(),
                record: CountedRecord::Whole(r),
            }
        });
        let others = self.other_records.iter().map(|r| Counted {
            suite: r.suite.as_str(),
            trial: &r.trial,
            dir: &r.dir,
            header: &r.header,
            passed: r.passed,
            errored: r.error,
            infra: r.infra.as_ref().map(|c| c.fault),
            label: &r.label,
            automatic: r.automatic.as_ref(),
            usage: &r.usage,
            repeat: crate::plan::names::group_of(&r.trial).1,
            kind: None,
            record: CountedRecord::Projected(r),
        });
        qa.chain(others)
    }

    /// Why a planned trial has no record: interrupted (with what it kept), or never
    /// started at all.
    pub fn missing_reason(&self, trial: &str) -> String {
        self.interrupted
            .get(trial)
            .cloned()
            .unwrap_or_else(|| MISSING_REASON.into())
    }

    /// Keep one record per trial and one identity per run; name everything else.
    /// Records stay boxed: sorting and keying ten thousand records moves each many
    /// times, and a box moves in eight bytes where a record takes a kilobyte.
    fn accept(&mut self, mut found: Vec<(String, Box<QaRecord>)>) {
        found.sort_unstable_by(|a, b| sort_key(&a.1).cmp(&sort_key(&b.1)).then(a.0.cmp(&b.0)));
        // The run's identity is its first record's; a record made under another
        // config or spec is not part of this run. Of one trial's records the latest
        // counts (the last in this order on a tie); the others are superseded.
        let mut identity = IdentityCheck::default();
        let mut latest: HashMap<&str, usize> = HashMap::with_capacity(found.len());
        let mut counted = vec![false; found.len()];
        for (i, (name, rec)) in found.iter().enumerate() {
            if let Err(diff) = identity.check(&format_args!("`{name}`"), rec.as_ref()) {
                self.problems.push(Problem {
                    file: format!("{name}/{RECORD_FILE}"),
                    cause: format!("made under another config or spec than the run: {diff}"),
                });
                continue;
            }
            match latest.entry(rec.header.trial.as_str()) {
                Slot::Occupied(mut prev) => {
                    let (prev_name, prev_rec) = &found[*prev.get()];
                    if prev_rec.header.finished_at > rec.header.finished_at {
                        self.superseded.push(name.clone());
                    } else {
                        self.superseded.push(prev_name.clone());
                        counted[*prev.get()] = false;
                        counted[i] = true;
                        prev.insert(i);
                    }
                }
                Slot::Vacant(slot) => {
                    slot.insert(i);
                    counted[i] = true;
                }
            }
        }
        drop(latest);
        let mut records: Vec<Box<QaRecord>> = Vec::with_capacity(found.len());
        let mut dirs = Vec::with_capacity(found.len());
        for ((name, rec), counted) in found.into_iter().zip(counted) {
            if counted {
                dirs.push((rec.header.trial.clone(), name));
                records.push(rec);
            }
        }
        self.record_dirs = dirs.into_iter().collect();
        // Already in order but where two trials share a sort key, which the trial
        // breaks (so the order is one): a stable sort of a sorted list is one pass.
        // Records stay boxed: ten thousand moved out of their boxes was a tenth of
        // loading a run.
        records.sort_by(|a, b| {
            sort_key(a)
                .cmp(&sort_key(b))
                .then_with(|| a.header.trial.cmp(&b.header.trial))
        });
        self.records = records;
        self.superseded.sort();
        self.problems.sort_by(|a, b| a.file.cmp(&b.file));
    }
}

fn sort_key(r: &QaRecord) -> (&str, &str, u32, &str) {
    (
        &r.spec.app,
        &r.spec.capability,
        r.repeat,
        &r.header.finished_at,
    )
}

/// Read every trial of `dir`. Only an unreadable directory is an error; a truncated
/// record, a foreign file, a trial without a record or a verdict that does not
/// follow from its evidence is a [`Problem`] and the rest is still reported.
pub fn load_run(dir: &Path) -> Result<LoadedRun, ReportError> {
    // Each entry's name is taken once: a sort by `DirEntry::file_name` makes a new
    // one at every comparison.
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .map(|e| e.map(|e| (e.file_name(), e)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io(dir))?;
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut run = LoadedRun {
        dir: dir.to_path_buf(),
        ..LoadedRun::default()
    };
    match super::provider::read(dir) {
        Ok(statement) => run.provider = statement,
        Err(e) => run.problems.push(Problem {
            file: super::provider::PROVIDER_FILE.into(),
            cause: format!("{e}; the run's pages state no provider"),
        }),
    }
    let mut found = Vec::new();
    // Every trial that has a record, in any state: a broken record is a problem, not a
    // missing trial.
    let mut recorded: Vec<String> = Vec::new();
    let mut others: BTreeMap<String, (String, OtherRecord)> = BTreeMap::new();
    let mut others_identity = IdentityCheck::default();
    let mut stopped = Vec::new();
    // Every record's hash, for the manifest's `finished` lines.
    let mut hashed = Vec::new();
    // What each entry is, from the directory listing; whether a directory holds a
    // record is asked as its record is checked, on every core
    // (`record::any::check_present`), in the entries' order.
    let listed: Vec<(String, PathBuf, bool)> = entries
        .into_iter()
        .filter_map(|(name, e)| {
            let name = name.to_string_lossy().into_owned();
            if name.starts_with('.') {
                return None;
            }
            let path = e.path();
            // The entry's type comes with the directory listing; only a link is
            // followed to see what it points at.
            let is_dir = match e.file_type() {
                Ok(t) if !t.is_symlink() => t.is_dir(),
                _ => path.is_dir(),
            };
            Some((name, path, is_dir))
        })
        .collect();
    let record_files: Vec<PathBuf> = listed
        .iter()
        .filter(|(_, _, is_dir)| *is_dir)
        .map(|(_, path, _)| path.join(RECORD_FILE))
        .collect();
    let mut checks = record::any::check_present(&record_files).into_iter();
    let entries: Vec<(String, PathBuf, Entry, Option<record::any::Checked>)> = listed
        .into_iter()
        .map(|(name, path, is_dir)| {
            if !is_dir {
                return (name, path, Entry::File, None);
            }
            match checks.next().flatten() {
                Some(checked) => (name, path, Entry::Record, Some(checked)),
                None => (name, path, Entry::Unrecorded, None),
            }
        })
        .collect();
    // Trial directories without a record: what each kept is named below.
    let mut unrecorded = Vec::new();
    for (name, path, kind, checked) in entries {
        // Named only in a problem: most records have none.
        let rel = || format!("{name}/{RECORD_FILE}");
        match kind {
            Entry::File => {
                if !KNOWN_FILES.contains(&name.as_str()) {
                    run.problems.push(Problem {
                        file: name,
                        cause: "foreign file: not part of a gauntlet run; ignored".into(),
                    });
                }
                continue;
            }
            // A trial's own directory: named below, with what it kept.
            Entry::Unrecorded if record::unfinished::is_trial_dir_name(&name) => {
                unrecorded.push(name);
                continue;
            }
            Entry::Unrecorded => {
                run.problems.push(Problem {
                    file: name,
                    cause: format!("no {RECORD_FILE}: the trial never finished writing its record"),
                });
                continue;
            }
            Entry::Record => {}
        }
        let Some(mut checked) = checked else {
            continue;
        };
        // As rescore names it: a record that names no trial goes by its directory.
        if let Some(sha) = checked.row.record_sha256.take() {
            hashed.push(record::manifest::Found {
                trial: checked.named_trial.clone().unwrap_or_else(|| name.clone()),
                dir: name.clone(),
                sha256: sha,
                stopped: checked
                    .record
                    .as_ref()
                    .is_some_and(|r| r.interrupted().is_some()),
            });
        }
        // A record the harness wrote as it was stopped is partial evidence, no result:
        // its trial is named below with the interrupted ones.
        if let Some(signal) = checked.record.as_ref().and_then(AnyRecord::interrupted) {
            if disagreement(&checked.row).is_none() {
                stopped.push(
                    record::unfinished::stopped(dir, &name, signal).map_err(|e| {
                        ReportError::Invalid {
                            file: path.clone(),
                            reason: e.to_string(),
                        }
                    })?,
                );
                continue;
            }
        }
        if let Some(trial) = checked.named_trial.take() {
            recorded.push(trial);
        }
        match checked.record {
            None => run.problems.push(Problem {
                file: rel(),
                cause: match &checked.row.derived {
                    Err(RescoreError::Record(record::RecordError::Invalid { reason, .. })) => {
                        format!("not a gauntlet record: {reason}")
                    }
                    Err(other) => other.to_string(),
                    Ok(_) => "not a gauntlet record".into(),
                },
            }),
            Some(rec) => {
                let suite = rec.header().suite;
                if suite != Suite::Qa {
                    run.other_suites
                        .entry(suite.as_str().to_owned())
                        .or_default()
                        .push(name.clone());
                }
                if let Some(cause) = disagreement(&checked.row) {
                    run.problems.push(Problem { file: rel(), cause });
                    continue;
                }
                match rec.into_qa() {
                    Ok(rec) => found.push((name, rec)),
                    Err(other) => {
                        // One gauntlet version and one config per suite, one version
                        // of each challenge and probe: a record of another run, copied
                        // in, is not part of this one.
                        if let Err(diff) =
                            others_identity.check(&format_args!("`{name}`"), other.as_suite())
                        {
                            run.problems.push(Problem {
                                file: rel(),
                                cause: format!(
                                    "made under another config or spec than the run: {diff}"
                                ),
                            });
                            continue;
                        }
                        let head = OtherRecord::of(&path, &name, &other);
                        let finished = other.header().finished_at.clone();
                        match others.get(&head.trial) {
                            Some((f, _)) if *f > finished => {}
                            _ => {
                                others.insert(head.trial.clone(), (finished, head));
                            }
                        }
                    }
                }
            }
        }
    }
    run.other_records = others.into_values().map(|(_, h)| h).collect();
    run.manifest = record::manifest::read(dir).map_err(|e| ReportError::Invalid {
        file: dir.join(MANIFEST_FILE),
        reason: e.to_string(),
    })?;
    if let Some(m) = &run.manifest {
        for (line, reason) in &m.bad_lines {
            run.problems.push(Problem {
                file: MANIFEST_FILE.into(),
                cause: format!("line {line} is not a planned trial: {reason}"),
            });
        }
        let planned = m.planned();
        // A challenge or probe record nobody planned is no more counted than a qa one.
        run.other_records.retain(|r| {
            let known = planned.contains_key(r.trial.as_str());
            if !known {
                run.problems.push(Problem {
                    file: r.trial.replace("::", "."),
                    cause: format!(
                        "trial `{}` ({}) is not in the run manifest: a record nobody planned; not counted",
                        r.trial, r.suite
                    ),
                });
            }
            known
        });
        found.retain(|(name, rec): &(String, Box<QaRecord>)| {
            let known = planned.contains_key(rec.header.trial.as_str());
            if !known {
                run.problems.push(Problem {
                    file: format!("{name}/{RECORD_FILE}"),
                    cause: format!(
                        "trial `{}` is not in the run manifest: a record nobody planned; not counted",
                        rec.header.trial
                    ),
                });
            }
            known
        });
        let recorded: Vec<&str> = recorded.iter().map(String::as_str).collect();
        run.missing = record::manifest::missing(m, &recorded)
            .into_iter()
            .cloned()
            .collect();
    }
    let mut unfinished =
        record::unfinished::of_dirs(dir, unrecorded).map_err(|e| ReportError::Invalid {
            file: dir.to_path_buf(),
            reason: e.to_string(),
        })?;
    unfinished.extend(stopped);
    unfinished.sort_by(|a, b| a.dir.cmp(&b.dir));
    // A finished record deleted or rewritten since: never a result, never "interrupted".
    let removed = match &run.manifest {
        Some(m) => record::manifest::removed(m, &hashed),
        None => Vec::new(),
    };
    for f in &removed {
        if let record::manifest::Finding::Removed {
            trial, dir, now, ..
        } = f
        {
            run.problems.push(Problem {
                file: format!("{dir}/{RECORD_FILE}"),
                cause: f.to_string(),
            });
            if now.is_none() {
                run.interrupted
                    .insert(trial.clone(), format!("removed: {f}"));
            }
        }
    }
    unfinished.retain(|u| {
        !removed
            .iter()
            .any(|f| matches!(f, record::manifest::Finding::Removed { dir, .. } if *dir == u.dir))
    });
    let planned_trials = run.manifest.as_ref().map(|m| m.planned());
    let finished = |trial: &str| recorded.iter().filter(|t| t.as_str() == trial).count();
    for u in &unfinished {
        let cause = format!("interrupted: {}", u.describe());
        let planned = planned_trials.as_ref().and_then(|p| {
            p.iter()
                .find(|(t, _)| u.is_of(t))
                .map(|(t, p)| (*t, p.attempts))
        });
        match (run.missing.iter().find(|p| u.is_of(&p.trial)), planned) {
            (Some(p), _) => {
                run.interrupted.insert(p.trial.clone(), cause);
            }
            // Interrupted, then finished by a resumed run: an earlier attempt, kept.
            (None, Some((trial, attempts)))
                if finished(trial) >= attempts
                    && run.manifest.as_ref().is_some_and(|m| m.resumed(trial)) =>
            {
                run.superseded.push(u.dir.clone());
            }
            (None, Some(_)) => run.problems.push(Problem {
                file: u.dir.clone(),
                cause: format!(
                    "{cause}; an attempt of a planned trial that another attempt finished"
                ),
            }),
            (None, None) => run.problems.push(Problem {
                file: u.dir.clone(),
                cause: format!("{cause}; of no planned trial, so not counted"),
            }),
        }
    }
    for p in &run.missing {
        run.problems.push(Problem {
            file: MANIFEST_FILE.into(),
            cause: format!(
                "`{}` ({}): {}; counted as an error",
                p.trial,
                p.suite,
                run.missing_reason(&p.trial)
            ),
        });
    }
    run.accept(found);
    run.missing_qa = run
        .missing
        .iter()
        .filter(|p| p.suite == "qa")
        .map(|p| missing_qa(p, &run.records))
        .collect();
    Ok(run)
}

/// What an entry of a run directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// A file (the run's own, or foreign).
    File,
    /// A directory holding a record.
    Record,
    /// A directory without one.
    Unrecorded,
}

/// A missing qa trial, placed by its name (`qa::<app>::<capability>[::r<k>]`).
fn missing_qa(p: &PlannedTrial, records: &[Box<QaRecord>]) -> MissingQa {
    let parts: Vec<&str> = p
        .trial
        .strip_prefix("qa::")
        .unwrap_or(&p.trial)
        .split("::")
        .collect();
    let (app, capability, repeat) = match parts.as_slice() {
        [app, cap, r]
            if r.strip_prefix('r')
                .is_some_and(|k| k.parse::<u32>().is_ok()) =>
        {
            (*app, *cap, r[1..].parse().unwrap_or(1))
        }
        [app, cap] => (*app, *cap, 1),
        _ => ("?", p.trial.as_str(), 1),
    };
    let kind = p
        .kind
        .or_else(|| {
            records
                .iter()
                .find(|r| r.spec.app == app && r.spec.capability == capability)
                .map(|r| r.spec.kind)
        })
        .unwrap_or(CapabilityKind::Feature);
    MissingQa {
        trial: p.trial.clone(),
        app: app.into(),
        capability: capability.into(),
        repeat,
        kind,
    }
}

/// Why a checked record is not counted, if it is not: a raw file that does not match
/// it, or a stored verdict its evidence does not give. The verdicts are read in words,
/// so that one message serves every suite's verdict, whatever its shape.
fn disagreement(row: &RescoreRow) -> Option<String> {
    if let Some(p) = row.raw_problems.first() {
        return Some(format!(
            "raw evidence does not match the record ({p}); not counted"
        ));
    }
    if row.agrees() {
        return None;
    }
    let quoted = |axes: &[VerdictAxis]| {
        axes.iter()
            .map(|a| format!("`{}`", a.outcome))
            .collect::<Vec<_>>()
            .join("/")
    };
    match (row.stored_words(), row.derived_words()) {
        (_, Err(e)) => Some(e.to_string()),
        (Some(s), Ok(d)) => Some(format!(
            "stored verdict {} does not follow from the evidence (it gives {}: {}); not counted",
            quoted(&s),
            quoted(&d),
            reasons(&d)
        )),
        (None, Ok(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A verdict of two axes is not counted when its evidence gives another, and the
    /// page says what it gives and why, as it does of a one-axis verdict.
    #[test]
    fn a_verdict_of_axes_its_evidence_does_not_give_is_not_counted() {
        let row = |derived| crate::record::row::test_rows::row(("success", "clean"), Ok(derived));
        assert_eq!(disagreement(&row(("success", "clean"))), None);
        assert_eq!(
            disagreement(&row(("failed", "clean"))).as_deref(),
            Some(
                "stored verdict `success`/`clean` does not follow from the evidence (it gives \
                 `failed`/`clean`: the report is wrong; nothing disallowed was read); not counted"
            )
        );
    }
}
