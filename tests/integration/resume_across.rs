//! One run, two entry points: a run `cargo nextest run` started and a person stopped is
//! resumed by `gauntlet run --resume`, and one `gauntlet run` started is resumed under
//! nextest. The run's identity fingerprints every program its trials run (size and
//! modification time), so this holds only if neither entry point rebuilds what the
//! other built: `gauntlet run` builds what nextest builds (`cargo test --no-run`), and
//! builds it as from the shell nextest is typed in, not with what `cargo run` set for
//! gauntlet itself (`sys::cargo`), which made cargo relink every program.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::archive::{describe, the_run_in};

/// The trials: one that finishes, and one that is stopped part-way and resumed.
const FIRST: &str = "qa::api-ledger::health";
const SECOND: &str = "qa::cli-tally-2::version";

/// Each scripted model reply takes this long, in every run of the test (a resume runs
/// under its run's own config): the stopped trial is still waiting on its model when
/// the signal comes, however fast the machine is.
const LATENCY_MS: &str = "1500";

/// Whether this test runs from a nextest archive, where nothing is built: there is no
/// second build to tell apart, and a nested cargo would build a tree of its own.
fn skipped_from_an_archive() -> bool {
    let archive = gauntlet::sys::nextest::invocation().and_then(|i| i.archive);
    if let Some(file) = &archive {
        eprintln!(
            "note: skipped: run from the archive {}: nothing is built here",
            file.display()
        );
    }
    archive.is_some()
}

/// A temporary directory and where the runs go in it; `None` from an archive.
fn a_place_for_runs() -> Option<(tempfile::TempDir, PathBuf)> {
    if skipped_from_an_archive() {
        return None;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("runs");
    Some((tmp, out))
}

/// `cmd` as a person's shell runs it: without what nextest handed this test (its run,
/// its package) or any gauntlet setting, but with how cargo is configured (its home,
/// and this build's target directory), so that it finds this build.
fn from_the_shell(mut cmd: Command) -> Command {
    gauntlet::sys::cargo::as_from_the_shell(&mut cmd);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("NEXTEST") || k.starts_with("__NEXTEST") || k.starts_with("GAUNTLET_") {
            cmd.env_remove(&*k);
        }
    }
    cmd.current_dir(crate::support::root())
        .env("CARGO_TARGET_DIR", super::adopt::target_dir())
        .env("GAUNTLET_N", "1")
        .env("GAUNTLET_SCRIPTED_LATENCY_MS", LATENCY_MS);
    cmd
}

/// `cargo nextest run` of `trials` (one at a time), into `out` or resuming `resume`.
fn nextest(trials: &[&str], out: &Path, resume: Option<&Path>) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = from_the_shell(Command::new(cargo));
    let filter: Vec<String> = trials.iter().map(|t| format!("test(={t})")).collect();
    cmd.args([
        "nextest",
        "run",
        "--no-fail-fast",
        "--test-threads",
        "1",
        "-E",
    ])
    .arg(format!("binary(qa) & ({})", filter.join(" | ")))
    .env("GAUNTLET_OUT", out);
    if let Some(run) = resume {
        cmd.env("GAUNTLET_RESUME", run);
    }
    cmd
}

/// `gauntlet run` of `trial` under cargo, as `cargo run -- run` starts it: with what
/// cargo sets for the program it runs (this package's manifest directory, name and
/// version), so it builds first.
fn gauntlet_run(trial: &str, out: &Path, resume: Option<&Path>) -> Output {
    let mut cmd = from_the_shell(Command::new(crate::support::bin("gauntlet")));
    cmd.env("CARGO_MANIFEST_DIR", crate::support::root())
        .env("CARGO_PKG_NAME", "gauntlet")
        .env("CARGO_PKG_VERSION", gauntlet::VERSION)
        .args(["run", "--jobs", "1", "--filter", trial])
        .env(
            "CARGO",
            std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
        )
        .env("GAUNTLET_OUT", out);
    if let Some(run) = resume {
        cmd.arg("--resume").arg(run);
    }
    cmd.output().expect("gauntlet run runs")
}

