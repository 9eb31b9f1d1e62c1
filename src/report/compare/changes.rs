//! What moved between the two runs: each trial group's verdicts, the rates a suite is
//! judged by with the 95% interval of their difference, and what each suite used.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::score::interval::{difference, wilson, Interval};

use super::facts::TrialFacts;

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

pub use crate::record::suite::Better;

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

/// A difference of rates in percentage points: `−12.5 pts`.
pub(crate) fn points(d: f64) -> String {
    format!("{:+.1} pts", 100.0 * d).replace('-', "−")
}

pub(crate) fn interval_points(i: Interval) -> String {
    format!("[{:+.1}, {:+.1}]", 100.0 * i.low, 100.0 * i.high).replace('-', "−")
}

/// Group both runs' trials (the candidate's are the baseline's trials, by name).
pub(super) fn group_changes(
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
pub(super) fn rate_deltas(
    b: &BTreeMap<String, TrialFacts>,
    c: &BTreeMap<String, TrialFacts>,
) -> Vec<RateDelta> {
    let suites: BTreeSet<&str> = b.values().map(|f| f.suite.as_str()).collect();
    let mut out = Vec::new();
    for tag in crate::spec::Suite::ALL {
        let suite = tag.as_str();
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
        push("pass rate", Better::Higher, &|f| f.passed, &|_| true);
        for r in crate::record::any::figures(tag).rates {
            push(r.name, r.better, &|f| f.verdict == r.outcome, &|f| {
                r.among.counts(f.kind)
            });
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
    t.wall_ms_median = crate::report::aggregate::median(&walls);
    t
}

pub(super) fn costs(
    b: &BTreeMap<String, TrialFacts>,
    c: &BTreeMap<String, TrialFacts>,
) -> Vec<SuiteCosts> {
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
