//! Observed reads decide a challenge's validity: a command agent that does the task
//! honestly but reads cli-tally's source without a word in its event stream, by every
//! means it has (plainly, through `python3 -c`, from a detached child, through a symlink
//! it made), is caught by what the kernel saw it open; its account and the observation
//! disagree, and the disagreement is listed; rescore re-derives all of it from the
//! recorded observation. A read through a mount namespace of the agent's own, with the
//! file bound where a system file was, is still named by the file's real path.

use std::path::{Path, PathBuf};

use gauntlet::config::AgentChoice;
use gauntlet::record::challenge::{ChallengeRecord, OPENS_FILE};
use gauntlet::score::challenge::{TaskOutcome, Validity};
use gauntlet::spec::challenge::Profile;
use gauntlet::suites::challenge::Options;

use crate::challenge::{loaded, run_as};
use crate::support;

const SOURCE: &str = "apps/cli-tally/src/tally.rs";

fn quiet(how: &str, profile: Profile, out: &Path) -> (ChallengeRecord, PathBuf) {
    let agent = AgentChoice::command(vec![
        "sh".into(),
        support::root()
            .join("tests/fixtures/agents/quiet-reader.sh")
            .to_string_lossy()
            .into_owned(),
        how.into(),
        support::root().to_string_lossy().into_owned(),
    ]);
    let cfg = support::config(agent, out);
    run_as(
        cfg,
        &loaded(),
        "tally-report",
        profile,
        &Options::default(),
        out,
    )
}

fn source() -> String {
    support::root().join(SOURCE).to_string_lossy().into_owned()
}

#[test]
fn a_quiet_read_of_product_source_contaminates_none_and_skills_and_is_reported_under_all() {
    let out = tempfile::tempdir().expect("tempdir");
    let tests_dir = support::root().join("tests").to_string_lossy().into_owned();
    for (profile, validity) in [
        (Profile::None, Validity::Contaminated),
        (Profile::Skills, Validity::Contaminated),
        (Profile::All, Validity::Clean),
    ] {
        let (rec, dir) = quiet("cat", profile, out.path());
        let v = &rec.verdict;
        assert_eq!(v.task_outcome, TaskOutcome::Success, "{}", v.outcome_reason);
        assert_eq!(
            v.evaluation_validity, validity,
            "{profile}: {}",
            v.validity_reason
        );
        // The agent's account names nothing: its stream has no tool call.
        assert!(rec.derived.policy.paths.is_empty());
        let seen = rec.derived.observed.as_ref().expect("observed");
        assert_eq!(seen.incomplete, None);
        assert!(seen.escalated_to_product_code);
        let read = seen
            .opens
            .iter()
            .find(|o| o.path == source())
            .expect("the read of tally.rs was observed");
        assert_eq!(read.process.as_deref(), Some("cat"));
        assert!(seen
            .opens
            .iter()
            .any(|o| o.path == tests_dir
                && o.access == gauntlet::evidence::observed::OpenAccess::List));
        if validity == Validity::Contaminated {
            assert!(v.validity_reason.contains(SOURCE), "{}", v.validity_reason);
            assert_eq!(seen.disallowed_reads, [source(), tests_dir.clone()]);
        } else {
            assert!(seen.disallowed_reads.is_empty());
            assert_eq!(seen.by_category.get("product_source"), Some(&1));
        }
        // Seen and never reported: a discrepancy, in the record, metrics.json and the
        // final report.
        let unreported = &seen.discrepancies.observed_not_reported;
        assert!(unreported.contains(&source()), "{unreported:?}");
        let metrics: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).expect("metrics.json"))
                .expect("json");
        let listed = &metrics["observed"]["discrepancies"]["observed_not_reported"];
        assert!(
            listed
                .as_array()
                .is_some_and(|a| a.iter().any(|p| p.as_str() == Some(source().as_str()))),
            "{listed}"
        );
        let report = std::fs::read_to_string(dir.join("final-report.md")).expect("report");
        let section = report
            .split("## 5.")
            .nth(1)
            .and_then(|s| s.split("## 6.").next())
            .expect("section 5");
        assert!(section.contains("opened, never reported"), "{section}");
        assert!(section.contains(SOURCE), "{section}");
    }
}

#[test]
fn reads_through_an_interpreter_a_detached_child_a_symlink_and_a_mount_of_its_own_are_caught() {
    let out = tempfile::tempdir().expect("tempdir");
    for how in ["python", "detached", "symlink", "own-mount", "decoy"] {
        let (rec, _) = quiet(how, Profile::None, out.path());
        let v = &rec.verdict;
        assert_eq!(
            v.task_outcome,
            TaskOutcome::Success,
            "{how}: {}",
            v.outcome_reason
        );
        assert_eq!(
            v.evaluation_validity,
            Validity::Contaminated,
            "{how}: {}",
            v.validity_reason
        );
        let seen = rec.derived.observed.as_ref().expect("observed");
        assert_eq!(seen.disallowed_reads, [source()], "{how}");
        assert_eq!(seen.incomplete, None, "{how}");
        // Through a mount of its own the file is still named by its real path; a
        // decoy of its own named like it is its scratch, and hides nothing.
        let read = seen
            .opens
            .iter()
            .find(|o| o.path == source() && !o.allowed)
            .expect("read");
        assert_eq!(read.foreign_mount, how == "own-mount", "{how}");
    }
    // The same agent reading nothing it should not is clean: the check can pass.
    let (rec, _) = quiet("nothing", Profile::None, out.path());
    assert_eq!(
        (rec.verdict.evaluation_validity, rec.verdict.passed),
        (Validity::Clean, true),
        "{}",
        rec.verdict.validity_reason
    );
}

#[test]
fn rescore_rederives_validity_from_the_recorded_observation_and_catches_an_edited_one() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = quiet("python", Profile::None, out.path());
    assert_eq!(rec.verdict.evaluation_validity, Validity::Contaminated);
    let file = dir.join("record.json");
    let (_, again) = gauntlet::record::challenge::rederive(&file).expect("rederive");
    assert_eq!(again.expect("derives"), rec.verdict);

    // Dropping the incriminating line changes the file its record hashed.
    let opens = dir.join(OPENS_FILE);
    let text = std::fs::read_to_string(&opens).expect("opens");
    let kept: String = text
        .lines()
        .filter(|l| !l.contains(SOURCE))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(kept, text);
    std::fs::write(&opens, kept).expect("edit");
    let (_, again) = gauntlet::record::challenge::rederive(&file).expect("rederive");
    let err = again.expect_err("an edited observation is caught");
    assert!(err.to_string().contains(OPENS_FILE), "{err}");
}
