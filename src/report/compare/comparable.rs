//! Whether two runs measure the same thing (the same data, mode and N), and which of
//! their settings differ: runs of different subjects are refused before anything is
//! counted.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::report::load::LoadedRun;

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

/// A setting that differs between the runs (what the comparison is usually about:
/// another agent, model or commit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    pub setting: String,
    pub baseline: String,
    pub candidate: String,
}

/// Settings under which verdicts do not mean the same: a scripted run against a real
/// one, another N for a verified claim.
pub(super) fn incomparable_settings(b: &LoadedRun, c: &LoadedRun) -> Option<String> {
    let first = |run: &LoadedRun| -> BTreeMap<String, crate::record::RecordConfig> {
        let mut m = BTreeMap::new();
        for h in run.headers() {
            m.entry(h.suite.as_str().to_owned())
                .or_insert_with(|| h.config.clone());
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
        let figures = crate::spec::Suite::parse(suite).map(crate::record::any::figures);
        for setting in figures.map_or(&[][..], |f| f.verdict_settings) {
            let (vb, vc) = ((setting.value)(xb), (setting.value)(xc));
            if vb != vc {
                return Some(format!(
                    "{suite}: {} is {vb} in the baseline and {vc} in the candidate: its verdicts do not mean the same",
                    setting.name
                ));
            }
        }
    }
    None
}

/// What a run's trials were made from: (what, digests), e.g. (``app `api-ledger` ``,
/// ``content_hash `…` ``); refused when one run holds two versions of one thing.
pub(super) fn subjects(run: &LoadedRun, side: Side) -> Result<BTreeMap<String, String>, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut put = |what: String, hash: String| match out.get(&what) {
        Some(h) if *h != hash => Err(format!(
            "the {} holds two versions of {what}: {h} and {hash}",
            side.as_str()
        )),
        Some(_) => Ok(()),
        None => {
            out.insert(what, hash);
            Ok(())
        }
    };
    for r in run.counted() {
        for (what, hash) in r.subjects() {
            put(what, hash)?;
        }
    }
    Ok(out)
}

pub(super) fn subject_difference(
    b: &BTreeMap<String, String>,
    c: &BTreeMap<String, String>,
) -> Option<String> {
    b.iter().find_map(|(what, hb)| {
        let hc = c.get(what)?;
        (hb != hc).then(|| {
            format!("{what} is not the same data: {hb} in the baseline, {hc} in the candidate")
        })
    })
}

/// The settings that differ, per suite: the harness config of each suite's first
/// record, field by field, and the gauntlet version.
pub(super) fn settings(b: &LoadedRun, c: &LoadedRun) -> Vec<Difference> {
    let configs = |run: &LoadedRun| {
        let mut m: BTreeMap<String, (String, serde_json::Value)> = BTreeMap::new();
        for h in run.headers() {
            m.entry(h.suite.as_str().to_owned()).or_insert_with(|| {
                (
                    h.gauntlet_version.clone(),
                    serde_json::to_value(&h.config).unwrap_or_default(),
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
