//! A repository that adopts gauntlet from outside: `gauntlet init` writes one into a
//! temporary directory outside this checkout, depending on this checkout by path; the
//! new package is built, and its trials run from its own directory under its own
//! nextest configuration, as its README says. Its JUnit must name each trial and pin
//! each record, its records must rescore, and its report must be written. Also: its
//! app has no tell, its workflow passes the pinned actionlint, and `gauntlet init`
//! into a directory that holds anything fails and writes nothing.
//!
//! Its build shares this build's target directory (`CARGO_TARGET_DIR`), with this
//! checkout's `Cargo.lock` as the new package's lock before its first build and the
//! scaffold compiling dependencies with this package's profile: the same versions,
//! features and profile make the same units, so cargo reuses what this checkout
//! compiled rather than compiling gauntlet's dependency tree again. What it does compile
//! is gauntlet's library (cargo keys a path dependency's unit apart from a workspace
//! member's), the scaffold's own targets and, when this checkout was so far built only
//! for its tests, the dependencies that this package's dev-dependencies give other
//! features in a test build: the same units a later `cargo build --bins` or `cargo run`
//! of this checkout would compile, so they are compiled once for both. Its nested
//! cargo and trials take the machine (`.config/nextest.toml`). Under `CI=true` every
//! tool it needs must be there; elsewhere a missing one skips it, saying which.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use gauntlet::binaries::bin_dir;
use gauntlet::scaffold::{APP, CHALLENGE};

use super::archive::{describe, path_with_cargo};
use crate::support::{bin, root};

/// Why this machine cannot run a scaffold's trials, if it cannot: a tool missing.
/// Under `CI=true` that fails the test instead.
fn missing_tool(needs_cargo: bool) -> Option<String> {
    let runs = |cmd: &mut Command| cmd.output().is_ok_and(|o| o.status.success());
    let why = if !Path::new("/usr/bin/python3").is_file() {
        Some("/usr/bin/python3 is missing: the scaffold's app runs on it".to_string())
    } else if !runs(Command::new("curl").arg("--version")) {
        Some("curl is missing: the scaffold's challenge flow runs it".to_string())
    } else if needs_cargo && !runs(cargo().args(["nextest", "--version"])) {
        Some("cargo nextest is missing: the scaffold's README runs its tests with it".into())
    } else {
        None
    };
    if let Some(why) = &why {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "{why} (CI installs it: .ci/install)"
        );
        eprintln!("note: skipped: {why}");
    }
    why
}

/// cargo, as the one running this test named it; `cargo` on PATH otherwise.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// What cargo, nextest and gauntlet handed this test must not reach the new
/// repository's commands: they run as its user runs them, in its directory, with
/// gauntlet's programs where an install puts them (on PATH, and named by
/// `GAUNTLET_BIN_DIR`: this build's) and this build's target directory.
fn as_adopter<'a>(cmd: &'a mut Command, project: &Path) -> &'a mut Command {
    // What cargo sets for this package's test (its manifest, its binaries, its target
    // directory) goes; how cargo itself is configured (CARGO_HOME, CARGO_INCREMENTAL,
    // RUSTFLAGS, as this build had them) stays, or no unit would be reused.
    const THIS_PACKAGE: &[&str] = &[
        "CARGO_MANIFEST_",
        "CARGO_PKG_",
        "CARGO_BIN_",
        "CARGO_CRATE_",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_",
        "CARGO_RUSTC_CURRENT_DIR",
        "NEXTEST",
        "GAUNTLET_",
    ];
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k == "CARGO" || THIS_PACKAGE.iter().any(|p| k.starts_with(p)) {
            cmd.env_remove(&*k);
        }
    }
    cmd.current_dir(project)
        .env("PATH", path_with_cargo(vec![bin_dir()]))
        .env("GAUNTLET_BIN_DIR", bin_dir())
        .env("CARGO_TARGET_DIR", target_dir())
}

