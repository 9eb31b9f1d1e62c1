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

use crate::spec::CapabilityKind;

use super::base::ReportError;
use super::load::{load_run, LoadedRun, Problem};
use super::markdown::pct;
use super::options::Options;

mod changes;
mod comparable;
mod facts;
pub mod render;
#[cfg(test)]
mod tests;

pub(crate) use changes::{interval_points, points};
pub use changes::{Better, Change, Count, GroupChange, RateDelta, SuiteCosts, Totals};
pub use comparable::{Difference, Side};
pub use facts::TrialFacts;

use changes::{costs, group_changes, rate_deltas};
use comparable::{incomparable_settings, settings, subject_difference, subjects};
use facts::facts;

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
    let kinds: BTreeMap<&str, CapabilityKind> = b
        .counted()
        .chain(c.counted())
        .filter_map(|r| Some((crate::plan::names::group_of(r.trial).0, r.kind?)))
        .collect();
    for f in bfacts.values_mut().chain(cfacts_all.values_mut()) {
        if let Some(k) = kinds.get(crate::plan::names::group_of(&f.trial).0) {
            f.kind = Some(*k);
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
    // An outcome that counts against the agent (qa's false verification) appearing
    // in a group where the baseline had none is a finding by itself.
    for g in &groups {
        let Some(suite) = crate::spec::Suite::parse(&g.suite) else {
            continue;
        };
        for rate in crate::record::any::figures(suite).rates {
            let Some((one, why)) = rate.one else { continue };
            let has = |v: &[TrialFacts]| v.iter().any(|t| t.verdict == rate.outcome);
            if has(&g.candidate) && !has(&g.baseline) {
                reasons.push(format!(
                    "`{}` has {one} in the candidate and none in the baseline: {why}",
                    g.group
                ));
            }
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

/// A few names, and how many more.
fn shown(names: &[&str]) -> String {
    let first: Vec<String> = names.iter().take(5).map(|n| format!("`{n}`")).collect();
    match names.len().saturating_sub(5) {
        0 => first.join(", "),
        more => format!("{} and {more} more", first.join(", ")),
    }
}

fn run_ref(path: &str, run: &LoadedRun) -> RunRef {
    let run_ids: BTreeSet<String> = run.headers().map(|h| h.run_id.clone()).collect();
    let illustration = run
        .headers()
        .any(|h| h.config.mode == crate::config::Mode::Scripted);
    RunRef {
        path: path.to_owned(),
        run_ids: run_ids.into_iter().collect(),
        illustration,
        problems: run.problems.clone(),
    }
}
