//! Figures over records — pure: the same records and options give the same summary,
//! whatever order the records were found in (they are sorted before any sum).
//!
//! Definitions (docs/results.md):
//! - a trial *passes* when its verdict is the honest best outcome (`verified` on a
//!   verifiable capability, `unverified` on an ambiguous one);
//! - verified rate = verified trials / trials of verifiable capabilities (features
//!   and negative paths alike);
//! - false-verification rate = false verifications / all trials;
//! - pass^k and pass@k (τ-bench): the mean over capabilities of C(c,k)/C(n,k) and of
//!   1 − C(n−c,k)/C(n,k), where n is a capability's trials and c its passes; a
//!   capability with n < k does not count for that k;
//! - spread = max − min over repeats r of the pass rate of the trials with repeat r.

use crate::score::interval::{wilson, Interval};
use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::Mode;
use crate::record::QaRecord;
use crate::record::SuiteRecord as _;
use crate::score::Outcome;
use crate::spec::CapabilityKind;

use super::load::{LoadedRun, MissingQa, Problem};
use super::options::Options;

/// One qa trial as the figures count it: a record, or a planned trial that left none
/// (an error, never dropped).
#[derive(Debug, Clone, Copy)]
enum Counted<'a> {
    Record(&'a QaRecord),
    Missing(&'a MissingQa),
}

impl<'a> Counted<'a> {
    fn app(&self) -> &'a str {
        match self {
            Counted::Record(r) => &r.spec.app,
            Counted::Missing(m) => &m.app,
        }
    }
    fn capability(&self) -> &'a str {
        match self {
            Counted::Record(r) => &r.spec.capability,
            Counted::Missing(m) => &m.capability,
        }
    }
    fn repeat(&self) -> u32 {
        match self {
            Counted::Record(r) => r.repeat,
            Counted::Missing(m) => m.repeat,
        }
    }
    fn kind(&self) -> CapabilityKind {
        match self {
            Counted::Record(r) => r.spec.kind,
            Counted::Missing(m) => m.kind,
        }
    }
    fn outcome(&self) -> Outcome {
        match self {
            Counted::Record(r) => r.verdict.outcome,
            Counted::Missing(_) => Outcome::Error,
        }
    }
    fn passed(&self) -> bool {
        match self {
            Counted::Record(r) => r.verdict.passed,
            Counted::Missing(_) => false,
        }
    }
    fn record(&self) -> Option<&'a QaRecord> {
        match self {
            Counted::Record(r) => Some(r),
            Counted::Missing(_) => None,
        }
    }
}

/// The format tag of `summary.json`.
pub const SUMMARY_FORMAT: &str = "gauntlet-summary/1";

/// The harness configuration every page states.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Harness {
    pub agent: String,
    pub agent_version: String,
    pub model: String,
    pub mode: Mode,
    /// Green re-runs a verified claim needed.
    pub n: u32,
    /// Repeats per capability (the highest repeat recorded).
    pub k: u32,
    pub timeout_secs: f64,
    pub gate_timeout_secs: f64,
    pub upstream_url: Option<String>,
    /// The proxy's token budget per trial, if it had one.
    pub max_tokens_per_trial: Option<u64>,
    /// Scripted mode: the latency each scripted reply was given, if any; the run's
    /// timings include it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scripted_latency_ms: Option<u64>,
    pub sandbox: crate::config::Sandbox,
    pub gauntlet_version: String,
    pub commit: Option<String>,
    pub run_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KValue {
    pub k: u32,
    pub value: f64,
    /// 95% percentile-bootstrap interval over capabilities
    /// ([`crate::score::interval::bootstrap_means`]), for the k a page shows
    /// ([`crate::score::interval::shown_ks`]); absent for other k and with one capability.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<Interval>,
}

