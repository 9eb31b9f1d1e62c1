//! Off only on purpose, and the sandbox's own evidence: an unsealed trial says so in its
//! record, its summary line and on the results page; a harness that cannot seal refuses
//! the trial naming the cause; a sealed trial's record hashes the app's and every
//! mutant's logs, so an edited log fails rescore.

use std::path::{Path, PathBuf};
use std::process::Command;

use gauntlet::config::Sandbox;
use gauntlet::score::Outcome;

use crate::support::*;

fn honest(sandbox: Sandbox, out: &Path) -> (gauntlet::record::QaRecord, PathBuf) {
    let cfg = gauntlet::config::Config {
        sandbox,
        ..config(fixture_agent("honest-balance.sh"), out)
    };
    run_trial(&ledger(), "balance", &cfg)
}

#[test]
fn an_unsealed_trial_says_so_in_its_record_its_summary_line_and_the_page() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = honest(Sandbox::Off, out.path());
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    assert_eq!(rec.config.sandbox, Sandbox::Off);
    let line = gauntlet::run::summary_line(&rec);
    assert!(line.contains(" sandbox=off"), "{line}");
    let run_dir = dir.parent().expect("run dir");
    let pages =
        gauntlet::report::write_report(run_dir, &out.path().join("pages"), &Default::default())
            .expect("report");
    assert!(
        pages.markdown.contains("**Unsealed.**"),
        "{}",
        pages.markdown
    );

    let sealed_out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = honest(Sandbox::Sealed, sealed_out.path());
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    assert_eq!(rec.config.sandbox, Sandbox::Sealed);
    assert!(!gauntlet::run::summary_line(&rec).contains("sandbox=off"));
    let pages = gauntlet::report::write_report(
        dir.parent().expect("run dir"),
        &sealed_out.path().join("pages"),
        &Default::default(),
    )
    .expect("report");
    assert!(!pages.markdown.contains("Unsealed"), "{}", pages.markdown);
}

#[test]
fn a_sealed_record_hashes_the_app_and_mutant_logs_and_an_edited_log_fails_rescore() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = honest(Sandbox::Sealed, out.path());
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    let gate = rec.evidence.gate.as_ref().expect("gate ran");
    // The agent's app plus one target per gate run, each with stdout and stderr.
    assert_eq!(rec.evidence.world_logs.len(), 2 * (1 + gate.runs.len()));
    assert_eq!(gate.order.len(), gate.runs.len());
    assert_eq!(
        gate.order,
        gate.runs.iter().map(|r| r.target).collect::<Vec<_>>(),
        "the runs are recorded in the order drawn"
    );
    let record = dir.join("record.json");
    assert!(gauntlet::record::rescore::rescore_file(&record).agrees());
    let log = rec
        .evidence
        .world_logs
        .iter()
        .find(|l| l.bytes > 0)
        .expect("some app log has content");
    let path = dir.join(&log.path);
    let mut bytes = std::fs::read(&path).expect("log");
    bytes[0] ^= 1;
    std::fs::write(&path, bytes).expect("edit the log");
    let row = gauntlet::record::rescore::rescore_file(&record);
    assert!(!row.agrees(), "an edited app log must fail rescore");
    assert!(
        row.raw_problems.iter().any(|p| p.contains(&log.path)),
        "{:?}",
        row.raw_problems
    );
}

/// A harness directory with every binary but the sandbox helper: the sealed trial must
/// refuse to run and say why, and `GAUNTLET_SANDBOX=off` must run it.
#[test]
fn without_the_sandbox_a_trial_refuses_naming_the_cause_unless_turned_off() {
    let gauntlet = PathBuf::from(env!("CARGO_BIN_EXE_gauntlet"));
    let built = gauntlet.parent().expect("bin dir");
    let bins = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(built).expect("bin dir").flatten() {
        let name = entry.file_name();
        if entry.path().is_file() && name != "gauntlet-seal" {
            std::os::unix::fs::symlink(entry.path(), bins.path().join(&name)).expect("link");
        }
    }
    let run = |sandbox: &str| {
        let out = tempfile::tempdir().expect("tempdir").keep();
        let o = Command::new(&gauntlet)
            .args(["run", "--filter", "qa::api-ledger::health", "--jobs", "1"])
            // Not a build: `gauntlet run` builds first when run by cargo.
            .env_remove("CARGO")
            .env_remove("GAUNTLET_CONFIG")
            .env("GAUNTLET_BIN_DIR", bins.path())
            .env("GAUNTLET_OUT", &out)
            .env("GAUNTLET_SANDBOX", sandbox)
            .env("GAUNTLET_N", "1")
            .output()
            .expect("gauntlet runs");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        (o.status.code(), text)
    };
    let (code, text) = run("sealed");
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("gauntlet-seal"), "the cause is named: {text}");
    assert!(text.contains("verdict=error"), "{text}");
    let (code, text) = run("off");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("sandbox=off"), "{text}");
}
