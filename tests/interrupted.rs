//! A harness killed with SIGKILL mid-trial leaves nothing running, and its interrupted
//! trials are reported, never skipped; a harness asked to stop (SIGTERM, SIGINT) keeps
//! what its trials observed in records marked interrupted, and a second signal ends it
//! at once.
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

/// The cases count every process below this binary: one case at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The `command` adapter running `argv`, for a harness or a resume of its run (the same
/// config, or the resume is refused).
trait CommandAgent {
    fn command_agent(&mut self, argv: &str) -> &mut Self;
}

impl CommandAgent for Command {
    fn command_agent(&mut self, argv: &str) -> &mut Self {
        self.env("GAUNTLET_AGENT", "command")
            .env("GAUNTLET_AGENT_CMD", argv)
    }
}

/// Start a case: alone, and as the child subreaper every process the harness leaves
/// behind is re-parented to, however it detached.
fn one_case() -> std::sync::MutexGuard<'static, ()> {
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    nix::sys::prctl::set_child_subreaper(true).expect("PR_SET_CHILD_SUBREAPER");
    one
}

/// An agent that writes a line and then works for ten minutes: a trial that is stopped
/// mid-agent, whatever the machine's speed, with output to keep.
const SLOW_AGENT: &str = "sh -c 'echo partial-output; sleep 600'";

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
    let mut cmd = Command::new(gauntlet_bin());
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

    let filter = Command::new(gauntlet_bin())
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

    let resumed = Command::new(gauntlet_bin())
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
    let strict = Command::new(gauntlet_bin())
        .arg("rescore")
        .arg(run_dir)
        .output()
        .expect("gauntlet rescore runs");
    let text = String::from_utf8_lossy(&strict.stdout);
    assert_eq!(
        strict.status.code(),
        Some(0),
        "{name}: the resumed run rescores whole:\n{text}"
    );
    // The cut attempt is kept and named, as a note: the finished record counts.
    assert!(
        text.contains(&format!("SUPERSEDED: {trial} (qa): ")),
        "{name}: the interrupted attempt is still named:\n{text}"
    );
    let page = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
    let retried = page
        .split("## Retried trials")
        .nth(1)
        .unwrap_or_else(|| panic!("{name}: the page lists no earlier attempt:\n{page}"));
    assert!(
        retried.contains(&format!("- `{}`", trial.replace("::", "."))),
        "{name}: the page names the interrupted attempt as an earlier one:\n{page}"
    );
    assert!(
        !page.contains("## Problems"),
        "{name}: a resumed run that finished has no problems:\n{page}"
    );
}

