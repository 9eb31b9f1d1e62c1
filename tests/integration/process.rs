//! Subprocess control against real processes (`sh -c`): exit codes, deadlines,
//! signals, stragglers, output caps, and app startup.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use gauntlet::sys::process::{
    group_members, marker_holders, run, sweep_marker, ProcessOutcome, ProcessSpec, MARKER_VAR,
};
use gauntlet::world::app::{AppError, AppProcess};

/// A marker unique to this test process and call, so parallel tests never sweep each
/// other's processes.
fn marker(name: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "test-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn spec(dir: &Path, name: &str, script: &str, deadline: Duration, cap: u64) -> ProcessSpec {
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_string(),
        "/usr/local/bin:/usr/bin:/bin".to_string(),
    );
    env.insert("FOO".to_string(), "bar".to_string());
    ProcessSpec {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".to_string(), script.to_string()],
        cwd: dir.to_path_buf(),
        env,
        deadline,
        stdout_path: dir.join("out").join("agent.stdout"),
        stderr_path: dir.join("out").join("agent.stderr"),
        rel_base: dir.to_path_buf(),
        output_cap: cap,
        marker: marker(name),
        seal: None,
    }
}

async fn run_sh(name: &str, script: &str, deadline: Duration, cap: u64) -> (ProcessOutcome, Ran) {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = spec(dir.path(), name, script, deadline, cap);
    let marker = spec.marker.clone();
    let outcome = run(spec).await.expect("run succeeds");
    (outcome, Ran { dir, marker })
}

struct Ran {
    dir: tempfile::TempDir,
    marker: String,
}

impl Ran {
    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.dir.path().join(rel)).expect("output file exists")
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.read("out/agent.stdout")).into_owned()
    }
}

/// Whether `pid` is a running (non-zombie) process.
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .unwrap_or("");
    !matches!(state, "Z" | "X")
}

fn pids_in(stdout: &str) -> Vec<i32> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("pid="))
        .map(|p| p.trim().parse().expect("pid line"))
        .collect()
}

/// Peak resident memory of this test process, from /proc/self/status, in kB.
fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM line")
}

const LONG: Duration = Duration::from_secs(60);

#[tokio::test]
async fn normal_command_exit_code_output_and_env() {
    let (out, ran) = run_sh(
        "normal",
        r#"printf 'hello\nworld\n'; echo "home=[$HOME] foo=[$FOO] marker=[$GAUNTLET_TRIAL_MARKER]"; printf oops >&2; exit 3"#,
        LONG,
        1 << 20,
    )
    .await;
    assert_eq!(out.end.exit_code, Some(3));
    assert_eq!(out.end.signal, None);
    assert!(!out.end.timed_out);
    assert_eq!(out.stragglers_killed, 0);

    assert_eq!(out.stdout.path, "out/agent.stdout");
    assert_eq!(out.stderr.path, "out/agent.stderr");
    let stdout = ran.read(&out.stdout.path);
    let expected = format!("hello\nworld\nhome=[] foo=[bar] marker=[{}]\n", ran.marker);
    assert_eq!(String::from_utf8_lossy(&stdout), expected);
    assert_eq!(out.stdout.bytes, stdout.len() as u64);
    assert_eq!(out.stdout.bytes_seen, stdout.len() as u64);
    assert_eq!(out.stdout.sha256, gauntlet::hash::sha256(&stdout));

    let stderr = ran.read(&out.stderr.path);
    assert_eq!(stderr, b"oops");
    assert_eq!(out.stderr.sha256, gauntlet::hash::sha256(b"oops"));
    assert!(!out.stdout.truncated());
}

#[tokio::test]
async fn hang_is_killed_at_deadline_with_partial_output() {
    let (out, ran) = run_sh(
        "hang",
        "echo before; sleep 1000 & echo pid=$!; wait",
        Duration::from_secs(1),
        1 << 20,
    )
    .await;
    assert!(out.end.timed_out);
    assert_eq!(out.end.exit_code, None);
    assert_eq!(out.end.signal, Some(libc::SIGKILL));
    assert!(!out.end.success());
    let stdout = ran.stdout();
    assert!(stdout.starts_with("before\n"), "partial output: {stdout:?}");
    assert_eq!(out.stdout.bytes, stdout.len() as u64);
    // The group (sh and its sleep) was killed at the deadline, not left as stragglers.
    let pids = pids_in(&stdout);
    assert_eq!(pids.len(), 1);
    assert!(!alive(pids[0]), "sleep {} survived the deadline", pids[0]);
    assert!(marker_holders(&ran.marker).is_empty());
}

