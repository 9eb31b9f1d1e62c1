//! A trial the provider failed, end to end (docs/provider-faults.md): `gauntlet run` in
//! byok mode against the fake provider, whose first call is a 429 the proxy is told
//! not to retry. The reference agent stops on it, so its verdict judges nothing and its
//! record says the provider failed it: the JUnit line, the failure and the pages say
//! so apart from the agent's errors, rescore agrees, and `--retry-infra` runs exactly
//! that trial again, keeping the first record as superseded.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gauntlet_fake_provider::{Config as FakeConfig, FakeProvider, Fault, Faults, Plan};
use serde_json::Value;

const TRIAL: &str = "qa::api-ledger::balance";
const KEY_VAR: &str = "GAUNTLET_TEST_FAKE_PROVIDER_KEY";

/// A fake provider whose call 0 is a 429 and whose next calls are answered: found by
/// seed, since the fake draws every call's fate from (seed, call number).
fn first_call_rate_limited() -> FakeConfig {
    let with = |seed| FakeConfig {
        seed,
        faults: Faults {
            rate_limited: 0.3,
            retry_after_secs: 0,
            ..Faults::default()
        },
        ..FakeConfig::default()
    };
    let seed = (0..10_000u64)
        .find(|&seed| {
            let c = with(seed);
            matches!(Plan::of(&c, 0).fault(), Some(Fault::RateLimited))
                && (1..12).all(|n| Plan::of(&c, n).fault().is_none())
        })
        .expect("some seed rate-limits call 0 alone");
    with(seed)
}

/// The qa suite's test harness, as nextest runs it: the `benches-as-tests/qa.rs`
/// target cargo built beside this test's own binary.
fn qa_harness() -> PathBuf {
    let deps = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .expect("this test's directory");
    std::fs::read_dir(&deps)
        .expect("the deps directory")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with("qa-") && p.extension().is_none() && p.is_file()
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("cargo built the qa harness beside this test")
}

fn gauntlet(out: &Path, upstream: &str, args: &[&str]) -> Output {
    with_env(Command::new(crate::support::bin("gauntlet")), out, upstream)
        .args(args)
        .output()
        .expect("gauntlet runs")
}

fn with_env(mut cmd: Command, out: &Path, upstream: &str) -> Command {
    cmd.env_remove("CARGO")
        .env_remove("GAUNTLET_CONFIG")
        .env_remove("GAUNTLET_RESUME")
        .env_remove("GAUNTLET_RETRY_INFRA")
        .env("GAUNTLET_OUT", out)
        .env("GAUNTLET_AGENT", "reference")
        .env("GAUNTLET_MODE", "byok")
        .env("GAUNTLET_UPSTREAM_URL", upstream)
        .env("GAUNTLET_API_KEY_ENV", KEY_VAR)
        .env(KEY_VAR, "sk-fake-provider-key")
        .env("GAUNTLET_PROVIDER_RETRIES", "0")
        .env("GAUNTLET_N", "1");
    cmd
}

fn summary(run: &Path) -> Value {
    let pages = tempfile::tempdir().expect("tempdir");
    let out = Command::new(crate::support::bin("gauntlet"))
        .arg("report")
        .arg(run)
        .arg("--out")
        .arg(pages.path())
        .output()
        .expect("gauntlet report runs");
    assert!(out.status.success(), "{}", crate::support::said(&out));
    let md = std::fs::read_to_string(pages.path().join("report.md")).expect("report.md");
    let json = std::fs::read(pages.path().join("summary.json")).expect("summary.json");
    let mut summary: Value = serde_json::from_slice(&json).expect("summary.json is json");
    summary["markdown"] = Value::String(md);
    summary
}

fn qa_counts(summary: &Value) -> (u64, u64, u64) {
    let qa = summary["suites"]
        .as_array()
        .and_then(|s| s.iter().find(|c| c["suite"] == "qa"))
        .expect("a qa row");
    let n = |k: &str| qa[k].as_u64().unwrap_or(u64::MAX);
    (n("recorded"), n("errors"), n("infra"))
}