/// The CLI, found at run time: nextest's `NEXTEST_BIN_EXE_gauntlet` (remapped into an
/// extracted archive), else beside this test's executable; never the build machine's path.
fn gauntlet_bin() -> PathBuf {
    std::env::var_os("NEXTEST_BIN_EXE_gauntlet")
        .map(PathBuf::from)
        .unwrap_or_else(|| gauntlet::binaries::bin_path("gauntlet"))
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
    assert_nothing_left(
        name,
        &format!(
            "the SIGKILLed harness (it had {} below it when killed)",
            reached.len()
        ),
    );

    // The interrupted trial is named, with its evidence, and rescore fails the run
    // unless told it is partial.
    let run_dir = std::fs::read_dir(out)
        .expect("out dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join(&trial_dir).is_dir())
        .expect("the run directory");
    let strict = rescore(&run_dir, false);
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
    let partial = rescore(&run_dir, true);
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
    let _one = one_case();
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
                harness: gauntlet_run(out, "qa::cli-tally-2::sum"),
                wait_for: &["gauntlet-agent"],
                trial: "qa::cli-tally-2::sum",
                resume: false,
            }),
        ),
    ];
    if chromium || std::env::var_os("CI").is_some() {
        cases.push((
            "browser flow under gauntlet run",
            Box::new(|out| Case {
                harness: gauntlet_run(out, "qa::browser-notes::add-note"),
                // A renderer: the browser is up with a page, its helpers started; or
                // the headless shell, which runs its pages in its own process.
                wait_for: &["--type=renderer", "--single-process"],
                trial: "qa::browser-notes::add-note",
                resume: false,
            }),
        ));
        cases.push((
            "browser extension under gauntlet run",
            Box::new(|out| Case {
                harness: gauntlet_run(out, "qa::ext-wordbadge-2::exact-count"),
                // A renderer: the browser is up with a page, its helpers started.
                wait_for: &["--type=renderer"],
                trial: "qa::ext-wordbadge-2::exact-count",
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

/// A harness started for a stop case: its output goes to files (a pipe nobody reads
/// could block it), and the case waits on what its trial wrote.
struct Stopping {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Stopping {
    fn start(name: &str, mut harness: Command, out: &Path) -> Stopping {
        let stdout = out.join("harness.stdout");
        let stderr = out.join("harness.stderr");
        let child = harness
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot start the harness: {e}"));
        Stopping {
            child,
            stdout,
            stderr,
        }
    }

    fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(self.child.id() as i32)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// Wait until `ready` holds, failing the case if the harness ends first.
    fn wait_until(&mut self, name: &str, what: &str, ready: impl Fn(&Stopping) -> bool) {
        let started = Instant::now();
        while !ready(self) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{name}: the harness ended ({status}) before {what}:\n{}\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            if started.elapsed() > REACH {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("{name}: never {what}:\n{}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The harness's exit code once it has ended by itself (bounded by REACH: a harness
    /// that ignores the signal fails the case rather than hanging it).
    fn exit_code(&mut self, name: &str) -> Option<i32> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            if started.elapsed() > REACH {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "{name}: the harness did not end after the signal:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The agent's output in the trial directory `trial_dir` of the one run under `out`.
fn agent_output(out: &Path, trial_dir: &str) -> String {
    std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .find_map(|run| {
            std::fs::read_to_string(run.path().join(trial_dir).join("agent.stdout")).ok()
        })
        .unwrap_or_default()
}

fn run_dir_of(out: &Path, trial_dir: &str) -> PathBuf {
    std::fs::read_dir(out)
        .expect("out dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join(trial_dir).is_dir())
        .expect("the run directory")
}

/// Nothing the harness started is alive once it has gone (after GRACE at most).
fn assert_nothing_left(name: &str, harness: &str) {
    let until = Instant::now() + GRACE;
    let left = loop {
        reap_orphans();
        let left = descendants(std::process::id() as i32);
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
        "{name}: {} process(es) outlived {harness}: {left:#?}",
        left.len()
    );
}

fn rescore(run_dir: &Path, partial: bool) -> std::process::Output {
    let mut cmd = Command::new(gauntlet_bin());
    cmd.arg("rescore").arg(run_dir);
    if partial {
        cmd.arg("--partial");
    }
    cmd.output().expect("gauntlet rescore runs")
}

fn read_json(file: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// SIGTERM mid-agent: the agent is stopped, what it wrote is kept in a record marked
/// interrupted (its verdict says so, and re-derives), nothing is left running, rescore
/// names the trial as interrupted, the page gives the reason, and a resume would run
/// the trial again. Under `gauntlet run` and under the qa test binary (libtest), where
/// the trial's test fails with the cause.
#[test]
fn a_stopped_harness_keeps_what_its_trials_observed() {
    let _one = one_case();
    let trial = "qa::api-ledger::balance";
    let trial_dir = "qa.api-ledger.balance";
    for libtest in [false, true] {
        let name = if libtest {
            "SIGTERM under the qa test binary"
        } else {
            "SIGTERM under gauntlet run"
        };
        let out = tempfile::tempdir().expect("tempdir");
        let mut harness = if libtest {
            let mut cmd = Command::new(qa_binary());
            cmd.args(["--exact", trial]);
            cmd
        } else {
            gauntlet_run(out.path(), trial)
        };
        harness
            .env("GAUNTLET_OUT", out.path())
            .command_agent(SLOW_AGENT)
            .env_remove("CARGO")
            .env_remove("NEXTEST_RUN_ID")
            .env_remove("GAUNTLET_RESUME");
        let mut h = Stopping::start(name, harness, out.path());
        h.wait_until(name, "the agent wrote its line", |_| {
            agent_output(out.path(), trial_dir).contains("partial-output")
        });
        // A run that is still going cannot be resumed beside itself.
        let live = Command::new(gauntlet_bin())
            .args(["run", "--resume"])
            .arg(run_dir_of(out.path(), trial_dir))
            .env("GAUNTLET_OUT", out.path())
            .command_agent(SLOW_AGENT)
            .env_remove("CARGO")
            .env_remove("NEXTEST_RUN_ID")
            .output()
            .expect("gauntlet run --resume runs");
        let why = String::from_utf8_lossy(&live.stderr);
        assert_eq!(live.status.code(), Some(2), "{name}: {why}");
        assert!(
            why.contains("is still running in this directory"),
            "{name}: {why}"
        );
        nix::sys::signal::kill(h.pid(), nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
        let code = h.exit_code(name);
        let (stdout, stderr) = (h.stdout(), h.stderr());
        if libtest {
            assert_eq!(
                code,
                Some(101),
                "{name}: the trial's test fails:\n{stdout}\n{stderr}"
            );
            assert!(
                stderr.contains("Error: error: the run was interrupted (SIGTERM)"),
                "{name}: the failure names the signal:\n{stderr}"
            );
        } else {
            assert_eq!(
                code,
                Some(143),
                "{name}: exits as SIGTERM's:\n{stdout}\n{stderr}"
            );
            assert!(
                stdout.contains("gauntlet run --resume"),
                "{name}: says how to resume:\n{stdout}"
            );
        }
        assert!(stderr.contains("SIGTERM received"), "{name}: {stderr}");
        assert_nothing_left(name, "the stopped harness");

        let run_dir = run_dir_of(out.path(), trial_dir);
        let rec = read_json(&run_dir.join(trial_dir).join("record.json"));
        assert_eq!(
            rec["evidence"]["agent"]["end"]["interrupted"], "SIGTERM",
            "{name}"
        );
        assert_eq!(
            rec["evidence"]["agent"]["end"]["timed_out"], false,
            "{name}"
        );
        assert_eq!(rec["verdict"]["outcome"], "error", "{name}");
        assert!(
            rec["verdict"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("interrupted (SIGTERM)")),
            "{name}: {}",
            rec["verdict"]
        );
        assert!(
            agent_output(out.path(), trial_dir).contains("partial-output"),
            "{name}: the agent's partial output is kept"
        );

        let strict = rescore(&run_dir, false);
        let text = String::from_utf8_lossy(&strict.stdout);
        assert_eq!(strict.status.code(), Some(1), "{name}:\n{text}");
        assert!(
            text.contains(&format!(
                "{trial}                      error                error                agrees"
            )),
            "{name}: the stopped record's verdict re-derives:\n{text}"
        );
        assert!(
            text.contains(&format!(
                "INTERRUPTED: {trial} (qa): `{trial_dir}` was stopped part-way when the run was interrupted (SIGTERM)"
            )),
            "{name}:\n{text}"
        );
        assert_eq!(rescore(&run_dir, true).status.code(), Some(0), "{name}");
        if !libtest {
            let page = std::fs::read_to_string(run_dir.join("report.md")).expect("report.md");
            assert!(
                page.contains("was stopped part-way when the run was interrupted (SIGTERM)"),
                "{name}: the page gives the reason:\n{page}"
            );
        }
        let filter = Command::new(gauntlet_bin())
            .args(["run", "--resume"])
            .arg(&run_dir)
            .arg("--nextest-filter")
            .env("GAUNTLET_OUT", out.path())
            .command_agent(SLOW_AGENT)
            .env_remove("CARGO")
            .output()
            .expect("gauntlet run --nextest-filter runs");
        assert_eq!(
            String::from_utf8_lossy(&filter.stdout).trim(),
            format!("test(={trial})"),
            "{name}: a resume runs the stopped trial again: {}",
            String::from_utf8_lossy(&filter.stderr)
        );
    }
}

/// A second signal does not wait for anything: the harness exits at once with the
/// signal's status, and takes every process it started with it.
#[test]
fn a_second_signal_ends_the_harness_at_once() {
    let _one = one_case();
    let name = "SIGINT twice under gauntlet run";
    let trial = "qa::api-ledger::balance";
    let out = tempfile::tempdir().expect("tempdir");
    let mut harness = gauntlet_run(out.path(), trial);
    harness.command_agent(SLOW_AGENT);
    let mut h = Stopping::start(name, harness, out.path());
    h.wait_until(name, "the agent wrote its line", |_| {
        agent_output(out.path(), "qa.api-ledger.balance").contains("partial-output")
    });
    // A sandbox helper that does not answer: the first signal's way down waits for it
    // (until it is killed outright, seconds later), which is when a user presses Ctrl-C
    // again. Only the helpers, the harness's own children: what runs inside a sandbox
    // goes with its init, which nothing outside it stops.
    let frozen: Vec<i32> = processes()
        .into_iter()
        .filter(|(_, (ppid, _, cmd))| *ppid == h.pid().as_raw() && cmd.contains("gauntlet-seal"))
        .map(|(pid, _)| pid)
        .collect();
    assert!(
        !frozen.is_empty(),
        "{name}: no sandbox helper below the harness"
    );
    for pid in &frozen {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGSTOP,
        );
    }
    nix::sys::signal::kill(h.pid(), nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    h.wait_until(name, "the harness heard the first signal", |h| {
        h.stderr().contains("SIGINT received")
    });
    nix::sys::signal::kill(h.pid(), nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let code = h.exit_code(name);
    assert_eq!(
        code,
        Some(130),
        "{name}: exits as SIGINT's:\n{}",
        h.stderr()
    );
    assert!(
        h.stderr().contains("SIGINT again: exiting now"),
        "{}",
        h.stderr()
    );
    assert_nothing_left(name, "the stopped harness");
}

/// A probe stopped in its idle window (a nominal hour that lasts an hour here) ends at
/// once, its record marked interrupted and its setup error naming the signal.
#[test]
fn a_probe_in_its_idle_window_stops_with_the_run() {
    let _one = one_case();
    let name = "SIGTERM in a scorecard idle window";
    let trial = "scorecard::continuous::p3-1";
    let trial_dir = "scorecard.continuous.p3-1";
    let out = tempfile::tempdir().expect("tempdir");
    let mut harness = gauntlet_run(out.path(), trial);
    harness.env("GAUNTLET_SCORECARD_IDLE_SECS", "86400");
    let mut h = Stopping::start(name, harness, out.path());
    // The background mode starts with the idle block.
    h.wait_until(name, "the probe reached its idle window", |_| {
        std::fs::read_dir(out.path())
            .into_iter()
            .flatten()
            .flatten()
            .any(|run| {
                run.path()
                    .join(trial_dir)
                    .join("background.stdout")
                    .exists()
            })
    });
    nix::sys::signal::kill(h.pid(), nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    assert_eq!(h.exit_code(name), Some(143), "{name}:\n{}", h.stderr());
    assert_nothing_left(name, "the stopped harness");
    let run_dir = run_dir_of(out.path(), trial_dir);
    let rec = read_json(&run_dir.join(trial_dir).join("record.json"));
    assert_eq!(rec["evidence"]["interrupted"], "SIGTERM", "{name}: {rec}");
    assert_eq!(
        rec["verdict"]["outcome"], "error",
        "{name}: a stopped probe is not judged"
    );
    let setup = rec["evidence"]["setup_error"].as_str().unwrap_or_default();
    assert!(
        setup.contains("interrupted (SIGTERM)"),
        "{name}: the probe's setup error names the signal: {setup}"
    );
    let strict = rescore(&run_dir, false);
    let text = String::from_utf8_lossy(&strict.stdout);
    assert_eq!(strict.status.code(), Some(1), "{name}:\n{text}");
    assert!(
        text.contains(&format!("INTERRUPTED: {trial} (scorecard)")),
        "{name}:\n{text}"
    );
    // Never ranked: the probe observed only part of what it asks.
    let board = tempfile::tempdir().expect("tempdir");
    let lb = Command::new(gauntlet_bin())
        .arg("leaderboard")
        .arg(&run_dir)
        .arg("--out")
        .arg(board.path())
        .output()
        .expect("gauntlet leaderboard runs");
    let row = String::from_utf8_lossy(&lb.stdout);
    assert!(
        row.contains("interrupted run (p3-1 stopped part-way; resume it to finish): not ranked")
            && row.contains(
                "p3-1: stopped part-way when the run was interrupted (SIGTERM); scored 0"
            ),
        "{name}: the leaderboard row says why it is not ranked:\n{row}"
    );
}

/// The nextest way to resume: `GAUNTLET_RESUME=<run dir>` with the first run's filter.
/// A trial with a finished record is ignored at list time (nextest skips it, with the
/// reason), and every other trial runs into the same run directory, whether it was cut
/// or never started; the qa test binary is driven exactly as nextest drives it.
#[test]
fn a_resumed_test_binary_skips_finished_trials_and_runs_the_rest() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().expect("tempdir");
    let qa = |args: &[&str], resume: Option<&Path>| {
        let mut cmd = Command::new(qa_binary());
        cmd.args(args)
            .env("GAUNTLET_OUT", out.path())
            // One run id for the first run's processes, as under nextest.
            .env("NEXTEST_RUN_ID", "first-run")
            .env_remove("CARGO")
            .env_remove("GAUNTLET_RESUME");
        if let Some(dir) = resume {
            cmd.env("GAUNTLET_RESUME", dir)
                .env("NEXTEST_RUN_ID", "resumed-run");
        }
        cmd.output().expect("the qa test binary runs")
    };
    let done = "qa::api-ledger::health";
    let never = "qa::api-ledger::reject-unknown-id";
    let first = qa(&["--exact", done], None);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let run_dir = out.path().join("first-run");

    let listed = qa(&["--list", "--ignored"], Some(&run_dir));
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{text}");
    assert!(
        text.lines().any(|l| l == format!("{done}: test")),
        "the finished trial is ignored at list time:\n{text}"
    );
    assert!(
        !text.contains(never),
        "a trial without a record is not ignored:\n{text}"
    );
    let why = String::from_utf8_lossy(&listed.stderr);
    assert!(
        why.contains(&format!(
            "{done}: ignored: finished in {}",
            run_dir.display()
        )),
        "the reason is given beside the list:\n{why}"
    );

    let again = qa(&["--exact", done], Some(&run_dir));
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(again.status.success(), "{text}");
    assert!(
        text.contains("1 ignored"),
        "a finished trial does not run again:\n{text}"
    );

    let rest = qa(&["--exact", never], Some(&run_dir));
    assert!(
        rest.status.success(),
        "the trial the first run never started runs in the resume:\n{}",
        String::from_utf8_lossy(&rest.stderr)
    );
    assert!(run_dir
        .join("qa.api-ledger.reject-unknown-id/record.json")
        .is_file());
    let manifest = std::fs::read_to_string(run_dir.join("manifest.jsonl")).expect("manifest");
    let resumed: Vec<&str> = manifest
        .lines()
        .filter(|l| l.contains("\"resumed\":true"))
        .collect();
    assert_eq!(
        resumed.len(),
        1,
        "the resumed trial says so in the manifest:\n{manifest}"
    );
    assert!(resumed[0].contains(never), "{manifest}");
    let strict = rescore(&run_dir, false);
    assert_eq!(
        strict.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&strict.stdout)
    );
}

/// An agent that claims `balance` verified with a test that never ends: its gate is
/// under way, whatever the machine's speed, until the run is stopped.
const HANGING_TEST_AGENT: &str = r#"sh -c 'mkdir -p t && echo "sleep 600" > t/check.sh && cat <<"E"
{"type":"final","text":"```gauntlet-claim\n{\"capability\":\"balance\",\"status\":\"verified\",\"test\":{\"dir\":\"t\",\"command\":\"sh check.sh\"}}\n```"}
E'"#;

/// SIGTERM while the gate re-runs a claimed test: the gate is unfinished, not red (a
/// stopped mutant run is no proof of a red mutant), so the verdict is `error`, the run
/// is stopped mid-run, and the record is interrupted.
#[test]
fn a_gate_stopped_part_way_is_unfinished_not_red() {
    let _one = one_case();
    let name = "SIGTERM during the gate";
    let trial = "qa::api-ledger::balance";
    let trial_dir = "qa.api-ledger.balance";
    let out = tempfile::tempdir().expect("tempdir");
    let mut harness = gauntlet_run(out.path(), trial);
    harness.command_agent(HANGING_TEST_AGENT);
    let mut h = Stopping::start(name, harness, out.path());
    let pid = h.pid().as_raw();
    h.wait_until(name, "the gate ran the claimed test", |_| {
        descendants(pid)
            .iter()
            .any(|(_, cmd)| cmd.starts_with("sleep 600"))
    });
    nix::sys::signal::kill(h.pid(), nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    assert_eq!(h.exit_code(name), Some(143), "{name}:\n{}", h.stderr());
    assert_nothing_left(name, "the stopped harness");
    let run_dir = run_dir_of(out.path(), trial_dir);
    let rec = read_json(&run_dir.join(trial_dir).join("record.json"));
    let gate = &rec["evidence"]["gate"];
    assert_eq!(gate["interrupted"], "SIGTERM", "{name}: {gate}");
    let runs = gate["runs"].as_array().expect("gate runs");
    assert_eq!(
        runs.len(),
        1,
        "{name}: the gate stopped at its first run: {gate}"
    );
    assert_eq!(runs[0]["end"]["interrupted"], "SIGTERM", "{name}");
    assert_eq!(
        rec["verdict"]["outcome"], "error",
        "{name}: {}",
        rec["verdict"]
    );
    assert!(
        rec["verdict"]["reason"]
            .as_str()
            // N = 3 app runs, the mutant and M = 3 of balance's independent mutants.
            .is_some_and(|r| r.contains("after 0 of the gate's 7 runs")),
        "{name}: {}",
        rec["verdict"]
    );
    let strict = rescore(&run_dir, false);
    let text = String::from_utf8_lossy(&strict.stdout);
    assert_eq!(strict.status.code(), Some(1), "{name}:\n{text}");
    assert!(
        text.contains(&format!("INTERRUPTED: {trial} (qa)")),
        "{name}:\n{text}"
    );
}

/// What the harness starts outside a sandbox runs under `gauntlet-reap`: when the
/// harness is SIGKILLed, the reaper is told (PR_SET_PDEATHSIG) and ends the app's whole
/// tree, a `setsid` daemon and a double-forked orphan included. The harness here is a
/// shell that starts the reaper as the app code does, and is SIGKILLed.
#[test]
fn an_app_tree_dies_with_a_killed_harness_detached_daemons_included() {
    let _one = one_case();
    let name = "a reaped app tree under a SIGKILLed harness";
    let reaper = gauntlet_bin().with_file_name("gauntlet-reap");
    let out = tempfile::tempdir().expect("tempdir");
    let ready = out.path().join("ready");
    let script = format!(
        "setsid sleep 1001 & (sleep 1002 &); sleep 1003 & touch {}; exec sleep 1000",
        ready.display()
    );
    // `$0` is the reaper; the shell waits on it, as the harness keeps its app.
    let mut harness = Command::new("sh");
    harness
        .arg("-c")
        .arg(format!("\"$0\" --parent $$ -- sh -c '{script}' & wait"))
        .arg(&reaper);
    let mut h = Stopping::start(name, harness, out.path());
    h.wait_until(name, "the app forked its helpers", |_| ready.exists());
    let below = descendants(h.pid().as_raw());
    assert!(
        below
            .iter()
            .filter(|(_, c)| c.starts_with("sleep 100"))
            .count()
            >= 3,
        "{name}: the app's tree is below the harness: {below:?}"
    );
    nix::sys::signal::kill(h.pid(), nix::sys::signal::Signal::SIGKILL).expect("SIGKILL");
    let _ = h.exit_code(name);
    assert_nothing_left(name, "the SIGKILLed harness");
}