#[tokio::test]
async fn crash_reports_signal() {
    let (out, _ran) = run_sh("crash", "kill -SEGV $$", LONG, 1 << 20).await;
    assert_eq!(out.end.signal, Some(libc::SIGSEGV));
    assert_eq!(out.end.exit_code, None);
    assert!(!out.end.timed_out);
}

#[tokio::test]
async fn forked_child_left_running_is_killed() {
    let (out, ran) = run_sh("fork", "sleep 1000 & echo pid=$!; exit 0", LONG, 1 << 20).await;
    assert_eq!(out.end.exit_code, Some(0));
    assert!(!out.end.timed_out);
    assert!(out.stragglers_killed >= 1, "{out:?}");
    let pids = pids_in(&ran.stdout());
    assert_eq!(pids.len(), 1);
    assert!(!alive(pids[0]));
    assert!(marker_holders(&ran.marker).is_empty());
}

#[tokio::test]
async fn setsid_escapee_is_caught_by_marker() {
    // Wait until the escapee really is in another process group (field 5 of stat),
    // so that only the marker sweep can find it.
    let script = r#"setsid sleep 1000 & p=$!
while [ "$(cut -d' ' -f5 /proc/$p/stat)" = "$$" ]; do :; done
echo pid=$p
echo pgrp=$(cut -d' ' -f5 /proc/$p/stat) own=$$
exit 0"#;
    let (out, ran) = run_sh("setsid", script, LONG, 1 << 20).await;
    assert_eq!(out.end.exit_code, Some(0), "{}", ran.stdout());
    assert!(out.stragglers_killed >= 1, "{out:?}");
    let stdout = ran.stdout();
    let pids = pids_in(&stdout);
    assert_eq!(pids.len(), 1, "{stdout}");
    assert!(!alive(pids[0]), "escapee {} survived", pids[0]);
    assert!(marker_holders(&ran.marker).is_empty());
}

#[tokio::test]
async fn deadline_kills_group_and_counts_only_escapees_as_stragglers() {
    let script = r#"setsid sleep 1000 & p=$!
while [ "$(cut -d' ' -f5 /proc/$p/stat)" = "$$" ]; do :; done
echo pid=$p
sleep 1000 & echo pid=$!
wait"#;
    let (out, ran) = run_sh("deadline-setsid", script, Duration::from_secs(1), 1 << 20).await;
    assert!(out.end.timed_out);
    // sh and its in-group sleep died with the group at the deadline; only the
    // escapee outlived the child.
    assert_eq!(out.stragglers_killed, 1, "{out:?}");
    let pids = pids_in(&ran.stdout());
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(!alive(pid), "{pid} survived");
    }
    assert!(marker_holders(&ran.marker).is_empty());
}

#[tokio::test]
async fn flood_is_capped_and_memory_stays_bounded() {
    let cap = 1 << 20;
    let (out, ran) = run_sh("flood", "head -c 100000000 /dev/zero", LONG, cap).await;
    assert_eq!(out.end.exit_code, Some(0));
    assert_eq!(out.stdout.bytes, cap);
    assert_eq!(out.stdout.bytes_seen, 100_000_000);
    assert!(out.stdout.truncated());
    let kept = ran.read(&out.stdout.path);
    assert_eq!(kept.len() as u64, cap);
    assert_eq!(out.stdout.sha256, gauntlet::hash::sha256(&kept));
    let hwm = vm_hwm_kb();
    assert!(
        hwm < 100_000,
        "peak memory {hwm} kB: output was held in memory"
    );
}

#[test]
fn sweep_marker_kills_only_marked_processes() {
    let m = marker("sweep");
    let mut marked = std::process::Command::new("setsid")
        .args(["sleep", "1000"])
        .env(MARKER_VAR, &m)
        .spawn()
        .expect("spawn marked");
    let mut other = std::process::Command::new("sleep")
        .arg("1000")
        .env(MARKER_VAR, format!("{m}-other"))
        .spawn()
        .expect("spawn other");
    // The marker is in the environment from exec on; wait for it to be visible.
    while marker_holders(&m).is_empty() {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sweep_marker(&m), 1);
    assert!(marker_holders(&m).is_empty());
    let status = marked.wait().expect("wait marked");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    let other_pid = i32::try_from(other.id()).expect("pid");
    assert!(alive(other_pid), "a process with another marker was killed");
    other.kill().expect("kill other");
    other.wait().expect("wait other");
    assert_eq!(sweep_marker(""), 0);
}

