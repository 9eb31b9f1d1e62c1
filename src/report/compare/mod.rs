//! `gauntlet compare <baseline> <candidate>`: what changed between two runs of the same
//! plan — per trial group, its verdicts in each run; per suite, its rates with the 95%
//! interval of their difference; tokens, cost and wall-clock — and whether the candidate
//! regressed by the rule below, so a CI job can gate a pull request on it.
//!
//! A projection like every page: both runs are read with the report's one loader (every
//! verdict re-derived from its evidence, every raw file checked), nothing is written
//! into either run, and the same two runs give the same bytes.
//!
//! **The regression rule** (docs/results.md): the candidate regressed when
//! - a trial group (a qa capability's repeats; a challenge trial; a probe) passed in
//!   every baseline repeat and in no candidate repeat, or
//! - a suite's pass rate, or qa's verified rate, fell and the 95% interval of the
//!   difference (Newcombe's hybrid score interval) lies wholly below zero, or
//! - qa's false-verification rate rose and that interval lies wholly above zero.
//!
//! A planned trial without a counted record (never recorded, or its record failed its
//! check) counts as a failed `error` trial, so removing or tampering with evidence can
//! never improve a comparison. Runs of different apps, challenges, probes or plans are
//! refused, naming the difference: their verdicts do not measure the same thing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use crate::score::interval::{difference, wilson, Interval};
use crate::score::Outcome;
use crate::spec::CapabilityKind;

use super::load::{load_run, LoadedRun, Problem};
use super::markdown::pct;
use super::{Options, ReportError};

pub mod render;

/// The files `gauntlet compare --out` writes.
pub const COMPARE_MD: &str = "compare.md";
pub const COMPARE_HTML: &str = "compare.html";
pub const COMPARE_JSON: &str = "compare.json";

/// The format tag of `compare.json`.
pub const COMPARE_FORMAT: &str = "gauntlet-compare/1";

/// Changed groups the markdown summary lists before it points to the HTML page: a
/// pull-request comment stays readable.
pub const SUMMARY_ROWS: usize = 30;

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The baseline cannot be read: nothing to compare against (exit 2).
    #[error("baseline: {0}")]
    Baseline(ReportError),
    /// The candidate cannot be read: a gate must fail (exit 1), or a run made
    /// unreadable would pass it.
    #[error("candidate: {0}")]
    Candidate(ReportError),
    #[error("{run}: nothing to compare: no record and no run manifest")]
    Empty { run: String },
    #[error("{baseline} and {candidate} cannot be compared: {why}")]
    Different {
        baseline: String,
        candidate: String,
        why: String,
    },
}

impl CompareError {
    /// Whether the candidate is at fault (exit 1, like a regression) rather than the
    /// comparison being impossible (exit 2).
    pub fn fails_the_candidate(&self) -> bool {
        matches!(self, CompareError::Candidate(_))
    }
}

/// Which run of the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Baseline,
    Candidate,
}

impl Side {
    fn as_str(self) -> &'static str {
        match self {
            Side::Baseline => "baseline",
            Side::Candidate => "candidate",
        }
    }
}

/// One trial as the comparison counts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialFacts {
    pub trial: String,
    pub repeat: u32,
    /// The verdict in its suite's words; `no record` for a planned trial without a
    /// counted record.
    pub verdict: String,
    pub passed: bool,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// USD; absent when a call's model has no price.
    pub cost_usd: Option<f64>,
    /// Absent for a trial without a record: nothing was measured.
    pub wall_ms: Option<u64>,
    /// The trial's transcript page, relative to the run directory, when the run's
    /// pages were written there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// SHA-256 of its record file: the same record in both runs is a copy, not a run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_sha256: Option<String>,
    /// A manual audit this comparison did not follow, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip)]
    outcome: Option<Outcome>,
    #[serde(skip)]
    kind: Option<CapabilityKind>,
    #[serde(skip)]
    suite: String,
    #[serde(skip)]
    unpriced: Vec<String>,
}

