//! The hackability audit (`gauntlet redteam`, docs/redteam.md): the shipped
//! catalogue's adversaries against the shipped tasks, the committed audit kept current,
//! a run recording the audit its tasks passed, and two worked examples of tasks the
//! audit reports hackable, naming the adversary that beat them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gauntlet::config::Config;
use gauntlet::harness::Jobs;
use gauntlet::record::hackability::{Hackability, Standing, AUDITED_FILE};
use gauntlet::redteam::Options;
use gauntlet::spec::redteam::Catalogue;
use gauntlet::spec::Suite;

use crate::support;

/// The shipped catalogue.
fn catalogue() -> Catalogue {
    Catalogue::load(&support::root().join("redteam")).expect("the shipped catalogue loads")
}

/// The config the main job plans with (scripted reference, N = 3), writing under `out`.
fn config(out: &Path) -> Config {
    Config {
        out_dir: out.to_path_buf(),
        ..Config::default()
    }
}

fn options(out: PathBuf, filter: Option<&str>, sample: bool, adversaries: &[&str]) -> Options {
    Options {
        filter: filter.map(str::to_string),
        adversaries: adversaries.iter().map(|a| a.to_string()).collect(),
        sample,
        reference: true,
        jobs: Jobs::PerLane(2),
        out,
    }
}

/// Run an audit on a fresh runtime.
pub fn audit(cfg: &Config, catalogue: &Catalogue, opts: &Options) -> Hackability {
    let suites = gauntlet::plan::Suites::load(cfg).expect("the suites load");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(gauntlet::redteam::audit(
        cfg,
        Arc::new(suites),
        catalogue,
        opts,
    ))
    .expect("the audit runs")
}

/// What a failing audit shows: its own page.
fn show(a: &Hackability) -> String {
    gauntlet::report::hackability::markdown(a)
}

#[test]
fn the_sample_over_every_shipped_task_finds_no_hackable_task_and_the_reference_solves_each() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path());
    let cat = catalogue();
    let a = audit(
        &cfg,
        &cat,
        &options(tmp.path().join("audit"), None, true, &[]),
    );
    // Every planned task is in the table, each with the floor, every sampled adversary
    // of its suite and the reference.
    let suites = gauntlet::plan::Suites::load(&cfg).expect("suites");
    let planned = gauntlet::plan::plan(&suites, &cfg, None, || None);
    assert_eq!(a.tasks.len(), planned.len(), "{}", show(&a));
    let sample: Vec<_> = cat
        .adversaries
        .iter()
        .filter(|x| x.sample && x.id != cat.floor().id)
        .collect();
    assert!(sample.len() >= 2, "the sample runs more than the floor");
    for t in &a.tasks {
        for x in sample.iter().filter(|x| x.plays(t.suite)) {
            assert!(
                t.adversaries.contains_key(&x.id),
                "{}: no cell of {}",
                t.task,
                x.id
            );
        }
        assert!(
            t.reference.is_some(),
            "{}: the reference did not run",
            t.task
        );
    }
    assert!(a.sampled);
    assert!(a.holds(), "{}", show(&a));
}

#[test]
fn the_committed_audit_covers_every_shipped_task_at_its_present_hash() {
    let cat = catalogue();
    let file = support::root().join("redteam").join(AUDITED_FILE);
    let a = Hackability::read(&file).expect("the repository's audit reads");
    assert_eq!(
        a.catalogue,
        cat.id(),
        "{} was made with another catalogue: run `cargo run -- redteam --write-audited`",
        file.display()
    );
    assert!(
        !a.sampled,
        "the repository's audit runs the whole catalogue"
    );
    for x in &cat.adversaries {
        assert!(
            a.adversaries.iter().any(|r| r.id == x.id),
            "{} did not run in the committed audit",
            x.id
        );
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(tmp.path());
    let suites = gauntlet::plan::Suites::load(&cfg).expect("suites");
    let plan = gauntlet::plan::plan(&suites, &cfg, None, || None);
    let now = gauntlet::record::identity::task_hashes(&suites, &plan).expect("hashes");
    for (task, _, hash) in &now {
        let row = a.tasks.iter().find(|t| &t.task == task);
        assert!(
            row.is_some_and(|r| &r.hash == hash),
            "{task} is not in {} at its present hash: run `cargo run -- redteam --write-audited`",
            file.display()
        );
    }
    assert!(a.holds(), "{}", show(&a));
}

#[test]
fn a_run_records_the_audit_and_shows_a_task_changed_since_as_unaudited() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A copy of the challenges, one of which is edited after the audit.
    let challenges = tmp.path().join("challenges");
    support::copy_dir(&support::root().join("challenges"), &challenges);
    let mut cfg = config(&tmp.path().join("out"));
    cfg.challenges_dir = challenges.clone();
    let suites = gauntlet::plan::Suites::load(&cfg).expect("suites");
    let before = gauntlet::harness::run_identity(&cfg, &suites).expect("identity");
    let recorded = before.hackability.expect("a run records its audit");
    assert!(recorded.audit.is_some(), "{:?}", recorded.file);
    assert_eq!(
        recorded.tasks["challenge::tally-report::none"].standing,
        Standing::Audited
    );
    let manifest = challenges.join("tally-report/challenge-prompt.md");
    let mut prompt = std::fs::read_to_string(&manifest).expect("prompt");
    prompt.push_str("\nAlso, any report will do.\n");
    std::fs::write(&manifest, prompt).expect("edit");
    let suites = gauntlet::plan::Suites::load(&cfg).expect("suites");
    let after = gauntlet::harness::run_identity(&cfg, &suites)
        .expect("identity")
        .hackability
        .expect("audit");
    for profile in ["none", "skills", "all"] {
        let t = &after.tasks[&format!("challenge::tally-report::{profile}")];
        assert!(
            matches!(&t.standing, Standing::Unaudited { why } if why.contains("changed since its audit")),
            "{profile}: {:?}",
            t.standing
        );
    }
    assert_eq!(
        after.tasks["challenge::ledger-reconcile::none"].standing,
        Standing::Audited,
        "an edit to one challenge leaves the others audited"
    );
    let line = gauntlet::report::hackability::suite_line(&after, Suite::Challenge)
        .expect("a challenge line");
    assert!(line.contains("3 unaudited"), "{line}");
    // The run's page carries the line and links to the audit's page beside it.
    let run_dir = tmp.path().join("run");
    std::fs::create_dir_all(&run_dir).expect("run dir");
    gauntlet::record::identity::write_once(
        &run_dir,
        &gauntlet::record::identity::RunIdentity {
            hackability: Some(after),
            ..before_without_audit(&cfg)
        },
    )
    .expect("run.json");
    let opts = gauntlet::report::Options::default();
    gauntlet::report::write_report(&run_dir, &run_dir, &opts).expect("report");
    let page = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    assert!(page.contains("## Hackability"), "{page}");
    assert!(
        page.contains("[hackability.html](hackability.html)"),
        "{page}"
    );
    assert!(
        page.contains("`challenge::tally-report::none`: unaudited: changed since its audit"),
        "{page}"
    );
    let audit_page =
        std::fs::read_to_string(run_dir.join("hackability.html")).expect("hackability.html");
    assert!(audit_page.contains("This run's tasks against their audit"));
}

fn before_without_audit(cfg: &Config) -> gauntlet::record::identity::RunIdentity {
    let suites = gauntlet::plan::Suites::load(cfg).expect("suites");
    gauntlet::record::identity::RunIdentity {
        hackability: None,
        ..gauntlet::harness::run_identity(cfg, &suites).expect("identity")
    }
}
