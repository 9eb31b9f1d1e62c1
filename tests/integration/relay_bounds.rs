//! Bounds on everything run for a test (issue 45 item 5): the CLI relay runs the app for
//! a claimed test outside the test's sandbox, so each app run is held to bounds of its
//! own — standard input, wall time, its tree's memory and tasks, and runs of one target
//! at once (`world::cli_relay::AppRunBounds`). A run that meets one is stopped and
//! fails naming it; the harness and the next run are unaffected.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use gauntlet::spec::app::AppStart;
use gauntlet::spec::{AppSpec, Modality};
use gauntlet::sys::sandbox::{Limits, View};
use gauntlet::world::cli_relay::{AppRunBounds, EXCEEDED_EXIT};
use gauntlet::world::target::Target;

use crate::support;

/// `sh -c script` sealed, writing only `dir`, with the target's locators: as a gate run
/// runs a claimed test.
fn sealed_test(dir: &Path, name: &str, script: &str, target: &Target) -> (i32, String, String) {
    let mut env = target.env();
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    let mut view = View::new().write(dir).extend(target.view());
    view.limits = Limits::default();
    let spec = gauntlet::sys::process::ProcessSpec {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        cwd: dir.to_path_buf(),
        env,
        deadline: Duration::from_secs(600),
        stdout_path: dir.join(format!("{name}.stdout")),
        stderr_path: dir.join(format!("{name}.stderr")),
        rel_base: dir.to_path_buf(),
        output_cap: 1 << 16,
        marker: format!("relay-bounds-{name}-{}", std::process::id()),
        seal: Some(view),
    };
    let outcome = support::runtime()
        .block_on(gauntlet::sys::process::run(spec))
        .expect("sealed run");
    let read =
        |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap_or_default();
    (
        outcome.end.exit_code.unwrap_or(-1),
        read("stdout"),
        read("stderr"),
    )
}

/// The hostile report's test: 1.5 GiB piped into `$APP_BIN` (cli-tally, which reads its
/// whole input) from a sealed test through the real relay. Before the bounds, the app
/// run on the host read all of it and quoted it back in its error, gigabytes resident,
/// until the test met its deadline. Now it is stopped at its input bound and says so;
/// its tree never held much more than the bound, nor did the harness, which streams the
/// input; and the next run of the same target works.
#[test]
fn piping_far_past_the_input_bound_into_a_cli_app_stops_that_run_only() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let app =
        gauntlet::spec::load_app(&support::root().join("apps/cli-tally")).expect("cli-tally loads");
    let rt = support::runtime();
    let mut target = rt
        .block_on(Target::start(
            &app.app,
            None,
            &tmp.path().join("run/target"),
            &tmp.path().join("logs"),
            "app",
        ))
        .expect("target starts");
    let dir = tmp.path().join("test");
    std::fs::create_dir_all(&dir).expect("dir");
    let (code, stdout, stderr) = sealed_test(
        &dir,
        "flood",
        r#"head -c 1536M /dev/zero | "$APP_BIN" sum; echo "flood exit $?"
echo 1 2 3 | "$APP_BIN" sum"#,
        &target,
    );
    let runs = target.app_runs().expect("a cli target has app runs");
    rt.block_on(target.stop(tmp.path()));
    let bound = AppRunBounds::default().input_bytes;
    assert!(
        stderr.contains(&format!(
            "the app run exceeded its input bound of {bound} bytes"
        )),
        "the flood's run does not fail naming its bound:\nstdout: {stdout}\nstderr: {}",
        stderr.chars().take(2000).collect::<String>()
    );
    assert!(
        stdout.contains(&format!("flood exit {EXCEEDED_EXIT}")),
        "{stdout}"
    );
    assert_eq!(code, 0, "the next run works: {stdout}\n{stderr}");
    assert_eq!(stdout.lines().last(), Some("6"), "{stdout}");
    assert_eq!(runs.runs, 2, "{runs:?}");
    assert_eq!(runs.exceeded.len(), 1, "{runs:?}");
    // Measured by the run's own control group (as the sandboxes' bounds, these need
    // one): the app held what it was passed, a sixth of the flood at most.
    assert_eq!(
        runs.unlimited, 0,
        "no control group held the runs: {runs:?}"
    );
    let peak = runs.memory_peak_bytes.expect("the group's peak");
    assert!(peak < 256 << 20, "the app run held {peak} bytes: {runs:?}");
    // The relay runs in this process: it passed the input on, never held it.
    let harness = support::peak_rss();
    assert!(harness < 768 << 20, "the harness held {harness} bytes");
}

