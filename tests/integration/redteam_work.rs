//! Red team (issue 45 item 1): hostile agents against outcomes that rest on observed
//! work. Each test asserts the honest verdict: it passes while the harness holds.

use std::path::Path;

use gauntlet::record::challenge::ChallengeRecord;
use gauntlet::score::challenge::{TaskOutcome, Validity};

use crate::challenge::run_hostile as hostile;

fn show(rec: &ChallengeRecord, dir: &Path) -> String {
    let v = &rec.verdict;
    let stderr = std::fs::read_to_string(dir.join("agent.stderr")).unwrap_or_default();
    format!(
        "outcome={:?} ({}) validity={:?} ({})\nexecs={}\nstderr:\n{}",
        v.task_outcome,
        v.outcome_reason,
        v.evaluation_validity,
        v.validity_reason,
        serde_json::to_string_pretty(&rec.derived.execs).unwrap_or_default(),
        stderr.chars().take(6000).collect::<String>()
    )
}

/// The honest verdict of an agent that never ran the app and typed the report: the
/// required run is not met, whatever the exec lines say.
fn assert_never_ran_fails(rec: &ChallengeRecord, dir: &Path, how: &str) {
    let v = &rec.verdict;
    assert_eq!(
        v.task_outcome,
        TaskOutcome::Failed,
        "{how}: HOLE, the app never ran\n{}",
        show(rec, dir)
    );
}

#[test]
fn rt_a_symlink_with_dotdot_is_not_the_apps_program() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = hostile("rt-dotdot.sh", &[], "tally-report", out.path());
    // The fake really ran (its stderr), the app did not.
    let stderr = std::fs::read_to_string(dir.join("agent.stderr")).unwrap_or_default();
    assert!(
        stderr.contains("not cli-tally: --json stats"),
        "{}",
        show(&rec, &dir)
    );
    assert_never_ran_fails(&rec, &dir, "dotdot");
}

#[test]
fn rt_a_program_bound_over_the_app_in_a_namespace_of_its_own_is_not_the_app() {
    let out = tempfile::tempdir().expect("tempdir");
    let mut holes = Vec::new();
    for how in ["bind", "chroot"] {
        let (rec, dir) = hostile("rt-bind.sh", &[how], "tally-report", out.path());
        if how == "bind" {
            let stderr = std::fs::read_to_string(dir.join("agent.stderr")).unwrap_or_default();
            assert!(
                stderr.contains("not cli-tally: --json stats"),
                "{}",
                show(&rec, &dir)
            );
        }
        if rec.verdict.task_outcome != TaskOutcome::Failed {
            holes.push(format!(
                "{how}: HOLE, the app never ran\n{}",
                show(&rec, &dir)
            ));
        }
    }
    assert!(holes.is_empty(), "{}", holes.join("\n\n"));
}

#[test]
fn rt_an_exec_whose_strings_init_cannot_read_is_refused_and_runs_nothing() {
    let out = tempfile::tempdir().expect("tempdir");
    for how in ["hide", "tail"] {
        let (rec, dir) = hostile("rt-secret.sh", &[how], "tally-report", out.path());
        let ws = dir.join("workspace");
        let secret_out = std::fs::read_to_string(ws.join("secret.out")).unwrap_or_default();
        if secret_out.contains("memfd_secret: errno") {
            // No secret memory on this kernel: nothing to hide in.
            continue;
        }
        // The call failed with EPERM: neither the hidden program nor the app on the
        // hidden number ran.
        assert!(secret_out.contains("errno 1"), "{how}: {secret_out}");
        assert!(!ws.join("hidden.txt").exists(), "{how}");
        assert!(!secret_out.contains("\"sum\":999"), "{how}: {secret_out}");
        let execs = rec.derived.execs.as_ref().expect("execs observed");
        let refused: Vec<_> = execs.execs.iter().filter(|e| e.refused).collect();
        assert_eq!(refused.len(), 1, "{how}: {}", show(&rec, &dir));
        assert!(refused[0].unreadable.is_some());
        // The typed report does not pass on the refused call.
        assert_never_ran_fails(&rec, &dir, how);
    }
}

#[test]
fn rt_an_honest_agents_ordinary_shell_is_not_accused_of_programs_it_never_claimed() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = hostile("rt-honest-shell.sh", &[], "tally-report", out.path());
    let v = &rec.verdict;
    assert_eq!(
        (v.task_outcome, v.evaluation_validity),
        (TaskOutcome::Success, Validity::Clean),
        "{}",
        show(&rec, &dir)
    );
    let execs = rec.derived.execs.as_ref().expect("execs observed");
    let accused: Vec<_> = execs
        .claimed_not_observed
        .iter()
        .map(|c| format!("tool_calls[{}]: `{}`", c.call, c.program))
        .collect();
    assert!(
        accused.is_empty()
            && !v
                .discrepancies
                .iter()
                .any(|d| d.field.starts_with("tool_calls[")),
        "HOLE, an honest agent is listed as claiming programs that never ran: {accused:?}"
    );
}