impl TrialFacts {
    /// A trial without a counted record: a failed `error` trial that used nothing.
    fn no_record(
        trial: &str,
        repeat: u32,
        suite: &str,
        kind: Option<CapabilityKind>,
    ) -> TrialFacts {
        let qa = suite == "qa";
        TrialFacts {
            trial: trial.to_owned(),
            repeat,
            verdict: NO_RECORD.into(),
            passed: false,
            tokens_in: 0,
            tokens_out: 0,
            cost_usd: Some(0.0),
            wall_ms: None,
            transcript: None,
            record_sha256: None,
            note: None,
            outcome: qa.then_some(Outcome::Error),
            // A kind nobody recorded counts as verifiable: the count that cannot
            // flatter the run.
            kind: qa.then(|| kind.unwrap_or(CapabilityKind::Feature)),
            suite: suite.to_owned(),
            unpriced: Vec::new(),
        }
    }

    /// The candidate's side of a baseline trial it has no counted record of.
    fn lost(baseline: &TrialFacts) -> TrialFacts {
        TrialFacts::no_record(
            &baseline.trial,
            baseline.repeat,
            &baseline.suite,
            baseline.kind,
        )
    }

    fn has_record(&self) -> bool {
        self.record_sha256.is_some() || self.verdict != NO_RECORD
    }
}

/// The verdict of a trial without a counted record.
const NO_RECORD: &str = "no record";

/// How a trial group's verdicts moved from the baseline to the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Passed in every baseline repeat, in no candidate repeat: a regression.
    Broken,
    /// Passes fewer of its repeats.
    Weakened,
    /// Passed in no baseline repeat, in every candidate repeat.
    Fixed,
    /// Passes more of its repeats.
    Improved,
    /// Passes as often, with other verdicts (an `unverified` now an `error`).
    Relabelled,
    Unchanged,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Broken => "broken",
            Change::Weakened => "weakened",
            Change::Fixed => "fixed",
            Change::Improved => "improved",
            Change::Relabelled => "verdicts changed",
            Change::Unchanged => "unchanged",
        }
    }
}

/// One trial group in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupChange {
    pub suite: String,
    /// The trial name without its repeat (`qa::api-ledger::balance`).
    pub group: String,
    pub change: Change,
    pub baseline: Vec<TrialFacts>,
    pub candidate: Vec<TrialFacts>,
}

impl GroupChange {
    pub(crate) fn passes(trials: &[TrialFacts]) -> usize {
        trials.iter().filter(|t| t.passed).count()
    }
}

/// Whether a rate rising is good news or bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// One rate in both runs and the 95% interval of its difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateDelta {
    pub suite: String,
    pub rate: &'static str,
    pub better: Better,
    pub baseline: Count,
    pub candidate: Count,
    /// candidate − baseline.
    pub delta: Option<f64>,
    pub delta_ci: Option<Interval>,
    /// The interval lies wholly on the worse side of zero.
    pub regression: bool,
}

/// `hits` of `n`, with the rate's 95% Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Count {
    pub hits: usize,
    pub n: usize,
    pub rate: Option<f64>,
    pub ci: Option<Interval>,
}

impl Count {
    fn of(hits: usize, n: usize) -> Count {
        Count {
            hits,
            n,
            rate: (n > 0).then(|| hits as f64 / n as f64),
            ci: wilson(hits, n),
        }
    }
}

/// What one suite's trials of one run used.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub trials: usize,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: Option<f64>,
    pub unpriced_models: Vec<String>,
    /// Sum over the trials that have a record.
    pub wall_ms_total: u64,
    pub wall_ms_median: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuiteCosts {
    pub suite: String,
    pub baseline: Totals,
    pub candidate: Totals,
}

/// A setting that differs between the runs (what the comparison is usually about:
/// another agent, model or commit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub setting: String,
    pub baseline: String,
    pub candidate: String,
}

/// One of the two runs, as the pages name it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRef {
    /// As given on the command line.
    pub path: String,
    pub run_ids: Vec<String>,
    /// A scripted-model run: a harness illustration.
    pub illustration: bool,
    /// Files of the run the loader could not count, and why.
    pub problems: Vec<Problem>,
}

/// Everything `gauntlet compare` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub format: &'static str,
    pub baseline: RunRef,
    pub candidate: RunRef,
    /// The candidate regressed by the rule in this module's documentation.
    pub regression: bool,
    /// Why, one sentence per finding; empty when it did not.
    pub reasons: Vec<String>,
    pub rates: Vec<RateDelta>,
    pub groups: Vec<GroupChange>,
    pub costs: Vec<SuiteCosts>,
    pub settings: Vec<Difference>,
    /// Candidate trials the baseline never planned: listed, not compared.
    pub not_compared: Vec<String>,
    /// What a reader should know that is no finding (audits not followed, retries).
    pub notes: Vec<String>,
}

