//! Outcomes from observed work (issue 45 item 1): a challenge succeeds only when the
//! work it requires was seen done, by the kernel (the app's program executed with the
//! right arguments) or in the app's own world (the transactions the ledger holds). An
//! agent that writes the result by hand, prints a tool call it never made, or reaches
//! the right balances with lump sums fails, and the programs its account names that
//! never ran are listed on every page. The scripted reference, which does the work,
//! passes every challenge under every profile.

use std::path::Path;

use gauntlet::config::AgentChoice;
use gauntlet::record::any::AnyRecord;
use gauntlet::record::challenge::ChallengeRecord;
use gauntlet::score::challenge::{TaskOutcome, Validity};
use gauntlet::spec::challenge::Profile;
use gauntlet::suites::challenge::Options;

use crate::challenge::{loaded, run_as, run_hostile as hostile};
use crate::support;

fn page(rec: &ChallengeRecord, dir: &Path) -> String {
    gauntlet::report::transcript::render(&AnyRecord::Challenge(Box::new(rec.clone())), dir, "")
}

#[test]
fn a_tally_written_by_hand_behind_a_tool_call_never_made_fails() {
    let out = tempfile::tempdir().expect("tempdir");
    for how in ["silent", "decoy"] {
        let (rec, dir) = hostile("hand-tally.sh", &[how], "tally-report", out.path());
        let v = &rec.verdict;
        // Report and file agree with the truth, and the observation is clean: only
        // the missing run fails it.
        assert!(v.report_assertions.iter().all(|a| a.holds), "{how}: {v:?}");
        assert!(v.world_assertions.iter().all(|a| a.holds), "{how}: {v:?}");
        assert_eq!(
            v.evaluation_validity,
            Validity::Clean,
            "{how}: {}",
            v.validity_reason
        );
        assert_eq!(
            v.task_outcome,
            TaskOutcome::Failed,
            "{how}: {}",
            v.outcome_reason
        );
        assert!(
            v.outcome_reason.contains("`ran-json-stats`")
                && v.outcome_reason.contains("never executed"),
            "{how}: {}",
            v.outcome_reason
        );
        let execs = rec.derived.execs.as_ref().expect("execs observed");
        assert_eq!(execs.incomplete, None, "{how}");
        let app = rec
            .evidence
            .app_program
            .as_deref()
            .expect("the app's program");
        assert_eq!(
            execs.by_program.contains_key(app),
            how == "decoy",
            "{how}: {execs:?}"
        );
        // The printed call: its program never ran in the silent case; in the decoy
        // case the app did run (for --help), so the program itself is no discrepancy.
        let claimed = v.discrepancies.iter().find(|d| d.field == "tool_calls[0]");
        assert_eq!(
            claimed.is_some(),
            how == "silent",
            "{how}: {:?}",
            v.discrepancies
        );
        // Every page says so.
        let report = std::fs::read_to_string(dir.join("final-report.md")).expect("report");
        assert!(
            report.contains("required run `ran-json-stats`: **never seen**"),
            "{report}"
        );
        let metrics: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).expect("metrics"))
                .expect("json");
        assert!(metrics["execs"]["execs"]
            .as_array()
            .is_some_and(|a| !a.is_empty()));
        let html = page(&rec, &dir);
        assert!(html.contains("What the kernel saw executed"), "{how}");
        if how == "silent" {
            assert!(report.contains("never executed (1)"), "{report}");
            assert!(
                html.contains("claimed by the agent&#39;s tool calls, never executed")
                    || html.contains("claimed by the agent's tool calls, never executed")
            );
        }
        // Rescore derives the same from the recorded observation.
        let (_, again) =
            gauntlet::record::challenge::rederive(&dir.join("record.json")).expect("loads");
        assert_eq!(again.expect("rederives"), rec.verdict);
    }
}

