//! Runs split by nextest's `--partition` merge into one run whose report equals the
//! unsplit run's; runs of different configs or specs are refused.

use std::path::{Path, PathBuf};

use gauntlet::record::merge::{copy_tree, merge_runs};
use gauntlet::report::synthetic::SyntheticRun;
use gauntlet::report::{self, load_run, Options, Thresholds};

/// Split a run's trial directories as `--partition count:1/2` and `count:2/2` would:
/// nextest deals the tests of a binary, in name order, round-robin over partitions.
fn split(run: &Path, into: &[PathBuf]) {
    let mut dirs: Vec<_> = std::fs::read_dir(run)
        .expect("run dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for p in into {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    for (i, d) in dirs.iter().enumerate() {
        let part = &into[i % into.len()];
        copy_tree(d, &part.join(d.file_name().expect("name"))).expect("copy");
    }
}

fn opts() -> Options {
    Options {
        thresholds: Thresholds::parse_all(&["*=2/3"]).expect("rule"),
        ..Options::default()
    }
}

#[test]
fn two_partitions_merge_into_the_report_of_the_unsplit_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let whole = tmp.path().join("whole");
    SyntheticRun::fixed().write(&whole).expect("write");
    let parts = [tmp.path().join("p1"), tmp.path().join("p2")];
    split(&whole, &parts);

    let merged = tmp.path().join("merged");
    let manifest = merge_runs(&parts, &merged).expect("merge");
    assert_eq!(manifest.inputs.len(), 2);
    assert!(merged.join("merge.json").is_file());

    let a = report::render(&load_run(&whole).expect("whole"), &opts());
    let b = report::render(&load_run(&merged).expect("merged"), &opts());
    assert!(b.summary.problems.is_empty(), "{:?}", b.summary.problems);
    assert_eq!(a.markdown, b.markdown);
    assert_eq!(a.json, b.json);
    assert_eq!(a.html, b.html);

    // Not vacuous: one partition alone reports something else.
    let p1 = report::render(&load_run(&parts[0]).expect("p1"), &opts());
    assert_ne!(p1.json, a.json);
    assert_eq!(
        p1.summary.run.trials + b.summary.run.trials / 2,
        b.summary.run.trials
    );
}

#[test]
fn merge_refuses_runs_with_different_configs_naming_the_field() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    SyntheticRun::fixed().write(&a).expect("a");
    SyntheticRun {
        model: "other-model".into(),
        apps: vec![(
            "api-ledger".into(),
            vec![("other".into(), gauntlet::spec::CapabilityKind::Feature)],
        )],
        ..SyntheticRun::fixed()
    }
    .write(&b)
    .expect("b");
    let out = tmp.path().join("out");
    let err = merge_runs(&[a, b], &out).unwrap_err().to_string();
    assert!(err.contains("config.`model`"), "{err}");
    assert!(
        err.contains("other-model") && err.contains("synthetic-model"),
        "{err}"
    );
    assert!(!out.exists(), "a refused merge leaves nothing behind");
}

#[test]
fn merge_refuses_runs_with_different_specs_naming_the_capability() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let whole = tmp.path().join("whole");
    SyntheticRun::fixed().write(&whole).expect("write");
    let parts = [tmp.path().join("p1"), tmp.path().join("p2")];
    split(&whole, &parts);
    // The corpus changed between partitions: balance's capability hash differs.
    let f = std::fs::read_dir(&parts[1])
        .expect("p2")
        .map(|e| e.expect("entry").path().join("record.json"))
        .find(|p| p.to_string_lossy().contains("balance"))
        .expect("a balance trial in p2");
    let mut rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&f).expect("read")).expect("json");
    rec["spec"]["capability_sha256"] = "sha256:changed".into();
    std::fs::remove_file(&f).expect("rm");
    std::fs::write(&f, serde_json::to_vec(&rec).expect("ser")).expect("write");
    let err = merge_runs(&parts, &tmp.path().join("out"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("spec of `api-ledger::balance`"), "{err}");
    assert!(err.contains("capability_sha256"), "{err}");
}

#[test]
fn merge_refuses_overlapping_inputs_and_an_existing_output() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let whole = tmp.path().join("whole");
    SyntheticRun::fixed().write(&whole).expect("write");
    let err = merge_runs(&[whole.clone(), whole.clone()], &tmp.path().join("out"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is in both") || err.contains("more than one input"),
        "{err}"
    );
    let taken = tmp.path().join("taken");
    std::fs::create_dir(&taken).expect("mkdir");
    std::fs::write(taken.join("x"), b"x").expect("write");
    let err = merge_runs(&[whole], &taken).unwrap_err().to_string();
    assert!(err.contains("not empty"), "{err}");
    assert_eq!(std::fs::read(taken.join("x")).expect("kept"), b"x");
}

/// A run the harness wrote with trials of all three suites (qa, challenge and
/// scorecard, each suite under its own config), through the one plan and the one run
/// loop `gauntlet run` uses, dealt into two partitions as nextest's `--partition` would
/// (each partition its own run directory and manifest), merges into a run whose pages
/// equal the unsplit run's: the merge used to refuse the first challenge record as
/// "not a gauntlet record".
#[test]
fn a_run_holding_qa_challenge_and_scorecard_trials_merges_into_the_unsplit_runs_report() {
    use gauntlet::config::AgentChoice;
    let tmp = tempfile::tempdir().expect("tempdir");
    let whole = tmp.path().join("whole");
    let cfg = crate::support::config(
        AgentChoice::of(gauntlet::config::AgentKind::Reference),
        tmp.path(),
    );
    let wanted = [
        "qa::api-ledger::health",
        "challenge::ledger-reconcile::none",
        "challenge::tally-report::none",
        "scorecard::world::p5-1",
    ];
    crate::support::run_planned(&cfg, &wanted, &whole);
    let parts = [tmp.path().join("p1"), tmp.path().join("p2")];
    split(&whole, &parts);
    // Each partition planned only its own trials.
    let whole_manifest = gauntlet::record::manifest::read(&whole)
        .expect("manifest")
        .expect("present");
    for part in &parts {
        let own: Vec<_> = whole_manifest
            .entries
            .iter()
            .filter(|e| part.join(e.trial.replace("::", ".")).is_dir())
            .cloned()
            .collect();
        assert!(!own.is_empty());
        gauntlet::record::manifest::append(part, &own).expect("partition manifest");
    }
    let merged = tmp.path().join("merged");
    let manifest = merge_runs(&parts, &merged).expect("merge");
    assert_eq!(
        manifest.inputs.iter().map(|i| i.trial_dirs).sum::<usize>(),
        wanted.len()
    );
    let a = report::render(&load_run(&whole).expect("whole"), &opts());
    let b = report::render(&load_run(&merged).expect("merged"), &opts());
    assert!(a.summary.problems.is_empty(), "{:?}", a.summary.problems);
    assert!(b.summary.problems.is_empty(), "{:?}", b.summary.problems);
    assert_eq!(a.markdown, b.markdown);
    assert_eq!(a.json, b.json);
    for suite in ["challenge", "scorecard"] {
        assert!(a.markdown.contains(suite), "{}", a.markdown);
    }
    // Rescore agrees on both, record for record, and with the manifests.
    for run in [&whole, &merged] {
        let r = gauntlet::record::rescore::rescore_path(run).expect("rescore");
        assert_eq!(r.rows.len(), wanted.len());
        assert!(r.ok(), "{}: {:?} {:?}", run.display(), r.rows, r.findings);
    }
}