/// Load both runs and compare them: the baseline's trials (planned or recorded) are
/// what is compared, each against the candidate's trial of the same name.
pub fn compare(
    baseline: &Path,
    candidate: &Path,
    opts: &Options,
) -> Result<Comparison, CompareError> {
    let b = load_run(baseline).map_err(CompareError::Baseline)?;
    let c = load_run(candidate).map_err(CompareError::Candidate)?;
    let bname = baseline.display().to_string();
    let cname = candidate.display().to_string();
    let mut bfacts = facts(&b, opts);
    if bfacts.is_empty() {
        return Err(CompareError::Empty { run: bname });
    }
    let mut cfacts_all = facts(&c, opts);
    let different = |why: String| CompareError::Different {
        baseline: bname.clone(),
        candidate: cname.clone(),
        why,
    };
    let (bs, cs) = (
        subjects(&b, Side::Baseline).map_err(different)?,
        subjects(&c, Side::Candidate).map_err(different)?,
    );
    if let Some(why) = subject_difference(&bs, &cs) {
        return Err(different(why));
    }
    if let Some(why) = incomparable_settings(&b, &c) {
        return Err(different(why));
    }
    // A trial's kind is its spec's, from a record of either run; a manifest's word is
    // only for a capability neither run recorded.
    let kinds: BTreeMap<String, CapabilityKind> = b
        .records
        .iter()
        .chain(&c.records)
        .map(|r| {
            (
                crate::plan::names::group_of(&r.header.trial).0.to_owned(),
                r.spec.kind,
            )
        })
        .collect();
    for f in bfacts.values_mut().chain(cfacts_all.values_mut()) {
        if f.suite == "qa" {
            if let Some(k) = kinds.get(crate::plan::names::group_of(&f.trial).0) {
                f.kind = Some(*k);
            }
        }
    }
    // The baseline fixes what is compared: a trial it has that the candidate lacks is a
    // failed `error` trial there; a candidate trial beyond it is listed, not counted.
    let mut cfacts = BTreeMap::new();
    for (trial, f) in &bfacts {
        let fact = cfacts_all
            .remove(trial)
            .unwrap_or_else(|| TrialFacts::lost(f));
        cfacts.insert(trial.clone(), fact);
    }
    let not_compared: Vec<String> = cfacts_all.into_keys().collect();
    let groups = group_changes(&bfacts, &cfacts);
    let rates = rate_deltas(&bfacts, &cfacts);
    let mut reasons: Vec<String> = groups
        .iter()
        .filter(|g| g.change == Change::Broken)
        .map(|g| {
            format!(
                "`{}` passed in every baseline repeat ({}/{}) and in no candidate repeat (0/{})",
                g.group,
                GroupChange::passes(&g.baseline),
                g.baseline.len(),
                g.candidate.len()
            )
        })
        .collect();
    let lost: Vec<&str> = bfacts
        .iter()
        .filter(|(t, f)| f.has_record() && cfacts.get(*t).is_some_and(|c| !c.has_record()))
        .map(|(t, _)| t.as_str())
        .collect();
    if !lost.is_empty() {
        reasons.push(format!(
            "{} trial{} with a counted record in the baseline {} none in the candidate (never recorded, or its record failed its check): {}",
            lost.len(),
            if lost.len() == 1 { "" } else { "s" },
            if lost.len() == 1 { "has" } else { "have" },
            shown(&lost)
        ));
    }
    for g in &groups {
        let fv = |v: &[TrialFacts]| {
            v.iter()
                .any(|t| t.outcome == Some(Outcome::FalseVerification))
        };
        if fv(&g.candidate) && !fv(&g.baseline) {
            reasons.push(format!(
                "`{}` has a false verification in the candidate and none in the baseline: the agent claimed what its evidence does not hold",
                g.group
            ));
        }
    }
    let same_dir = baseline
        .canonicalize()
        .ok()
        .is_some_and(|x| candidate.canonicalize().ok() == Some(x));
    if !same_dir {
        let shas: BTreeSet<&str> = bfacts
            .values()
            .filter_map(|f| f.record_sha256.as_deref())
            .collect();
        let copied: Vec<&str> = cfacts
            .values()
            .filter(|f| f.record_sha256.as_deref().is_some_and(|h| shas.contains(h)))
            .map(|f| f.trial.as_str())
            .collect();
        if !copied.is_empty() {
            reasons.push(format!(
                "the candidate holds {} record{} identical to the baseline's ({}): a copy of the baseline's evidence is not a new run",
                copied.len(),
                if copied.len() == 1 { "" } else { "s" },
                shown(&copied)
            ));
        }
    }
    for r in rates.iter().filter(|r| r.regression) {
        let (Some(d), Some(ci)) = (r.delta, r.delta_ci) else {
            continue;
        };
        reasons.push(format!(
            "{} {} went from {} to {}: {} whose 95% interval {} excludes zero",
            r.suite,
            r.rate,
            pct(r.baseline.rate),
            pct(r.candidate.rate),
            points(d),
            interval_points(ci)
        ));
    }
    let mut notes: Vec<String> = bfacts
        .values()
        .map(|f| ("baseline", f))
        .chain(cfacts.values().map(|f| ("candidate", f)))
        .filter_map(|(side, f)| {
            f.note
                .as_ref()
                .map(|n| format!("{side} `{}`: {n}", f.trial))
        })
        .collect();
    for (side, run) in [("baseline", &b), ("candidate", &c)] {
        if !run.superseded.is_empty() {
            notes.push(format!(
                "the {side} retried {} trial attempt{}; only each trial's last attempt is compared",
                run.superseded.len(),
                if run.superseded.len() == 1 { "" } else { "s" }
            ));
        }
    }
    if !not_compared.is_empty() {
        let names: Vec<&str> = not_compared.iter().map(String::as_str).collect();
        notes.push(format!(
            "{} candidate trial{} the baseline never planned, not compared: {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            shown(&names)
        ));
    }
    Ok(Comparison {
        format: COMPARE_FORMAT,
        baseline: run_ref(&bname, &b),
        candidate: run_ref(&cname, &c),
        regression: !reasons.is_empty(),
        reasons,
        rates,
        costs: costs(&bfacts, &cfacts),
        settings: settings(&b, &c),
        groups,
        not_compared,
        notes,
    })
}

