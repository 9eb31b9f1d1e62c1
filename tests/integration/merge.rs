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
    // Every suite's record says what it was made from, and one run holds one version of
    // each: a challenge record made from another manifest is not this run's.
    use gauntlet::record::any::{load_any, AnyRecord};
    use gauntlet::record::merge::IdentityCheck;
    let file = whole
        .join("challenge.ledger-reconcile.none")
        .join("record.json");
    let rec = load_any(&file).expect("the challenge's record");
    let mut other = rec.clone();
    let AnyRecord::Challenge(c) = &mut other else {
        panic!("{}: not a challenge record", file.display())
    };
    c.provenance.manifest_sha256 = "sha256:changed".into();
    let mut check = IdentityCheck::default();
    check
        .check(&"the run", rec.as_suite())
        .expect("the first record");
    check
        .check(&"the run again", rec.as_suite())
        .expect("the same record");
    let err = check
        .check(&"a copy", other.as_suite())
        .expect_err("another manifest")
        .to_string();
    assert!(
        err.contains("challenge `ledger-reconcile`: manifest_sha256 `sha256:changed` in a copy"),
        "{err}"
    );
}

/// Give a partition the `run.json` a trial process writes: one identity, and where it
/// ran.
fn place(run: &Path, model: &str, partition: &str, archive: &str) {
    use gauntlet::record::identity::{Placement, RunIdentity};
    let id = RunIdentity {
        gauntlet_version: "0.1.0".into(),
        config: serde_json::json!({"model": model, "apps_dir": "apps", "n": 3}),
        specs: [("app:api-ledger".to_string(), "sha256:aa".to_string())].into(),
        harness: [("commit".to_string(), "abc".to_string())].into(),
        placement: Some(Placement {
            host: format!("runner-{partition}"),
            partition: Some(partition.into()),
            archive: Some(archive.into()),
        }),
        hackability: None,
    };
    let text = serde_json::to_string_pretty(&id).expect("ser");
    std::fs::write(run.join("run.json"), text).expect("write run.json");
}

/// Three partitions dealt from one run, each with its `run.json`.
fn three_partitions(tmp: &Path) -> Vec<PathBuf> {
    let whole = tmp.join("whole");
    SyntheticRun::fixed().write(&whole).expect("write");
    let parts: Vec<PathBuf> = (1..=3).map(|i| tmp.join(format!("p{i}"))).collect();
    split(&whole, &parts);
    for (i, p) in parts.iter().enumerate() {
        place(p, "m", &format!("count:{}/3", i + 1), "sha256:archive-a");
    }
    parts
}

#[test]
fn partitions_of_one_archive_merge_and_the_merged_run_keeps_one_identity() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let parts = three_partitions(tmp.path());
    let merged = tmp.path().join("merged");
    let manifest = merge_runs(&parts, &merged).expect("merge");
    assert!(manifest.missing_partitions.is_empty());
    let placed: Vec<_> = manifest
        .inputs
        .iter()
        .map(|i| i.placement.as_ref().and_then(|p| p.partition.clone()))
        .collect();
    assert_eq!(
        placed,
        [
            Some("count:1/3".into()),
            Some("count:2/3".into()),
            Some("count:3/3".into())
        ]
    );
    let id = gauntlet::record::identity::read(&merged)
        .expect("read")
        .expect("the merged run has a run.json");
    assert_eq!(id.config["model"], "m");
    assert_eq!(id.placement, None, "the merged run ran on no one machine");
}

#[test]
fn a_missing_partition_is_named_and_merged_only_when_allowed() {
    use gauntlet::record::merge::{merge_runs_with, MergeOptions};
    let tmp = tempfile::tempdir().expect("tempdir");
    let parts = three_partitions(tmp.path());
    let two = [parts[0].clone(), parts[2].clone()];
    let out = tmp.path().join("out");
    let err = merge_runs(&two, &out).unwrap_err().to_string();
    assert!(
        err.contains("partition count:2/3 of the run is missing"),
        "{err}"
    );
    assert!(!out.exists());
    let allowed = MergeOptions {
        allow_missing_partitions: true,
    };
    let manifest = merge_runs_with(&two, &out, allowed).expect("merge allowed");
    assert_eq!(manifest.missing_partitions, ["count:2/3"]);
    let written = std::fs::read_to_string(out.join("merge.json")).expect("merge.json");
    assert!(written.contains("count:2/3"), "{written}");
}

#[test]
fn partitions_from_other_archives_configs_or_splits_are_refused_naming_the_field() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let parts = three_partitions(tmp.path());

    place(&parts[1], "m", "count:2/3", "sha256:archive-b");
    let err = merge_runs(&parts, &tmp.path().join("o1"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`placement.archive`"), "{err}");
    assert!(
        err.contains("sha256:archive-a") && err.contains("sha256:archive-b"),
        "{err}"
    );

    place(&parts[1], "other-model", "count:2/3", "sha256:archive-a");
    let err = merge_runs(&parts, &tmp.path().join("o2"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`config.model`"), "{err}");
    assert!(err.contains(&parts[1].display().to_string()), "{err}");

    place(&parts[1], "m", "count:1/3", "sha256:archive-a");
    let err = merge_runs(&parts, &tmp.path().join("o3"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("partition `count:1/3` is in both"), "{err}");

    place(&parts[1], "m", "count:2/4", "sha256:archive-a");
    let err = merge_runs(&parts, &tmp.path().join("o4"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("partitions of different splits"), "{err}");

    std::fs::remove_file(parts[1].join("run.json")).expect("rm");
    let err = merge_runs(&parts, &tmp.path().join("o5"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("run.json: missing"), "{err}");
}