/// This build's target directory: above the profile directory its binaries are in.
pub fn target_dir() -> PathBuf {
    bin_dir()
        .parent()
        .map(Path::to_path_buf)
        .expect("the binaries sit in target/<profile>/")
}

/// A directory for new repositories, outside this checkout.
fn outside() -> tempfile::TempDir {
    let tmp = tempfile::Builder::new()
        .prefix("gauntlet-adopt-")
        .tempdir_in(std::env::temp_dir())
        .expect("a temporary directory");
    let checkout = root().canonicalize().expect("the checkout");
    let here = tmp.path().canonicalize().expect("the temporary directory");
    assert!(
        !here.starts_with(&checkout),
        "{} is inside the checkout {}: set TMPDIR elsewhere",
        here.display(),
        checkout.display()
    );
    tmp
}

/// `gauntlet init <dir> --gauntlet-path <this checkout>`, from `cwd`.
fn init(cwd: &Path, dir: &str) -> Output {
    let mut cmd = Command::new(bin("gauntlet"));
    as_adopter(&mut cmd, cwd)
        .arg("init")
        .arg(dir)
        .arg("--gauntlet-path")
        .arg(root())
        .output()
        .expect("gauntlet runs")
}

/// A new repository `shop` made by `gauntlet init` outside this checkout, unless a tool
/// its trials need is missing here (and this is not CI).
fn scaffolded(needs_cargo: bool) -> Option<(tempfile::TempDir, PathBuf)> {
    if missing_tool(needs_cargo).is_some() {
        return None;
    }
    let tmp = outside();
    let o = init(tmp.path(), "shop");
    assert!(o.status.success(), "{}", describe("gauntlet init", &o));
    let project = tmp.path().join("shop");
    Some((tmp, project))
}

/// The test binaries `cargo nextest list --message-format json` names (its
/// `rust-suites`).
fn binaries(listing: &[u8]) -> Vec<PathBuf> {
    let doc: serde_json::Value = serde_json::from_slice(listing).expect("nextest's list is JSON");
    doc["rust-suites"]
        .as_object()
        .expect("the list names its binaries")
        .values()
        .filter_map(|b| b["binary-path"].as_str().map(PathBuf::from))
        .collect()
}

/// A file's entries under `dir`, relative and sorted, with each file's bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
                out.push((
                    p.strip_prefix(dir).expect("below").to_path_buf(),
                    Vec::new(),
                ));
            } else {
                let bytes = std::fs::read(&p).expect("read");
                out.push((p.strip_prefix(dir).expect("below").to_path_buf(), bytes));
            }
        }
    }
    out.sort();
    out
}

/// The trials the scaffold plans, by name: one per capability of its app, one per
/// instruction profile of its challenge.
fn planned(project: &Path) -> Vec<String> {
    let app = gauntlet::spec::load_app(&project.join("apps").join(APP)).expect("the app loads");
    let mut names: Vec<String> = app
        .corpus
        .capabilities
        .iter()
        .map(|c| format!("qa::{APP}::{}", c.id))
        .collect();
    names.extend(
        gauntlet::spec::challenge::Profile::ALL.map(|p| format!("challenge::{CHALLENGE}::{p}")),
    );
    names
}