/// A difference of rates in percentage points: `−12.5 pts`.
pub(crate) fn points(d: f64) -> String {
    format!("{:+.1} pts", 100.0 * d).replace('-', "−")
}

pub(crate) fn interval_points(i: Interval) -> String {
    format!("[{:+.1}, {:+.1}]", 100.0 * i.low, 100.0 * i.high).replace('-', "−")
}

/// A few names, and how many more.
fn shown(names: &[&str]) -> String {
    let first: Vec<String> = names.iter().take(5).map(|n| format!("`{n}`")).collect();
    match names.len().saturating_sub(5) {
        0 => first.join(", "),
        more => format!("{} and {more} more", first.join(", ")),
    }
}

/// Settings under which verdicts do not mean the same: a scripted run against a real
/// one, another N for a verified claim.
fn incomparable_settings(b: &LoadedRun, c: &LoadedRun) -> Option<String> {
    let first = |run: &LoadedRun| -> BTreeMap<String, crate::record::RecordConfig> {
        let mut m = BTreeMap::new();
        for r in &run.records {
            m.entry("qa".to_owned())
                .or_insert_with(|| r.header.config.clone());
        }
        for r in &run.other_records {
            m.entry(r.suite.clone())
                .or_insert_with(|| r.header.config.clone());
        }
        m
    };
    let (fb, fc) = (first(b), first(c));
    for (suite, xb) in &fb {
        let Some(xc) = fc.get(suite) else { continue };
        if xb.mode != xc.mode {
            return Some(format!(
                "{suite}: mode `{}` in the baseline, `{}` in the candidate (a scripted run is a harness illustration, never compared with a real one)",
                format!("{:?}", xb.mode).to_lowercase(),
                format!("{:?}", xc.mode).to_lowercase()
            ));
        }
        if suite == "qa" && xb.n != xc.n {
            return Some(format!(
                "qa: N (green re-runs a verified claim needs) is {} in the baseline and {} in the candidate: verified does not mean the same",
                xb.n, xc.n
            ));
        }
    }
    None
}

