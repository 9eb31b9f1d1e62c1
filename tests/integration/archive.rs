//! Build once, run on two machines: one nextest archive, each partition in a fresh
//! source tree with no `target/`, and the build tree out of reach — then one merge
//! whose pages say what an unsplit run of the same trials says, and a comparison with
//! that unsplit run.
//!
//! Every step of this that the CI workflow (`.github/workflows/gauntlet.yml`) runs is
//! run here from the workflow's own text: the archive step, the partition step (its
//! `${{ matrix.partition }}` of `${{ strategy.job-total }}` = 2), the merge job's
//! steps that take gauntlet from the archive, merge, report and compare. Each runs as
//! GitHub runs a `run:` script, with the workflow's env but for what this test sets
//! (where the archive goes, a filter of a few trials), and what one job uploads is
//! moved to where the next job's download puts it. So the workflow cannot drift from
//! what is run here; `workflow.rs` checks what cannot be run here (the artifact
//! hand-offs, actionlint).
//!
//! A second machine is simulated by a mount namespace: each partition, and the merge
//! job, runs under `unshare --mount` with an empty tmpfs over the tree this test was
//! built in, so a path fixed at build time finds nothing (on a real second machine it
//! would not exist). When this test itself runs from an archive, it ships that archive
//! on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::workflow::{self, Workflow};

/// The trials both machines share out: some of every suite, none needing a browser
/// (the browser's own partitioning is the same code path, and minutes slower). The
/// workflow's `TEST_FILTER` for the partition step.
const FILTER: &str = "(binary(qa) & test(/^qa::(api-ledger|cli-tally-2)::/)) \
    | (binary(challenge) & test(/^challenge::(ledger-reconcile|tally-report)::/)) \
    | (binary(scorecard) & test(/^scorecard::(memory|initiative|world)::/))";

/// The partitions run here: the workflow's matrix, two wide.
const PARTITIONS: u32 = 2;

pub fn describe(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What nextest and cargo hand this test (its package, its run, its binaries) must not
/// leak into the machines it simulates.
fn clean_slate(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if (k.starts_with("CARGO_") && k != "CARGO_HOME")
            || k.starts_with("NEXTEST")
            || k.starts_with("GAUNTLET_")
            || k == "CARGO"
        {
            cmd.env_remove(&*k);
        }
    }
}

/// cargo, as the one running this test named it; `cargo` on PATH otherwise.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    clean_slate(&mut cmd);
    cmd
}

/// A PATH of `first`, then the directory of the cargo running this test, then this
/// test's own PATH: commands run under it reach this cargo as `cargo`.
pub fn path_with_cargo(mut first: Vec<PathBuf>) -> std::ffi::OsString {
    first.extend(
        std::env::var_os("CARGO")
            .map(PathBuf::from)
            .and_then(|c| c.parent().map(Path::to_path_buf)),
    );
    first.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(first).expect("PATH joins")
}

/// Run `inner` (its program, arguments, environment and directory) on a "machine" where
/// `hidden` (the build tree) is an empty directory: unshare(1) with a shell that mounts
/// a tmpfs over it and then execs the program, environment and all.
fn on_machine(inner: &Command, hidden: &Path) -> Output {
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=1m hidden "$0" && exec "$@""#)
        .arg(hidden)
        .arg(inner.get_program())
        .args(inner.get_args());
    if let Some(dir) = inner.get_current_dir() {
        cmd.current_dir(dir);
    }
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.output().expect("unshare runs")
}

/// One job of the workflow on one simulated machine: the `run:` scripts of its steps,
/// run as GitHub runs them (bash; the workflow's env with this test's values, the
/// step's own env, `GITHUB_OUTPUT`, `GITHUB_PATH`, `RUNNER_TEMP`) in `tree`, with
/// `hidden` out of sight when given.
struct Job<'a> {
    wf: &'a Workflow,
    name: &'static str,
    tree: PathBuf,
    hidden: Option<PathBuf>,
    env: BTreeMap<String, String>,
    /// This machine's runner directory: RUNNER_TEMP and the step files.
    runner: PathBuf,
    /// What steps added to PATH through GITHUB_PATH, for the steps after them.
    path: Vec<PathBuf>,
}

