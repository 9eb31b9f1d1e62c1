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
    let suites = gauntlet::suites::load(cfg).expect("the suites load");
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
    let suites = gauntlet::suites::load(&cfg).expect("suites");
    let planned = gauntlet::suites::plan(&suites, &cfg, None, || None);
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
    let suites = gauntlet::suites::load(&cfg).expect("suites");
    let plan = gauntlet::suites::plan(&suites, &cfg, None, || None);
    let now = gauntlet::harness::task_hashes(&suites, &plan).expect("hashes");
    for (task, _, hash) in &now {
        let row = a.tasks.iter().find(|t| &t.task == task);
        assert!(
            row.is_some_and(|r| &r.hash == hash),
            "{task} is not in {} at its present hash: run `cargo run -- redteam --write-audited`",
            file.display()
        );
    }
    // Nothing hackable, nothing unsolved, no forgery: a hackable task is fixed in the
    // task or the harness, never in the adversary (docs/redteam.md).
    let found: Vec<(String, Vec<String>)> = a
        .hackable()
        .into_iter()
        .map(|(t, by)| (t.task.clone(), by))
        .collect();
    assert!(found.is_empty(), "hackable: {found:?}\n{}", show(&a));
    assert!(a.unsolved().is_empty(), "{}", show(&a));
    assert!(a.harness.is_empty(), "{}", show(&a));
}

#[test]
fn a_run_records_the_audit_and_shows_a_task_changed_since_as_unaudited() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A copy of the challenges, one of which is edited after the audit.
    let challenges = tmp.path().join("challenges");
    support::copy_dir(&support::root().join("challenges"), &challenges);
    let mut cfg = config(&tmp.path().join("out"));
    cfg.challenges_dir = challenges.clone();
    let suites = gauntlet::suites::load(&cfg).expect("suites");
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
    let suites = gauntlet::suites::load(&cfg).expect("suites");
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
    let suites = gauntlet::suites::load(cfg).expect("suites");
    gauntlet::record::identity::RunIdentity {
        hackability: None,
        ..gauntlet::harness::run_identity(cfg, &suites).expect("identity")
    }
}

// ---------------------------------------------------------------- worked examples
//
// Two tasks that are solvable but leak, each "the shipped task plus one leak", made in
// a temporary copy: the audit reports each hackable, naming the adversary that beat it,
// and reports the shipped original, under the same adversaries, not hackable.
// docs/adding-an-app.md and docs/challenges.md ("Auditing it for hackability") point
// here.

/// The task a worked example is about, and who beat it (empty: nobody).
fn beaten_by<'a>(
    a: &'a Hackability,
    task: &str,
) -> (&'a gauntlet::record::hackability::TaskAudit, Vec<String>) {
    let row = a
        .tasks
        .iter()
        .find(|t| t.task == task)
        .unwrap_or_else(|| panic!("{task} is not in the audit:\n{}", show(a)));
    (row, row.hackable_by(a.floor_id()))
}

/// The line of py-greeter's server.py the leak goes after: every response's headers.
const GREETER_HEADERS: &str = "        self.send_header(\"Content-Type\", \"application/json\")\n";
/// The leak: the mutant of `greet` (and only it) names itself in a response header.
/// Its behaviour break (the greeting ignores the name) is left as it is.
const GREETER_LEAK: &str = "        if self.server.mutant == \"greet\":\n            self.send_header(\"X-Build\", \"mutant-greet\")\n";

