//! Build once, run on two machines: one nextest archive, each partition in a fresh
//! source tree with no `target/`, and the build tree out of reach — then one merge
//! whose pages say what an unsplit run of the same trials says.
//!
//! A second machine is simulated by a mount namespace: each partition runs under
//! `unshare --mount` with an empty tmpfs over the tree this test was built in, so a
//! path fixed at build time finds nothing (on a real second machine it would not
//! exist). When this test itself runs from an archive, it ships that archive on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The trials both machines share out: some of every suite, none needing a browser
/// (the browser's own partitioning is the same code path, and minutes slower).
const FILTER: &str = "(binary(qa) & test(/^qa::(api-ledger|cli-tally-2)::/)) \
    | (binary(challenge) & test(/^challenge::(ledger-reconcile|tally-report)::/)) \
    | (binary(scorecard) & test(/^scorecard::(memory|initiative|world)::/))";

fn describe(what: &str, out: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// cargo, as the one running this test named it; `cargo` on PATH otherwise.
fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    // A clean slate: what nextest and cargo hand this test (its package, its run,
    // its binaries) must not leak into the machines it simulates.
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
    cmd
}

/// The archive the trials ship in: the one this test runs from, else a new one built
/// from the tree this test was built in.
fn archive(build_root: &Path, dir: &Path) -> PathBuf {
    if let Some(shipped) = gauntlet::sys::nextest::invocation().and_then(|i| i.archive) {
        assert!(
            shipped.is_file(),
            "{}: the archive this test runs from is gone",
            shipped.display()
        );
        return shipped;
    }
    let file = dir.join("gauntlet.tar.zst");
    let out = cargo()
        .current_dir(build_root)
        .args(["nextest", "archive", "--archive-file"])
        .arg(&file)
        .output()
        .expect("cargo nextest archive runs (is cargo-nextest installed?)");
    assert!(
        out.status.success(),
        "{}",
        describe("nextest archive", &out)
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

/// Run the filtered trials from `archive` in `tree`, as partition `part` (`None`:
/// unsplit), on a "machine" where `hidden` (the build tree) is an empty directory.
fn run_machine(
    archive: &Path,
    tree: &Path,
    out: &Path,
    part: Option<&str>,
    hidden: &Path,
) -> PathBuf {
    let mut inner = cargo();
    inner
        .current_dir(tree)
        .env("GAUNTLET_OUT", out)
        .args(["nextest", "run", "--archive-file"])
        .arg(archive)
        .arg("--workspace-remap")
        .arg(tree)
        .args(["--no-fail-fast", "-E", FILTER]);
    if let Some(p) = part {
        inner.args(["--partition", p]);
    }
    // unshare(1) with a shell that mounts the tmpfs and then execs cargo, environment
    // and all (Command's env is applied to unshare and inherited).
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=1m hidden "$0" && exec "$@""#)
        .arg(hidden)
        .arg(inner.get_program())
        .args(inner.get_args())
        .current_dir(tree);
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let run = cmd.output().expect("unshare runs");
    assert!(
        run.status.success(),
        "{}",
        describe(&format!("partition {part:?} in {}", tree.display()), &run)
    );
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

/// The report's figures without what differs between any two runs of the same trials:
/// wall-clock times and run ids.
fn figures(run: &Path, pages: &Path) -> serde_json::Value {
    let out = gauntlet(&[
        "report".as_ref(),
        run.as_os_str(),
        "--out".as_ref(),
        pages.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", describe("report", &out));
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
    let build_root = crate::support::root();
    let tmp = tempfile::tempdir().expect("tempdir");
    let archive = archive(&build_root, tmp.path());
    assert!(
        !tmp.path().starts_with(&build_root),
        "{}: the simulated machines' files must live outside the build tree they hide",
        tmp.path().display()
    );
    let digest = gauntlet::record::digest::file_sha256(&archive).expect("hash the archive");

    let trees: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("m{i}"))).collect();
    for t in &trees {
        fresh_tree(&build_root, t);
        assert!(!t.join("target").exists());
    }
    let outs: Vec<PathBuf> = (0..3).map(|i| tmp.path().join(format!("out{i}"))).collect();
    let p1 = run_machine(
        &archive,
        &trees[1],
        &outs[1],
        Some("count:1/2"),
        &build_root,
    );
    let p2 = run_machine(
        &archive,
        &trees[2],
        &outs[2],
        Some("count:2/2"),
        &build_root,
    );
    let whole = run_machine(&archive, &trees[0], &outs[0], None, &build_root);

    // Each partition says where it ran and from what.
    for (run, part) in [(&p1, "count:1/2"), (&p2, "count:2/2")] {
        let placed = placement(run);
        assert_eq!(placed["partition"], part, "{}", run.display());
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
        tmp.path().join("alone").as_os_str(),
    ]);
    assert!(!alone.status.success());
    assert!(
        String::from_utf8_lossy(&alone.stderr)
            .contains("partition count:2/2 of the run is missing"),
        "{}",
        describe("merge of one partition", &alone)
    );

    let merged = tmp.path().join("merged");
    let out = gauntlet(&[
        "merge".as_ref(),
        p1.as_os_str(),
        p2.as_os_str(),
        "--out".as_ref(),
        merged.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", describe("merge", &out));
    let rescore = gauntlet(&["rescore".as_ref(), merged.as_os_str()]);
    assert!(
        rescore.status.success(),
        "{}",
        describe("rescore merged", &rescore)
    );
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(merged.join("merge.json")).expect("merge.json"),
    )
    .expect("merge.json parses");
    let parts: Vec<&str> = manifest["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .filter_map(|i| i["placement"]["partition"].as_str())
        .collect();
    assert_eq!(parts, ["count:1/2", "count:2/2"]);

    let a = figures(&whole, &tmp.path().join("pages-whole"));
    let b = figures(&merged, &tmp.path().join("pages-merged"));
    assert_eq!(a, b, "the merged run's figures are the unsplit run's");
    // Not vacuous: one partition's figures are not.
    let one = figures(&p1, &tmp.path().join("pages-p1"));
    assert_ne!(one, a);
}