/// A step's end: its output and what it wrote to `GITHUB_OUTPUT`.
struct Step {
    out: Output,
    outputs: BTreeMap<String, String>,
}

impl<'a> Job<'a> {
    fn new(
        wf: &'a Workflow,
        name: &'static str,
        tree: &Path,
        runner: &Path,
        hidden: Option<&Path>,
    ) -> Job<'a> {
        std::fs::create_dir_all(runner.join("temp")).expect("mkdir RUNNER_TEMP");
        Job {
            wf,
            name,
            tree: tree.to_path_buf(),
            hidden: hidden.map(Path::to_path_buf),
            env: BTreeMap::new(),
            runner: runner.to_path_buf(),
            path: Vec::new(),
        }
    }

    fn run(&mut self, id: &str, values: &[(&str, &str)]) -> Step {
        let mut inner = workflow::bash(&self.wf.script(self.name, id, values));
        inner.current_dir(&self.tree);
        clean_slate(&mut inner);
        inner.envs(&self.env);
        inner.envs(self.wf.step_env(self.name, id, values));
        let output = self.runner.join(format!("output-{id}"));
        let added = self.runner.join(format!("path-{id}"));
        for f in [&output, &added] {
            std::fs::write(f, "").expect("a step file");
        }
        // The scripts' `cargo` is the one running this test, as `cargo()` is.
        inner
            .env("PATH", path_with_cargo(self.path.clone()))
            .env("RUNNER_TEMP", self.runner.join("temp"))
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_PATH", &added);
        let out = match &self.hidden {
            Some(hidden) => on_machine(&inner, hidden),
            None => inner.output().expect("bash runs"),
        };
        let read = |f: &Path| std::fs::read_to_string(f).expect("a step file");
        // GitHub puts what a step added in front of PATH for the steps after it.
        let mut added: Vec<PathBuf> = read(&added)
            .lines()
            .filter(|l| !l.is_empty())
            .map(PathBuf::from)
            .collect();
        added.append(&mut self.path);
        self.path = added;
        let outputs = read(&output)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Step { out, outputs }
    }

    /// Run step `id`, which must succeed.
    fn step(&mut self, id: &str, values: &[(&str, &str)]) -> Step {
        let step = self.run(id, values);
        assert!(
            step.out.status.success(),
            "{}",
            describe(
                &format!("step {}.{id} in {}", self.name, self.tree.display()),
                &step.out
            )
        );
        step
    }
}

/// The archive the trials ship in, where the workflow's jobs find it (`ARCHIVE_DIR`):
/// the one this test runs from, linked or copied there (it may lie inside the build
/// tree the machines hide), else one the workflow's archive step builds from the tree
/// this test was built in.
fn archive(wf: &Workflow, build_root: &Path, runner: &Path, archive_dir: &Path) -> PathBuf {
    let file = workflow::archive_file(wf, archive_dir);
    std::fs::create_dir_all(archive_dir).expect("mkdir ARCHIVE_DIR");
    if let Some(shipped) = gauntlet::sys::nextest::invocation().and_then(|i| i.archive) {
        assert!(
            shipped.is_file(),
            "{}: the archive this test runs from is gone",
            shipped.display()
        );
        if std::fs::hard_link(&shipped, &file).is_err() {
            std::fs::copy(&shipped, &file).expect("copy the archive");
        }
        return file;
    }
    let mut build = Job::new(wf, "build", build_root, runner, None);
    build.env = wf.env(&[("ARCHIVE_DIR", archive_dir.display().to_string())]);
    build.step("archive", &[]);
    assert!(
        file.is_file(),
        "{}: the archive step did not write the file the build job uploads",
        file.display()
    );
    file
}

