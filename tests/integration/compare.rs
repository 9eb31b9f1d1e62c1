//! `gauntlet compare`: a regression fails the comparison, naming the trial; a fix and an
//! unchanged run do not; runs of other data or another plan are refused; neither run is
//! changed and the pages are the same bytes twice.

use std::path::{Path, PathBuf};
use std::process::Output;

use gauntlet::config::{AgentChoice, AgentKind};

use super::support;

const TRIALS: [&str; 3] = [
    "qa::api-ledger::balance",
    "challenge::ledger-reconcile::none",
    "scorecard::memory::p1-1",
];

/// A real run of one trial of each suite, with its pages written into it (so that the
/// comparison can link to its transcripts).
fn real_run(out: &Path, name: &str) -> PathBuf {
    let run = out.join(name);
    let cfg = support::config(
        AgentChoice::of(AgentKind::Reference),
        &out.join(format!("{name}-work")),
    );
    support::run_planned(&cfg, &TRIALS, &run);
    gauntlet::report::write_report(&run, &run, &Default::default()).expect("report");
    run
}

fn copy(from: &Path, to: &Path) -> PathBuf {
    gauntlet::record::merge::copy_tree(from, to).expect("copy");
    to.to_path_buf()
}

fn compare(args: &[&Path]) -> Output {
    std::process::Command::new(crate::support::bin("gauntlet"))
        .arg("compare")
        .args(args)
        .output()
        .expect("gauntlet runs")
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// Edit a record's JSON in place.
fn edit(record: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(record).expect("record")).expect("json");
    f(&mut v);
    std::fs::write(record, v.to_string()).expect("write");
}

