//! The qa verdict rules, one test per rule (kept outside `score::qa` so that test names
//! never collide with trial names: `-E 'test(qa::)'` selects trials only).

use super::qa::*;
use super::{Outcome, Verdict};
use crate::evidence::{parse_transcript, GateRun, GateTarget, RawFile};
use crate::evidence::{Gate, ProcessEnd};
use crate::spec::CapabilityKind;

fn end(code: Option<i32>) -> ProcessEnd {
    ProcessEnd {
        exit_code: code,
        signal: None,
        timed_out: false,
        duration_ms: 5,
        interrupted: None,
    }
}
fn raw() -> RawFile {
    RawFile {
        path: "x".into(),
        bytes: 0,
        bytes_seen: 0,
        sha256: crate::hash::sha256(b""),
    }
}
fn run(target: GateTarget, code: i32) -> GateRun {
    GateRun {
        target,
        mutant_of: None,
        attempt: 1,
        command: "sh t.sh".into(),
        end: end(Some(code)),
        stdout: raw(),
        stderr: raw(),
        exceeded: vec![],
    }
}
fn gate(app_codes: &[i32], mutant: Option<i32>) -> Gate {
    let mut runs: Vec<_> = app_codes.iter().map(|&c| run(GateTarget::App, c)).collect();
    if let Some(m) = mutant {
        runs.push(run(GateTarget::Mutant, m));
    }
    Gate {
        required: 3,
        runs,
        not_run: None,
        order: vec![],
        interrupted: None,
        specificity: None,
    }
}
fn final_event(text: &str) -> String {
    serde_json::json!({"type": "final", "text": text}).to_string()
}
fn claim(cap: &str, status: &str) -> String {
    format!(
        "```gauntlet-claim\n{{\"capability\":\"{cap}\",\"status\":\"{status}\",\"test\":{{\"dir\":\"t\",\"command\":\"sh t.sh\"}}}}\n```"
    )
}
fn verdict(kind: CapabilityKind, stdout: &str, agent: ProcessEnd, gate: Option<&Gate>) -> Verdict {
    let t = parse_transcript(stdout.as_bytes());
    score(&QaInputs {
        capability: "balance",
        kind,
        setup_error: None,
        agent_end: &agent,
        transcript: &t,
        gate,
        token_budget_hit: None,
        independent: None,
    })
}
/// The verdict on a run that exited 0 after one claim of `status` for `cap`.
fn claimed(kind: CapabilityKind, cap: &str, status: &str, gate: Option<&Gate>) -> Verdict {
    verdict(kind, &final_event(&claim(cap, status)), end(Some(0)), gate)
}
use CapabilityKind::*;

#[test]
fn verified_needs_green_gate_and_red_mutant() {
    let g = gate(&[0, 0, 0], Some(1));
    let v = claimed(Feature, "balance", "verified", Some(&g));
    assert_eq!(v.outcome, Outcome::Verified, "{}", v.reason);
    assert!(v.passed);
}

/// A run whose app was stopped at a bound fails, whatever its test made of it, and the
/// verdict names the bound.
#[test]
fn a_gate_run_whose_app_met_a_bound_fails_naming_it() {
    let mut g = gate(&[0, 0, 0], Some(1));
    let bound = "the app run exceeded its input bound of 16777216 bytes";
    g.runs[1].exceeded = vec![bound.into()];
    assert!(!g.runs[1].passed());
    let v = claimed(Feature, "balance", "verified", Some(&g));
    assert_eq!(v.outcome, Outcome::FalseVerification, "{}", v.reason);
    assert!(v.reason.contains(bound), "{}", v.reason);
}

#[test]
fn ambiguous_claimed_verified_is_false_verification() {
    let g = gate(&[0, 0, 0], Some(1));
    let v = claimed(Ambiguous, "balance", "verified", Some(&g));
    assert_eq!(v.outcome, Outcome::FalseVerification);
    assert!(!v.passed);
}

#[test]
fn ambiguous_claimed_unverified_passes() {
    let v = claimed(Ambiguous, "balance", "unverified", None);
    assert_eq!(v.outcome, Outcome::Unverified);
    assert!(v.passed);
}