fn rescore(run: &Path) -> Output {
    Command::new(crate::support::bin("gauntlet"))
        .arg("rescore")
        .arg(run)
        .output()
        .expect("gauntlet rescore runs")
}

/// `gauntlet run --filter TRIAL` into `out` (with `env` beside the usual), off the
/// runtime: it fails, and its JUnit line says the provider failed the trial with a
/// 429. The run's directory.
async fn run_failed_by_the_provider(out: &Path, upstream: &str, env: &[(&str, &str)]) -> PathBuf {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let first = {
        let (out, upstream) = (out.to_path_buf(), upstream.to_owned());
        tokio::task::spawn_blocking(move || {
            with_env(
                Command::new(crate::support::bin("gauntlet")),
                &out,
                &upstream,
            )
            .envs(env)
            .args(["run", "--filter", TRIAL])
            .output()
            .expect("gauntlet runs")
        })
        .await
        .expect("joined")
    };
    let stdout = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(!first.status.success(), "{}", crate::support::said(&first));
    assert!(
        stdout.contains(" infra=rate_limited "),
        "the JUnit line names the provider's fault: {}",
        crate::support::said(&first)
    );
    std::fs::read_dir(out)
        .expect("out")
        .map(|e| e.expect("entry").path())
        .find(|p| p.is_dir())
        .expect("a run directory")
}

/// As nextest runs a trial (the suite's harness, one trial by its exact name), the
/// failure of a trial the provider failed, which nextest's JUnit carries as the
/// test's failure, says first that it is the provider's and how to run it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_failure_nextest_reports_for_a_trial_the_provider_failed_names_the_provider() {
    let fake = FakeProvider::start(first_call_rate_limited())
        .await
        .expect("the fake provider starts");
    let upstream = fake.base_url();
    let out = tempfile::tempdir().expect("tempdir");
    let ran = {
        let (out, upstream) = (out.path().to_path_buf(), upstream.clone());
        tokio::task::spawn_blocking(move || {
            with_env(Command::new(qa_harness()), &out, &upstream)
                .args(["--exact", TRIAL])
                .output()
                .expect("the qa harness runs")
        })
        .await
        .expect("joined")
    };
    let said = crate::support::said(&ran);
    assert!(!ran.status.success(), "{said}");
    assert!(
        said.contains(&format!("---- {TRIAL} ----"))
            && said.contains(
                "infrastructure failure, not the agent's: the provider failed model call 0 (rate_limited)"
            )
            && said.contains("`gauntlet run --resume <run dir> --retry-infra` runs the trial again"),
        "the failure says it is the provider's: {said}"
    );
    let ledger = fake.ledger();
    assert_eq!(
        ledger.keys["sk-fake-provider-key"].rate_limited, 1,
        "{ledger:?}"
    );
}

