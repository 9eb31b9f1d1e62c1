use std::collections::BTreeMap;

use super::changes::{group_changes, interval_points, points, rate_deltas, Change};
use super::facts::TrialFacts;
use crate::score::interval::Interval;
use crate::spec::CapabilityKind;

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
    let (changes, regressed_) = regressed(&run(40, 1, |_| 1), &run(40, 1, |g| u32::from(g != 7)));
    assert_eq!(changes.iter().filter(|c| **c == Change::Broken).count(), 1);
    assert!(regressed_);
    // A group that was already flaky and stays flaky at a lower rate is weakened, not
    // broken.
    let (changes, regressed_) = regressed(&run(1, 4, |_| 2), &run(1, 4, |_| 0));
    assert_eq!(changes, vec![Change::Weakened]);
    assert!(!regressed_);
}