/// A fresh source tree: the repository's files without `target/`, `.git` or installed
/// node modules, as a CI checkout of another machine has them.
fn fresh_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir tree");
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .expect("read tree")
        .map(|e| e.expect("entry"))
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        if ["target", ".git", "node_modules"]
            .iter()
            .any(|n| name == **n)
        {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        let ty = e.file_type().expect("file type");
        if ty.is_dir() {
            fresh_tree(&src, &dst);
        } else if ty.is_symlink() {
            let target = std::fs::read_link(&src).expect("readlink");
            std::os::unix::fs::symlink(target, &dst).expect("symlink");
        } else if ty.is_file() {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

/// The partition step's `GAUNTLET_OUT` for partition `index` of `total`, relative to
/// its checkout.
fn gauntlet_out(wf: &Workflow, index: &str, total: &str) -> String {
    let values = [("matrix.partition", index), ("strategy.job-total", total)];
    wf.step_env("trials", "partition", &values)
        .into_iter()
        .find(|(k, _)| k == "GAUNTLET_OUT")
        .map(|(_, v)| v)
        .expect("the partition step sets GAUNTLET_OUT")
}

/// The one run directory a run wrote into `out`.
pub fn the_run_in(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("the run wrote its directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "one run directory in {}", out.display());
    dirs.into_iter().next().expect("one run")
}

fn gauntlet(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(crate::support::bin("gauntlet"))
        .args(args)
        .env_remove("CARGO")
        .output()
        .expect("gauntlet runs")
}

/// `gauntlet report` of `run` into `pages`.
fn report(run: &Path, pages: &Path) -> PathBuf {
    let out = gauntlet(&[
        "report".as_ref(),
        run.as_os_str(),
        "--out".as_ref(),
        pages.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", describe("report", &out));
    pages.to_path_buf()
}

/// The figures of a report's pages without what differs between any two runs of the
/// same trials: wall-clock times and run ids.
fn figures(pages: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(pages.join("summary.json")).expect("summary.json");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("summary parses");
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.retain(|k, _| !(k.contains("wall") || k == "run_ids" || k.ends_with("_at")));
                m.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

fn placement(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("run.json")).expect("run.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("run.json parses");
    v["placement"].clone()
}

/// Every regular file under `dir` whose bytes hold `needle` (sockets an app left and
/// links are not read).
fn files_naming(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .expect("read dir")
            .map(|e| e.expect("entry"))
        {
            let ty = e.file_type().expect("file type");
            if ty.is_dir() {
                stack.push(e.path());
            } else if ty.is_file() {
                let bytes = std::fs::read(e.path()).expect("read file");
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push(e.path());
                }
            }
        }
    }
    found
}

#[test]
fn one_archive_runs_on_two_fresh_trees_and_merges_into_the_unsplit_run() {
    let wf = Workflow::load();
    let build_root = crate::support::root();
    let tmp_dir = tempfile::tempdir().expect("tempdir");
    let tmp = tmp_dir.path();
    assert!(
        !tmp.starts_with(&build_root),
        "{}: the simulated machines' files must live outside the build tree they hide",
        tmp.display()
    );
    let archive_dir = tmp.join("archive");
    let archive = archive(&wf, &build_root, &tmp.join("build.runner"), &archive_dir);
    let digest = gauntlet::record::digest::file_sha256(&archive).expect("hash the archive");
    // The workflow's env, with this test's archive and trials.
    let env = wf.env(&[
        ("ARCHIVE_DIR", archive_dir.display().to_string()),
        ("TEST_FILTER", FILTER.to_string()),
    ]);

    // The merge machine's checkout, where each partition's run lands as the merge job
    // downloads it.
    let merge_tree = tmp.join("merge");
    fresh_tree(&build_root, &merge_tree);
    let downloads = merge_tree.join(workflow::partitions_dir(&wf));
    let total = PARTITIONS.to_string();
    let mut parts = Vec::new();
    for i in 1..=PARTITIONS {
        let tree = tmp.join(format!("m{i}"));
        fresh_tree(&build_root, &tree);
        assert!(!tree.join("target").exists());
        let index = i.to_string();
        let values = [
            ("matrix.partition", index.as_str()),
            ("strategy.job-total", total.as_str()),
        ];
        let runner = tmp.join(format!("m{i}.runner"));
        let mut job = Job::new(&wf, "trials", &tree, &runner, Some(&build_root));
        job.env = env.clone();
        job.step("partition", &values);
        // Everything the trials job uploads is there (its run directory, its JUnit).
        for with in wf.uses("trials", "actions/upload-artifact") {
            let path = with["path"].as_str().expect("an upload's path");
            let path = tree.join(workflow::expand(path, &values));
            assert!(
                path.exists(),
                "{}: uploaded by the trials job, not written by its partition step",
                path.display()
            );
        }
        let out = gauntlet_out(&wf, &index, &total);
        let landed = downloads.join(workflow::partition_artifact(&wf, i));
        std::fs::create_dir_all(&downloads).expect("mkdir the downloads");
        std::fs::rename(tree.join(out), &landed).expect("hand the run on");
        parts.push(the_run_in(&landed));
    }
    let (p1, p2) = (parts[0].clone(), parts[1].clone());
    let partition = |i: u32| format!("count:{i}/{PARTITIONS}");

    // The unsplit run of the same trials, from the same archive, on a third machine,
    // into a directory named as long as the partitions' (`part-0`): the paths a trial
    // hands its agent are in the prompts, whose tokens the figures count.
    let whole_tree = tmp.join("m0");
    fresh_tree(&build_root, &whole_tree);
    let whole_out = whole_tree.join(gauntlet_out(&wf, "0", &total));
    let mut unsplit = cargo();
    unsplit
        .current_dir(&whole_tree)
        .env("GAUNTLET_OUT", &whole_out)
        .args(["nextest", "run", "--archive-file"])
        .arg(&archive)
        .arg("--workspace-remap")
        .arg(&whole_tree)
        .args(["--no-fail-fast", "-E", FILTER]);
    let ran = on_machine(&unsplit, &build_root);
    assert!(
        ran.status.success(),
        "{}",
        describe("the unsplit run", &ran)
    );
    let whole = the_run_in(&whole_out);

    // Each partition says where it ran and from what.
    for (run, part) in [(&p1, partition(1)), (&p2, partition(2))] {
        let placed = placement(run);
        assert_eq!(placed["partition"], part.as_str(), "{}", run.display());
        assert_eq!(placed["archive"], digest.as_str(), "{}", run.display());
        assert!(placed["host"].as_str().is_some_and(|h| !h.is_empty()));
        let named = files_naming(run, &build_root.display().to_string());
        assert!(
            named.is_empty(),
            "the build tree {} is named by what a partition wrote: {named:?}",
            build_root.display()
        );
    }
    assert_eq!(placement(&whole)["partition"], serde_json::Value::Null);

    // The two partitions hold different trials of every suite, and all of them.
    let trials = |run: &Path| -> BTreeMap<String, ()> {
        std::fs::read_dir(run)
            .expect("run dir")
            .map(|e| e.expect("entry"))
            .filter(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| (e.file_name().to_string_lossy().into_owned(), ()))
            .collect()
    };
    let (t1, t2, tw) = (trials(&p1), trials(&p2), trials(&whole));
    assert!(t1.keys().all(|t| !t2.contains_key(t)));
    for suite in ["qa.", "challenge.", "scorecard."] {
        assert!(
            t1.keys().any(|t| t.starts_with(suite)),
            "partition 1 has {suite}"
        );
        assert!(
            t2.keys().any(|t| t.starts_with(suite)),
            "partition 2 has {suite}"
        );
    }
    let mut both = t1.clone();
    both.extend(t2.clone());
    assert_eq!(both, tw, "the partitions together are the unsplit run");

    // A partition alone is refused, naming the one missing.
    let alone = gauntlet(&[
        "merge".as_ref(),
        p1.as_os_str(),
        "--out".as_ref(),
        tmp.join("alone").as_os_str(),
    ]);
    assert!(!alone.status.success());
    assert!(
        String::from_utf8_lossy(&alone.stderr)
            .contains(&format!("partition {} of the run is missing", partition(2))),
        "{}",
        describe("merge of one partition", &alone)
    );

    // The merge job: gauntlet from the archive, no build; merge; report and rescore.
    let mut merge = Job::new(
        &wf,
        "merge",
        &merge_tree,
        &tmp.join("merge.runner"),
        Some(&build_root),
    );
    merge.env = env.clone();
    merge.step("gauntlet", &[]);
    assert!(
        merge
            .path
            .iter()
            .any(|d| d.join("gauntlet").is_file() && !d.starts_with(&build_root)),
        "the gauntlet step put no gauntlet from the archive on PATH: {:?}",
        merge.path
    );
    merge.step("merge", &[]);
    merge.step("report", &[]);
    // What the merge job uploads as the run is what its merge step wrote.
    let merged = merge_tree.join(
        wf.uses("merge", "actions/upload-artifact")
            .into_iter()
            .find(|w| w["name"] == "gauntlet-run")
            .and_then(|w| w["path"].as_str())
            .expect("the merge job uploads the merged run"),
    );
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(merged.join("merge.json")).expect("merge.json"),
    )
    .expect("merge.json parses");
    let placed: Vec<&str> = manifest["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .filter_map(|i| i["placement"]["partition"].as_str())
        .collect();
    assert_eq!(placed, [partition(1), partition(2)]);

    let a = figures(&report(&whole, &tmp.join("pages-whole")));
    let b = figures(&merge_tree.join(workflow::PAGES[0]));
    assert_eq!(a, b, "the merged run's figures are the unsplit run's");
    // Not vacuous: one partition's figures are not.
    let one = figures(&report(&p1, &tmp.join("pages-p1")));
    assert_ne!(one, a);

    // The compare step, as the merge job runs it. Without a baseline it says so.
    let comment = merge_tree.join("comment.md");
    let read = |f: &Path| std::fs::read_to_string(f).expect("comment.md");
    let none = merge.step("compare", &[]);
    assert_eq!(none.outputs.get("exit").map(String::as_str), Some("none"));
    assert!(
        read(&comment).contains("No baseline run"),
        "{}",
        read(&comment)
    );

    // With the unsplit run as the baseline: the same trials, no regression; the
    // comment is the comparison's markdown, and the pages artifact's files are there.
    merge
        .env
        .insert("BASELINE_RUN".into(), whole.display().to_string());
    let same = merge.step("compare", &[]);
    assert_eq!(same.outputs.get("exit").map(String::as_str), Some("0"));
    let text = read(&comment);
    assert!(text.starts_with("## gauntlet compare\n"), "{text}");
    assert!(text.contains("**No regression.**"), "{text}");
    assert_eq!(
        text,
        read(&merge_tree.join("compare/compare.md")),
        "the comment is compare.md"
    );
    for written in workflow::PAGES {
        assert!(
            merge_tree.join(written).exists(),
            "{written}: in the pages artifact, not written by the merge job"
        );
    }

    // A candidate holding one partition only: a regression. The step still succeeds,
    // so that the comment is posted; the job's last step fails on its exit code.
    std::fs::rename(&merged, tmp.join("merged-whole")).expect("keep the merged run");
    std::fs::rename(&p1, &merged).expect("one partition as the candidate");
    let worse = merge.step("compare", &[]);
    assert_eq!(worse.outputs.get("exit").map(String::as_str), Some("1"));
    let text = read(&comment);
    assert!(text.contains("**Regression.**"), "{text}");
}