/// The `<testcase>`s of a JUnit report: each one's name and its body.
fn testcases(junit: &str) -> Vec<(String, String)> {
    junit
        .split("<testcase ")
        .skip(1)
        .map(|case| {
            let name = case
                .split("name=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or_default()
                .to_owned();
            let body = case.split("</testcase>").next().unwrap_or(case).to_owned();
            (name, body)
        })
        .collect()
}

#[test]
fn init_refuses_a_directory_that_holds_anything_and_writes_nothing() {
    let tmp = outside();
    let occupied = tmp.path().join("occupied");
    std::fs::create_dir_all(occupied.join("docs")).expect("mkdir");
    std::fs::write(occupied.join("docs/notes.md"), "mine\n").expect("write");
    let before = tree(&occupied);
    let o = init(tmp.path(), "occupied");
    let said = describe("gauntlet init occupied", &o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("occupied: is not empty"), "{said}");
    assert!(err.contains("wrote nothing"), "{said}");
    assert_eq!(tree(&occupied), before, "nothing was written: {said}");
}

#[test]
fn the_scaffolds_app_has_no_tell_and_its_workflow_passes_the_pinned_actionlint() {
    let Some((_tmp, project)) = scaffolded(false) else {
        return;
    };

    let mut tells = Command::new(bin("gauntlet"));
    let o = as_adopter(&mut tells, &project)
        .args(["tells", APP])
        .output()
        .expect("gauntlet tells runs");
    let said = describe("gauntlet tells", &o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("0 tell(s)"),
        "{said}"
    );

    if let Some(linter) = super::workflow::actionlint() {
        let o = super::workflow::lint(linter, &project.join(".github/workflows/gauntlet.yml"));
        let said = describe("actionlint of the scaffold's workflow", &o);
        assert_eq!(o.status.code(), Some(0), "{said}");
        assert!(o.stdout.is_empty(), "{said}");
    }
}

#[test]
fn a_repository_made_by_init_builds_against_this_checkout_and_runs_its_own_trials() {
    let Some((tmp, project)) = scaffolded(true) else {
        return;
    };

    // The dependencies' units are shared only while their profile is one (see the
    // module's doc).
    let deps_profile = |file: &Path| -> toml::Value {
        let text = std::fs::read_to_string(file).expect("Cargo.toml reads");
        let doc: toml::Value = toml::from_str(&text).expect("Cargo.toml is TOML");
        doc["profile"]["dev"]["package"]["*"].clone()
    };
    assert_eq!(
        deps_profile(&project.join("Cargo.toml")),
        deps_profile(&root().join("Cargo.toml")),
        "the scaffold compiles dependencies otherwise than this package: its build would reuse none of this one"
    );
    std::fs::copy(root().join("Cargo.lock"), project.join("Cargo.lock")).expect("the lock");

    // Its build, then its trials, each as its README runs them (a filter of its app).
    let nextest = |args: &[&str]| -> (Output, f64) {
        let started = Instant::now();
        let mut cmd = cargo();
        let o = as_adopter(&mut cmd, &project)
            .arg("nextest")
            .args(args)
            .args(["--profile", "ci"])
            .output()
            .expect("cargo nextest runs");
        (o, started.elapsed().as_secs_f64())
    };
    let (o, build_secs) = nextest(&["run", "--no-run"]);
    assert!(o.status.success(), "{}", describe("the build", &o));
    let (o, _) = nextest(&["list", "--message-format", "json"]);
    assert!(o.status.success(), "{}", describe("cargo nextest list", &o));
    // Built where this build is: the dependencies it reused are there.
    let bins = binaries(&o.stdout);
    assert!(
        !bins.is_empty() && bins.iter().all(|b| b.starts_with(target_dir())),
        "not in {}: {bins:?}",
        target_dir().display()
    );
    let filter = format!("test({APP})");
    let (o, run_secs) = nextest(&["run", "-E", &filter]);
    let said = describe(&format!("cargo nextest run -E '{filter}'"), &o);
    assert!(o.status.success(), "{said}");
    eprintln!("the new repository: built in {build_secs:.1} s, its trials ran in {run_secs:.1} s");

    // JUnit names every planned trial, each passed, each pinning its record.
    let junit_file = project.join("target/nextest/ci/junit.xml");
    let junit = std::fs::read_to_string(&junit_file)
        .unwrap_or_else(|e| panic!("{}: {e}\n{said}", junit_file.display()));
    let cases = testcases(&junit);
    let mut names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let mut want = planned(&project);
    want.sort();
    assert_eq!(names, want, "{junit}");
    let runs = project.join("target/gauntlet/runs");
    let run_dirs: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap_or_else(|e| panic!("{}: {e}", runs.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(run_dirs.len(), 1, "one run: {run_dirs:?}");
    let run_dir = &run_dirs[0];
    for (name, body) in &cases {
        assert!(
            !body.contains("<failure") && !body.contains("<error"),
            "{name}: {body}"
        );
        let record = run_dir.join(name.replace("::", ".")).join("record.json");
        let bytes = std::fs::read(&record).unwrap_or_else(|e| panic!("{}: {e}", record.display()));
        let line = format!("gauntlet: {name} ");
        let out = body
            .lines()
            .find(|l| l.contains(&line))
            .unwrap_or_else(|| panic!("{name}: no outcome line in JUnit: {body}"));
        assert!(out.contains("passed=true"), "{out}");
        assert!(
            out.contains(&format!("record_sha256={}", gauntlet::hash::sha256(&bytes))),
            "{name}: JUnit pins another record than {}: {out}",
            record.display()
        );
        // The verdict each trial's record holds is the honest best one.
        let rec = gauntlet::record::any::load_any(&record).expect("the record loads");
        assert!(rec.passed(), "{name}: {}", rec.summary_line());
        match rec.into_qa() {
            Ok(qa) => {
                let ambiguous = name.ends_with("::fast-under-load");
                let want = if ambiguous {
                    gauntlet::score::Outcome::Unverified
                } else {
                    gauntlet::score::Outcome::Verified
                };
                assert_eq!(qa.verdict.outcome, want, "{name}: {}", qa.verdict.reason);
            }
            Err(other) => {
                let c = other.into_challenge().expect("a qa or challenge record");
                assert_eq!(
                    c.verdict.task_outcome,
                    gauntlet::score::challenge::TaskOutcome::Success,
                    "{name}: {}",
                    c.verdict.outcome_reason
                );
                assert_eq!(
                    c.verdict.evaluation_validity,
                    gauntlet::score::challenge::Validity::Clean,
                    "{name}: {}",
                    c.verdict.validity_reason
                );
            }
        }
    }

    // The records rescore to the same verdicts, and the pages are written.
    let gauntlet = |args: &[&str]| -> Output {
        let mut cmd = Command::new(bin("gauntlet"));
        as_adopter(&mut cmd, &project)
            .args(args)
            .output()
            .expect("gauntlet runs")
    };
    let run = run_dir.to_str().expect("a UTF-8 path");
    let o = gauntlet(&["rescore", run]);
    let said = describe("gauntlet rescore", &o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    let table = String::from_utf8_lossy(&o.stdout);
    for name in &want {
        assert!(table.contains(name.as_str()), "{name} not rescored: {said}");
    }
    assert!(
        table.contains(&format!("manifest: {} planned trials", want.len())),
        "{said}"
    );
    let pages = tmp.path().join("pages");
    let o = gauntlet(&["report", run, "--out", pages.to_str().expect("UTF-8")]);
    let said = describe("gauntlet report", &o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    for page in ["report.md", "report.html", "summary.json"] {
        assert!(pages.join(page).is_file(), "no {page}: {said}");
    }
    let md = std::fs::read_to_string(pages.join("report.md")).expect("report.md");
    assert!(md.contains(&format!("qa::{APP}::add-item")), "{md}");

    // The README's main job: every trial, and a results page.
    let out = tmp.path().join("main-job");
    let mut cmd = Command::new(bin_dir().join("gauntlet"));
    let o = as_adopter(&mut cmd, &project)
        .env("GAUNTLET_OUT", &out)
        .arg("run")
        .output()
        .expect("gauntlet run");
    let said = describe("gauntlet run", &o);
    assert!(o.status.success(), "{said}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let page = stdout
        .rsplit("results page: ")
        .next()
        .map(str::trim)
        .map(PathBuf::from)
        .expect("the page's path");
    assert!(page.starts_with(&out) && page.is_file(), "{said}");
    assert!(stdout.contains(&format!("{} trials", want.len())), "{said}");
}
