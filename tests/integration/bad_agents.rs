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

/// Run `gauntlet run` for one trial in a child process and return (exit code, peak RSS
/// of the child and every descendant it waited for, in bytes). The child has the
/// process to itself, so its peak is the trial's, whatever else this test binary runs.
// The child is reaped by `wait4` itself (which also returns its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_measured(cmd: &mut std::process::Command) -> (Option<i32>, u64) {
    let child = cmd.spawn().expect("gauntlet starts");
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for; both pointers are valid.
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(got, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    // ru_maxrss is in KiB on Linux.
    (code, usage.ru_maxrss as u64 * 1024)
}

#[test]
fn a_flood_of_tiny_events_keeps_memory_and_the_record_bounded() {
    const LINE: &[u8] = b"{\"type\":\"message\",\"text\":\"x\"}\n";
    let out = tempfile::tempdir().expect("tempdir");
    let script = root().join("tests/fixtures/agents/floods-tiny-events.sh");
    let log = out.path().join("gauntlet.log");
    let (code, peak) = run_measured(
        std::process::Command::new(crate::support::bin("gauntlet"))
            .args(["run", "--filter", "qa::api-ledger::balance", "--jobs", "1"])
            .env_remove("CARGO")
            .env_remove("GAUNTLET_CONFIG")
            .env_remove("GAUNTLET_OUTPUT_CAP_BYTES")
            .env("GAUNTLET_OUT", out.path().join("runs"))
            .env("GAUNTLET_AGENT", "command")
            .env("GAUNTLET_AGENT_CMD", format!("sh {}", script.display()))
            .env("GAUNTLET_N", "1")
            .env("GAUNTLET_TIMEOUT_SECS", "600")
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(std::process::Stdio::inherit()),
    );
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(code, Some(1), "the trial runs and does not pass: {said}");
    let run = std::fs::read_dir(out.path().join("runs"))
        .expect("runs")
        .next()
        .expect("a run directory")
        .expect("entry")
        .path();
    let file = run.join("qa.api-ledger.balance/record.json");
    let rec = gauntlet::record::load(&file).expect("the trial wrote its record");
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Error,
        "{}",
        rec.verdict.reason
    );
    let cap = rec.header.config.output_cap_bytes;
    assert_eq!(cap, 32 << 20, "the default cap");
    let stdout = &rec.evidence.agent.stdout;
    assert_eq!(stdout.bytes_seen, 1 << 30);
    assert_eq!(stdout.bytes, cap);

    // Every event the capped file holds was counted; a bounded number were kept.
    let lines = cap / LINE.len() as u64;
    let report = rec
        .evidence
        .agent_report
        .as_ref()
        .expect("the agent's report");
    let max = gauntlet::evidence::normalize::MAX_ITEMS;
    assert_eq!(report.event_types.get("message"), Some(&lines));
    assert_eq!(report.texts.len(), max);
    assert_eq!(report.dropped.texts, lines - max as u64);
    assert_eq!(report.garbage_lines, u64::from(cap % LINE.len() as u64 > 0));

    let size = std::fs::metadata(&file).expect("record").len();
    assert!(size < 2 << 20, "the record is {size} bytes");
    assert!(
        peak < 100 << 20,
        "peak RSS of the trial's process: {peak} bytes"
    );
    // The flood was streamed, the whole run still rescores from the capped raw file.
    let rescore = std::process::Command::new(crate::support::bin("gauntlet"))
        .arg("rescore")
        .arg(&run)
        .output()
        .expect("rescore runs");
    assert_eq!(
        rescore.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rescore.stdout)
    );
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
    assert_eq!(
        gate.runs.len(),
        6,
        "N = 2 app runs + 1 mutant run + M = 3 of balance's 4 independent mutants"
    );
    // Raw evidence of every gate run is on disk beside the record.
    for r in &gate.runs {
        assert!(dir.join(&r.stdout.path).is_file());
    }
}
