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
fn baseline(out: &Path) -> PathBuf {
    let run = out.join("baseline");
    let cfg = support::config(AgentChoice::of(AgentKind::Reference), out);
    support::run_planned(&cfg, &TRIALS, &run);
    gauntlet::report::write_report(&run, &run, &Default::default()).expect("report");
    run
}

fn copy(from: &Path, to: &Path) -> PathBuf {
    gauntlet::record::merge::copy_tree(from, to).expect("copy");
    to.to_path_buf()
}

fn compare(args: &[&Path]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("compare")
        .args(args)
        .output()
        .expect("gauntlet runs")
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

#[test]
fn a_lost_or_forged_trial_is_a_regression_named_in_the_summary_and_a_fix_is_not() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = baseline(tmp.path());
    // The candidate lost the challenge's record and had its qa verdict rewritten: one
    // trial left no record, the other's record no longer follows from its evidence.
    // Neither may count for the candidate.
    let cand = copy(&base, &tmp.path().join("candidate"));
    std::fs::remove_dir_all(cand.join("challenge.ledger-reconcile.none")).expect("remove");
    let qa = cand.join("qa.api-ledger.balance/record.json");
    let mut forged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&qa).expect("record")).expect("json");
    forged["verdict"]["outcome"] = "false_verification".into();
    forged["verdict"]["passed"] = false.into();
    std::fs::write(&qa, forged.to_string()).expect("forge");
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
    assert!(stdout.contains("| no record |") || stdout.contains("(no record)"));
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
    let first: Vec<Vec<u8>> = ["compare.md", "compare.html", "compare.json"]
        .iter()
        .map(|f| std::fs::read(pages.join(f)).expect("page"))
        .collect();
    let again = compare(&[&base, &cand, Path::new("--out"), &pages]);
    assert_eq!(again.stdout, out.stdout);
    for (f, bytes) in ["compare.md", "compare.html", "compare.json"]
        .iter()
        .zip(&first)
    {
        assert_eq!(&std::fs::read(pages.join(f)).expect("page"), bytes, "{f}");
    }
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

    // Pages inside a run would change it: refused.
    let inside = compare(&[&base, &cand, Path::new("--out"), &cand.join("cmp")]);
    assert_eq!(inside.status.code(), Some(2));
    assert!(text(&inside.stderr).contains("which a comparison must not change"));
}

#[test]
fn runs_of_other_data_or_another_plan_are_refused_naming_the_difference() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = baseline(tmp.path());

    // Another version of the app: its content hash differs.
    let other_app = copy(&base, &tmp.path().join("other-app"));
    let rec = other_app.join("qa.api-ledger.balance/record.json");
    let text_of = std::fs::read_to_string(&rec).expect("record");
    let v: serde_json::Value = serde_json::from_str(&text_of).expect("json");
    let hash = v["spec"]["app_content_hash"]
        .as_str()
        .expect("hash")
        .to_owned();
    std::fs::write(&rec, text_of.replace(&hash, "sha256:0000")).expect("edit");
    let out = compare(&[&base, &other_app]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("app `api-ledger` is not the same data")
            && err.contains(&hash)
            && err.contains("sha256:0000"),
        "{err}"
    );

    // Another plan: the candidate never planned the probe.
    let fewer = copy(&base, &tmp.path().join("fewer"));
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
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the baseline planned `scorecard::memory::p1-1`")
            && err.contains("the candidate did not"),
        "{err}"
    );
}