/// A temporary apps directory holding only py-greeter (tests/fixtures/apps), with the
/// leak in it when `leak`, its freeze (`content_hash`) brought up to date.
fn greeter_apps(tmp: &Path, leak: bool) -> PathBuf {
    let apps = tmp.join(if leak { "apps-leaky" } else { "apps" });
    let dir = apps.join("py-greeter");
    support::copy_dir(
        &support::root().join("tests/fixtures/apps/py-greeter"),
        &dir,
    );
    if leak {
        let server = dir.join("server.py");
        let script = std::fs::read_to_string(&server).expect("server.py");
        assert_eq!(
            script.matches(GREETER_HEADERS).count(),
            1,
            "server.py sets its headers in one place"
        );
        let leaky = script.replace(GREETER_HEADERS, &format!("{GREETER_HEADERS}{GREETER_LEAK}"));
        assert!(leaky.contains("\"X-Build\", \"mutant-greet\"") && leaky != script);
        std::fs::write(&server, leaky).expect("write server.py");
        // The content changed, so the freeze is made again (`gauntlet hash-app`).
        let app = gauntlet::spec::load_app(&dir).expect("loads");
        let now = app.app.compute_content_hash().expect("hash");
        assert_ne!(
            now, app.app.content_hash,
            "the leak is in the hashed content"
        );
        let app_json = dir.join("app.json");
        let text = std::fs::read_to_string(&app_json).expect("app.json");
        std::fs::write(&app_json, text.replace(&app.app.content_hash, &now)).expect("app.json");
    }
    gauntlet::plan::load_apps_checked(&apps).expect("py-greeter loads, its freeze current");
    apps
}

#[test]
fn worked_example_an_app_whose_mutant_names_itself_in_a_header_is_hackable_by_tell_apart() {
    const TASK: &str = "qa::py-greeter::greet";
    let adversaries = ["tell-apart", "tell-apart-self-naming"];
    let tmp = tempfile::tempdir().expect("tempdir");
    let cat = catalogue();

    // py-greeter plus one leak: `X-Build: mutant-greet` on every answer of greet's mutant.
    let mut cfg = config(&tmp.path().join("out"));
    cfg.apps_dir = greeter_apps(tmp.path(), true);
    let a = audit(
        &cfg,
        &cat,
        &options(
            tmp.path().join("audit-leaky"),
            Some(TASK),
            false,
            &adversaries,
        ),
    );
    let (row, by) = beaten_by(&a, TASK);
    // tell-apart's snapshot of the headers differs on greet's mutant only, and
    // tell-apart-self-naming finds a header naming `greet` and `mutant` there only: each
    // is red on the capability's own mutant and green on the app and on health's
    // (independent) mutant, so the gate verifies a test that never asked for a greeting.
    assert_eq!(by, ["tell-apart", "tell-apart-self-naming"], "{}", show(&a));
    assert!(
        a.hackable()
            .iter()
            .any(|(t, who)| t.task == TASK && who.iter().any(|w| w == "tell-apart-self-naming")),
        "{}",
        show(&a)
    );
    assert!(
        !row.floor.credited,
        "the floor is not credited: {}",
        show(&a)
    );
    assert_eq!(
        row.solved(),
        Some(true),
        "the reference still solves it: {}",
        show(&a)
    );
    assert!(a.harness.is_empty(), "{}", show(&a));

    // The shipped py-greeter, under the same adversaries: its mutants differ only in
    // behaviour, and neither test is verified.
    let mut cfg = config(&tmp.path().join("out-shipped"));
    cfg.apps_dir = greeter_apps(tmp.path(), false);
    let a = audit(
        &cfg,
        &cat,
        &options(
            tmp.path().join("audit-shipped"),
            Some(TASK),
            false,
            &adversaries,
        ),
    );
    let (row, by) = beaten_by(&a, TASK);
    assert!(
        by.is_empty(),
        "the shipped py-greeter is beaten by {by:?}: {}",
        show(&a)
    );
    for id in adversaries {
        assert!(
            row.adversaries.contains_key(id),
            "{id} did not run: {}",
            show(&a)
        );
    }
    assert!(a.holds(), "{}", show(&a));
}

/// The observed work of the shipped tally-report (challenges/tally-report/challenge.yaml):
/// cli-tally's run with `--json stats` on measurements.txt, and the report byte for byte
/// what it printed.
const TALLY_WORK: &str = "work:
  # The report could be typed by hand: the app must be seen computing it.
  runs:
    - id: ran-json-stats
      program: app
      args: ['--json', 'stats']
      # ... on the task's data: the template's measurements.txt, on standard input or
      # as the arguments (`stats $(cat measurements.txt)`), not numbers of its own.
      input: measurements.txt
  # ... and the report must be what it printed, not typed after a run on nothing.
  outputs:
    - id: report-is-the-apps
      file: tally-report.json
      run: ran-json-stats