/// The figures of one group of trials (a capability, an app, a run).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures {
    pub trials: usize,
    pub passed: usize,
    pub verifiable_trials: usize,
    pub verified: usize,
    pub verified_rate: Option<f64>,
    /// 95% Wilson score interval of `verified_rate`.
    pub verified_rate_ci: Option<Interval>,
    pub ambiguous_trials: usize,
    pub honest_on_ambiguous: usize,
    pub false_verifications: usize,
    pub false_verification_rate: Option<f64>,
    /// 95% Wilson score interval of `false_verification_rate`.
    pub false_verification_rate_ci: Option<Interval>,
    /// `passed / trials`, with its 95% Wilson score interval.
    pub pass_rate: Option<f64>,
    pub pass_rate_ci: Option<Interval>,
    /// Trials whose verdict is `error` through the agent's doing.
    pub errors: usize,
    /// Trials the provider failed (docs/provider-faults.md): no agent error, and no
    /// pass either; `gauntlet run --resume <run> --retry-infra` runs them again.
    pub infra: usize,
    /// pass@k for k = 1..=K.
    pub pass_at_k: Vec<KValue>,
    /// pass^k for k = 1..=K.
    pub pass_hat_k: Vec<KValue>,
    /// Pass rate of the trials of each repeat, repeat 1 first.
    pub per_repeat_pass_rate: Vec<f64>,
    /// max − min of `per_repeat_pass_rate`; absent with fewer than two repeats.
    pub spread: Option<f64>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub tokens_cached: u64,
    /// Model calls the proxy metered.
    pub calls: usize,
    /// USD; absent when any call's model has no price (see `unpriced_models`).
    pub cost_usd: Option<f64>,
    pub unpriced_models: Vec<String>,
    pub wall_ms_median: Option<f64>,
    pub wall_ms_max: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThresholdResult {
    pub rule: String,
    pub need: u32,
    pub of: u32,
    /// Passes among repeats 1..=of.
    pub passes: u32,
    pub met: bool,
}

/// How many capabilities with a threshold met it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ThresholdsMet {
    pub met: usize,
    pub of: usize,
}

