//! Evidence nobody can rewrite unnoticed: a real `gauntlet run` writes its manifest and
//! prints its digest; then records are deleted, forged, altered and consistently
//! rewritten, and `gauntlet rescore` (the real binary) and the results page say so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use gauntlet::record::merge::copy_tree;
use gauntlet::record::QaRecord;
use gauntlet::score::Outcome;

use crate::support::*;

const R1: &str = "qa.api-ledger.balance.r1";
const R2: &str = "qa.api-ledger.balance.r2";

/// A real run, made once: `gauntlet run` over two repeats of `api-ledger::balance` with
/// the reference agent and the scripted model. (run directory, digest it printed).
fn pristine() -> &'static (PathBuf, String) {
    static RUN: OnceLock<(PathBuf, String)> = OnceLock::new();
    RUN.get_or_init(|| {
        let out = tempfile::tempdir().expect("tempdir").keep();
        let run = Command::new(crate::support::bin("gauntlet"))
            .args(["run", "--filter", "qa::api-ledger::balance", "--jobs", "2"])
            .env_remove("CARGO")
            .env_remove("GAUNTLET_CONFIG")
            .env("GAUNTLET_OUT", &out)
            .env("GAUNTLET_AGENT", "reference")
            .env("GAUNTLET_MODE", "scripted")
            .env("GAUNTLET_REPEATS", "2")
            .env("GAUNTLET_N", "2")
            .output()
            .expect("gauntlet runs");
        let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
        assert_eq!(
            run.status.code(),
            Some(0),
            "{stdout}\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let digest = stdout
            .split("run digest: ")
            .nth(1)
            .and_then(|rest| rest.split(';').next())
            .expect("the run's summary line carries its digest")
            .to_string();
        assert!(gauntlet::record::digest::is_digest(&digest), "{digest}");
        // Every trial's line carries its record's hash.
        assert_eq!(
            stdout.matches(" record_sha256=sha256:").count(),
            2,
            "{stdout}"
        );
        let dirs: Vec<PathBuf> = std::fs::read_dir(&out)
            .expect("out")
            .map(|e| e.expect("entry").path())
            .collect();
        assert_eq!(dirs.len(), 1, "one run directory: {dirs:?}");
        (dirs[0].clone(), digest)
    })
}

/// A private copy of the pristine run to tamper with.
fn copy_of_run() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = tmp.path().join("run");
    copy_tree(&pristine().0, &run).expect("copy");
    (tmp, run)
}

fn rescore(run: &Path, digest: Option<&str>) -> (Option<i32>, String) {
    let mut cmd = Command::new(crate::support::bin("gauntlet"));
    cmd.arg("rescore").arg(run);
    if let Some(d) = digest {
        cmd.args(["--digest", d]);
    }
    let Output { status, stdout, .. } = cmd.output().expect("gauntlet rescore runs");
    (status.code(), String::from_utf8_lossy(&stdout).into_owned())
}

/// Replace a file the way a rewrite would (records are never written in place).
fn rewrite(file: &Path, bytes: &[u8]) {
    std::fs::remove_file(file).expect("rm");
    std::fs::write(file, bytes).expect("write");
}