#[tokio::test]
async fn missing_cwd_and_program_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = spec(dir.path(), "cwd", "true", LONG, 1024);
    s.cwd = dir.path().join("nope");
    let err = run(s).await.expect_err("missing cwd").to_string();
    assert!(err.contains("nope"), "{err}");

    let mut s = spec(dir.path(), "prog", "true", LONG, 1024);
    s.program = dir.path().join("no-such-agent");
    let err = run(s).await.expect_err("missing program").to_string();
    assert!(
        err.contains("cannot spawn") && err.contains("no-such-agent"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// AppProcess
// ---------------------------------------------------------------------------

async fn start_sh(dir: &Path, script: &str, startup: Duration) -> Result<AppProcess, AppError> {
    let args = vec!["-c".to_string(), script.to_string()];
    AppProcess::start(Path::new("/bin/sh"), &args, dir, dir, "app", startup).await
}

#[tokio::test]
async fn app_url_parsed_and_stop_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut app = start_sh(
        dir.path(),
        "echo booting; echo to-stderr >&2; echo listening on http://127.0.0.1:4321; exec sleep 1000",
        LONG,
    )
    .await
    .expect("app starts");
    assert_eq!(app.url(), "http://127.0.0.1:4321");
    let pid = i32::try_from(app.pid()).expect("pid");
    assert!(alive(pid));
    let logs = app.stop(dir.path()).await;
    assert!(!alive(pid), "app {pid} survived stop");
    assert!(group_members(pid).is_empty());
    assert!(
        app.stop(dir.path()).await.is_empty(),
        "idempotent: nothing closed twice"
    );
    let log = std::fs::read_to_string(dir.path().join("app.stdout")).expect("stdout log");
    assert_eq!(log, "booting\nlistening on http://127.0.0.1:4321\n");
    // The logs it closed come back hashed, named relative to the trial dir, for the record.
    let stdout = logs
        .iter()
        .find(|l| l.path == "app.stdout")
        .expect("the stdout log is returned");
    assert_eq!(stdout.sha256, gauntlet::hash::sha256(log.as_bytes()));
    assert_eq!(stdout.bytes, log.len() as u64);
    let err = std::fs::read_to_string(dir.path().join("app.stderr")).expect("stderr log");
    assert_eq!(err, "to-stderr\n");
}

#[tokio::test]
async fn app_dropped_without_stop_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let app = start_sh(
        dir.path(),
        "echo listening on http://127.0.0.1:4322; exec sleep 1000",
        LONG,
    )
    .await
    .expect("app starts");
    let pid = i32::try_from(app.pid()).expect("pid");
    drop(app);
    // SIGKILL is asynchronous: poll (bounded by the test harness, not asserted on time).
    while alive(pid) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// An app whose start is a wrapper that forks helpers, one of them in a session of its
/// own and one orphaned by a double fork: stopping the app, or dropping it, ends all
/// of them, not only the process the harness started.
#[tokio::test]
async fn an_app_that_forks_and_detaches_leaves_nothing_when_stopped_or_dropped() {
    for stop in [true, false] {
        let dir = tempfile::tempdir().expect("tempdir");
        let app = start_sh(
            dir.path(),
            "setsid sleep 1001 & echo pid=$!; (sleep 1002 & echo pid=$!); sleep 1003 & echo pid=$!; \
             echo listening on http://127.0.0.1:4324; exec sleep 1000",
            LONG,
        )
        .await
        .expect("app starts");
        // The log is written as it streams: the lines before the announcement may land
        // just after it.
        let helpers = loop {
            let log = std::fs::read_to_string(dir.path().join("app.stdout")).unwrap_or_default();
            let pids = pids_in(&log);
            if pids.len() == 3 {
                break pids;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let log = format!("{helpers:?}");
        assert!(helpers.iter().all(|p| alive(*p)), "{log}");
        let mut app = app;
        if stop {
            app.stop(dir.path()).await;
        } else {
            drop(app);
        }
        // The reaper's kills are asynchronous: poll (bounded by the test harness).
        while let Some(p) = helpers.iter().find(|p| alive(**p)) {
            let _ = p;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The reaper between the harness and the app changes nothing the app can see of its
/// start: no signal is ignored (a Rust parent ignores SIGPIPE, which exec keeps), and a
/// signal the app sends its own group (a reload) is no order to stop it.
#[tokio::test]
async fn an_app_starts_with_default_signals_and_may_signal_its_own_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut app = start_sh(
        dir.path(),
        "grep SigIgn /proc/$$/status; trap '' HUP; kill -HUP 0; sleep 0.2; \
         echo listening on http://127.0.0.1:4325; exec sleep 1000",
        LONG,
    )
    .await
    .expect("app starts, its own HUP to its group notwithstanding");
    let pid = i32::try_from(app.pid()).expect("pid");
    assert!(alive(pid), "the reaper took the app's own HUP as a stop");
    let log = std::fs::read_to_string(dir.path().join("app.stdout")).expect("stdout log");
    let mask = log
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|m| u64::from_str_radix(m.trim(), 16).expect("hex mask"))
        .expect("the app printed its ignored signals");
    assert_eq!(
        mask & (1 << 12),
        0,
        "SIGPIPE (13) is ignored in the app: {mask:x}"
    );
    app.stop(dir.path()).await;
    assert!(!alive(pid));
}

#[tokio::test]
async fn app_that_exits_at_once_reports_exit_code_and_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = start_sh(dir.path(), "echo 'bind failed: boom' >&2; exit 3", LONG)
        .await
        .err()
        .expect("start fails");
    match &err {
        AppError::ExitedEarly {
            exit_code,
            stderr_tail,
            ..
        } => {
            assert_eq!(*exit_code, Some(3));
            assert!(stderr_tail.contains("bind failed: boom"), "{stderr_tail}");
        }
        other => panic!("expected ExitedEarly, got {other}"),
    }
    assert!(err.to_string().contains("exit code 3"), "{err}");
}

#[tokio::test]
async fn app_that_never_listens_times_out_and_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = "echo pid=$$; exec sleep 1000";
    let err = start_sh(dir.path(), script, Duration::from_secs(1))
        .await
        .err()
        .expect("start fails");
    assert!(
        matches!(err, AppError::StartupTimeout { .. }),
        "expected timeout, got {err}"
    );
    assert!(err.to_string().contains("listening on"), "{err}");
    let log = std::fs::read_to_string(dir.path().join("app.stdout")).expect("stdout log");
    let pids = pids_in(&log);
    assert_eq!(pids.len(), 1);
    assert!(!alive(pids[0]), "app {} survived the timeout", pids[0]);
}

#[tokio::test]
async fn app_not_on_loopback_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = start_sh(
        dir.path(),
        "echo listening on http://0.0.0.0:4323; exec sleep 1000",
        LONG,
    )
    .await
    .err()
    .expect("start fails");
    assert!(
        matches!(&err, AppError::NotLoopback { url, .. } if url == "http://0.0.0.0:4323"),
        "{err}"
    );
}

#[tokio::test]
async fn app_binary_missing_says_how_to_build() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("api-ledger");
    let err = AppProcess::start(&missing, &[], dir.path(), dir.path(), "app", LONG)
        .await
        .err()
        .expect("start fails");
    let msg = err.to_string();
    assert!(
        msg.contains("cargo test --no-run") && msg.contains("api-ledger"),
        "{msg}"
    );
}