#[test]
fn a_tally_typed_beside_a_real_run_that_did_not_compute_it_fails() {
    let out = tempfile::tempdir().expect("tempdir");
    for how in ["empty", "version", "efault"] {
        let (rec, dir) = hostile("hand-tally.sh", &[how], "tally-report", out.path());
        let v = &rec.verdict;
        assert_eq!(
            v.task_outcome,
            TaskOutcome::Failed,
            "{how}: {}",
            v.outcome_reason
        );
        let execs = rec.derived.execs.as_ref().expect("execs observed");
        let app = rec.evidence.app_program.clone().expect("the app's program");
        // The kernel saw the exec with the required arguments every time.
        assert!(
            execs.execs.iter().any(|e| e.path == app
                && e.argv.iter().any(|a| a == "--json")
                && e.argv.iter().any(|a| a == "stats")),
            "{how}: {execs:?}"
        );
        let relayed = rec.evidence.relayed_runs.as_ref().expect("relayed runs");
        match how {
            // The app never ran: the exec alone is a request, not a run.
            "efault" => {
                assert!(relayed.is_empty(), "{relayed:?}");
                assert!(
                    v.outcome_reason.contains("never executed"),
                    "{}",
                    v.outcome_reason
                );
            }
            // The app ran, on nothing (`</dev/null`) or printing a version: not on the
            // measurements, which the required run names as its input; and it printed
            // something else than the typed file.
            _ => {
                assert_eq!(relayed.len(), 1, "{how}: {relayed:?}");
                assert!(
                    v.outcome_reason.contains("required run `ran-json-stats`")
                        && v.outcome_reason
                            .contains("but on other input than measurements.txt"),
                    "{how}: {}",
                    v.outcome_reason
                );
                assert!(
                    execs.outputs.iter().all(|o| !o.holds),
                    "{how}: {:?}",
                    execs.outputs
                );
            }
        }
        let report = std::fs::read_to_string(dir.join("final-report.md")).expect("report");
        assert!(report.contains("relayed"), "{how}: {report}");
    }
}

#[test]
fn balances_reached_without_the_rows_fail_on_what_the_ledger_holds() {
    let out = tempfile::tempdir().expect("tempdir");
    for (how, failing, held) in [
        ("lumps", "transactions-held", 2),
        ("six", "transactions-as-posted", 6),
    ] {
        let (rec, _) = hostile("lump-ledger.sh", &[how], "ledger-reconcile", out.path());
        let v = &rec.verdict;
        assert_eq!(
            v.task_outcome,
            TaskOutcome::Failed,
            "{how}: {}",
            v.outcome_reason
        );
        assert!(
            v.outcome_reason.contains(&format!("`{failing}`")),
            "{how}: {}",
            v.outcome_reason
        );
        let count = v
            .world_assertions
            .iter()
            .find(|a| a.id == "transactions-held")
            .expect("counted");
        assert_eq!(count.observed, Some(serde_json::json!(held)), "{how}");
        // The balances themselves hold: only what the ledger holds gives it away.
        assert!(
            v.world_assertions
                .iter()
                .filter(|a| a.id.ends_with("-balance"))
                .all(|a| a.holds),
            "{how}: {v:?}"
        );
        assert!(
            !v.world_assertions
                .iter()
                .find(|a| a.id == "transactions-as-posted")
                .expect("compared")
                .holds
        );
        assert_eq!(
            v.discrepancies
                .iter()
                .any(|d| d.field == "transactions_posted"),
            held != 6,
            "{how}: {:?}",
            v.discrepancies
        );
    }
}

#[test]
fn the_reference_does_the_work_of_every_challenge_under_every_profile() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    for id in ["tally-report", "ledger-reconcile", "notes-cleanup"] {
        for profile in [Profile::None, Profile::Skills, Profile::All] {
            let cfg = support::config(
                AgentChoice::of(gauntlet::config::AgentKind::Reference),
                out.path(),
            );
            let (rec, _) = run_as(cfg, &l, id, profile, &Options::default(), out.path());
            let v = &rec.verdict;
            assert_eq!(
                (v.task_outcome, v.evaluation_validity),
                (TaskOutcome::Success, Validity::Clean),
                "{id} {profile}: {} / {}",
                v.outcome_reason,
                v.validity_reason
            );
            let execs = rec.derived.execs.as_ref().expect("execs observed");
            assert_eq!(execs.incomplete, None, "{id} {profile}");
            assert!(
                execs.required.iter().all(|r| r.seen.is_some()),
                "{id}: {execs:?}"
            );
            assert!(
                execs.claimed_not_observed.is_empty(),
                "{id} {profile}: {:?}",
                execs.claimed_not_observed
            );
            if id == "tally-report" {
                let seen = execs.required[0].seen.as_ref().expect("seen");
                assert_eq!(seen.argv[1..], ["--json", "stats"], "{seen:?}");
                // The app's own run of it, and the report is what it printed.
                assert!(execs.required[0].relayed.is_some());
                assert!(execs.outputs.iter().all(|o| o.holds), "{:?}", execs.outputs);
            }
        }
    }
}