#[test]
fn a_planned_run_rescores_against_its_manifest_and_its_printed_digest() {
    let (run, digest) = pristine();
    let manifest = std::fs::read_to_string(run.join("manifest.jsonl")).expect("manifest");
    let lines: Vec<serde_json::Value> = manifest
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    let (finished, planned): (Vec<_>, Vec<_>) =
        lines.iter().partition(|v| v.get("finished").is_some());
    assert_eq!(planned.len(), 2, "{manifest}");
    for v in planned {
        assert_eq!(v["suite"], "qa");
        assert!(v["pid"].as_u64().is_some() && v["planned_at"].is_string());
        assert_eq!(v["kind"], "feature");
    }
    // Each trial's end: its record's directory and hash, as rescore hashes it.
    assert_eq!(finished.len(), 2, "{manifest}");
    for v in finished {
        let dir = v["finished"]["dir"].as_str().expect("dir");
        let bytes = std::fs::read(run.join(dir).join("record.json")).expect("record");
        assert_eq!(
            v["finished"]["record_sha256"],
            gauntlet::hash::sha256(&bytes)
        );
    }
    let (code, out) = rescore(run, Some(digest));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("manifest: 2 planned trials"), "{out}");
    assert!(out.contains(&format!("run digest: {digest}")), "{out}");
    assert!(out.contains("run digest matches --digest"), "{out}");
    // Every raw file of both trials was verified: the prompt the agent was given, agent
    // streams, every gate run's, and the app's logs.
    let rec: QaRecord = gauntlet::record::load(&run.join(R1).join("record.json")).expect("record");
    let gate = rec.evidence.gate.as_ref().expect("a gate ran");
    // N = 2 app runs, the mutant, and three of balance's four independent mutants.
    let drawn = gate.specificity.as_ref().expect("specificity").drawn.len();
    assert_eq!(drawn, 3);
    assert_eq!(gate.runs.len(), 3 + drawn);
    // The app's logs of the agent's session and of each gate run's target, too.
    assert_eq!(rec.evidence.world_logs.len(), 2 * (1 + gate.runs.len()));
    assert!(rec.evidence.prompt.is_some());
    // ... and what the proxy relayed.
    assert!(rec.evidence.calls.is_some());
    // The prompt, the agent's streams, the calls, the gate runs' streams, the app's logs
    // and the independence matrix the gate drew from.
    let per_trial = 1 + 2 + 1 + 2 * gate.runs.len() + rec.evidence.world_logs.len() + 1;
    assert!(
        out.contains(&format!("{} raw files verified", 2 * per_trial)),
        "{out}"
    );
}

#[test]
fn a_deleted_record_is_named_and_counted_as_an_error_on_the_page() {
    let (_tmp, run) = copy_of_run();
    std::fs::remove_file(run.join(R2).join("record.json")).expect("rm");
    let (code, out) = rescore(&run, None);
    assert_eq!(code, Some(1), "{out}");
    // The manifest says it finished: a removed result, never a trial to run again.
    let removed =
        format!("REMOVED: qa::api-ledger::balance::r2: `{R2}` held its finished record (sha256:");
    assert!(out.contains(&removed), "{out}");
    assert!(
        out.contains(
            "and holds none now: a finished record was deleted or rewritten after its trial ended"
        ),
        "{out}"
    );
    assert!(!out.contains("INTERRUPTED"), "{out}");

    // The page counts it as an error, never drops it.
    let loaded = gauntlet::report::load_run(&run).expect("loads");
    let pages = gauntlet::report::render(&loaded, &gauntlet::report::Options::default());
    let s = &pages.summary;
    let qa = s
        .suites
        .iter()
        .find(|c| c.suite == "qa")
        .expect("qa counts");
    assert_eq!((qa.planned, qa.trials, qa.recorded), (Some(2), 2, 1));
    assert_eq!(qa.errors, 1);
    assert_eq!(qa.missing.len(), 1);
    assert_eq!(qa.missing[0].trial, "qa::api-ledger::balance::r2");
    let interrupted = format!("removed: {removed}");
    assert!(
        qa.missing[0].reason.starts_with(&interrupted),
        "{}",
        qa.missing[0].reason
    );
    assert_eq!(s.run.trials, 2);
    assert_eq!(s.run.errors, 1);
    assert_eq!(
        s.run.verifiable_trials, 2,
        "it still counts against the verified rate"
    );
    let row = s
        .trials
        .iter()
        .find(|t| t.trial == "qa::api-ledger::balance::r2")
        .expect("a row for the missing trial");
    assert_eq!((row.outcome, row.passed), (Outcome::Error, false));
    assert!(row.reason.starts_with(&interrupted), "{}", row.reason);
    assert!(
        pages.markdown.contains("## Per suite"),
        "{}",
        pages.markdown
    );
    assert!(pages
        .markdown
        .contains(&format!("qa::api-ledger::balance::r2 ({interrupted}")));
    assert!(pages.html.contains("held its finished record"));
    // And `gauntlet report` exits 1, naming it.
    let report = Command::new(crate::support::bin("gauntlet"))
        .arg("report")
        .arg(&run)
        .output()
        .expect("gauntlet report runs");
    assert_eq!(report.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&report.stderr).contains(&interrupted));
}

