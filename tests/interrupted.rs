//! A harness killed with SIGKILL mid-trial leaves nothing running, and its interrupted
//! trials are reported, never skipped.
//!
//! This binary makes itself a child subreaper, so every process the killed harness
//! started, however it detached (a new session, a double fork), is re-parented here
//! instead of to init: what is still alive below us afterwards is exactly what outlived
//! the harness. It is a test binary of its own so that no other test's children are
//! ever counted as leftovers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the killed harness's children get to go: the kernel's signal is immediate,
/// but a browser's helper processes notice their parent's death through a pipe.
const GRACE: Duration = Duration::from_secs(20);
/// How long a trial may take to reach the state the case waits for.
const REACH: Duration = Duration::from_secs(120);

/// pid → (parent pid, state, command line) of every process on the machine.
fn processes() -> BTreeMap<i32, (i32, char, String)> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let cmdline = std::fs::read(e.path().join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        out.insert(pid, (ppid, state, cmdline));
    }
    out
}

/// Live (not zombie) descendants of `root`, with their command lines.
fn descendants(root: i32) -> Vec<(i32, String)> {
    let all = processes();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, (ppid, state, cmd)) in &all {
            if *ppid == p {
                frontier.push(*pid);
                if *state != 'Z' {
                    out.push((*pid, cmd.clone()));
                }
            }
        }
    }
    out
}

/// Reap every zombie re-parented to us (not `keep`'s: std waits for that one).
fn reap_orphans() {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// A case made for its own output directory.
type MakeCase = Box<dyn Fn(&Path) -> Case>;

struct Case {
    /// What is killed: a command line that runs one trial.
    harness: Command,
    /// The trial's state at the kill: a live descendant whose command line holds one of
    /// these, and a trial directory in the run.
    wait_for: &'static [&'static str],
    trial: &'static str,
    /// Resume the run afterwards, and check what resuming promises.
    resume: bool,
}

fn gauntlet_run(out: &Path, filter: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gauntlet"));
    cmd.args(["run", "--jobs", "1", "--filter", filter])
        .env("GAUNTLET_OUT", out)
        // Under cargo, `gauntlet run` would rebuild its siblings first (and wait on
        // cargo's lock): the binaries under test are the ones already built.
        .env_remove("CARGO")
        .env_remove("NEXTEST_RUN_ID")
        .env_remove("GAUNTLET_RESUME");
    cmd
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => {
                    out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
                }
                _ => {}
            }
        }
    }
    out
}

/// `gauntlet run --resume` of the interrupted run: refused under another config, naming
/// the field; then it runs exactly the unfinished trial into the same directory, leaves
/// what was there untouched, and the run rescores whole.
fn resume(name: &str, run_dir: &Path, trial: &str) {
    let out = run_dir.parent().expect("out dir");
    let before = snapshot(run_dir);
    let mut other = gauntlet_run(out, trial);
    let refused = other
        .arg("--resume")
        .arg(run_dir)
        .env("GAUNTLET_N", "5")
        .output()
        .expect("gauntlet run --resume runs");
    let why = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "{name}: a resume under another config must be refused: {why}"
    );
    assert!(
        why.contains("`config.n`: 3 recorded vs 5 now"),
        "{name}: the refusal names the field: {why}"
    );
    assert_eq!(
        snapshot(run_dir),
        before,
        "{name}: a refused resume changed the run"
    );

    let filter = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args(["run", "--resume"])
        .arg(run_dir)
        .arg("--nextest-filter")
        .env_remove("CARGO")
        .env("GAUNTLET_OUT", out)
        .output()
        .expect("gauntlet run --nextest-filter runs");
    assert_eq!(
        String::from_utf8_lossy(&filter.stdout).trim(),
        format!("test(={trial})"),
        "{name}: the nextest filter names exactly the unfinished trial"
    );

    let resumed = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args(["run", "--resume"])
        .arg(run_dir)
        .env("GAUNTLET_OUT", out)
        // Under cargo, `gauntlet run` would rebuild its siblings first (and wait on
        // cargo's lock): the binaries under test are the ones already built.
        .env_remove("CARGO")
        .env_remove("NEXTEST_RUN_ID")
        .output()
        .expect("gauntlet run --resume runs");
    let text = String::from_utf8_lossy(&resumed.stdout);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{name}: the resumed run: {text}\n{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(text.contains("1 unfinished trial(s)"), "{name}: {text}");
    let after = snapshot(run_dir);
    for (file, bytes) in &before {
        // The manifest only grows; everything else stays as it was.
        if file.ends_with("manifest.jsonl") {
            assert!(
                after.get(file).is_some_and(|b| b.starts_with(bytes)),
                "{name}: the manifest was rewritten"
            );
        } else {
            assert_eq!(
                after.get(file),
                Some(bytes),
                "{name}: the resume changed {}",
                file.display()
            );
        }
    }
    let strict = Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .arg("rescore")
        .arg(run_dir)
        .output()
        .expect("gauntlet rescore runs");
    assert_eq!(
        strict.status.code(),
        Some(0),
        "{name}: the resumed run rescores whole:\n{}",
        String::from_utf8_lossy(&strict.stdout)
    );
}

/// The qa trials' own test binary (a libtest-mimic harness), beside this one.
fn qa_binary() -> PathBuf {
    let me = std::env::current_exe().expect("current exe");
    let deps = me.parent().expect("deps dir");
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(deps)
        .expect("deps dir is readable")
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix("qa-")
                .is_some_and(|h| !h.contains('.') && h.chars().all(|c| c.is_ascii_hexdigit()))
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| {
            panic!(
                "no qa test binary (qa-<hash>) in {}: build it with `cargo test --no-run`",
                deps.display()
            )
        })
        .1
}