#[test]
fn a_lost_or_forged_trial_is_a_regression_named_in_the_summary_and_a_fix_is_not() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = real_run(tmp.path(), "baseline");
    // The candidate is another real run that lost the challenge's record and had its qa
    // verdict rewritten: one trial left no record, the other's record no longer follows
    // from its evidence. Neither may count for the candidate.
    let other = real_run(tmp.path(), "other");
    let cand = copy(&other, &tmp.path().join("candidate"));
    std::fs::remove_dir_all(cand.join("challenge.ledger-reconcile.none")).expect("remove");
    edit(&cand.join("qa.api-ledger.balance/record.json"), |v| {
        v["verdict"]["outcome"] = "false_verification".into();
        v["verdict"]["passed"] = false.into();
    });
    let before = (support::files_under(&base), support::files_under(&cand));

    let pages = tmp.path().join("pages");
    let out = compare(&[&base, &cand, Path::new("--out"), &pages]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("**Regression.**"), "{stdout}");
    for group in [
        "qa::api-ledger::balance",
        "challenge::ledger-reconcile::none",
    ] {
        assert!(
            stdout.contains(&format!(
                "`{group}` passed in every baseline repeat (1/1) and in no candidate repeat (0/1)"
            )),
            "{group}: {stdout}"
        );
    }
    assert!(
        stdout
            .contains("2 trials with a counted record in the baseline have none in the candidate"),
        "{stdout}"
    );
    assert!(!stdout.contains("the candidate holds"), "{stdout}");
    // The probe is unchanged and says so on the page, not in the summary's changes.
    assert!(!stdout.contains("| scorecard::memory::p1-1 |"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(pages.join("compare.json")).expect("json"))
            .expect("compare.json parses");
    assert_eq!(json["format"], "gauntlet-compare/1");
    assert_eq!(json["regression"], true);
    assert!(json["candidate"]["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .any(|p| p["file"] == "qa.api-ledger.balance/record.json"));

    // A projection: the same bytes again, and neither run touched.
    let first = support::files_under(&pages);
    let again = compare(&[&base, &cand, Path::new("--out"), &pages]);
    assert_eq!(again.stdout, out.stdout);
    assert_eq!(support::files_under(&pages), first);
    assert_eq!(
        (support::files_under(&base), support::files_under(&cand)),
        before
    );

    // The page loads clean in a real browser and its transcript links resolve.
    let html = pages.join("compare.html");
    let (dom, console) = support::chromium_load(&html, &tmp.path().join("profile"));
    assert!(console.is_empty(), "{console:#?}");
    let links = support::hrefs(&dom);
    assert!(
        links
            .iter()
            .any(|l| l.ends_with("baseline/qa.api-ledger.balance/transcript.html")),
        "{links:?}"
    );
    for l in &links {
        assert!(pages.join(l).is_file(), "a broken link `{l}`");
    }

    // The other way round it is a fix, and passes; a run against itself changes nothing.
    let fixed = compare(&[&cand, &base]);
    let fixed_out = text(&fixed.stdout);
    assert_eq!(fixed.status.code(), Some(0), "{fixed_out}");
    assert!(
        fixed_out.contains("| qa::api-ledger::balance | fixed |"),
        "{fixed_out}"
    );
    let same = compare(&[&base, &base]);
    let same_out = text(&same.stdout);
    assert_eq!(same.status.code(), Some(0), "{same_out}");
    assert!(
        same_out.contains("0 of 3 trial groups changed"),
        "{same_out}"
    );
    // A copy of the baseline is not a new run, however good it looks.
    let copied = copy(&base, &tmp.path().join("copied"));
    let out = compare(&[&base, &copied]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("the candidate holds 3 records identical to the baseline's"),
        "{}",
        text(&out.stdout)
    );

    // Pages inside a run would change it: refused, however the path is spelled.
    let inside = compare(&[&base, &cand, Path::new("--out"), &cand.join("cmp")]);
    assert_eq!(inside.status.code(), Some(2));
    assert!(text(&inside.stderr).contains("which a comparison must not change"));
    let relative = std::process::Command::new(crate::support::bin("gauntlet"))
        .current_dir(tmp.path())
        .args([
            "compare",
            "baseline",
            "candidate",
            "--out",
            "candidate/new/../new/cmp",
        ])
        .output()
        .expect("gauntlet runs");
    assert_eq!(
        relative.status.code(),
        Some(2),
        "{}",
        text(&relative.stderr)
    );
    assert!(!cand.join("new").exists());
}

#[test]
fn runs_of_other_data_or_settings_are_refused_and_a_candidate_cannot_dodge_the_gate() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = real_run(tmp.path(), "baseline");
    let other = real_run(tmp.path(), "other");

    // Another version of the app: its content hash differs.
    let other_app = copy(&other, &tmp.path().join("other-app"));
    let rec = other_app.join("qa.api-ledger.balance/record.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).expect("record")).expect("json");
    let hash = v["spec"]["app_content_hash"]
        .as_str()
        .expect("hash")
        .to_owned();
    edit(&rec, |v| {
        v["spec"]["app_content_hash"] = "sha256:0000".into()
    });
    let out = compare(&[&base, &other_app]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("app `api-ledger` is not the same data")
            && err.contains(&hash)
            && err.contains("sha256:0000"),
        "{err}"
    );

    // A scripted candidate against a real baseline (or the other way round).
    let real = copy(&other, &tmp.path().join("real"));
    edit(&real.join("qa.api-ledger.balance/record.json"), |v| {
        v["config"]["mode"] = "byok".into();
    });
    let out = compare(&[&real, &base]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("qa: mode `byok` in the baseline, `scripted` in the candidate"),
        "{err}"
    );

    // A candidate that dropped a trial and its line in the manifest has not "planned
    // less": the baseline's trial counts as lost.
    let fewer = copy(&other, &tmp.path().join("fewer"));
    std::fs::remove_dir_all(fewer.join("scorecard.memory.p1-1")).expect("remove");
    let manifest = fewer.join("manifest.jsonl");
    let kept: String = std::fs::read_to_string(&manifest)
        .expect("manifest")
        .lines()
        .filter(|l| !l.contains("scorecard::memory::p1-1"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&manifest, kept).expect("rewrite manifest");
    let out = compare(&[&base, &fewer]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("1 trial with a counted record in the baseline has none in the candidate")
            && stdout.contains("`scorecard::memory::p1-1`"),
        "{stdout}"
    );

    // A candidate made unreadable fails the gate; it is not "incomparable".
    let broken = copy(&other, &tmp.path().join("broken"));
    std::fs::remove_file(broken.join("manifest.jsonl")).expect("remove manifest");
    std::fs::create_dir(broken.join("manifest.jsonl")).expect("a directory in its place");
    let out = compare(&[&base, &broken]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("candidate:"),
        "{}",
        text(&out.stderr)
    );

    // A manual audit in the candidate may lower a verdict (and does), never raise one.
    let audited = copy(&other, &tmp.path().join("audited"));
    use gauntlet::score::challenge::{TaskOutcome, Validity};
    gauntlet::report::challenge::audit(
        &audited.join("challenge.ledger-reconcile.none"),
        TaskOutcome::Failed,
        Validity::Clean,
        "it did not really reconcile",
    )
    .expect("audit");
    let out = compare(&[&base, &audited]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("| challenge::ledger-reconcile::none | broken |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("its manual audit (followed) changed"),
        "{stdout}"
    );
    // An audit copied from another trial's directory is not this trial's.
    let moved = copy(&other, &tmp.path().join("moved"));
    let mut yaml =
        std::fs::read_to_string(audited.join("challenge.ledger-reconcile.none/manual-audit.yaml"))
            .expect("audit file");
    yaml = yaml.replace(
        "challenge::ledger-reconcile::none",
        "challenge::ledger-reconcile::all",
    );
    std::fs::write(
        moved.join("challenge.ledger-reconcile.none/manual-audit.yaml"),
        yaml,
    )
    .expect("plant");
    let out = compare(&[&base, &moved]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}