/// A CLI app given by its command line (`sh -c script app <args>`), run through a relay
/// held to `bounds`.
fn scripted_target(
    tmp: &Path,
    script: &str,
    bounds: AppRunBounds,
) -> (tokio::runtime::Runtime, Target) {
    let app = AppSpec {
        dir: tmp.to_path_buf(),
        name: "bounded-app".into(),
        modality: Modality::Cli,
        description: "a script".into(),
        start: AppStart::Command(vec!["sh".into(), "-c".into(), script.into(), "app".into()]),
        frozen: false,
        content: vec![],
        content_hash: String::new(),
        capabilities: vec![],
        superseded_by: None,
    };
    let rt = support::runtime();
    let target = rt
        .block_on(Target::start_bounded(
            &app,
            None,
            &tmp.join("run/target"),
            &tmp.join("logs"),
            "app",
            bounds,
        ))
        .expect("target starts");
    (rt, target)
}

/// Run `$APP_BIN args` from the host, as a test would, to its end.
fn invoke(target: &Target, args: &[&str]) -> Output {
    let env = target.host_env();
    Command::new(&env["APP_BIN"])
        .args(args)
        .env_clear()
        .env("GAUNTLET_APP_SOCKET", &env["GAUNTLET_APP_SOCKET"])
        .stdin(Stdio::null())
        .output()
        .expect("the relay runs")
}

/// Small bounds, so that meeting one is cheap.
fn small() -> AppRunBounds {
    AppRunBounds {
        limits: Limits {
            tasks: 20,
            memory_bytes: 64 << 20,
        },
        time: Duration::from_secs(600),
        input_bytes: 1 << 20,
        at_once: 2,
    }
}

fn assert_stopped_at(out: &Output, bound: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(EXCEEDED_EXIT), "{stderr}");
    assert!(
        stderr.contains(&format!("the app run exceeded its {bound}")),
        "{stderr}"
    );
}

/// A memory hog, a fork bomb and a sleeper, each in a run of its own: each run is
/// stopped at its bound and fails naming it, and a plain run afterwards still works.
#[test]
fn an_app_run_is_held_to_its_memory_task_and_time_bounds() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = r#"case "$1" in
  hog) exec python3 -c 'b = bytearray(512 << 20); print(len(b))' ;;
  forks) for i in $(seq 40); do sleep 2 & done; wait ;;
  sleep) exec sleep 600 ;;
  *) echo "ok $1" ;;
esac"#;
    let bounds = AppRunBounds {
        time: Duration::from_secs(1),
        ..small()
    };
    let (rt, mut target) = scripted_target(tmp.path(), script, bounds);
    let memory = invoke(&target, &["hog"]);
    let forks = invoke(&target, &["forks"]);
    let sleeper = invoke(&target, &["sleep"]);
    let plain = invoke(&target, &["plain"]);
    let runs = target.app_runs().expect("app runs");
    rt.block_on(target.stop(tmp.path()));
    assert_eq!(
        runs.unlimited, 0,
        "no control group held the runs: {runs:?}"
    );
    assert_stopped_at(&memory, "memory bound of 67108864 bytes");
    assert_stopped_at(&forks, "task bound of 20 tasks");
    assert_stopped_at(&sleeper, "time bound of 1000 ms");
    assert!(plain.status.success(), "{plain:?}");
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "ok plain\n");
    assert_eq!(runs.runs, 4, "{runs:?}");
}

/// Runs of one target at once are bounded, so that bounds per run bound the target:
/// with two runs holding their slots, a third is refused naming the bound, and once
/// they have ended a run goes again.
#[test]
fn a_target_runs_at_most_its_bound_of_app_runs_at_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = r#"case "$1" in
  hold) echo held; exec cat >/dev/null ;;
  *) echo "ok $1" ;;
esac"#;
    let (rt, mut target) = scripted_target(tmp.path(), script, small());
    let env = target.host_env();
    let mut holders: Vec<_> = (0..2)
        .map(|_| {
            let mut child = Command::new(&env["APP_BIN"])
                .arg("hold")
                .env_clear()
                .env("GAUNTLET_APP_SOCKET", &env["GAUNTLET_APP_SOCKET"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the relay runs");
            // Its app has started: its slot is taken until its input ends.
            let mut line = String::new();
            if let Some(out) = child.stdout.take() {
                let _ = BufReader::new(out).read_line(&mut line);
            }
            assert_eq!(line, "held\n");
            child
        })
        .collect();
    let refused = invoke(&target, &["third"]);
    for h in &mut holders {
        drop(h.stdin.take());
    }
    let held: Vec<_> = holders.into_iter().map(|h| h.wait_with_output()).collect();
    let fourth = invoke(&target, &["fourth"]);
    let runs = target.app_runs().expect("app runs");
    rt.block_on(target.stop(tmp.path()));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(EXCEEDED_EXIT), "{stderr}");
    assert!(
        stderr.contains("the app runs of one target exceeded their bound of 2 at once"),
        "{stderr}"
    );
    for h in held {
        let h = h.expect("the holder ends");
        assert!(h.status.success(), "{h:?}");
    }
    assert_eq!(
        String::from_utf8_lossy(&fourth.stdout),
        "ok fourth\n",
        "{fourth:?}"
    );
    assert_eq!(runs.runs, 4, "{runs:?}");
    assert_eq!(runs.exceeded.len(), 1, "{runs:?}");
}
