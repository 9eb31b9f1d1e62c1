//! A CTRF report (Common Test Report Format, ctrf.io; the schema is vendored in
//! `schema/vendor/ctrf/`): one test per trial, its status, its duration, and the verdict
//! and figures under `extra` — the only place the schema lets a tool put its own data.
//! A planned trial without a counted record is a failed test, never dropped.

use serde::Serialize;

use super::view::{epoch_ms, pretty, RunView};

pub const FILE: &str = "ctrf-report.json";

/// The spec version the vendored schema describes.
const SPEC_VERSION: &str = "0.0.0";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    report_format: &'static str,
    spec_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
    generated_by: &'static str,
    results: Results,
}

#[derive(Serialize)]
struct Results {
    tool: Tool,
    summary: Summary,
    tests: Vec<Test>,
    environment: Environment,
    extra: serde_json::Value,
}

#[derive(Serialize)]
struct Tool {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Summary {
    tests: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
    pending: usize,
    other: usize,
    start: u64,
    stop: u64,
    duration: u64,
    suites: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Test {
    name: String,
    status: &'static str,
    duration: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    start: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<u64>,
    suite: Vec<String>,
    raw_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_path: Option<String>,
    extra: serde_json::Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Environment {
    report_name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
}

/// The report of `run`.
pub fn report(run: &RunView) -> String {
    let mut tests: Vec<Test> = run
        .trials
        .iter()
        .map(|t| {
            let h = &t.header;
            let (start, stop) = (epoch_ms(&h.started_at), epoch_ms(&h.finished_at));
            Test {
                name: h.trial.clone(),
                status: if t.passed { "passed" } else { "failed" },
                duration: h.wall_ms,
                start: (start > 0).then_some(start),
                stop: (stop > 0).then_some(stop),
                suite: t.group.split("::").map(str::to_owned).collect(),
                raw_status: t.verdict.clone(),
                message: (!t.passed).then(|| t.reason.clone()),
                file_path: Some(format!("{}/{}", t.dir, crate::record::RECORD_FILE)),
                extra: serde_json::json!({
                    "gauntlet.verdict": t.verdict,
                    "gauntlet.reason": t.reason,
                    "gauntlet.repeat": t.repeat,
                    "gauntlet.agent": format!("{} {}", h.config.agent, h.config.agent_version),
                    "gauntlet.model": h.config.model,
                    "gauntlet.tokens_in": t.tokens_in,
                    "gauntlet.tokens_out": t.tokens_out,
                    "gauntlet.tokens_cached": t.tokens_cached,
                    "gauntlet.cost_usd": t.cost,
                    "gauntlet.model_calls": t.turns.iter().map(|x| x.calls.len()).sum::<usize>(),
                    "gauntlet.evidence": t.evidence,
                }),
            }
        })
        .collect();
    tests.extend(run.missing.iter().map(|m| {
        Test {
            name: m.trial.clone(),
            status: "failed",
            duration: 0,
            start: None,
            stop: None,
            suite: crate::plan::names::group_of(&m.trial)
                .0
                .split("::")
                .map(str::to_owned)
                .collect(),
            raw_status: "no record".into(),
            message: Some(m.why()),
            file_path: None,
            extra: serde_json::json!({ "gauntlet.verdict": "no record" }),
        }
    }));
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    let start = tests.iter().filter_map(|t| t.start).min().unwrap_or(0);
    let stop = tests.iter().filter_map(|t| t.stop).max().unwrap_or(start);
    let passed = tests.iter().filter(|t| t.status == "passed").count();
    let suites: std::collections::BTreeSet<&str> = tests
        .iter()
        .filter_map(|t| t.suite.first())
        .map(String::as_str)
        .collect();
    let mut run_ids: Vec<&str> = run
        .trials
        .iter()
        .map(|t| t.header.run_id.as_str())
        .collect();
    run_ids.sort();
    run_ids.dedup();
    let timestamp = run
        .trials
        .iter()
        .map(|t| t.header.finished_at.clone())
        .max();
    let report = Report {
        report_format: "CTRF",
        spec_version: SPEC_VERSION,
        timestamp,
        generated_by: "gauntlet export --format ctrf",
        results: Results {
            tool: Tool {
                name: "gauntlet",
                version: crate::VERSION,
            },
            summary: Summary {
                tests: tests.len(),
                passed,
                failed: tests.len() - passed,
                skipped: 0,
                pending: 0,
                other: 0,
                start,
                stop,
                duration: stop.saturating_sub(start),
                suites: suites.len(),
            },
            environment: Environment {
                report_name: "gauntlet run",
                commit: run
                    .trials
                    .iter()
                    .find_map(|t| t.header.config.commit.clone()),
            },
            extra: serde_json::json!({
                "gauntlet.run_ids": run_ids,
                "gauntlet.not_counted": run.problems.iter().map(|p| serde_json::json!({
                    "file": p.file, "cause": p.cause,
                })).collect::<Vec<_>>(),
            }),
            tests,
        },
    };
    pretty(&report)
}