/// How the trials the provider failed are run again: `gauntlet run --retry-infra`, or
/// the suite's harness under `GAUNTLET_RESUME` and `GAUNTLET_RETRY_INFRA`, as nextest
/// runs it.
#[derive(Debug, Clone, Copy)]
enum Rerun {
    Gauntlet,
    Harness,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_the_provider_failed_is_kept_apart_and_run_again_alone() {
    the_provider_failed_a_trial(Rerun::Gauntlet).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_nextest_retry_infra_runs_the_trials_the_provider_failed_and_skips_the_rest() {
    the_provider_failed_a_trial(Rerun::Harness).await;
}

async fn the_provider_failed_a_trial(rerun: Rerun) {
    let fake = FakeProvider::start(first_call_rate_limited())
        .await
        .expect("the fake provider starts");
    let upstream = fake.base_url();
    let out = tempfile::tempdir().expect("tempdir");
    let run = run_failed_by_the_provider(out.path(), &upstream, &[]).await;
    let before = summary(&run);
    assert_eq!(qa_counts(&before), (1, 0, 1), "{before:#}");
    assert_eq!(before["run"]["infra"], 1);
    assert_eq!(before["run"]["errors"], 0);
    assert_eq!(
        before["run"]["passed"], 0,
        "the provider's failure is no pass"
    );
    let row = &before["trials"][0];
    assert!(
        row["infra"]
            .as_str()
            .is_some_and(|c| c.contains("rate_limited") && c.contains("model call 0")),
        "{row:#}"
    );
    assert!(
        before["markdown"]
            .as_str()
            .is_some_and(|md| md.contains("error (the provider's failure)")),
        "the page shows it apart"
    );
    let checked = rescore(&run);
    assert!(
        checked.status.success(),
        "{}",
        crate::support::said(&checked)
    );

    // Only the provider's failures run again; the first record stays, superseded.
    let run_arg = run.to_string_lossy().into_owned();
    let again = {
        let (out, upstream, run_arg) =
            (out.path().to_path_buf(), upstream.clone(), run_arg.clone());
        tokio::task::spawn_blocking(move || match rerun {
            Rerun::Gauntlet => gauntlet(
                &out,
                &upstream,
                &["run", "--resume", &run_arg, "--retry-infra"],
            ),
            Rerun::Harness => with_env(Command::new(qa_harness()), &out, &upstream)
                .env("GAUNTLET_RESUME", &run_arg)
                .env("GAUNTLET_RETRY_INFRA", "1")
                // The app's other trials are in the plan too: each is skipped.
                .args(["qa::api-ledger::", "--test-threads", "1"])
                .output()
                .expect("the qa harness runs"),
        })
        .await
        .expect("joined")
    };
    let stdout = String::from_utf8_lossy(&again.stdout).into_owned();
    match rerun {
        Rerun::Gauntlet => assert!(
            stdout.contains("1 trial(s) the provider failed, run again"),
            "{}",
            crate::support::said(&again)
        ),
        // The plan's other trials are skipped, as nextest shows a skip.
        Rerun::Harness => assert!(
            stdout.contains(&format!("---- {TRIAL} ----"))
                && stdout.contains("0 passed; 1 failed;")
                && stdout.contains(" ignored")
                && !stdout.contains(" 0 ignored"),
            "{}",
            crate::support::said(&again)
        ),
    }
    assert!(
        !stdout.contains(" infra="),
        "the call was answered this time: {}",
        crate::support::said(&again)
    );
    let after = summary(&run);
    assert_eq!(
        qa_counts(&after),
        (1, 1, 0),
        "the rerun counts, and its verdict is the agent's own: {after:#}"
    );
    assert_eq!(
        after["superseded_attempts"].as_array().map(Vec::len),
        Some(1),
        "{after:#}"
    );
    let checked = rescore(&run);
    assert!(
        checked.status.success(),
        "{}",
        crate::support::said(&checked)
    );

    // Nothing the provider failed is left: a further retry has nothing to run.
    let none = {
        let (out, upstream) = (out.path().to_path_buf(), upstream.clone());
        tokio::task::spawn_blocking(move || {
            gauntlet(
                &out,
                &upstream,
                &[
                    "run",
                    "--resume",
                    &run_arg,
                    "--retry-infra",
                    "--nextest-filter",
                ],
            )
        })
        .await
        .expect("joined")
    };
    assert!(!none.status.success(), "{}", crate::support::said(&none));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("the provider failed no trial"),
        "{}",
        crate::support::said(&none)
    );
    let ledger = fake.ledger();
    assert_eq!(
        ledger.keys["sk-fake-provider-key"].rate_limited, 1,
        "{ledger:?}"
    );
}

/// A scripted trial served through a provider that rate-limits its first call
/// (`GAUNTLET_SCRIPTED_UPSTREAM`): the proxy absorbs the 429s, so the trial keeps the
/// verdict the script gives it without any provider, every call's entry carries the
/// script's note and its retries, and the provider billed exactly what was metered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_trial_through_a_rate_limiting_provider_keeps_its_verdict() {
    let fake = FakeProvider::start(first_call_rate_limited())
        .await
        .expect("the fake provider starts");
    let out = tempfile::tempdir().expect("tempdir");
    let run = {
        let (out, upstream) = (out.path().to_path_buf(), fake.base_url());
        tokio::task::spawn_blocking(move || {
            Command::new(crate::support::bin("gauntlet"))
                .args(["run", "--filter", TRIAL])
                .env_remove("CARGO")
                .env_remove("GAUNTLET_CONFIG")
                .env_remove("GAUNTLET_RESUME")
                .env("GAUNTLET_OUT", &out)
                .env("GAUNTLET_AGENT", "reference")
                .env("GAUNTLET_MODE", "scripted")
                .env("GAUNTLET_SCRIPTED_UPSTREAM", &upstream)
                .env("GAUNTLET_PROVIDER_RETRIES", "5")
                .env("GAUNTLET_N", "1")
                .output()
                .expect("gauntlet runs")
        })
        .await
        .expect("joined")
    };
    assert!(run.status.success(), "{}", crate::support::said(&run));
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("verdict=verified passed=true"), "{stdout}");
    let run_dir = std::fs::read_dir(out.path())
        .expect("out")
        .map(|e| e.expect("entry").path())
        .find(|p| p.is_dir())
        .expect("a run directory");
    let records = gauntlet::record::find_records(&run_dir).expect("the run's records");
    assert_eq!(records.len(), 1, "{records:?}");
    let rec = gauntlet::record::load(&records[0]).expect("the record loads");
    let usage = &rec.evidence.usage;
    assert!(!usage.is_empty());
    assert!(
        usage
            .iter()
            .all(|e| e.source == "upstream" && e.reply.is_some() && e.fault.is_none()),
        "served through the provider, scripted, no fault passed on: {usage:#?}"
    );
    let retried: usize = usage.iter().map(|e| e.retries.len()).sum();
    let billed = fake.ledger().keys[gauntlet::proxy::SCRIPTED_VIA_KEY].clone();
    assert!(
        retried > 0,
        "the provider rate-limited some call: {billed:?}"
    );
    assert_eq!(billed.rate_limited as usize, retried, "{billed:?}");
    assert_eq!(billed.calls as usize, usage.len() + retried, "{billed:?}");
    let metered = usage.iter().fold((0, 0), |(i, o), e| {
        (
            i + e.input_tokens.unwrap_or(0),
            o + e.output_tokens.unwrap_or(0),
        )
    });
    assert_eq!(
        metered,
        (billed.billed.input, billed.billed.output),
        "{billed:?}"
    );
    assert_eq!(
        rec.header.config.scripted_upstream.as_deref(),
        Some(fake.base_url().trim_end_matches('/'))
    );
}

