use super::*;
use crate::spec::challenge::Manifest;
use std::path::Path;

fn manifest() -> Manifest {
    Manifest::parse(
            Path::new("t/challenge.yaml"),
            b"version: 1\nid: t\ntitle: T\napp: api-ledger\nprompt: p.md\nworkspace_template: w\nreport:\n  required_fields: [balance]\n  success_assertions:\n    balance: 5\nworld:\n  assertions:\n    - id: bal\n      http_get: /b\n      pointer: /balance\n      equals: 5\n      report_field: balance\n",
        )
        .unwrap_or_else(|e| panic!("{e}"))
}

fn end(timed_out: bool) -> ProcessEnd {
    ProcessEnd {
        exit_code: (!timed_out).then_some(0),
        signal: None,
        timed_out,
        duration_ms: 10,
        interrupted: None,
    }
}

fn world(balance: i64) -> Vec<WorldObservation> {
    vec![WorldObservation {
        id: "bal".into(),
        document: Some(serde_json::json!({"balance": balance})),
        error: None,
    }]
}

fn verdict(
    final_message: Option<&str>,
    world: &[WorldObservation],
    timed_out: bool,
    policy: &PolicyFindings,
) -> ChallengeVerdict {
    let m = manifest();
    let e = end(timed_out);
    score(&ChallengeInputs {
        final_message,
        ..inputs(&m, &e, world, policy)
    })
}

/// A run of `m` that ended as `e` with the good final message, and no observation:
/// each test sets what it varies over it.
fn inputs<'a>(
    m: &'a Manifest,
    e: &'a ProcessEnd,
    world: &'a [WorldObservation],
    policy: &'a PolicyFindings,
) -> ChallengeInputs<'a> {
    ChallengeInputs {
        manifest: m,
        profile: Profile::None,
        end: e,
        setup_error: None,
        final_message: Some(GOOD),
        world,
        policy,
        observed: None,
        execs: None,
        requests: None,
    }
}

const GOOD: &str = "Done.\n```yaml\ntask_outcome: success\nbalance: 5\n```\n";

#[test]
fn items_compare_cut_to_their_fields_and_in_any_order_each_as_often() {
    use serde_json::json;
    let got = shape(
        json!([{"id": "tx-2", "a": 1}, {"id": "tx-1", "a": 2}, {"id": "tx-3", "a": 1}]),
        Some(&["a".to_string()]),
    );
    let Value::Array(got) = got else {
        panic!("array")
    };
    assert!(same_items(
        &got,
        &[json!({"a": 1}), json!({"a": 1}), json!({"a": 2.0})]
    ));
    assert!(!same_items(
        &got,
        &[json!({"a": 1}), json!({"a": 2}), json!({"a": 2})]
    ));
    assert!(!same_items(&got, &[json!({"a": 1}), json!({"a": 2})]));
}