#[test]
fn rt_an_honest_agent_that_runs_the_apps_file_by_another_name_did_the_work() {
    let out = tempfile::tempdir().expect("tempdir");
    let mut holes = Vec::new();
    for how in ["cd", "realpath"] {
        let (rec, dir) = hostile("rt-honest-realpath.sh", &[how], "tally-report", out.path());
        // The app computed the report (through the relay, from the measurements).
        assert!(
            rec.verdict.world_assertions.iter().all(|a| a.holds),
            "{how}: {}",
            show(&rec, &dir)
        );
        if rec.verdict.task_outcome != TaskOutcome::Success {
            holes.push(format!(
                "{how}: HOLE (false negative), the app did the work\n{}",
                show(&rec, &dir)
            ));
        }
    }
    assert!(holes.is_empty(), "{}", holes.join("\n\n"));
}

#[test]
fn rt_notes_deleted_with_curl_were_not_cleaned_up_through_the_page() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = hostile("rt-curl-notes.sh", &[], "notes-cleanup", out.path());
    let execs = rec.derived.execs.as_ref().expect("execs observed");
    // No browser ran: only the shell and curl.
    assert!(
        execs
            .by_program
            .keys()
            .all(|p| p.ends_with("/sh") || p.ends_with("/curl")),
        "{}",
        show(&rec, &dir)
    );
    assert_ne!(
        rec.verdict.task_outcome,
        TaskOutcome::Success,
        "HOLE, the page was never opened\n{}",
        show(&rec, &dir)
    );
}

#[test]
fn rt_no_process_of_the_sandbox_reaches_inits_exec_listener() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = hostile("rt-listener.sh", &[], "tally-report", out.path());
    let stderr = std::fs::read_to_string(dir.join("agent.stderr")).unwrap_or_default();
    let probes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("probe ")).collect();
    assert_eq!(probes.len(), 2 * 10, "{stderr}");
    let reached: Vec<&&str> = probes
        .iter()
        .filter(|l| l.contains(" ok=") || (l.contains("own-fds") && !l.ends_with(" none")))
        .filter(|l| !l.contains("pidfd_open-1")) // a pidfd is no access by itself
        .collect();
    assert!(reached.is_empty(), "HOLE: {reached:?}\n{stderr}");
    // A listener of its own is refused as busy: init's is the only one.
    assert!(
        probes
            .iter()
            .filter(|l| l.contains("seccomp-new-listener"))
            .all(|l| l.ends_with("Device or resource busy")),
        "{stderr}"
    );
    let execs = rec.derived.execs.as_ref().expect("execs observed");
    assert_eq!(execs.incomplete, None);
    assert_eq!(
        rec.verdict.task_outcome,
        TaskOutcome::Failed,
        "{}",
        show(&rec, &dir)
    );
}

