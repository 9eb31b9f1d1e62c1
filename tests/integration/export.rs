//! `gauntlet export`: a run read back by the tools its formats come from — Inspect AI's
//! own log reader, the vendored CTRF schema, Harbor's ATIF validator — with the same
//! samples, scores and tokens as the run; the same bytes twice; the run untouched.

use std::path::{Path, PathBuf};

use gauntlet::config::{AgentChoice, AgentKind};
use serde_json::Value;

use super::support;

/// The Python that reads the exports (tests/python/setup.sh makes it); `None` outside
/// CI when it is not there, where the test says so and checks what Rust alone can.
fn python() -> Option<PathBuf> {
    let p = std::env::var_os("GAUNTLET_EXPORT_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| support::root().join("target/python-exports/bin/python"));
    if p.is_file() {
        return Some(p);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{}: missing; run tests/python/setup.sh (.ci/run does)",
        p.display()
    );
    eprintln!(
        "note: {} is missing (tests/python/setup.sh); the exports are not read back by Inspect, jsonschema and Harbor here",
        p.display()
    );
    None
}

fn export(run: &Path, format: &str, out: &Path) -> std::process::Output {
    std::process::Command::new(crate::support::bin("gauntlet"))
        .args(["export"])
        .arg(run)
        .args(["--format", format, "--out"])
        .arg(out)
        .output()
        .expect("gauntlet runs")
}

#[test]
fn every_format_reads_back_in_its_own_tool_with_the_runs_samples_scores_and_tokens() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = support::config(AgentChoice::of(AgentKind::Reference), tmp.path());
    cfg.repeats = 2;
    let suites = gauntlet::suites::load(&cfg).expect("suites");
    let names: Vec<String> = gauntlet::suites::plan(&suites, &cfg, None, || None)
        .into_iter()
        .map(|t| t.name)
        .filter(|n| {
            n.starts_with("qa::api-ledger::balance::")
                || n.starts_with("challenge::ledger-reconcile::none")
                || n.starts_with("scorecard::memory::p1-1")
        })
        .collect();
    let wanted: Vec<&str> = names.iter().map(String::as_str).collect();
    let run = tmp.path().join("run");
    support::run_planned(&cfg, &wanted, &run);
    // One planned trial never finished: every format still shows it, as a failure.
    support::unfinish(&run, "qa.api-ledger.balance.r2");
    let before = support::files_under(&run);

    let out = tmp.path().join("exports");
    for format in ["inspect", "ctrf", "atif"] {
        let o = export(&run, format, &out.join(format));
        assert!(
            o.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains("planned but no record"));
    }
    // A projection: the same bytes again, and the run untouched.
    let again = tmp.path().join("again");
    for format in ["inspect", "ctrf", "atif"] {
        assert!(export(&run, format, &again.join(format)).status.success());
    }
    let relative = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        support::files_under(dir)
            .into_iter()
            .map(|(p, b)| (p.strip_prefix(dir).expect("below").to_path_buf(), b))
            .collect()
    };
    assert_eq!(relative(&again), relative(&out));
    assert_eq!(support::files_under(&run), before);
    // Never over an earlier export: its files would read as this run's.
    let over = export(&run, "atif", &out.join("inspect"));
    assert_eq!(over.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&over.stderr).contains("not empty"));
    let inside = export(&run, "ctrf", &run.join("x"));
    assert_eq!(inside.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&inside.stderr).contains("must not change"));

    // What the run holds, from its records.
    let records: Vec<gauntlet::record::any::AnyRecord> = gauntlet::record::find_records(&run)
        .expect("records")
        .iter()
        .map(|f| gauntlet::record::any::load_any(f).expect("record"))
        .collect();
    let qa = records
        .iter()
        .find_map(|r| match r {
            gauntlet::record::any::AnyRecord::Qa(q) => Some(q),
            _ => None,
        })
        .expect("the qa record");
    let (qa_in, qa_out) = qa.tokens();
    assert!(qa_in > 0 && qa_out > 0);

    // ATIF: one trajectory per counted trial, its tokens the proxy's.
    let atif: Vec<_> = support::files_under(&out.join("atif"))
        .into_keys()
        .collect();
    assert_eq!(atif.len(), records.len(), "{atif:?}");
    let t: Value = serde_json::from_slice(
        &std::fs::read(out.join("atif/qa.api-ledger.balance.r1.trajectory.json"))
            .expect("qa trajectory"),
    )
    .expect("json");
    assert_eq!(t["final_metrics"]["total_prompt_tokens"], qa_in);
    assert_eq!(t["final_metrics"]["total_completion_tokens"], qa_out);
    let steps = t["steps"].as_array().expect("steps");
    assert_eq!(steps[0]["source"], "user");
    assert_eq!(steps.last().expect("a step")["source"], "system");
    let agent_steps = steps.iter().filter(|s| s["source"] == "agent").count();
    assert_eq!(
        agent_steps,
        qa.evidence.usage.len(),
        "one step per metered call"
    );
    assert!(steps.iter().any(|s| s["observation"]["results"]
        .as_array()
        .is_some_and(|r| !r.is_empty())));

    // A probe's turns each had their own proxy: every metered call is a step with its
    // own tokens, and they add up to the record's.
    let probe = records
        .iter()
        .find_map(|r| match r {
            gauntlet::record::any::AnyRecord::Scorecard(s) => Some(s),
            _ => None,
        })
        .expect("the probe record");
    let pt: Value = serde_json::from_slice(
        &std::fs::read(out.join("atif/scorecard.memory.p1-1.trajectory.json")).expect("probe"),
    )
    .expect("json");
    let metered: Vec<u64> = pt["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["metrics"]["prompt_tokens"].as_u64())
        .collect();
    assert_eq!(metered.len(), probe.usage.len(), "{pt:#}");
    assert_eq!(
        metered.iter().sum::<u64>(),
        probe
            .usage
            .iter()
            .map(|u| u.input_tokens.unwrap_or(0))
            .sum::<u64>()
    );
    assert_eq!(
        pt["steps"]
            .as_array()
            .map(|s| s.iter().filter(|s| s["source"] == "user").count()),
        Some(probe.processes.len()),
        "a user step per turn"
    );

    // CTRF: one test per planned trial, the lost one failed.
    let ctrf: Value =
        serde_json::from_slice(&std::fs::read(out.join("ctrf/ctrf-report.json")).expect("ctrf"))
            .expect("json");
    let tests = ctrf["results"]["tests"].as_array().expect("tests");
    assert_eq!(tests.len(), names.len());
    let lost = tests
        .iter()
        .find(|t| t["name"] == "qa::api-ledger::balance::r2")
        .expect("the lost trial");
    assert_eq!(lost["status"], "failed");
    assert_eq!(lost["rawStatus"], "no record");

    let Some(python) = python() else {
        return;
    };
    let inspect_dir = out.join("inspect");
    let checked = std::process::Command::new(&python)
        .arg(support::root().join("tests/python/check_exports.py"))
        .arg(&inspect_dir)
        .arg(out.join("ctrf/ctrf-report.json"))
        .arg(support::root().join("schema/vendor/ctrf/ctrf.schema.json"))
        .arg(out.join("atif"))
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(
        checked.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let seen: Value = serde_json::from_str(&stdout).expect("the checker's json");
    assert!(seen["ctrf"]["errors"]
        .as_array()
        .is_some_and(|e| e.is_empty()));
    let logs = seen["inspect"].as_array().expect("logs");
    assert_eq!(logs.len(), 3, "one log per suite: {logs:#?}");
    let qa_log = logs
        .iter()
        .find(|l| l["task"] == "gauntlet-qa")
        .expect("the qa log");
    assert!(qa_log["header_samples"].is_null(), "header-only read");
    let samples = qa_log["samples"].as_array().expect("samples");
    let epoch = |e: u64| {
        samples
            .iter()
            .find(|s| s["id"] == "qa::api-ledger::balance" && s["epoch"] == e)
            .unwrap_or_else(|| panic!("epoch {e}: {samples:#?}"))
    };
    assert_eq!(epoch(1)["score"], qa.verdict.outcome.as_str());
    assert_eq!(epoch(1)["explanation"], qa.verdict.reason.as_str());
    assert_eq!(epoch(1)["input_tokens"], qa_in);
    assert_eq!(epoch(1)["output_tokens"], qa_out);
    assert!(epoch(1)["tool_calls"].as_u64() > Some(0));
    assert_eq!(epoch(2)["score"], "no record");
    assert_eq!(
        epoch(2)["error"],
        "qa: planned but no record; counted as an error"
    );
    let usage: u64 = qa_log["model_usage"]
        .as_object()
        .expect("usage")
        .values()
        .map(|u| u["input_tokens"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(usage, qa_in);
    for log in logs {
        for s in log["samples"].as_array().expect("samples") {
            if s["score"] != "no record" {
                let rec = records
                    .iter()
                    .find(|r| {
                        let h = r.header();
                        gauntlet::plan::names::group_of(&h.trial).0 == s["id"]
                    })
                    .expect("a record per sample");
                assert_eq!(s["score"], record_verdict(rec), "{s}");
            }
        }
    }
}

fn record_verdict(r: &gauntlet::record::any::AnyRecord) -> String {
    use gauntlet::record::any::AnyRecord;
    match r {
        AnyRecord::Qa(q) => q.verdict.outcome.as_str().into(),
        AnyRecord::Scorecard(s) => s.verdict.outcome.as_str().into(),
        AnyRecord::Challenge(c) => format!(
            "{}/{}",
            c.verdict.task_outcome.as_str(),
            c.verdict.evaluation_validity.as_str()
        ),
    }
}