fn run_case(name: &str, mut case: Case, out: &Path) {
    let started = Instant::now();
    let mut child: Child = case
        .harness
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{name}: cannot start the harness: {e}"));
    let harness = child.id() as i32;
    let trial_dir = case.trial.replace("::", ".");
    let reached = loop {
        let below = descendants(harness);
        let running = below
            .iter()
            .any(|(_, cmd)| case.wait_for.iter().any(|w| cmd.contains(w)));
        let has_dir = std::fs::read_dir(out)
            .into_iter()
            .flatten()
            .flatten()
            .any(|run| run.path().join(&trial_dir).is_dir());
        if running && has_dir {
            break below;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{name}: the harness ended ({status}) before the trial reached {:?}",
                case.wait_for
            );
        }
        if started.elapsed() > REACH {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{name}: the trial never reached {:?}; below the harness: {below:?}",
                case.wait_for
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!(
        "{name}: SIGKILL after {} ms, with {} process(es) below the harness: {:?}",
        started.elapsed().as_millis(),
        reached.len(),
        reached
            .iter()
            .map(|(_, c)| c.split(' ').next().unwrap_or_default())
            .collect::<Vec<_>>()
    );
    child.kill().expect("SIGKILL the harness");
    child.wait().expect("reap the harness");
    let until = Instant::now() + GRACE;
    let left = loop {
        reap_orphans();
        let me = std::process::id() as i32;
        let left = descendants(me);
        if left.is_empty() || Instant::now() > until {
            break left;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for (pid, _) in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(
        left.is_empty(),
        "{name}: {} process(es) outlived the SIGKILLed harness (it had {} below it when killed): {left:#?}",
        left.len(),
        reached.len()
    );

    // The interrupted trial is named, with its evidence, and rescore fails the run
    // unless told it is partial.
    let run_dir = std::fs::read_dir(out)
        .expect("out dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join(&trial_dir).is_dir())
        .expect("the run directory");
    let rescore = |partial: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gauntlet"));
        cmd.arg("rescore").arg(&run_dir);
        if partial {
            cmd.arg("--partial");
        }
        cmd.output().expect("gauntlet rescore runs")
    };
    let strict = rescore(false);
    let text = String::from_utf8_lossy(&strict.stdout);
    assert_eq!(
        strict.status.code(),
        Some(1),
        "{name}: rescore of an interrupted run must fail:\n{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("INTERRUPTED: {}", case.trial)))
        .unwrap_or_else(|| panic!("{name}: rescore does not name the interrupted trial:\n{text}"));
    assert!(line.contains("evidence kept: "), "{name}: {line}");
    assert!(
        !line.ends_with("evidence kept: none"),
        "{name}: the trial kept nothing: {line}"
    );
    let partial = rescore(true);
    assert_eq!(
        partial.status.code(),
        Some(0),
        "{name}: --partial accepts an interrupted run whose records agree:\n{}",
        String::from_utf8_lossy(&partial.stdout)
    );
    if case.resume {
        resume(name, &run_dir, case.trial);
    }
}

#[test]
fn a_killed_harness_leaves_no_process_behind_in_any_modality() {
    // SAFETY: prctl on this process only.
    nix::sys::prctl::set_child_subreaper(true).expect("PR_SET_CHILD_SUBREAPER");
    let chromium = std::path::Path::new("/usr/lib/chromium/chromium").exists()
        || std::env::var_os("GAUNTLET_CHROMIUM").is_some();
    let mut cases: Vec<(&str, MakeCase)> = vec![
        (
            "http api under gauntlet run",
            Box::new(|out| Case {
                harness: gauntlet_run(out, "qa::api-ledger::balance"),
                wait_for: &["/api-ledger"],
                trial: "qa::api-ledger::balance",
                resume: true,
            }),
        ),
        (
            "http api under the qa test binary (libtest)",
            Box::new(|out| {
                let mut harness = Command::new(qa_binary());
                harness
                    .args(["--exact", "qa::api-ledger::balance"])
                    .env("GAUNTLET_OUT", out)
                    // Under cargo, `gauntlet run` would rebuild its siblings first (and wait on
                    // cargo's lock): the binaries under test are the ones already built.
                    .env_remove("CARGO")
                    .env_remove("NEXTEST_RUN_ID");
                Case {
                    harness,
                    wait_for: &["/api-ledger"],
                    trial: "qa::api-ledger::balance",
                    resume: false,
                }
            }),
        ),
        (
            "cli under gauntlet run",
            Box::new(|out| Case {
                harness: gauntlet_run(out, "qa::cli-tally::sum"),
                wait_for: &["gauntlet-agent"],
                trial: "qa::cli-tally::sum",
                resume: false,
            }),
        ),
    ];
    if chromium || std::env::var_os("CI").is_some() {
        cases.push((
            "browser flow under gauntlet run",
            Box::new(|out| Case {
                harness: gauntlet_run(out, "qa::browser-notes::add-note"),
                wait_for: &["chromium"],
                trial: "qa::browser-notes::add-note",
                resume: false,
            }),
        ));
        cases.push((
            "browser extension under gauntlet run",
            Box::new(|out| Case {
                harness: gauntlet_run(out, "qa::ext-wordbadge::exact-count"),
                wait_for: &["chromium"],
                trial: "qa::ext-wordbadge::exact-count",
                resume: false,
            }),
        ));
    } else {
        eprintln!(
            "chromium not found: the browser modalities are not tried here (CI requires them)"
        );
    }
    for (name, make) in cases {
        let out = tempfile::tempdir().expect("tempdir");
        run_case(name, make(out.path()), out.path());
    }
}