/// A program started under a reaper from the pool gets exactly what it was given: its
/// arguments (an empty one and one with spaces included), its working directory, its
/// environment and nothing of the harness's, and the input written after it on the
/// same pipe, to its end.
#[tokio::test]
async fn a_reaped_program_gets_exactly_its_arguments_directory_environment_and_input() {
    use gauntlet::sys::lifeline::{start_reaped, ReapedProgram};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().expect("tempdir");
    let script = r#"printf '[%s]' "$@"; echo; pwd; echo "FOO=$FOO HOME=${HOME-unset}"; cat"#;
    let args: Vec<String> = ["-c", script, "sh", "", "a b", "--x=1"]
        .map(String::from)
        .to_vec();
    let mut reaped = start_reaped(&ReapedProgram {
        program: Path::new("/bin/sh"),
        args: &args,
        cwd: dir.path(),
        env: &[("FOO", "bar baz"), ("PATH", "/usr/bin:/bin")],
        limits: gauntlet::sys::sandbox::Limits::default(),
        report: None,
    })
    .await
    .expect("a reaper from the pool runs it");
    let mut stdout = reaped
        .process
        .stdout()
        .expect("stdout")
        .expect("piped stdout");
    reaped
        .stdin
        .write_all(b"line one\nline two\n")
        .await
        .expect("input");
    drop(reaped.stdin);
    let mut out = String::new();
    stdout.read_to_string(&mut out).await.expect("read");
    let status = reaped.process.wait().await.expect("wait");
    assert!(status.success(), "{status}: {out}");
    let cwd = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        out,
        format!(
            "[][a b][--x=1]\n{}\nFOO=bar baz HOME=unset\nline one\nline two\n",
            cwd.display()
        )
    );
}