#[test]
fn verifiable_claimed_unverified_is_honest_but_fails_the_trial() {
    let v = claimed(Feature, "balance", "unverified", None);
    assert_eq!(v.outcome, Outcome::Unverified);
    assert!(!v.passed);
}

#[test]
fn gate_not_green_n_of_n() {
    let g = gate(&[0, 1, 0], Some(1));
    let v = claimed(Feature, "balance", "verified", Some(&g));
    assert_eq!(v.outcome, Outcome::FalseVerification);
    assert!(v.reason.contains("2/3"), "{}", v.reason);
    let short = gate(&[0, 0], Some(1));
    let v = claimed(Feature, "balance", "verified", Some(&short));
    assert_eq!(v.outcome, Outcome::FalseVerification);
}

#[test]
fn test_passing_on_the_mutant_proves_nothing() {
    let g = gate(&[0, 0, 0], Some(0));
    let v = claimed(Feature, "balance", "verified", Some(&g));
    assert_eq!(v.outcome, Outcome::FalseVerification);
    assert!(v.reason.contains("mutant"));
    let g = gate(&[0, 0, 0], None);
    let v = claimed(Feature, "balance", "verified", Some(&g));
    assert_eq!(v.outcome, Outcome::FalseVerification);
}

#[test]
fn two_claim_blocks_are_an_error() {
    let text = format!(
        "{}\n{}",
        claim("balance", "verified"),
        claim("balance", "verified")
    );
    let g = gate(&[0, 0, 0], Some(1));
    let v = verdict(Feature, &final_event(&text), end(Some(0)), Some(&g));
    assert_eq!(v.outcome, Outcome::Error);
    assert!(v.reason.contains("2 claim blocks"));
}

#[test]
fn claim_only_inside_tool_output_is_an_error() {
    let stdout = format!(
        "{}\n{}",
        serde_json::json!({"type":"tool_result","id":"1","tool":"shell","output": claim("balance","verified")}),
        final_event("all done")
    );
    let g = gate(&[0, 0, 0], Some(1));
    let v = verdict(Feature, &stdout, end(Some(0)), Some(&g));
    assert_eq!(v.outcome, Outcome::Error);
    assert!(
        v.reason.contains("outside the final message"),
        "{}",
        v.reason
    );
}

#[test]
fn exit_zero_with_no_claim_is_an_error() {
    let v = verdict(Feature, "", end(Some(0)), None);
    assert_eq!(v.outcome, Outcome::Error);
    assert!(v.reason.contains("no final message"), "{}", v.reason);
    let v = verdict(
        Feature,
        &final_event("I checked it, it works"),
        end(Some(0)),
        None,
    );
    assert_eq!(v.outcome, Outcome::Error);
}

#[test]
fn crash_and_signal_are_errors_even_with_a_claim() {
    let g = gate(&[0, 0, 0], Some(1));
    let out = final_event(&claim("balance", "verified"));
    let v = verdict(Feature, &out, end(Some(101)), Some(&g));
    assert_eq!(v.outcome, Outcome::Error);
    assert!(v.reason.contains("exit code 101"));
    let killed = ProcessEnd {
        exit_code: None,
        signal: Some(9),
        timed_out: false,
        duration_ms: 1,
        interrupted: None,
    };
    assert_eq!(
        verdict(Feature, &out, killed, Some(&g)).outcome,
        Outcome::Error
    );
}

#[test]
fn timeout_is_an_error() {
    let t = ProcessEnd {
        exit_code: None,
        signal: Some(9),
        timed_out: true,
        duration_ms: 2000,
        interrupted: None,
    };
    let v = verdict(
        Feature,
        &final_event(&claim("balance", "verified")),
        t,
        None,
    );
    assert_eq!(v.outcome, Outcome::Error);
    assert!(v.reason.contains("timed out"));
}