#[test]
fn a_trial_that_never_started_is_named_as_missing() {
    let (_tmp, run) = copy_of_run();
    // No directory at all, and so no end in the manifest: planned, never started.
    unfinish(&run, R2);
    let (code, out) = rescore(&run, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("MISSING: qa::api-ledger::balance::r2 (qa): planned but no record"),
        "{out}"
    );
    assert!(!out.contains("INTERRUPTED"), "{out}");
    let loaded = gauntlet::report::load_run(&run).expect("loads");
    let pages = gauntlet::report::render(&loaded, &gauntlet::report::Options::default());
    assert!(pages
        .markdown
        .contains("qa::api-ledger::balance::r2 (planned but no record)"));
    assert!(pages.html.contains("planned but no record"));
}

#[test]
fn a_record_nobody_planned_is_named() {
    // A whole, self-consistent trial from elsewhere: only the manifest can tell.
    let other = tempfile::tempdir().expect("tempdir");
    let cfg = config(fixture_agent("claims-ambiguous.sh"), other.path());
    let (_, foreign) = run_trial(&ledger(), "prompt-under-load", &cfg);
    let (_tmp, run) = copy_of_run();
    copy_tree(&foreign, &run.join("qa.api-ledger.prompt-under-load")).expect("plant");
    let (code, out) = rescore(&run, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "UNPLANNED: qa::api-ledger::prompt-under-load (qa.api-ledger.prompt-under-load): a record nobody planned"
        ),
        "{out}"
    );
    assert!(
        !out.contains("DISAGREES"),
        "the planted record is consistent: {out}"
    );

    // A forged extra attempt of a planned trial (a retry nobody ran) is named too.
    let (_tmp2, run) = copy_of_run();
    copy_tree(&run.join(R1), &run.join(format!("{R1}.2"))).expect("forge");
    let (code, out) = rescore(&run, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("UNPLANNED: qa::api-ledger::balance::r1"),
        "{out}"
    );
    assert!(out.contains("2 records but 1 attempt(s) planned"), "{out}");

    // A probe's record nobody planned is named by rescore and not counted on the page,
    // like a qa one.
    let elsewhere = other.path().join("probe-run");
    let cfg = config(
        gauntlet::config::AgentChoice::of(gauntlet::config::AgentKind::Reference),
        other.path(),
    );
    run_planned(&cfg, &["scorecard::world::p5-1"], &elsewhere);
    let (_tmp3, run) = copy_of_run();
    copy_tree(
        &elsewhere.join("scorecard.world.p5-1"),
        &run.join("scorecard.world.p5-1"),
    )
    .expect("plant a probe");
    let (code, out) = rescore(&run, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("UNPLANNED: scorecard::world::p5-1"), "{out}");
    let loaded = gauntlet::report::load_run(&run).expect("load");
    assert!(
        loaded.problems.iter().any(|p| p
            .cause
            .contains("`scorecard::world::p5-1` (scorecard) is not in the run manifest")),
        "{:?}",
        loaded.problems
    );
    assert!(
        loaded.other_records.is_empty(),
        "the planted probe is not counted"
    );
}