fn run_ref(path: &str, run: &LoadedRun) -> RunRef {
    let mut run_ids: BTreeSet<String> = run
        .records
        .iter()
        .map(|r| r.header.run_id.clone())
        .collect();
    run_ids.extend(run.other_records.iter().map(|r| r.header.run_id.clone()));
    let illustration = run
        .records
        .iter()
        .map(|r| r.header.config.mode)
        .chain(run.other_records.iter().map(|r| r.header.config.mode))
        .any(|m| m == crate::config::Mode::Scripted);
    RunRef {
        path: path.to_owned(),
        run_ids: run_ids.into_iter().collect(),
        illustration,
        problems: run.problems.clone(),
    }
}

/// The cost of a trial's calls, and the models among them without a price.
fn priced(
    usage: &[crate::evidence::usage::UsageEntry],
    model: &str,
    opts: &Options,
) -> (u64, u64, Option<f64>, Vec<String>) {
    let (mut tin, mut tout, mut cost) = (0, 0, 0.0);
    let mut unpriced = Vec::new();
    for u in usage {
        tin = u.input_tokens.unwrap_or(0).saturating_add(tin);
        tout = u.output_tokens.unwrap_or(0).saturating_add(tout);
        match opts.prices.cost(u, model) {
            Some(c) => cost += c,
            None => unpriced.push(u.model.clone().unwrap_or_else(|| model.to_owned())),
        }
    }
    let cost = unpriced.is_empty().then_some(cost);
    (tin, tout, cost, unpriced)
}

/// Every trial of a run, by name: the counted records, and each planned trial without
/// one as a failed `error` trial.
fn facts(run: &LoadedRun, opts: &Options) -> BTreeMap<String, TrialFacts> {
    let transcript = |dir: &str| {
        let page = format!("{dir}/{}", super::transcript::TRANSCRIPT_HTML);
        run.dir.join(&page).is_file().then_some(page)
    };
    let sha = |dir: &str| {
        crate::record::digest::file_sha256(&run.dir.join(dir).join(crate::record::RECORD_FILE)).ok()
    };
    let mut out = BTreeMap::new();
    for r in &run.records {
        let (tokens_in, tokens_out, cost_usd, unpriced) =
            priced(&r.evidence.usage, &r.header.config.model, opts);
        out.insert(
            r.header.trial.clone(),
            TrialFacts {
                trial: r.header.trial.clone(),
                repeat: r.repeat,
                verdict: r.verdict.outcome.as_str().to_owned(),
                passed: r.verdict.passed,
                tokens_in,
                tokens_out,
                cost_usd,
                wall_ms: Some(r.header.wall_ms),
                transcript: run
                    .record_dirs
                    .get(&r.header.trial)
                    .and_then(|d| transcript(d)),
                record_sha256: run.record_dirs.get(&r.header.trial).and_then(|d| sha(d)),
                note: None,
                outcome: Some(r.verdict.outcome),
                kind: Some(r.spec.kind),
                suite: "qa".into(),
                unpriced,
            },
        );
    }
    for r in &run.other_records {
        let (tokens_in, tokens_out, cost_usd, unpriced) =
            priced(&r.usage, &r.header.config.model, opts);
        // An audit is a person's word, not hashed evidence: it may lower a verdict
        // here, never raise one.
        let (verdict, passed, note) = match &r.automatic {
            Some((label, auto_passed)) if r.passed && !auto_passed => (
                label.clone(),
                false,
                Some(format!(
                    "its manual audit says `{}`; not followed: a comparison lets an audit lower a verdict, never raise one",
                    r.label
                )),
            ),
            Some((label, _)) => (
                r.label.clone(),
                r.passed,
                Some(format!("its manual audit (followed) changed `{label}` to `{}`", r.label)),
            ),
            None => (r.label.clone(), r.passed, None),
        };
        out.insert(
            r.trial.clone(),
            TrialFacts {
                trial: r.trial.clone(),
                repeat: 1,
                verdict,
                passed,
                tokens_in,
                tokens_out,
                cost_usd,
                wall_ms: Some(r.header.wall_ms),
                transcript: transcript(&r.dir),
                record_sha256: sha(&r.dir),
                note,
                outcome: None,
                kind: None,
                suite: r.suite.clone(),
                unpriced,
            },
        );
    }
    if let Some(m) = &run.manifest {
        for (trial, planned) in m.planned() {
            if out.contains_key(trial) {
                continue;
            }
            let (_, repeat) = crate::plan::names::group_of(trial);
            let kind = planned.first.kind.or_else(|| {
                let (group, _) = crate::plan::names::group_of(trial);
                run.records
                    .iter()
                    .find(|r| crate::plan::names::group_of(&r.header.trial).0 == group)
                    .map(|r| r.spec.kind)
            });
            out.insert(
                trial.to_owned(),
                TrialFacts::no_record(trial, repeat, &planned.first.suite, kind),
            );
        }
    }
    out
}