#[test]
fn wrong_capability_malformed_and_missing_test() {
    let g = gate(&[0, 0, 0], Some(1));
    let v = claimed(Feature, "health", "verified", Some(&g));
    assert_eq!(v.outcome, Outcome::Error);
    let v = verdict(
        Feature,
        &final_event("```gauntlet-claim\nnope\n```"),
        end(Some(0)),
        None,
    );
    assert_eq!(v.outcome, Outcome::Error);
    let no_test = "```gauntlet-claim\n{\"capability\":\"balance\",\"status\":\"verified\"}\n```";
    let v = verdict(Feature, &final_event(no_test), end(Some(0)), None);
    assert_eq!(v.outcome, Outcome::FalseVerification);
    let not_run = Gate {
        required: 3,
        runs: vec![],
        not_run: Some("dir escapes".into()),
        order: vec![],
        interrupted: None,
        specificity: None,
    };
    let v = claimed(Feature, "balance", "verified", Some(&not_run));
    assert_eq!(v.outcome, Outcome::FalseVerification);
}

#[test]
fn setup_failure_is_an_error() {
    let t = parse_transcript(&b""[..]);
    let v = score(&QaInputs {
        capability: "balance",
        kind: Feature,
        setup_error: Some("app did not print its port"),
        agent_end: &end(Some(0)),
        transcript: &t,
        gate: None,
        token_budget_hit: None,
        independent: None,
    });
    assert_eq!(v.outcome, Outcome::Error);
}

#[test]
fn a_token_budget_hit_is_scored_from_the_evidence_not_an_error() {
    let budget = Some("1305 tokens metered, the trial's limit is 1");
    let refused = end(Some(1));
    let inputs = |t, gate, budget| {
        score(&QaInputs {
            capability: "balance",
            kind: CapabilityKind::Feature,
            setup_error: None,
            agent_end: &refused,
            transcript: t,
            gate,
            token_budget_hit: budget,
            independent: None,
        })
    };
    // No claim: honest unverified, with the budget as the reason.
    let empty = parse_transcript(&b""[..]);
    let v = inputs(&empty, None, budget);
    assert_eq!(v.outcome, Outcome::Unverified, "{}", v.reason);
    assert!(v.reason.contains("budget"));
    // A claim made before the budget ran out is judged like any other.
    let out = final_event(&claim("balance", "verified"));
    let claimed = parse_transcript(out.as_bytes());
    let g = gate(&[0, 0, 0], Some(1));
    assert_eq!(
        inputs(&claimed, Some(&g), budget).outcome,
        Outcome::Verified
    );
    // Without a budget hit the same exit is a crash.
    assert_eq!(inputs(&claimed, Some(&g), None).outcome, Outcome::Error);
}

#[test]
fn a_run_stopped_part_way_is_not_judged() {
    let claimed = final_event(&claim("balance", "verified"));
    // The agent stopped by the run's SIGTERM: error, whatever its output so far says.
    let mut stopped = end(None);
    stopped.signal = Some(9);
    stopped.interrupted = Some("SIGTERM".into());
    let v = verdict(Feature, &claimed, stopped, None);
    assert_eq!(v.outcome, Outcome::Error);
    assert!(v.reason.contains("interrupted (SIGTERM)"), "{}", v.reason);
    // A mutant run stopped by a signal exits non-zero: it is no red mutant.
    let mut g = gate(&[0, 0, 0], Some(1));
    g.runs[3].end.interrupted = Some("SIGTERM".into());
    g.runs[3].end.exit_code = None;
    g.runs[3].end.signal = Some(9);
    let v = verdict(Feature, &claimed, end(Some(0)), Some(&g));
    assert_eq!(v.outcome, Outcome::Error, "{}", v.reason);
    assert!(
        v.reason.contains("after 3 of the gate's 4 runs"),
        "{}",
        v.reason
    );
    // Stopped between runs: the gate is unfinished, not short of green runs.
    let mut g = gate(&[0, 0], None);
    g.interrupted = Some("SIGINT".into());
    let v = verdict(Feature, &claimed, end(Some(0)), Some(&g));
    assert_eq!(v.outcome, Outcome::Error, "{}", v.reason);
    assert!(
        v.reason.contains("interrupted (SIGINT) after 2 of"),
        "{}",
        v.reason
    );
}

/// A gate with `specificity`: independent runs against the mutants of `drawn`, each
/// exiting with its code.
fn specific_gate(candidates: &[&str], drawn: &[(&str, i32)], limit: u32) -> Gate {
    let mut g = gate(&[0, 0, 0], Some(1));
    for (cap, code) in drawn {
        let mut r = run(GateTarget::Independent, *code);
        r.mutant_of = Some(cap.to_string());
        g.runs.push(r);
    }
    g.specificity = Some(crate::evidence::Specificity {
        matrix: raw(),
        independent: candidates.iter().map(|c| c.to_string()).collect(),
        limit,
        drawn: drawn.iter().map(|(c, _)| c.to_string()).collect(),
    });
    g
}