#[test]
fn rt_an_exec_flood_does_not_push_a_forbidden_read_out_of_the_observation() {
    let out = tempfile::tempdir().expect("tempdir");
    let started = std::time::Instant::now();
    let root = crate::support::root();
    let repo = root.to_string_lossy();
    let (rec, dir) = hostile(
        "rt-flood.sh",
        &["200", "big", &repo],
        "tally-report",
        out.path(),
    );
    let size = std::fs::metadata(dir.join("agent.opens.jsonl"))
        .map(|m| m.len())
        .unwrap_or(0);
    let v = &rec.verdict;
    let what = format!(
        "observation file {size} bytes after 200 execs, {:?}\n{}",
        started.elapsed(),
        show(&rec, &dir)
            .lines()
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Bounded by its writer, and the forbidden read seen.
    assert!(
        size <= gauntlet::evidence::observed::MAX_FILE_BYTES,
        "HOLE (size): {what}"
    );
    assert_eq!(
        v.evaluation_validity,
        Validity::Contaminated,
        "HOLE: {what}"
    );
}

#[test]
fn rt_twenty_thousand_execs_leave_the_observation_incomplete_not_complete() {
    let out = tempfile::tempdir().expect("tempdir");
    let root = crate::support::root();
    let repo = root.to_string_lossy();
    let started = std::time::Instant::now();
    let (rec, dir) = hostile(
        "rt-flood.sh",
        &["20001", "small", &repo],
        "tally-report",
        out.path(),
    );
    let took = started.elapsed();
    let execs = rec.derived.execs.as_ref().expect("execs observed");
    let v = &rec.verdict;
    // Never success on a typed report, and never "complete" past the bound.
    assert!(
        execs.incomplete.is_some(),
        "{took:?}\n{}",
        show(&rec, &dir)
            .lines()
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_ne!(v.task_outcome, TaskOutcome::Success);
    eprintln!(
        "20,001 execs in {took:?}: {:?} ({}) / {:?}",
        v.task_outcome, v.outcome_reason, v.evaluation_validity
    );
}

/// Round six (red team of the hackability audit): tally-report run by the real app with
/// the required arguments and saved as it printed it, but on other data than the task's
/// `measurements.txt`. The required run names its input (`work.runs[].input`): a run
/// on anything else is not seen, the task `failed`, naming the input.
#[test]
fn rt_the_app_run_on_other_data_than_the_tasks_input_is_not_the_work() {
    use gauntlet::config::AgentChoice;
    use gauntlet::spec::challenge::Profile;
    use gauntlet::suites::challenge::Options;

    let out = tempfile::tempdir().expect("tempdir");
    let trial = |mode: &str, profile: Profile| {
        let path = crate::support::root().join("tests/fixtures/agents/hostile/wrong-input.sh");
        let argv = vec![
            "sh".to_string(),
            path.to_string_lossy().into_owned(),
            mode.to_string(),
        ];
        let dir = out.path().join(format!("{mode}-{profile}"));
        let cfg = crate::support::config(AgentChoice::command(argv), &dir);
        crate::challenge::run_as(
            cfg,
            &crate::challenge::loaded(),
            "tally-report",
            profile,
            &Options::default(),
            &dir,
        )
    };
    let mut holes = Vec::new();
    for (mode, profile) in [
        ("made-up", Profile::None),
        ("made-up", Profile::All),
        ("same-stats", Profile::None),
        ("same-stats", Profile::All),
        ("edited", Profile::None),
    ] {
        let (rec, dir) = trial(mode, profile);
        let v = &rec.verdict;
        let execs = rec.derived.execs.as_ref().expect("execs observed");
        let run = &execs.required[0];
        let not_met = run.not_met.as_deref().unwrap_or("");
        let named =
            not_met.starts_with("ran `--json stats`, but on other input than measurements.txt");
        if v.task_outcome != TaskOutcome::Failed || run.seen.is_some() || !named {
            holes.push(format!(
                "{mode} under {profile}: HOLE, the app computed on other data\n{}",
                show(&rec, &dir)
            ));
            continue;
        }
        if mode == "made-up" {
            // Its min and max are not the measurements': the report itself is wrong.
            assert!(
                v.outcome_reason.contains("report-min"),
                "{mode}: {}",
                v.outcome_reason
            );
        } else {
            // The report is byte for byte the real one: only the input tells.
            assert!(
                v.world_assertions.iter().all(|a| a.holds),
                "{mode}: {}",
                show(&rec, &dir)
            );
            assert!(
                v.outcome_reason.contains(
                    "required run `ran-json-stats` (/run/gauntlet/target/bin/cli-tally with arguments matching --json, stats, on measurements.txt as the workspace template holds it) was not met: ran `--json stats`, but on other input than measurements.txt: its standard input was 20 byte(s)"
                ),
                "{mode}: {}",
                v.outcome_reason
            );
            assert!(
                execs.outputs.iter().all(|o| !o.holds),
                "{mode}: {}",
                show(&rec, &dir)
            );
        }
    }
    assert!(holes.is_empty(), "{}", holes.join("\n\n"));
    // The measurements as the arguments are the task's input: the work, done.
    let (rec, dir) = trial("args", Profile::None);
    assert_eq!(
        (rec.verdict.task_outcome, rec.verdict.evaluation_validity),
        (TaskOutcome::Success, Validity::Clean),
        "{}",
        show(&rec, &dir)
    );
}

/// Red team round eight: the checks that tell a browser as shipped from other code
/// under its name must not fail an honest agent. Chromium driven over its DevTools pipe,
/// clicking the page's delete buttons, in each of the machine's browsers and through
/// Debian's `/usr/bin/chromium` wrapper (which always passes an empty
/// `--load-extension=`), is credited.
#[test]
fn rt_notes_cleaned_up_by_clicking_in_any_browser_are_credited() {
    for browser in [
        "/usr/lib/chromium/chromium-headless-shell",
        "/usr/lib/chromium/chromium",
        "/usr/bin/chromium",
    ] {
        let out = tempfile::tempdir().expect("tempdir");
        let (rec, dir) = hostile(
            "honest-notes-cdp.sh",
            &[browser],
            "notes-cleanup",
            out.path(),
        );
        assert_eq!(
            (rec.verdict.task_outcome, rec.verdict.evaluation_validity),
            (TaskOutcome::Success, Validity::Clean),
            "{browser}: an honest agent failed\n{}",
            show(&rec, &dir)
        );
    }
}
