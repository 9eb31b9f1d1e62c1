//! Every trial of a run as the comparison counts it: its verdict, what it used, and
//! a planned trial without a counted record as a failed `error` trial, so that a lost
//! record can never improve a comparison.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::report::load::LoadedRun;
use crate::report::options::Options;
use crate::spec::CapabilityKind;

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
    pub(super) kind: Option<CapabilityKind>,
    #[serde(skip)]
    pub(super) suite: String,
    #[serde(skip)]
    pub(super) unpriced: Vec<String>,
}

impl TrialFacts {
    /// A trial without a counted record: a failed `error` trial that used nothing.
    pub(super) fn no_record(
        trial: &str,
        repeat: u32,
        suite: &str,
        kind: Option<CapabilityKind>,
    ) -> TrialFacts {
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
            // A kind nobody recorded counts as verifiable (`Among::Verifiable`): the
            // count that cannot flatter the run.
            kind,
            suite: suite.to_owned(),
            unpriced: Vec::new(),
        }
    }

    /// The candidate's side of a baseline trial it has no counted record of.
    pub(super) fn lost(baseline: &TrialFacts) -> TrialFacts {
        TrialFacts::no_record(
            &baseline.trial,
            baseline.repeat,
            &baseline.suite,
            baseline.kind,
        )
    }

    pub(super) fn has_record(&self) -> bool {
        self.record_sha256.is_some() || self.verdict != NO_RECORD
    }
}

/// The verdict of a trial without a counted record.
const NO_RECORD: &str = "no record";

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
pub(super) fn facts(run: &LoadedRun, opts: &Options) -> BTreeMap<String, TrialFacts> {
    let transcript = |dir: &str| {
        let page = format!("{dir}/{}", crate::report::transcript::TRANSCRIPT_HTML);
        run.dir.join(&page).is_file().then_some(page)
    };
    let sha = |dir: &str| {
        crate::record::digest::file_sha256(&run.dir.join(dir).join(crate::record::RECORD_FILE)).ok()
    };
    let mut out = BTreeMap::new();
    for r in run.counted() {
        let (tokens_in, tokens_out, cost_usd, unpriced) =
            priced(r.usage, &r.header.config.model, opts);
        // An audit is a person's word, not hashed evidence: it may lower a verdict
        // here, never raise one.
        let (verdict, passed, note) = match r.automatic {
            Some((label, auto_passed)) if r.passed && !auto_passed => (
                label.clone(),
                false,
                Some(format!(
                    "its manual audit says `{}`; not followed: a comparison lets an audit lower a verdict, never raise one",
                    r.label
                )),
            ),
            Some((label, _)) => (
                r.label.to_owned(),
                r.passed,
                Some(format!("its manual audit (followed) changed `{label}` to `{}`", r.label)),
            ),
            None => (r.label.to_owned(), r.passed, None),
        };
        out.insert(
            r.trial.to_owned(),
            TrialFacts {
                trial: r.trial.to_owned(),
                repeat: r.repeat,
                verdict,
                passed,
                tokens_in,
                tokens_out,
                cost_usd,
                wall_ms: Some(r.header.wall_ms),
                transcript: transcript(r.dir),
                record_sha256: sha(r.dir),
                note,
                kind: r.kind,
                suite: r.suite.to_owned(),
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
                run.counted()
                    .find(|r| crate::plan::names::group_of(r.trial).0 == group)
                    .and_then(|r| r.kind)
            });
            out.insert(
                trial.to_owned(),
                TrialFacts::no_record(trial, repeat, &planned.first.suite, kind),
            );
        }
    }
    out
}