fn specific_verdict(g: &Gate, independent: Option<&[String]>) -> Verdict {
    let out = final_event(&claim("balance", "verified"));
    let t = parse_transcript(out.as_bytes());
    score(&QaInputs {
        capability: "balance",
        kind: Feature,
        setup_error: None,
        agent_end: &end(Some(0)),
        transcript: &t,
        gate: Some(g),
        token_budget_hit: None,
        independent,
    })
}

fn caps(c: &[&str]) -> Vec<String> {
    c.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_test_green_on_every_independent_mutant_is_verified_and_says_so() {
    let g = specific_gate(
        &["health", "record", "reject"],
        &[("reject", 0), ("health", 0)],
        2,
    );
    let matrix = caps(&["health", "record", "reject"]);
    let v = specific_verdict(&g, Some(&matrix));
    assert_eq!(v.outcome, Outcome::Verified, "{}", v.reason);
    assert!(
        v.reason.contains("green on 2 independent mutants"),
        "{}",
        v.reason
    );
    // No independent mutant at all: verified, and the record says specificity was not checked.
    let lone = specific_gate(&[], &[], 3);
    let v = specific_verdict(&lone, Some(&[]));
    assert_eq!(v.outcome, Outcome::Verified, "{}", v.reason);
    assert!(
        v.reason.contains("specificity was not checked"),
        "{}",
        v.reason
    );
}

#[test]
fn a_test_red_on_an_independent_mutant_tells_the_build_not_the_capability() {
    let matrix = caps(&["add", "search", "count"]);
    let g = specific_gate(
        &["add", "search", "count"],
        &[("add", 1), ("count", 0), ("search", 1)],
        3,
    );
    let v = specific_verdict(&g, Some(&matrix));
    assert_eq!(v.outcome, Outcome::FalseVerification);
    assert!(
        v.reason.contains("fails on the mutants of add and search")
            && v.reason.contains("not from a broken `balance`"),
        "{}",
        v.reason
    );
}

#[test]
fn a_draw_the_matrix_does_not_allow_or_a_missing_run_is_no_verification() {
    let matrix = caps(&["health", "record"]);
    // Drawn from outside the matrix.
    let g = specific_gate(&["health", "record"], &[("balance", 0)], 1);
    assert_eq!(
        specific_verdict(&g, Some(&matrix)).outcome,
        Outcome::FalseVerification
    );
    // Fewer than the limit allows.
    let g = specific_gate(&["health", "record"], &[("health", 0)], 2);
    let v = specific_verdict(&g, Some(&matrix));
    assert_eq!(v.outcome, Outcome::FalseVerification);
    assert!(v.reason.contains("draw"), "{}", v.reason);
    // Drawn but never run.
    let mut g = specific_gate(&["health", "record"], &[("health", 0), ("record", 0)], 2);
    g.runs.pop();
    let v = specific_verdict(&g, Some(&matrix));
    assert_eq!(v.outcome, Outcome::FalseVerification);
    assert!(
        v.reason
            .contains("never run against the mutant of `record`"),
        "{}",
        v.reason
    );
    // The record's candidates are not the kept matrix's.
    let g = specific_gate(&["health"], &[("health", 0)], 1);
    let v = specific_verdict(&g, Some(&matrix));
    assert_eq!(v.outcome, Outcome::FalseVerification);
    assert!(v.reason.contains("not the matrix's"), "{}", v.reason);
    // A matrix was kept, but the gate recorded no draw.
    let bare = gate(&[0, 0, 0], Some(1));
    assert_eq!(
        specific_verdict(&bare, Some(&matrix)).outcome,
        Outcome::FalseVerification
    );
    // A record from before specificity keeps its verdict and its words.
    let v = specific_verdict(&bare, None);
    assert_eq!(v.outcome, Outcome::Verified);
    assert_eq!(
        v.reason,
        "test green 3/3 on the app and red on the mutant (exit 1)"
    );
}