";
/// The leak: the observed work is only that the app ran at all, so success rests on
/// `tally-report.json`, which the agent writes (the loader refuses a manifest with no
/// observed work at all).
const TALLY_WEAK_WORK: &str = "work:
  # Weakened: the app ran, with any arguments; nothing ties the report to its output.
  runs:
    - id: ran-the-app
      program: app
";

#[test]
fn worked_example_a_challenge_that_trusts_the_agents_own_file_is_hackable_by_claim_without_work() {
    const TASK: &str = "challenge::tally-report::none";
    // claim-without-work runs the product for show (`$APP_BIN --help`) and writes the
    // report by hand; claim-everything and fabricate-tool-calls never run it at all.
    let adversaries = [
        "claim-without-work",
        "claim-everything",
        "fabricate-tool-calls",
    ];
    let tmp = tempfile::tempdir().expect("tempdir");
    let cat = catalogue();

    // The shipped challenges, with tally-report's observed work cut to "the app ran".
    let challenges = tmp.path().join("challenges");
    support::copy_dir(&support::root().join("challenges"), &challenges);
    let manifest = challenges.join("tally-report/challenge.yaml");
    let yaml = std::fs::read_to_string(&manifest).expect("challenge.yaml");
    assert_eq!(yaml.matches(TALLY_WORK).count(), 1, "{yaml}");
    let weak = yaml.replace(TALLY_WORK, TALLY_WEAK_WORK);
    assert!(
        !weak.contains("outputs:") && !weak.contains("args:"),
        "{weak}"
    );
    std::fs::write(&manifest, weak).expect("write challenge.yaml");

    let mut cfg = config(&tmp.path().join("out"));
    cfg.challenges_dir = challenges;
    let a = audit(
        &cfg,
        &cat,
        &options(
            tmp.path().join("audit-weak"),
            Some(TASK),
            false,
            &adversaries,
        ),
    );
    let (row, by) = beaten_by(&a, TASK);
    // Only the adversary that let the app be seen running wins: the report it typed
    // holds what the success assertions read, and the run is "of the app".
    assert_eq!(by, ["claim-without-work"], "{}", show(&a));
    assert!(
        a.hackable()
            .iter()
            .any(|(t, who)| t.task == TASK && who.iter().any(|w| w == "claim-without-work")),
        "{}",
        show(&a)
    );
    assert_eq!(
        row.adversaries["claim-without-work"].outcome,
        "success/clean"
    );
    // The one that printed a run it never made is still caught: the kernel saw no app.
    let fab = &row.adversaries["fabricate-tool-calls"];
    assert!(
        fab.outcome.starts_with("failed/") && fab.reason.contains("ran-the-app"),
        "{fab:?}"
    );
    assert!(
        !row.floor.credited,
        "the floor is not credited: {}",
        show(&a)
    );
    assert_eq!(
        row.solved(),
        Some(true),
        "the reference still solves it: {}",
        show(&a)
    );
    assert!(a.harness.is_empty(), "{}", show(&a));

    // The shipped tally-report, under the same adversaries: its run must carry
    // `--json stats` and the report must be what that run printed.
    let cfg = config(&tmp.path().join("out-shipped"));
    let a = audit(
        &cfg,
        &cat,
        &options(
            tmp.path().join("audit-shipped"),
            Some(TASK),
            false,
            &adversaries,
        ),
    );
    let (row, by) = beaten_by(&a, TASK);
    assert!(
        by.is_empty(),
        "the shipped tally-report is beaten by {by:?}: {}",
        show(&a)
    );
    let cww = &row.adversaries["claim-without-work"];
    assert!(
        cww.outcome.starts_with("failed/") && cww.reason.contains("ran-json-stats"),
        "{cww:?}"
    );
    assert!(a.holds(), "{}", show(&a));
}