/// The run rescores whole (every planned trial finished, every record agrees), and
/// its finished records are exactly these trials'.
fn holds(run: &Path, trials: &[&str]) {
    let r = gauntlet::record::rescore::rescore_path(run).expect("rescore");
    assert!(r.ok(), "{}: {:?} {:?}", run.display(), r.rows, r.findings);
    let mut names: Vec<String> = r.rows.iter().map(|row| row.trial.clone()).collect();
    names.sort();
    names.dedup();
    let mut want: Vec<String> = trials.iter().map(|t| t.to_string()).collect();
    want.sort();
    assert_eq!(names, want, "{}", run.display());
}

/// Whether the manifest of the one run under `out` plans `trial`.
fn planned(out: &Path, trial: &str) -> bool {
    let Some(Ok(run)) = std::fs::read_dir(out).ok().and_then(|mut d| d.next()) else {
        return false;
    };
    std::fs::read_to_string(run.path().join("manifest.jsonl"))
        .is_ok_and(|m| m.contains(&format!("\"trial\":\"{trial}\"")))
}

/// cargo's build lines in what a command printed: what it compiled again.
fn compiled(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.trim_start().starts_with("Compiling "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_run_nextest_started_and_was_stopped_resumes_under_gauntlet_run() {
    let Some((tmp, out)) = a_place_for_runs() else {
        return;
    };
    // nextest runs both trials, one at a time, and is stopped (SIGTERM, as a person
    // stops it) once the second has started. Its output goes to files: a pipe nobody
    // reads until it ends could fill and stall it.
    let (stdout, stderr) = (tmp.path().join("stdout"), tmp.path().join("stderr"));
    let file = |p: &Path| std::fs::File::create(p).expect("output file");
    let mut started = nextest(&[FIRST, SECOND], &out, None)
        .stdout(file(&stdout))
        .stderr(file(&stderr))
        .spawn()
        .expect("cargo nextest starts");
    let said = |what: &str, status| {
        let read = |p: &Path| std::fs::read(p).unwrap_or_default();
        let o = Output {
            status,
            stdout: read(&stdout),
            stderr: read(&stderr),
        };
        describe(what, &o)
    };
    while !planned(&out, SECOND) {
        if let Ok(Some(status)) = started.try_wait() {
            panic!(
                "{}",
                said(&format!("nextest ended before {SECOND} started"), status)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // cargo runs nextest in its own place (exec): the child is nextest.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(started.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = started.wait().expect("nextest ends");
    let said = said("stopped nextest", status);
    assert!(!status.success(), "{said}");
    let run = the_run_in(&out);
    // The second trial is planned and unfinished (stopped part-way, or before its
    // trial directory existed); the first agrees.
    let partial = gauntlet::record::rescore::rescore_path(&run).expect("rescore");
    let unfinished: Vec<String> = partial
        .findings
        .iter()
        .filter(|f| f.is_incomplete())
        .map(ToString::to_string)
        .collect();
    assert!(
        partial.ok_partial(),
        "{:?} {:?}\n{said}",
        partial.rows,
        partial.findings
    );
    assert_eq!(unfinished.len(), 1, "{unfinished:?}\n{said}");
    assert!(unfinished[0].contains(SECOND), "{unfinished:?}\n{said}");

    let o = gauntlet_run(SECOND, &out, Some(&run));
    assert!(
        o.status.success(),
        "{}",
        describe("gauntlet run --resume", &o)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 unfinished trial(s)"),
        "{}",
        describe("gauntlet run --resume", &o)
    );
    holds(&run, &[FIRST, SECOND]);
}

#[test]
fn a_run_gauntlet_run_started_resumes_under_nextest_and_nothing_is_rebuilt() {
    let Some((_tmp, out)) = a_place_for_runs() else {
        return;
    };
    let o = gauntlet_run(FIRST, &out, None);
    assert!(o.status.success(), "{}", describe("gauntlet run", &o));
    let run = the_run_in(&out);
    // nextest resumes it with the trial `gauntlet run` did not run.
    let o = nextest(&[FIRST, SECOND], &out, Some(&run))
        .output()
        .expect("cargo nextest runs");
    assert!(o.status.success(), "{}", describe("nextest resuming", &o));
    assert_eq!(
        compiled(&o),
        Vec::<String>::new(),
        "nextest rebuilt what `gauntlet run` had built:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    holds(&run, &[FIRST, SECOND]);
}