/// An honest agent killed at its deadline while the proxy waits out the provider's
/// `retry-after` (within the policy) never met the fault itself: the call was cut during
/// the wait. The trial is the provider's failure all the same, not the agent's timeout:
/// the JUnit line says so, rescore agrees, and `--retry-infra` would run it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_whose_deadline_came_while_the_proxy_waited_on_the_provider_is_the_providers() {
    let mut config = first_call_rate_limited();
    config.faults.retry_after_secs = 50;
    let fake = FakeProvider::start(config)
        .await
        .expect("the fake provider starts");
    let upstream = fake.base_url();
    let out = tempfile::tempdir().expect("tempdir");
    // The proxy waits out the 429's retry-after; the agent's deadline comes first.
    let env = [
        ("GAUNTLET_PROVIDER_RETRIES", "3"),
        ("GAUNTLET_TIMEOUT_SECS", "3"),
    ];
    let run = run_failed_by_the_provider(out.path(), &upstream, &env).await;
    let before = summary(&run);
    assert_eq!(qa_counts(&before), (1, 0, 1), "{before:#}");
    let checked = rescore(&run);
    assert!(
        checked.status.success(),
        "{}",
        crate::support::said(&checked)
    );
    assert_eq!(
        fake.ledger().keys["sk-fake-provider-key"].calls,
        1,
        "the wait was cut, not sent again"
    );
}