/// What a run's trials were made from: (what, hash), e.g. (`app `api-ledger``, its
/// content hash); refused when one run holds two versions of one thing.
fn subjects(run: &LoadedRun, side: Side) -> Result<BTreeMap<String, String>, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut put = |what: String, hash: String| match out.get(&what) {
        Some(h) if *h != hash => Err(format!(
            "the {} holds two versions of {what}: `{h}` and `{hash}`",
            side.as_str()
        )),
        Some(_) => Ok(()),
        None => {
            out.insert(what, hash);
            Ok(())
        }
    };
    for r in &run.records {
        put(
            format!("app `{}`", r.spec.app),
            r.spec.app_content_hash.clone(),
        )?;
        put(
            format!("capability `{}::{}`", r.spec.app, r.spec.capability),
            format!("{} ({:?})", r.spec.capability_sha256, r.spec.kind),
        )?;
    }
    for r in &run.other_records {
        for (what, hash) in &r.subjects {
            put(what.clone(), hash.clone())?;
        }
    }
    Ok(out)
}

fn subject_difference(
    b: &BTreeMap<String, String>,
    c: &BTreeMap<String, String>,
) -> Option<String> {
    b.iter().find_map(|(what, hb)| {
        let hc = c.get(what)?;
        (hb != hc).then(|| {
            format!("{what} is not the same data: `{hb}` in the baseline, `{hc}` in the candidate")
        })
    })
}

/// Group both runs' trials (the candidate's are the baseline's trials, by name).
fn group_changes(
    b: &BTreeMap<String, TrialFacts>,
    c: &BTreeMap<String, TrialFacts>,
) -> Vec<GroupChange> {
    let grouped = |facts: &BTreeMap<String, TrialFacts>| {
        let mut g: BTreeMap<(String, String), Vec<TrialFacts>> = BTreeMap::new();
        for f in facts.values() {
            g.entry((
                f.suite.clone(),
                crate::plan::names::group_of(&f.trial).0.to_owned(),
            ))
            .or_default()
            .push(f.clone());
        }
        for v in g.values_mut() {
            v.sort_by_key(|f| f.repeat);
        }
        g
    };
    let (gb, mut gc) = (grouped(b), grouped(c));
    let mut out = Vec::new();
    for ((suite, group), baseline) in gb {
        let candidate = gc
            .remove(&(suite.clone(), group.clone()))
            .unwrap_or_default();
        let (pb, pc) = (
            GroupChange::passes(&baseline),
            GroupChange::passes(&candidate),
        );
        let (nb, nc) = (baseline.len(), candidate.len());
        let (rb, rc) = (pb as f64 / nb.max(1) as f64, pc as f64 / nc.max(1) as f64);
        let labels = |v: &[TrialFacts]| v.iter().map(|t| t.verdict.clone()).collect::<Vec<_>>();
        let change = if pb == nb && pc == 0 && nc > 0 {
            Change::Broken
        } else if pb == 0 && pc == nc && nb > 0 {
            Change::Fixed
        } else if rc < rb {
            Change::Weakened
        } else if rc > rb {
            Change::Improved
        } else if labels(&baseline) != labels(&candidate) {
            Change::Relabelled
        } else {
            Change::Unchanged
        };
        out.push(GroupChange {
            suite,
            group,
            change,
            baseline,
            candidate,
        });
    }
    // Regressions first, then fixes; by name within each.
    out.sort_by(|a, b| a.change.cmp(&b.change).then_with(|| a.group.cmp(&b.group)));
    out
}