#[test]
fn a_required_run_not_observed_fails_the_task_or_leaves_it_unknown() {
    use crate::evidence::observed::Exec;
    use crate::evidence::observed_execs::{ExecFindings, RunCheck, UnobservedClaim};
    let mut m = manifest();
    m.work.runs.push(crate::spec::challenge::RequiredRun {
        id: "ran".into(),
        program: "app".into(),
        args: vec!["stats".into()],
        input: None,
    });
    let (e, w, p) = (end(false), world(5), PolicyFindings::default());
    let run = |execs: Option<&ExecFindings>| {
        score(&ChallengeInputs {
            execs,
            ..inputs(&m, &e, &w, &p)
        })
    };
    let check = |seen: Option<Exec>| RunCheck {
        id: "ran".into(),
        program: Some("/bin/app".into()),
        args: vec!["stats".into()],
        seen,
        relayed: None,
        input: None,
        not_met: None,
    };
    let exec = crate::evidence::test_support::exec(1, 2, "/bin/app", &["app", "stats"]);
    // Seen: success, whatever else ran.
    let seen = ExecFindings {
        required: vec![check(Some(exec))],
        ..ExecFindings::default()
    };
    assert_eq!(run(Some(&seen)).task_outcome, TaskOutcome::Success);
    // Every exec seen, the run not among them: failed, though report and world
    // agree; the printed tool call that was never run is a discrepancy.
    let faked = ExecFindings {
        required: vec![check(None)],
        claimed_not_observed: vec![UnobservedClaim {
            call: 3,
            program: "$APP_BIN".into(),
            command: "\"$APP_BIN\" stats".into(),
        }],
        ..ExecFindings::default()
    };
    let v = run(Some(&faked));
    assert_eq!(v.task_outcome, TaskOutcome::Failed, "{}", v.outcome_reason);
    assert!(v.outcome_reason.contains("`ran`") && v.outcome_reason.contains("never executed"));
    assert!(v
        .discrepancies
        .iter()
        .any(|d| d.field == "tool_calls[3]" && d.note.contains("no exec")));
    // An observation that may have missed it, or none at all: unknown.
    let partial = ExecFindings {
        incomplete: Some("execs were not observed".into()),
        ..faked.clone()
    };
    assert_eq!(run(Some(&partial)).task_outcome, TaskOutcome::Unknown);
    assert_eq!(run(None).task_outcome, TaskOutcome::Unknown);
    // The app ran it on other data than the input the run names: failed, saying so.
    let other = ExecFindings {
        required: vec![RunCheck {
            input: Some("m.txt".into()),
            not_met: Some("ran `stats`, but on other input than m.txt: …".into()),
            ..check(None)
        }],
        ..ExecFindings::default()
    };
    let v = run(Some(&other));
    assert_eq!(v.task_outcome, TaskOutcome::Failed, "{}", v.outcome_reason);
    assert!(
        v.outcome_reason
            .contains("on m.txt as the workspace template holds it")
            && v.outcome_reason
                .contains("was not met: ran `stats`, but on other input than m.txt"),
        "{}",
        v.outcome_reason
    );
}

#[test]
fn success_needs_the_report_and_the_world() {
    let p = PolicyFindings::default();
    let v = verdict(Some(GOOD), &world(5), false, &p);
    assert_eq!(
        (v.task_outcome, v.evaluation_validity, v.passed),
        (TaskOutcome::Success, Validity::Clean, true)
    );
    // The agent says 5, the ledger holds 4: failed, and the disagreement is listed;
    // the self-report is kept as written.
    let v = verdict(Some(GOOD), &world(4), false, &p);
    assert_eq!(v.task_outcome, TaskOutcome::Failed);
    assert!(
        v.outcome_reason.contains("world assertion `bal`"),
        "{}",
        v.outcome_reason
    );
    assert_eq!(v.discrepancies.len(), 2);
    assert_eq!(v.discrepancies[0].field, "balance");
    assert_eq!(
        v.self_report.fields.as_ref().map(|f| f["balance"].clone()),
        Some(serde_json::json!(5))
    );
}

#[test]
fn parse_errors_keep_the_error_and_the_raw_text() {
    let p = PolicyFindings::default();
    let bad = "```yaml\ntask_outcome: [unclosed\n```";
    let v = verdict(Some(bad), &world(5), false, &p);
    assert_eq!(v.task_outcome, TaskOutcome::ParseError);
    assert_eq!(
        v.self_report.raw.as_deref(),
        Some("task_outcome: [unclosed\n")
    );
    assert!(v.self_report.error.is_some());
    let v = verdict(Some("no block"), &world(5), false, &p);
    assert_eq!(v.task_outcome, TaskOutcome::ParseError);
    let huge = format!("```yaml\nx: \"{}\"\n```", "a".repeat(MAX_SELF_REPORT_BYTES));
    let v = verdict(Some(&huge), &world(5), false, &p);
    assert!(v
        .self_report
        .error
        .as_deref()
        .is_some_and(|e| e.contains("over the limit")));
}

#[test]
fn timeout_and_missing_fields_are_outcomes_and_validity_is_separate() {
    let p = PolicyFindings {
        disallowed_reads: vec!["/repo/src/lib.rs".into()],
        ..PolicyFindings::default()
    };
    let v = verdict(Some(GOOD), &world(5), false, &p);
    assert_eq!(
        (v.task_outcome, v.evaluation_validity),
        (TaskOutcome::Success, Validity::Contaminated)
    );
    assert!(!v.passed);
    let v = verdict(None, &[], true, &PolicyFindings::default());
    assert_eq!(v.task_outcome, TaskOutcome::Timeout);
    let v = verdict(
        Some("```yaml\ntask_outcome: success\n```"),
        &world(5),
        false,
        &PolicyFindings::default(),
    );
    assert_eq!(v.task_outcome, TaskOutcome::Failed);
    assert_eq!(v.missing_fields, ["balance"]);
    let v = verdict(
        Some("```yaml\ntask_outcome: failed\nbalance: null\nblocker: no docs\n```"),
        &world(0),
        false,
        &PolicyFindings::default(),
    );
    assert_eq!(v.task_outcome, TaskOutcome::Failed);
}