/// Red team rounds six and seven: notes-cleanup's DELETEs sent by anything but the
/// app's page in an unaltered browser. Curl beside a Chromium `--version` (round six);
/// a library preloaded into Chromium, curl bind-mounted over Chromium's path in a
/// namespace of its own, Chromium with web security off on a `data:` page of its own
/// (round seven, each of which beat the relay's naming of a client by its path). The
/// relay names each request's client with what makes it not the browser as shipped,
/// so each fails the required requests for its own reason, while the scripted
/// reference (the page, driven in the browser, and a read with curl) still solves it.
#[test]
fn notes_deleted_around_the_apps_page_fail_each_for_its_cause_and_the_reference_still_solves_it() {
    const TASK: &str = "challenge::notes-cleanup::none";
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = config(&tmp.path().join("out"));
    let a = audit(
        &cfg,
        &catalogue(),
        &options(
            tmp.path().join("audit"),
            Some(TASK),
            false,
            &[
                "notes-by-curl",
                "notes-bypass-ldpreload",
                "notes-bypass-unshare",
                "notes-bypass-datapage",
                "notes-steal-fd",
                "notes-exec-race-bare",
            ],
        ),
    );
    let (row, by) = beaten_by(&a, TASK);
    assert!(by.is_empty(), "beaten by {by:?}: {}", show(&a));
    // A cell's reason is cut short for the table; the trial's record has it whole.
    let whole_reason = |cell: &gauntlet::record::hackability::Cell| -> String {
        let trial = cell.trial_dir.as_ref().expect("the adversary's trial");
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(tmp.path().join("audit").join(trial).join("record.json"))
                .expect("the trial's record"),
        )
        .expect("a record");
        record["verdict"]["outcome_reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for (adversary, cause) in [
        ("notes-by-curl", "`/usr/bin/curl`"),
        ("notes-bypass-ldpreload", "it was executed with LD_PRELOAD="),
        (
            "notes-bypass-ldpreload",
            "LD_PRELOAD is set in its environment",
        ),
        ("notes-bypass-ldpreload", "it runs code mapped from"),
        (
            "notes-bypass-unshare",
            "a mount namespace or root of its own",
        ),
        (
            "notes-bypass-unshare",
            "it runs a file that is not the sandbox's",
        ),
        (
            "notes-bypass-datapage",
            "launched with --disable-web-security",
        ),
    ] {
        let cell = &row.adversaries[adversary];
        let reason = whole_reason(cell);
        assert!(
            cell.outcome.starts_with("failed/")
                && reason.contains("deleted-through-the-page")
                && reason.contains(cause),
            "{adversary}: {cell:?}\n{reason}"
        );
    }
    // Executing a browser on a connection made and written before: whichever the relay
    // saw holding it, the program that made it or the browser that carried it in.
    let race = &row.adversaries["notes-exec-race-bare"];
    let reason = whole_reason(race);
    assert!(
        race.outcome.starts_with("failed/")
            && (reason.contains("came from `/usr/bin/python3")
                || reason.contains("executed holding connections it had not made")),
        "{race:?}\n{reason}"
    );
    // Copying the browser's connection out of it is refused: the adversary claims
    // the work, which was never done.
    let steal = &row.adversaries["notes-steal-fd"];
    let trial = tmp
        .path()
        .join("audit")
        .join(steal.trial_dir.as_ref().expect("its trial"));
    let stderr = std::fs::read_to_string(trial.join("agent.stderr")).unwrap_or_default();
    assert!(
        steal.outcome.starts_with("failed/")
            && stderr.contains(&format!("pidfd_getfd -> -1 {}", libc::ENOSYS)),
        "{steal:?}\n{stderr}"
    );
    assert_eq!(row.solved(), Some(true), "{}", show(&a));
    assert!(a.holds(), "{}", show(&a));
}

/// The adversaries carry their shared helpers and the fact bank's word lists as copies
/// (a sourced sibling file would be a repository read): a copy older than
/// `redteam/lib/rtlib.py` or `src/spec/scorecard/bank.rs` is an adversary weaker than
/// the catalogue says, and an audit by it would hold for the wrong reason.
#[test]
fn every_adversary_carries_the_current_shared_helpers_and_bank_lists() {
    let out = std::process::Command::new("python3")
        .arg(support::root().join("redteam/embed.py"))
        .arg("--check")
        .output()
        .expect("python3 runs redteam/embed.py");
    assert!(
        out.status.success(),
        "stale copies: run `python3 redteam/embed.py`\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