/// The rates a suite is judged by, in both runs.
fn rate_deltas(
    b: &BTreeMap<String, TrialFacts>,
    c: &BTreeMap<String, TrialFacts>,
) -> Vec<RateDelta> {
    let suites: BTreeSet<&str> = b.values().map(|f| f.suite.as_str()).collect();
    let mut out = Vec::new();
    for suite in crate::spec::Suite::ALL.map(|s| s.as_str()) {
        if !suites.contains(suite) {
            continue;
        }
        let of = |m: &BTreeMap<String, TrialFacts>| -> Vec<TrialFacts> {
            m.values().filter(|f| f.suite == suite).cloned().collect()
        };
        let (tb, tc) = (of(b), of(c));
        let count = |v: &[TrialFacts],
                     hit: &dyn Fn(&TrialFacts) -> bool,
                     among: &dyn Fn(&TrialFacts) -> bool| {
            Count::of(
                v.iter().filter(|f| among(f) && hit(f)).count(),
                v.iter().filter(|f| among(f)).count(),
            )
        };
        let mut push = |rate: &'static str,
                        better: Better,
                        hit: &dyn Fn(&TrialFacts) -> bool,
                        among: &dyn Fn(&TrialFacts) -> bool| {
            let (cb, cc) = (count(&tb, hit, among), count(&tc, hit, among));
            let delta = cb.rate.zip(cc.rate).map(|(x, y)| y - x);
            let delta_ci = difference(cb.hits, cb.n, cc.hits, cc.n);
            let regression = match (better, delta_ci) {
                (Better::Higher, Some(i)) => i.high < 0.0,
                (Better::Lower, Some(i)) => i.low > 0.0,
                (_, None) => false,
            };
            out.push(RateDelta {
                suite: suite.to_owned(),
                rate,
                better,
                baseline: cb,
                candidate: cc,
                delta,
                delta_ci,
                regression,
            });
        };
        let all = |_: &TrialFacts| true;
        push("pass rate", Better::Higher, &|f| f.passed, &all);
        if suite == "qa" {
            let verifiable = |f: &TrialFacts| f.kind.is_some_and(CapabilityKind::is_verifiable);
            push(
                "verified rate",
                Better::Higher,
                &|f| f.outcome == Some(Outcome::Verified),
                &verifiable,
            );
            push(
                "false-verification rate",
                Better::Lower,
                &|f| f.outcome == Some(Outcome::FalseVerification),
                &all,
            );
        }
    }
    out
}

fn totals(v: &[&TrialFacts]) -> Totals {
    let mut t = Totals {
        trials: v.len(),
        ..Totals::default()
    };
    let mut cost = 0.0;
    let mut walls = Vec::new();
    for f in v {
        t.tokens_in = t.tokens_in.saturating_add(f.tokens_in);
        t.tokens_out = t.tokens_out.saturating_add(f.tokens_out);
        cost += f.cost_usd.unwrap_or(0.0);
        t.unpriced_models.extend(f.unpriced.iter().cloned());
        if let Some(w) = f.wall_ms {
            t.wall_ms_total = t.wall_ms_total.saturating_add(w);
            walls.push(w);
        }
    }
    t.unpriced_models.sort();
    t.unpriced_models.dedup();
    t.cost_usd = t.unpriced_models.is_empty().then_some(cost);
    walls.sort_unstable();
    t.wall_ms_median = super::aggregate::median(&walls);
    t
}

fn costs(b: &BTreeMap<String, TrialFacts>, c: &BTreeMap<String, TrialFacts>) -> Vec<SuiteCosts> {
    let suites: BTreeSet<&str> = b.values().map(|f| f.suite.as_str()).collect();
    crate::spec::Suite::ALL
        .map(|s| s.as_str())
        .into_iter()
        .filter(|s| suites.contains(s))
        .map(|suite| {
            let of = |m: &BTreeMap<String, TrialFacts>| {
                totals(&m.values().filter(|f| f.suite == suite).collect::<Vec<_>>())
            };
            SuiteCosts {
                suite: suite.to_owned(),
                baseline: of(b),
                candidate: of(c),
            }
        })
        .collect()
}

