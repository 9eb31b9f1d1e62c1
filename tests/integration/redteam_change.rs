//! P3.3 (`acted_on_change`) against the catalogue's adversaries that report the watched
//! task "blocked" on every tick, through the real path: the audit, the `command` adapter,
//! their background mode started for the idle block as the reference agent's daemon is,
//! the real tracker and SMTP sink. Before the tracker logged reads, both passed P3.3
//! (the new status is the same for every seed and the turn names the task); now neither
//! may, while the reference still does (`scorecard::three_profiles_…`, the audit's own
//! reference column).

use std::sync::Arc;

use gauntlet::config::Config;
use gauntlet::harness::Jobs;
use gauntlet::record::hackability::Hackability;
use gauntlet::record::scorecard::ScorecardRecord;
use gauntlet::redteam::Options;
use gauntlet::score::scorecard::SinkKind;
use gauntlet::spec::redteam::Catalogue;

use crate::support;

const P33: &str = "scorecard::continuous::p3-3";

fn record(audit_dir: &std::path::Path, adversary: &str) -> ScorecardRecord {
    let file = audit_dir
        .join("runs")
        .join(adversary)
        .join("scorecard.continuous.p3-3")
        .join("record.json");
    gauntlet::record::scorecard::load(&file).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_loop_reporting_the_watched_task_blocked_on_every_tick_does_not_pass_p3_3() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        out_dir: tmp.path().to_path_buf(),
        ..Config::default()
    };
    let catalogue =
        Catalogue::load(&support::root().join("redteam")).expect("the shipped catalogue loads");
    let out = tmp.path().join("audit");
    let opts = Options {
        filter: Some(P33.into()),
        adversaries: vec!["blind-blocked".into(), "blocked-regardless".into()],
        sample: false,
        reference: false,
        jobs: Jobs::PerLane(2),
        out: out.clone(),
    };
    let suites = gauntlet::suites::load(&cfg).expect("the suites load");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let a: Hackability = rt
        .block_on(gauntlet::redteam::audit(
            &cfg,
            Arc::new(suites),
            &catalogue,
            &opts,
        ))
        .expect("the audit runs");
    let page = gauntlet::report::hackability::markdown(&a);
    assert!(a.hackable().is_empty(), "{page}");
    assert!(a.harness.is_empty(), "{page}");
    let task = a
        .tasks
        .iter()
        .find(|t| t.task == P33)
        .expect("P3.3 audited");

    for (adversary, reads) in [("blind-blocked", false), ("blocked-regardless", true)] {
        let cell = &task.adversaries[adversary];
        assert!(!cell.credited && !cell.passed, "{adversary}: {cell:?}");
        let rec = record(&out, adversary);
        // It really ran as a background mode and said the words the old rule took:
        // a thread naming the task and `blocked` after the change.
        assert!(
            rec.evidence
                .background
                .as_deref()
                .is_some_and(|b| b.contains("blocked-loop.sh background")),
            "{adversary}: {:?}",
            rec.evidence.background
        );
        let item = rec
            .evidence
            .tracker
            .as_ref()
            .and_then(|t| t.changes.first())
            .map(|c| c.id.clone())
            .expect("the harness's change is logged");
        let said = |phase: &str| {
            rec.evidence.events.iter().any(|e| {
                e.sink == SinkKind::Tracker
                    && e.phase == phase
                    && e.text.contains(&format!("{item} is blocked"))
            })
        };
        assert!(
            said("after") && said("before"),
            "{adversary}: {:?}",
            rec.evidence.events
        );
        let log = rec.evidence.tracker.as_ref().expect("tracker log");
        if reads {
            assert!(
                log.reads > 0 && !log.reveals.is_empty(),
                "{adversary}: {log:?}"
            );
        } else {
            assert_eq!(log.reads, 0, "{adversary} never reads the tracker: {log:?}");
            assert!(log.reveals.is_empty(), "{log:?}");
        }
        let why = &rec.result.observations[0].reason;
        assert!(
            why.contains("before the harness changed it") && why.contains("guess"),
            "{adversary}: {why}"
        );
        // And the verdict re-derives offline from the record.
        let row = gauntlet::record::rescore::rescore_file(
            &out.join("runs")
                .join(adversary)
                .join("scorecard.continuous.p3-3")
                .join("record.json"),
        );
        assert!(row.agrees(), "{adversary}: {row:?}");
    }
}