#[test]
fn one_byte_changed_in_any_raw_file_fails_rescore() {
    let rec: QaRecord =
        gauntlet::record::load(&pristine().0.join(R1).join("record.json")).expect("record");
    let gate = rec.evidence.gate.expect("a gate ran");
    // A gate run's stdout (never parsed for the verdict) and the agent's stderr.
    for raw in [&gate.runs[0].stdout, &rec.evidence.agent.stderr] {
        let (_tmp, run) = copy_of_run();
        let file = run.join(R1).join(&raw.path);
        let mut bytes = std::fs::read(&file).expect("raw file");
        match bytes.first_mut() {
            Some(b) => *b ^= 1,
            None => bytes.push(b'x'),
        }
        rewrite(&file, &bytes);
        let (code, out) = rescore(&run, None);
        assert_eq!(code, Some(1), "{}: {out}", raw.path);
        assert!(
            out.contains("ALTERED") && out.contains(&raw.path),
            "{}: {out}",
            raw.path
        );
        // The page does not count it either.
        let loaded = gauntlet::report::load_run(&run).expect("loads");
        assert_eq!(loaded.records.len(), 1, "{}", raw.path);
        assert!(
            loaded
                .problems
                .iter()
                .any(|p| p.file.starts_with(R1) && p.cause.contains("raw evidence does not match")),
            "{:?}",
            loaded.problems
        );
    }
}

#[test]
fn a_consistent_rewrite_agrees_with_itself_but_not_with_the_printed_digest() {
    let digest = &pristine().1;
    let (_tmp, run) = copy_of_run();
    // Rewrite r2 as a trial whose agent made no claim: new stdout, new hashes, the
    // verdict the new evidence gives. Every hash in the record agrees with its file.
    let dir = run.join(R2);
    let file = dir.join("record.json");
    let mut rec: QaRecord = gauntlet::record::load(&file).expect("record");
    assert_eq!(rec.verdict.outcome, Outcome::Verified);
    let stdout = b"{\"type\":\"final\",\"text\":\"nothing to claim\"}\n";
    rewrite(&dir.join(&rec.evidence.agent.stdout.path), stdout);
    rec.evidence.agent.stdout.bytes = stdout.len() as u64;
    rec.evidence.agent.stdout.bytes_seen = stdout.len() as u64;
    rec.evidence.agent.stdout.sha256 = gauntlet::hash::sha256(stdout);
    rec.verdict = gauntlet::record::rescore::derive_qa_verdict(
        &dir,
        &rec.header.config.agent,
        &rec.spec,
        &rec.evidence,
    )
    .expect("derives");
    assert_eq!(rec.verdict.outcome, Outcome::Error);
    let bytes = gauntlet::record::digest::record_bytes(&rec).expect("json");
    rewrite(&file, &bytes);
    // ... and so is the manifest's line saying which record the trial finished with.
    let manifest = run.join("manifest.jsonl");
    let was = std::fs::read_to_string(&manifest).expect("manifest");
    let old = gauntlet::hash::sha256(
        &std::fs::read(pristine().0.join(R2).join("record.json")).expect("r2"),
    );
    assert!(was.contains(&old));
    rewrite(
        &manifest,
        was.replace(&old, &gauntlet::hash::sha256(&bytes))
            .as_bytes(),
    );

    let (code, out) = rescore(&run, None);
    assert_eq!(code, Some(0), "the rewrite is consistent: {out}");
    assert!(!out.contains(&format!("run digest: {digest}")), "{out}");
    let (code, out) = rescore(&run, Some(digest));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("DIGEST MISMATCH"), "{out}");
}

#[test]
fn a_run_without_a_manifest_still_rescores_and_says_so() {
    // The committed illustration run predates manifests.
    let run = root().join("results/runs/scripted-illustration-k3");
    let (code, out) = rescore(&run, None);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("manifest: none"), "{out}");
    assert!(out.contains("run digest: sha256:"), "{out}");
    let (code, _) = rescore(&run, Some(&format!("sha256:{}", "0".repeat(64))));
    assert_eq!(
        code,
        Some(1),
        "a wrong digest fails even without a manifest"
    );
}

const INVALID: &str = "qa.api-ledger.reject-invalid-amount";
const UNKNOWN: &str = "qa.api-ledger.reject-unknown-id";

