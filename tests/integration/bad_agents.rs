//! Failure paths proven with real bad agents, run through the `command` adapter against
//! the real api-ledger app, proxy and process control.

use gauntlet::score::Outcome;

use crate::support::*;

fn trial(agent: &str, capability: &str) -> (gauntlet::record::QaRecord, std::path::PathBuf) {
    let out = tempfile::tempdir().expect("tempdir").keep();
    let cfg = config(fixture_agent(agent), &out);
    let (rec, dir) = run_trial(&ledger(), capability, &cfg);
    let alive = processes_with(&dir.to_string_lossy());
    assert!(
        alive.is_empty(),
        "{agent}: processes survived the trial: {alive:?}"
    );
    (rec, dir)
}

#[test]
fn claiming_the_ambiguous_capability_is_a_false_verification() {
    let (rec, _) = trial("claims-ambiguous.sh", "prompt-under-load");
    assert_eq!(
        rec.verdict.outcome,
        Outcome::FalseVerification,
        "{}",
        rec.verdict.reason
    );
    assert!(!rec.verdict.passed);
}

#[test]
fn a_test_that_passes_on_the_mutant_is_a_false_verification() {
    let (rec, _) = trial("true-test.sh", "balance");
    assert_eq!(
        rec.verdict.outcome,
        Outcome::FalseVerification,
        "{}",
        rec.verdict.reason
    );
    assert!(
        rec.verdict.reason.contains("mutant"),
        "{}",
        rec.verdict.reason
    );
    let gate = rec.evidence.gate.expect("the harness re-ran the test");
    assert_eq!(gate.app_runs().filter(|r| r.end.success()).count(), 2);
    assert!(gate.mutant_run().expect("mutant run").end.success());
}

#[test]
fn a_claim_only_in_tool_output_is_an_error() {
    let (rec, _) = trial("claim-in-tool-output.sh", "balance");
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Error,
        "{}",
        rec.verdict.reason
    );
    assert!(
        rec.evidence.gate.is_none(),
        "no claim, so nothing to re-run"
    );
}

#[test]
fn a_hanging_agent_times_out_and_keeps_its_partial_output() {
    let out = tempfile::tempdir().expect("tempdir").keep();
    let mut cfg = config(fixture_agent("hangs.sh"), &out);
    cfg.timeout = std::time::Duration::from_secs(2);
    let (rec, dir) = run_trial(&ledger(), "balance", &cfg);
    assert_eq!(rec.verdict.outcome, Outcome::Error);
    assert!(rec.evidence.agent.end.timed_out);
    assert!(
        rec.verdict.reason.contains("timed out"),
        "{}",
        rec.verdict.reason
    );
    let stdout = std::fs::read_to_string(dir.join("agent.stdout")).expect("stdout kept");
    assert!(
        stdout.contains("bad-hang"),
        "partial output kept: {stdout:?}"
    );
    assert!(processes_with(&dir.to_string_lossy()).is_empty());
}

#[test]
fn a_crashing_agent_is_an_error_whatever_it_printed() {
    let (rec, _) = trial("crashes.sh", "balance");
    assert_eq!(rec.verdict.outcome, Outcome::Error);
    assert_eq!(rec.evidence.agent.end.signal, Some(libc_sigsegv()));
}

fn libc_sigsegv() -> i32 {
    11
}

#[test]
fn children_left_running_are_killed_and_counted() {
    let (rec, _) = trial("forks-and-exits.sh", "balance");
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Unverified,
        "{}",
        rec.verdict.reason
    );
    assert!(!rec.verdict.passed, "honest, but balance is verifiable");
    assert!(
        rec.evidence.agent.stragglers_killed >= 2,
        "{}",
        rec.evidence.agent.stragglers_killed
    );
}

#[test]
fn a_flood_of_output_is_capped_on_disk_and_never_held_in_memory() {
    let out = tempfile::tempdir().expect("tempdir").keep();
    let mut cfg = config(fixture_agent("floods.sh"), &out);
    cfg.output_cap_bytes = 4 << 20;
    let (rec, dir) = run_trial(&ledger(), "balance", &cfg);
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Error,
        "{}",
        rec.verdict.reason
    );
    let stdout = &rec.evidence.agent.stdout;
    assert_eq!(stdout.bytes_seen, 100_000_000);
    assert_eq!(stdout.bytes, 4 << 20);
    assert_eq!(
        std::fs::metadata(dir.join("agent.stdout"))
            .expect("file")
            .len(),
        4 << 20
    );
    let peak = peak_rss();
    assert!(peak < 100 << 20, "peak RSS {peak} bytes");
}

#[test]
fn garbage_event_lines_are_survived() {
    let (rec, _) = trial("garbage-then-claim.sh", "balance");
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Unverified,
        "{}",
        rec.verdict.reason
    );
}

#[test]
fn an_honest_agent_with_a_real_test_is_verified() {
    let (rec, dir) = trial("honest-balance.sh", "balance");
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    assert!(rec.verdict.passed);
    let gate = rec.evidence.gate.expect("gate ran");
    assert_eq!(gate.runs.len(), 3, "N = 2 app runs + 1 mutant run");
    // Raw evidence of every gate run is on disk beside the record.
    for r in &gate.runs {
        assert!(dir.join(&r.stdout.path).is_file());
    }
}