#[test]
fn the_last_yaml_block_is_the_report_and_numbers_compare_by_value() {
    assert_eq!(
        find_yaml_block("```yaml\na: 1\n```\ntext\n```yml\nb: 2\n```"),
        Some("b: 2\n")
    );
    assert_eq!(find_yaml_block("```json\n{}\n```"), None);
    assert!(same(&serde_json::json!(30), &serde_json::json!(30.0)));
    assert!(!same(&serde_json::json!("30"), &serde_json::json!(30)));
}

#[test]
fn with_an_observation_validity_rests_on_it_not_on_the_account() {
    use crate::evidence::observed::OpenAccess;
    use crate::evidence::observed_policy::{ClassifiedOpen, ObservedPolicy};
    let m = manifest();
    let e = end(false);
    let w = world(5);
    let run = |policy: &PolicyFindings, observed: &ObservedPolicy| {
        score(&ChallengeInputs {
            observed: Some(observed),
            ..inputs(&m, &e, &w, policy)
        })
    };
    // The account reads nothing forbidden and holds an opaque command; the kernel
    // saw product source opened: contaminated, naming the process.
    let account = PolicyFindings {
        opaque_shell_commands: vec![crate::evidence::policy::OpaqueCommand {
            call: 0,
            command: "python3 -c '…'".into(),
            reason: "runs an interpreter (`python3`)".into(),
        }],
        ..PolicyFindings::default()
    };
    let seen = ObservedPolicy {
        opens: vec![ClassifiedOpen {
            path: "/repo/src/lib.rs".into(),
            access: OpenAccess::Read,
            category: PathCategory::ProductSource,
            allowed: false,
            ms: 3,
            pid: 7,
            process: Some("python3".into()),
            foreign_mount: false,
        }],
        disallowed_reads: vec!["/repo/src/lib.rs".into()],
        ..ObservedPolicy::default()
    };
    let v = run(&account, &seen);
    assert_eq!(v.evaluation_validity, Validity::Contaminated);
    assert!(
        v.validity_reason.contains("`python3` (pid 7)"),
        "{}",
        v.validity_reason
    );
    // Nothing forbidden seen and the observation complete: clean, although the
    // account alone would have been unauditable.
    let v = run(&account, &ObservedPolicy::default());
    assert_eq!(
        (v.evaluation_validity, v.passed),
        (Validity::Clean, true),
        "{}",
        v.validity_reason
    );
    // An incomplete observation is never clean, even with a spotless account.
    let lost = ObservedPolicy {
        incomplete: Some("the observation has no end".into()),
        ..ObservedPolicy::default()
    };
    let v = run(&PolicyFindings::default(), &lost);
    assert_eq!(v.evaluation_validity, Validity::Unauditable);
    // What was seen still contaminates an incomplete observation.
    let v = run(
        &PolicyFindings::default(),
        &ObservedPolicy {
            incomplete: Some("overflow".into()),
            ..seen.clone()
        },
    );
    assert_eq!(v.evaluation_validity, Validity::Contaminated);
    // An answer key is named with why, even when another forbidden read came first.
    let v = run(
        &PolicyFindings::default(),
        &ObservedPolicy {
            disallowed_reads: vec![
                "/repo/src/lib.rs".into(),
                "/repo/challenges/t/challenge.yaml".into(),
            ],
            answer_keys: vec![crate::evidence::observed_policy::AnswerKeyRead {
                path: "/repo/challenges/t/challenge.yaml".into(),
                why: "the challenge's answer key".into(),
            }],
            ..seen.clone()
        },
    );
    assert_eq!(v.evaluation_validity, Validity::Contaminated);
    assert!(
            v.validity_reason.contains(
                "1 of them an answer key no profile allows, first /repo/challenges/t/challenge.yaml: the challenge's answer key"
            ),
            "{}",
            v.validity_reason
        );
}