/// A real run of two capabilities, made once: `gauntlet run` over
/// `api-ledger::reject-*` (reject-invalid-amount and reject-unknown-id) with the
/// reference agent and the scripted model.
fn two_capabilities() -> &'static PathBuf {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| {
        let out = tempfile::tempdir().expect("tempdir").keep();
        let run = Command::new(crate::support::bin("gauntlet"))
            .args(["run", "--filter", "qa::api-ledger::reject-", "--jobs", "2"])
            .env_remove("CARGO")
            .env_remove("GAUNTLET_CONFIG")
            .env("GAUNTLET_OUT", &out)
            .env("GAUNTLET_AGENT", "reference")
            .env("GAUNTLET_MODE", "scripted")
            .env("GAUNTLET_REPEATS", "1")
            .env("GAUNTLET_N", "2")
            .output()
            .expect("gauntlet runs");
        assert_eq!(
            run.status.code(),
            Some(0),
            "{}\n{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        let dirs: Vec<PathBuf> = std::fs::read_dir(&out)
            .expect("out")
            .map(|e| e.expect("entry").path())
            .collect();
        assert_eq!(dirs.len(), 1, "one run directory: {dirs:?}");
        let run = dirs[0].clone();
        for d in [INVALID, UNKNOWN] {
            assert!(run.join(d).join("record.json").is_file(), "{d}");
        }
        run
    })
}

#[test]
fn a_record_copied_over_another_capabilitys_trial_is_named_against_the_plan() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = tmp.path().join("run");
    copy_tree(two_capabilities(), &run).expect("copy");

    // reject-invalid-amount's record and raw files, copied over reject-unknown-id's
    // trial directory and relabelled as its trial: trial name, directory and the
    // spec's capability agree; the verdict is the one the copied evidence gives under
    // the new label; and the manifest's line names the new record.
    let target = run.join(UNKNOWN);
    let was = std::fs::read(target.join("record.json")).expect("record");
    let genuine: QaRecord = serde_json::from_slice(&was).expect("record");
    std::fs::remove_dir_all(&target).expect("rm");
    copy_tree(&run.join(INVALID), &target).expect("copy trial");
    let file = target.join("record.json");
    let mut rec: QaRecord = gauntlet::record::load(&file).expect("record");
    assert_eq!(rec.spec.capability, "reject-invalid-amount");
    rec.header.trial = genuine.header.trial.clone();
    rec.spec.capability = genuine.spec.capability.clone();
    rec.spec.kind = genuine.spec.kind;
    rec.verdict = gauntlet::record::rescore::derive_qa_verdict(
        &target,
        &rec.header.config.agent,
        &rec.spec,
        &rec.evidence,
    )
    .expect("derives");
    let bytes = gauntlet::record::digest::record_bytes(&rec).expect("json");
    rewrite(&file, &bytes);
    let manifest = run.join("manifest.jsonl");
    let lines = std::fs::read_to_string(&manifest).expect("manifest");
    let old = gauntlet::hash::sha256(&was);
    assert!(lines.contains(&old), "{lines}");
    rewrite(
        &manifest,
        lines
            .replace(&old, &gauntlet::hash::sha256(&bytes))
            .as_bytes(),
    );

    let (code, out) = rescore(&run, None);
    assert_eq!(code, Some(1), "a copied record passed: {out}");
    let named = format!(
        "{UNKNOWN}/record.json: `spec.capability_sha256` is `{}` in the record, but the run planned `{}`",
        rec.spec.capability_sha256, genuine.spec.capability_sha256
    );
    assert!(out.contains(&named), "{out}");
    assert!(out.contains("qa::api-ledger::reject-unknown-id"), "{out}");
    // The run as it was agrees with its plan.
    let (code, pristine) = rescore(two_capabilities(), None);
    assert_eq!(code, Some(0), "{pristine}");
    assert!(
        pristine.contains("plan: every record's spec checked against run.json"),
        "{pristine}"
    );
    // The untouched record still agrees.
    assert!(
        out.lines().any(
            |l| l.starts_with("qa::api-ledger::reject-invalid-amount") && l.ends_with("agrees")
        ),
        "{out}"
    );
}