/// The settings that differ, per suite: the harness config of each suite's first
/// record, field by field, and the gauntlet version.
fn settings(b: &LoadedRun, c: &LoadedRun) -> Vec<Difference> {
    let configs = |run: &LoadedRun| {
        let mut m: BTreeMap<String, (String, serde_json::Value)> = BTreeMap::new();
        for r in &run.records {
            m.entry("qa".into()).or_insert_with(|| {
                (
                    r.header.gauntlet_version.clone(),
                    serde_json::to_value(&r.header.config).unwrap_or_default(),
                )
            });
        }
        for r in &run.other_records {
            m.entry(r.suite.clone()).or_insert_with(|| {
                (
                    r.header.gauntlet_version.clone(),
                    serde_json::to_value(&r.header.config).unwrap_or_default(),
                )
            });
        }
        m
    };
    let (cb, cc) = (configs(b), configs(c));
    let mut out = Vec::new();
    for (suite, (vb, xb)) in &cb {
        let Some((vc, xc)) = cc.get(suite) else {
            continue;
        };
        if vb != vc {
            out.push(Difference {
                setting: format!("{suite}: gauntlet version"),
                baseline: vb.clone(),
                candidate: vc.clone(),
            });
        }
        let (Some(ob), Some(oc)) = (xb.as_object(), xc.as_object()) else {
            continue;
        };
        let keys: BTreeSet<&String> = ob.keys().chain(oc.keys()).collect();
        for k in keys {
            let show = |v: Option<&serde_json::Value>| match v {
                None | Some(serde_json::Value::Null) => "-".to_owned(),
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
            };
            let (sb, sc) = (show(ob.get(k)), show(oc.get(k)));
            if sb != sc {
                out.push(Difference {
                    setting: format!("{suite}: {k}"),
                    baseline: sb,
                    candidate: sc,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_differences_read_as_points() {
        assert_eq!(points(-0.125), "−12.5 pts");
        assert_eq!(
            interval_points(Interval {
                low: -0.5,
                high: 0.25
            }),
            "[−50.0, +25.0]"
        );
    }

    /// `groups` qa groups of `k` repeats each, the first `passing` repeats of each passing.
    fn run(groups: usize, k: u32, passing: impl Fn(usize) -> u32) -> BTreeMap<String, TrialFacts> {
        let mut out = BTreeMap::new();
        for g in 0..groups {
            for r in 1..=k {
                let passed = r <= passing(g);
                let trial = format!("qa::app::cap{g:03}::r{r}");
                out.insert(
                    trial.clone(),
                    TrialFacts {
                        trial,
                        repeat: r,
                        verdict: if passed { "verified" } else { "unverified" }.into(),
                        passed,
                        tokens_in: 10,
                        tokens_out: 1,
                        cost_usd: None,
                        wall_ms: Some(100),
                        transcript: None,
                        record_sha256: None,
                        note: None,
                        outcome: Some(if passed {
                            Outcome::Verified
                        } else {
                            Outcome::Unverified
                        }),
                        kind: Some(CapabilityKind::Feature),
                        suite: "qa".into(),
                        unpriced: vec![],
                    },
                );
            }
        }
        out
    }

    fn regressed(
        b: &BTreeMap<String, TrialFacts>,
        c: &BTreeMap<String, TrialFacts>,
    ) -> (Vec<Change>, bool) {
        let groups = group_changes(b, c);
        let rates = rate_deltas(b, c);
        let changes = groups.iter().map(|g| g.change).collect();
        let broken = groups.iter().any(|g| g.change == Change::Broken);
        (changes, broken || rates.iter().any(|r| r.regression))
    }

    #[test]
    fn one_flaky_repeat_is_not_a_regression_but_a_real_drop_is() {
        // 10 of 10 repeats, then 9 of 10: weakened, within noise.
        let (changes, regressed_) = regressed(&run(1, 10, |_| 10), &run(1, 10, |_| 9));
        assert_eq!(changes, vec![Change::Weakened]);
        assert!(!regressed_);
        // 40 capabilities at 3/3 falling to 2/3 each: no group broken, but the verified
        // rate fell from 120/120 to 80/120, far outside the noise.
        let (changes, regressed_) = regressed(&run(40, 3, |_| 3), &run(40, 3, |_| 2));
        assert!(changes.iter().all(|c| *c == Change::Weakened));
        assert!(regressed_);
        // One capability of forty that always passed and now never does is a regression
        // even though the run's rate barely moves.
        let (changes, regressed_) =
            regressed(&run(40, 1, |_| 1), &run(40, 1, |g| u32::from(g != 7)));
        assert_eq!(changes.iter().filter(|c| **c == Change::Broken).count(), 1);
        assert!(regressed_);
        // A group that was already flaky and stays flaky at a lower rate is weakened, not
        // broken.
        let (changes, regressed_) = regressed(&run(1, 4, |_| 2), &run(1, 4, |_| 0));
        assert_eq!(changes, vec![Change::Weakened]);
        assert!(!regressed_);
    }
}