/// A reaped program's tree is held to the limits it came with, outside any sandbox: a
/// served app's log says which bound stopped it (its exit status alone, a SIGKILL,
/// does not), and with a report file the reaper writes it there instead.
#[tokio::test]
async fn a_reaped_program_is_held_to_its_limits_and_the_bound_it_met_is_said() {
    use gauntlet::sys::lifeline::{start_reaped, ReapReport, ReapedProgram};
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let limits = gauntlet::sys::sandbox::Limits {
        tasks: 20,
        memory_bytes: 64 << 20,
    };
    let hog = ["-c", "b = bytearray(512 << 20); print(len(b))"].map(String::from);
    let report = dir.path().join("report.json");
    for report in [None, Some(report.as_path())] {
        let mut reaped = start_reaped(&ReapedProgram {
            program: Path::new("/usr/bin/python3"),
            args: &hog,
            cwd: dir.path(),
            env: &[("PATH", "/usr/bin:/bin")],
            limits,
            report,
        })
        .await
        .expect("a reaper from the pool runs it");
        drop(reaped.stdin);
        let mut stderr = reaped
            .process
            .stderr()
            .expect("stderr")
            .expect("piped stderr");
        let mut said = String::new();
        stderr.read_to_string(&mut said).await.expect("read");
        let status = reaped.process.wait().await.expect("wait");
        gauntlet::sys::warm::REAPERS.replenish();
        assert!(!status.success(), "512 MiB under a bound of 64 MiB: {said}");
        match report {
            None => assert!(
                said.contains("gauntlet-reap: stopped: the program exceeded its memory bound of 67108864 bytes"),
                "{said}"
            ),
            Some(path) => {
                let r = ReapReport::read(path).expect("the reaper's report");
                assert!(r.limited && r.memory_exceeded && !r.tasks_exceeded, "{r:?}");
                assert!(!said.contains("memory bound"), "said twice: {said}");
            }
        }
    }
}

/// What a reaper reads on stdin, when it is not a program, is refused before anything
/// runs: it says what was wrong and exits 127, like a program that cannot be run.
#[test]
fn a_reaper_refuses_a_malformed_program_on_stdin_naming_the_cause() {
    use std::io::Write;
    let reaper = crate::support::bin("gauntlet-reap");
    let frame = |body: &[u8]| {
        let mut f = (body.len() as u32).to_le_bytes().to_vec();
        f.extend_from_slice(body);
        f
    };
    // After the working directory: no report, the task and memory limits.
    let framed = |cwd: &[u8], rest: &[u8]| {
        let mut body = cwd.to_vec();
        body.extend_from_slice(b"\x00\x004096\x001073741824\x00");
        body.extend_from_slice(rest);
        frame(&body)
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("nothing", vec![], "no length"),
        ("a length alone", vec![9, 0], "no length"),
        (
            "cut short",
            framed(b"/", b"1\x00/bin/true\x00")[..8].to_vec(),
            "cut short",
        ),
        (
            "over the limit",
            (u32::MAX).to_le_bytes().to_vec(),
            "over the limit",
        ),
        (
            "no final NUL",
            framed(b"/", b"1\x00/bin/true"),
            "does not end with a NUL",
        ),
        (
            "no task limit",
            frame(b"/\x00\x00many\x001073741824\x001\x00/bin/true\x00"),
            "no task limit",
        ),
        (
            "no memory limit",
            frame(b"/\x00\x004096\x00\x001\x00/bin/true\x00"),
            "no memory limit",
        ),
        (
            "no count",
            framed(b"/", b"x\x00/bin/true\x00"),
            "no argument count",
        ),
        (
            "fewer arguments than counted",
            framed(b"/", b"3\x00/bin/true\x00"),
            "1 of 3 arguments",
        ),
        ("no program", framed(b"/", b"0\x00"), "0 of 0 arguments"),
        (
            "a bad variable",
            framed(b"/", b"1\x00/bin/true\x00NOEQUALS\x00"),
            "NOEQUALS",
        ),
        (
            "a missing directory",
            framed(b"/nonexistent-dir", b"1\x00/bin/true\x00"),
            "/nonexistent-dir",
        ),
    ];
    for (what, input, cause) in cases {
        let mut child = std::process::Command::new(&reaper)
            .arg("--from-stdin")
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the reaper starts");
        let mut stdin = child.stdin.take().expect("stdin");
        // A reaper that refused early closes its end: a broken pipe is no failure here.
        let _ = stdin.write_all(&input);
        drop(stdin);
        let out = child.wait_with_output().expect("the reaper ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(127), "{what}: {stderr}");
        assert!(
            stderr.contains("the program on stdin") && stderr.contains(cause),
            "{what}: the cause `{cause}` is named: {stderr}"
        );
    }
}