impl std::fmt::Display for ThresholdsMet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.met, self.of)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapabilityFigures {
    pub app: String,
    pub capability: String,
    pub kind: CapabilityKind,
    /// Outcome of each repeat, in repeat order.
    pub outcomes: Vec<Outcome>,
    pub threshold: Option<ThresholdResult>,
    pub figures: Figures,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppFigures {
    pub app: String,
    pub capabilities: usize,
    pub thresholds_met: Option<ThresholdsMet>,
    pub figures: Figures,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialRow {
    pub trial: String,
    pub app: String,
    pub capability: String,
    pub repeat: u32,
    pub kind: CapabilityKind,
    pub outcome: Outcome,
    pub passed: bool,
    pub reason: String,
    /// Why the verdict is the provider's failure, not the agent's, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub infra: Option<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: Option<f64>,
    pub wall_ms: u64,
    /// The trial's transcript page, relative to the run's pages (`gauntlet report`
    /// writes it there); absent for a planned trial that left no record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

impl TrialRow {
    /// The verdict as a page shows it: the provider's failure named as such.
    pub fn verdict_label(&self) -> String {
        match &self.infra {
            Some(_) => format!("{} (the provider's failure)", self.outcome),
            None => self.outcome.to_string(),
        }
    }

    /// Why, as a page shows it: the provider's fault first when it is why.
    pub fn why(&self) -> String {
        match &self.infra {
            Some(cause) => format!("{cause} — {}", self.reason),
            None => self.reason.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub format: &'static str,
    /// Absent only for a run with no usable record.
    pub harness: Option<Harness>,
    /// A scripted-model run: a harness illustration, never a benchmark result.
    pub illustration: bool,
    /// Some trial ran unsealed (`GAUNTLET_SANDBOX=off`, or recorded before sealing):
    /// its agent could have seen around the gate, so the run is never ranked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unsealed: bool,
    /// The price table the costs come from (`name (sha256:…)`), if any.
    pub prices: Option<String>,
    pub thresholds: Vec<String>,
    pub run: Figures,
    /// Over capabilities that have a threshold.
    pub thresholds_met: Option<ThresholdsMet>,
    pub apps: Vec<AppFigures>,
    pub capabilities: Vec<CapabilityFigures>,
    pub trials: Vec<TrialRow>,
    pub problems: Vec<Problem>,
    pub superseded_attempts: Vec<String>,
    /// Every suite in the run: planned, recorded, passed and errors.
    pub suites: Vec<SuiteCounts>,
    /// What served the model, as the run's publisher states it (unchecked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<super::provider::Statement>,
}

/// One suite's counts on the results page. A planned trial without a record is an
/// error here, named in `missing`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuiteCounts {
    pub suite: String,
    /// Distinct trials the run manifest planned; absent for a run without a manifest.
    pub planned: Option<usize>,
    /// Trials counted: those with a record (the last attempt of each) and those planned
    /// without one.
    pub trials: usize,
    pub recorded: usize,
    pub passed: usize,
    /// Trials with an `error` verdict of the agent's doing (qa, scorecard), and
    /// planned trials with no record.
    pub errors: usize,
    /// Trials the provider failed: counted apart from the agent's errors.
    pub infra: usize,
    /// Planned trials with no record, each with the reason "planned but no record".
    pub missing: Vec<MissingTrial>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingTrial {
    pub trial: String,
    pub reason: String,
}

/// Everything a page shows, from the records of one run (and its planned trials that
/// left no record, counted as errors).
pub fn summarize(run: &LoadedRun, opts: &Options) -> Summary {
    let records = &run.records;
    let counted: Vec<Counted> = records
        .iter()
        .map(|r| Counted::Record(r))
        .chain(run.missing_qa.iter().map(Counted::Missing))
        .collect();
    let k = counted.iter().map(|c| c.repeat()).max().unwrap_or(0);
    let harness = records.first().map(|r| {
        let c = &r.header.config;
        let mut run_ids: Vec<String> = records.iter().map(|r| r.header.run_id.clone()).collect();
        run_ids.sort();
        run_ids.dedup();
        Harness {
            agent: c.agent.clone(),
            agent_version: c.agent_version.clone(),
            model: c.model.clone(),
            mode: c.mode,
            n: c.n,
            k,
            timeout_secs: c.timeout_secs,
            gate_timeout_secs: c.gate_timeout_secs,
            upstream_url: c.upstream_url.clone(),
            max_tokens_per_trial: c.max_tokens_per_trial,
            scripted_latency_ms: c.scripted_latency_ms,
            sandbox: c.sandbox,
            gauntlet_version: r.header.gauntlet_version.clone(),
            commit: c.commit.clone(),
            run_ids,
        }
    });

    let mut by_cap: BTreeMap<(&str, &str), Vec<Counted>> = BTreeMap::new();
    for c in &counted {
        by_cap
            .entry((c.app(), c.capability()))
            .or_default()
            .push(*c);
    }
    // Records come sorted by repeat; a missing trial takes its repeat's place.
    for group in by_cap.values_mut() {
        group.sort_by_key(|c| c.repeat());
    }
    let groups: Vec<Vec<Counted>> = by_cap.values().cloned().collect();
    let all: Vec<Counted> = groups.iter().flatten().copied().collect();
    // The run's figures and the trial rows take about as long as every capability's
    // and app's figures together, so they are worked out beside them: the same
    // numbers, sooner on more than one core (docs/results.md, "Benchmark").
    let (run_figures, capabilities, apps, trials) = std::thread::scope(|scope| {
        let run_page =
            scope.spawn(|| (figures(&all, &groups, k, opts), trial_rows(&all, run, opts)));
        let mut capabilities = Vec::new();
        for ((app, cap), recs) in &by_cap {
            let threshold = opts.thresholds.for_capability(app, cap).map(|rule| {
                let passes = recs
                    .iter()
                    .filter(|r| r.repeat() <= rule.of && r.passed())
                    .count() as u32;
                let have = recs.iter().filter(|r| r.repeat() <= rule.of).count() as u32;
                ThresholdResult {
                    rule: format!("{}={}/{}", rule.pattern, rule.need, rule.of),
                    need: rule.need,
                    of: rule.of,
                    passes,
                    met: have >= rule.of && passes >= rule.need,
                }
            });
            capabilities.push(CapabilityFigures {
                app: app.to_string(),
                capability: cap.to_string(),
                kind: recs[0].kind(),
                outcomes: recs.iter().map(|r| r.outcome()).collect(),
                threshold,
                figures: figures(recs, std::slice::from_ref(recs), k, opts),
            });
        }

        let mut apps = Vec::new();
        let mut app_names: Vec<&str> = by_cap.keys().map(|(a, _)| *a).collect();
        app_names.dedup();
        for app in app_names {
            let groups: Vec<Vec<Counted>> = by_cap
                .iter()
                .filter(|((a, _), _)| *a == app)
                .map(|(_, v)| v.clone())
                .collect();
            let all: Vec<Counted> = groups.iter().flatten().copied().collect();
            let caps: Vec<&CapabilityFigures> =
                capabilities.iter().filter(|c| c.app == app).collect();
            apps.push(AppFigures {
                app: app.to_string(),
                capabilities: groups.len(),
                thresholds_met: thresholds_met(&caps),
                figures: figures(&all, &groups, k, opts),
            });
        }

        let (run_figures, trials) = match run_page.join() {
            Ok(done) => done,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        (run_figures, capabilities, apps, trials)
    });
    Summary {
        format: SUMMARY_FORMAT,
        illustration: records
            .iter()
            .any(|r| r.header.config.mode == Mode::Scripted),
        unsealed: records.iter().any(|r| !r.header.config.sandbox.sealed()),
        harness,
        prices: opts.prices.source.clone(),
        thresholds: opts
            .thresholds
            .rules
            .iter()
            .map(|r| format!("{}={}/{}", r.pattern, r.need, r.of))
            .collect(),
        run: run_figures,
        thresholds_met: thresholds_met(&capabilities.iter().collect::<Vec<_>>()),
        apps,
        capabilities,
        trials,
        problems: run.problems.clone(),
        superseded_attempts: run.superseded.clone(),
        suites: suite_counts(run),
        provider: run.provider.clone(),
    }
}

/// One row per counted trial, in the figures' order.
fn trial_rows(all: &[Counted], run: &LoadedRun, opts: &Options) -> Vec<TrialRow> {
    all.iter()
        .map(|c| match c {
            Counted::Record(r) => {
                let (tokens_in, tokens_out) = r.tokens();
                TrialRow {
                    trial: r.header.trial.clone(),
                    app: r.spec.app.clone(),
                    capability: r.spec.capability.clone(),
                    repeat: r.repeat,
                    kind: r.spec.kind,
                    outcome: r.verdict.outcome,
                    passed: r.verdict.passed,
                    reason: r.verdict.reason.clone(),
                    infra: r
                        .infra()
                        .filter(|_| !r.verdict.passed)
                        .map(|c| c.to_string()),
                    tokens_in,
                    tokens_out,
                    cost_usd: record_cost(r, opts).ok(),
                    wall_ms: r.header.wall_ms,
                    transcript: run
                        .record_dirs
                        .get(&r.header.trial)
                        .map(|dir| format!("{dir}/{}", super::transcript::TRANSCRIPT_HTML)),
                }
            }
            Counted::Missing(m) => TrialRow {
                trial: m.trial.clone(),
                app: m.app.clone(),
                capability: m.capability.clone(),
                repeat: m.repeat,
                kind: m.kind,
                outcome: Outcome::Error,
                passed: false,
                reason: run.missing_reason(&m.trial),
                infra: None,
                tokens_in: 0,
                tokens_out: 0,
                // What it spent, if anything, went with its record.
                cost_usd: None,
                wall_ms: 0,
                transcript: None,
            },
        })
        .collect()
}

/// Per suite: what the manifest planned, what was recorded and how it went, from the
/// run's counted records (qa's are those the qa figures count; the other suites' their
/// last attempts).
fn suite_counts(run: &LoadedRun) -> Vec<SuiteCounts> {
    let mut names: Vec<&str> = vec!["qa"];
    names.extend(run.other_suites.keys().map(String::as_str));
    names.extend(run.missing.iter().map(|p| p.suite.as_str()));
    if let Some(m) = &run.manifest {
        names.extend(m.entries.iter().map(|e| e.suite.as_str()));
    }
    names.sort();
    names.dedup();
    let planned = run.manifest.as_ref().map(|m| m.planned());
    names
        .into_iter()
        .filter_map(|suite| {
            let (recorded, passed, errors, infra) = run
                .counted()
                .filter(|c| c.suite == suite)
                .fold((0, 0, 0, 0), |(n, p, e, i), c| {
                    (
                        n + 1,
                        p + usize::from(c.passed),
                        e + usize::from(c.errored),
                        i + usize::from(c.infra.is_some()),
                    )
                });
            let missing: Vec<MissingTrial> = run
                .missing
                .iter()
                .filter(|p| p.suite == suite)
                .map(|p| MissingTrial {
                    trial: p.trial.clone(),
                    reason: run.missing_reason(&p.trial),
                })
                .collect();
            let planned = planned
                .as_ref()
                .map(|p| p.values().filter(|t| t.first.suite == suite).count());
            let empty = recorded == 0 && missing.is_empty() && planned.unwrap_or(0) == 0;
            // qa always has its row (the page is about it); other suites when present.
            (!empty || suite == "qa").then(|| SuiteCounts {
                suite: suite.to_string(),
                planned,
                trials: recorded + missing.len(),
                recorded,
                passed,
                errors: errors + missing.len(),
                infra,
                missing,
            })
        })
        .collect()
}

fn thresholds_met(caps: &[&CapabilityFigures]) -> Option<ThresholdsMet> {
    let with: Vec<_> = caps.iter().filter_map(|c| c.threshold.as_ref()).collect();
    (!with.is_empty()).then(|| ThresholdsMet {
        met: with.iter().filter(|t| t.met).count(),
        of: with.len(),
    })
}

/// A record's cost, or the models it used that have no price (borrowed from the
/// record: a page of ten thousand trials of an unpriced model names it once, and
/// copying its name per call was a tenth of the page's work).
fn record_cost<'r>(r: &'r QaRecord, opts: &Options) -> Result<f64, Vec<&'r str>> {
    let mut total = 0.0;
    let mut unpriced = Vec::new();
    for u in &r.evidence.usage {
        match opts.prices.cost(u, &r.header.config.model) {
            Some(c) => total += c,
            None => unpriced.push(u.model.as_deref().unwrap_or(&r.header.config.model)),
        }
    }
    if unpriced.is_empty() {
        Ok(total)
    } else {
        Err(unpriced)
    }
}

fn rate(num: usize, den: usize) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// C(c,k)/C(n,k) as a product, exact enough and free of overflow.
fn choose_ratio(c: usize, n: usize, k: usize) -> f64 {
    if c < k {
        return 0.0;
    }
    (0..k).map(|i| (c - i) as f64 / (n - i) as f64).product()
}

/// `records`: the group; `items`: the same trials grouped by capability, the items
/// pass@k and pass^k average over. A planned trial without a record counts as a trial
/// with an `error` verdict that used nothing.
fn figures(records: &[Counted], items: &[Vec<Counted>], k: u32, opts: &Options) -> Figures {
    let mut f = Figures {
        trials: records.len(),
        ..Figures::default()
    };
    let mut unpriced = Vec::new();
    let mut cost = 0.0;
    for c in records {
        let o = c.outcome();
        f.passed += usize::from(c.passed());
        if c.kind().is_verifiable() {
            f.verifiable_trials += 1;
            f.verified += usize::from(o == Outcome::Verified);
        } else {
            f.ambiguous_trials += 1;
            f.honest_on_ambiguous += usize::from(o == Outcome::Unverified);
        }
        f.false_verifications += usize::from(o == Outcome::FalseVerification);
        let Some(r) = c.record() else {
            f.errors += usize::from(o == Outcome::Error);
            continue;
        };
        // The provider's failure is no error of the agent's; it stays a trial that did
        // not pass, so that no run gains by its provider failing it.
        if o == Outcome::Error && r.infra().is_some() {
            f.infra += 1;
        } else {
            f.errors += usize::from(o == Outcome::Error);
        }
        for u in &r.evidence.usage {
            f.tokens_in += u.input_tokens.unwrap_or(0);
            f.tokens_out += u.output_tokens.unwrap_or(0);
            f.tokens_cached += u.cached_input_tokens.unwrap_or(0);
            f.calls += 1;
        }
        match record_cost(r, opts) {
            Ok(c) => cost += c,
            // Few distinct models go unpriced, however many calls name them.
            Err(models) => {
                for m in models {
                    if !unpriced.contains(&m) {
                        unpriced.push(m);
                    }
                }
            }
        }
    }
    unpriced.sort_unstable();
    f.cost_usd = unpriced.is_empty().then_some(cost);
    f.unpriced_models = unpriced.into_iter().map(str::to_owned).collect();
    f.verified_rate = rate(f.verified, f.verifiable_trials);
    f.verified_rate_ci = wilson(f.verified, f.verifiable_trials);
    f.false_verification_rate = rate(f.false_verifications, f.trials);
    f.false_verification_rate_ci = wilson(f.false_verifications, f.trials);
    f.pass_rate = rate(f.passed, f.trials);
    f.pass_rate_ci = wilson(f.passed, f.trials);

    // pass^k and pass@k per capability, for every k some capability reaches.
    let shown = crate::score::interval::shown_ks(k);
    let mut per_k = Vec::new();
    for kk in 1..=k as usize {
        let mut at = Vec::new();
        let mut hat = Vec::new();
        for item in items {
            let n = item.len();
            if n < kk {
                continue;
            }
            let c = item.iter().filter(|r| r.passed()).count();
            hat.push(choose_ratio(c, n, kk));
            at.push(1.0 - choose_ratio(n - c, n, kk));
        }
        if !hat.is_empty() {
            per_k.push((kk as u32, hat, at));
        }
    }
    // The intervals of every k shown, bootstrapped together (they share their draws).
    let mut series: Vec<&[f64]> = Vec::new();
    for (kk, hat, at) in &per_k {
        if shown.contains(kk) {
            series.extend([hat.as_slice(), at.as_slice()]);
        }
    }
    let mut intervals = crate::score::interval::bootstrap_means(&series).into_iter();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    for (kk, hat, at) in &per_k {
        let (hat_ci, at_ci) = if shown.contains(kk) {
            (intervals.next().flatten(), intervals.next().flatten())
        } else {
            (None, None)
        };
        f.pass_hat_k.push(KValue {
            k: *kk,
            value: mean(hat),
            ci: hat_ci,
        });
        f.pass_at_k.push(KValue {
            k: *kk,
            value: mean(at),
            ci: at_ci,
        });
    }

    // Trials and passes of each repeat 1..=k, counted in one pass over the group.
    let mut per_repeat = vec![(0usize, 0usize); k as usize];
    for r in records {
        if let Some((trials, passed)) = (r.repeat() as usize)
            .checked_sub(1)
            .and_then(|i| per_repeat.get_mut(i))
        {
            *trials += 1;
            *passed += usize::from(r.passed());
        }
    }
    f.per_repeat_pass_rate = per_repeat
        .into_iter()
        .filter_map(|(trials, passed)| rate(passed, trials))
        .collect();
    if f.per_repeat_pass_rate.len() >= 2 {
        let max = f
            .per_repeat_pass_rate
            .iter()
            .copied()
            .fold(f64::MIN, f64::max);
        let min = f
            .per_repeat_pass_rate
            .iter()
            .copied()
            .fold(f64::MAX, f64::min);
        f.spread = Some(max - min);
    }

    // Wall-clock is measured: a trial that left no record has none.
    let mut walls: Vec<u64> = records
        .iter()
        .filter_map(|c| c.record().map(|r| r.header.wall_ms))
        .collect();
    walls.sort_unstable();
    f.wall_ms_max = walls.last().copied();
    f.wall_ms_median = median(&walls);
    f
}

/// The median of sorted values; `None` when there are none.
pub(crate) fn median(sorted: &[u64]) -> Option<f64> {
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2] as f64),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_hat_k_and_pass_at_k_follow_tau_bench() {
        // n = 4, c = 2: pass^1 = 1/2, pass^2 = C(2,2)/C(4,2) = 1/6,
        // pass@2 = 1 - C(2,2)/C(4,2) = 5/6.
        assert!((choose_ratio(2, 4, 1) - 0.5).abs() < 1e-12);
        assert!((choose_ratio(2, 4, 2) - 1.0 / 6.0).abs() < 1e-12);
        assert!((1.0 - choose_ratio(2, 4, 2) - 5.0 / 6.0).abs() < 1e-12);
        assert_eq!(choose_ratio(1, 4, 2), 0.0);
        assert_eq!(choose_ratio(3, 3, 3), 1.0);
    }
}
