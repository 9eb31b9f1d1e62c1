//! Off only on purpose, and the sandbox's own evidence: an unsealed trial says so in its
//! record, its summary line and on the results page; a harness that cannot seal refuses
//! the trial naming the cause; a sealed trial's record hashes the app's and every
//! mutant's logs, so an edited log fails rescore.

use std::path::{Path, PathBuf};
use std::process::Command;

use gauntlet::config::Sandbox;
use gauntlet::score::Outcome;

use crate::support::*;

fn honest(sandbox: Sandbox, out: &Path) -> (gauntlet::record::QaRecord, PathBuf) {
    let cfg = gauntlet::config::Config {
        sandbox,
        ..config(fixture_agent("honest-balance.sh"), out)
    };
    run_trial(&ledger(), "balance", &cfg)
}

#[test]
fn an_unsealed_trial_says_so_in_its_record_its_summary_line_and_the_page() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = honest(Sandbox::Off, out.path());
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    assert_eq!(rec.header.config.sandbox, Sandbox::Off);
    let line = gauntlet::record::summary_line(&rec);
    assert!(line.contains(" sandbox=off"), "{line}");
    let run_dir = dir.parent().expect("run dir");
    let pages =
        gauntlet::report::write_report(run_dir, &out.path().join("pages"), &Default::default())
            .expect("report");
    assert!(
        pages.markdown.contains("**Unsealed.**"),
        "{}",
        pages.markdown
    );

    let sealed_out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = honest(Sandbox::Sealed, sealed_out.path());
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    assert_eq!(rec.header.config.sandbox, Sandbox::Sealed);
    assert!(!gauntlet::record::summary_line(&rec).contains("sandbox=off"));
    let pages = gauntlet::report::write_report(
        dir.parent().expect("run dir"),
        &sealed_out.path().join("pages"),
        &Default::default(),
    )
    .expect("report");
    assert!(!pages.markdown.contains("Unsealed"), "{}", pages.markdown);
}

#[test]
fn a_sealed_record_hashes_the_app_and_mutant_logs_and_an_edited_log_fails_rescore() {
    let out = tempfile::tempdir().expect("tempdir");
    let (rec, dir) = honest(Sandbox::Sealed, out.path());
    assert_eq!(
        rec.verdict.outcome,
        Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    let gate = rec.evidence.gate.as_ref().expect("gate ran");
    // The agent's app plus one target per gate run, each with stdout and stderr.
    assert_eq!(rec.evidence.world_logs.len(), 2 * (1 + gate.runs.len()));
    assert_eq!(gate.order.len(), gate.runs.len());
    assert_eq!(
        gate.order,
        gate.runs.iter().map(|r| r.target).collect::<Vec<_>>(),
        "the runs are recorded in the order drawn"
    );
    // The agent's app stops beside the gate's first start, yet its logs come first and
    // the gate's follow in the order its runs went.
    let mut attempts = [0; 2];
    let mut want = vec!["app/app.stdout".to_owned(), "app/app.stderr".to_owned()];
    for target in &gate.order {
        let (label, slot) = match target {
            gauntlet::evidence::GateTarget::App => ("app", 0),
            gauntlet::evidence::GateTarget::Mutant => ("mutant", 1),
        };
        attempts[slot] += 1;
        for stream in ["stdout", "stderr"] {
            want.push(format!("gate/logs/{label}-{}.{stream}", attempts[slot]));
        }
    }
    let got: Vec<&str> = rec
        .evidence
        .world_logs
        .iter()
        .map(|l| l.path.as_str())
        .collect();
    assert_eq!(got, want, "the world's logs, in the order the targets ran");
    let record = dir.join("record.json");
    assert!(gauntlet::record::rescore::rescore_file(&record).agrees());
    let log = rec
        .evidence
        .world_logs
        .iter()
        .find(|l| l.bytes > 0)
        .expect("some app log has content");
    let path = dir.join(&log.path);
    let mut bytes = std::fs::read(&path).expect("log");
    bytes[0] ^= 1;
    std::fs::write(&path, bytes).expect("edit the log");
    let row = gauntlet::record::rescore::rescore_file(&record);
    assert!(!row.agrees(), "an edited app log must fail rescore");
    assert!(
        row.raw_problems.iter().any(|p| p.contains(&log.path)),
        "{:?}",
        row.raw_problems
    );
}

/// A harness directory with every binary but the sandbox helper: the sealed trial must
/// refuse to run and say why, and `GAUNTLET_SANDBOX=off` must run it.
#[test]
fn without_the_sandbox_a_trial_refuses_naming_the_cause_unless_turned_off() {
    let gauntlet = crate::support::bin("gauntlet");
    let built = gauntlet.parent().expect("bin dir");
    let bins = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(built).expect("bin dir").flatten() {
        let name = entry.file_name();
        if entry.path().is_file() && name != "gauntlet-seal" {
            std::os::unix::fs::symlink(entry.path(), bins.path().join(&name)).expect("link");
        }
    }
    let run = |sandbox: &str| {
        let out = tempfile::tempdir().expect("tempdir").keep();
        let o = Command::new(&gauntlet)
            .args(["run", "--filter", "qa::api-ledger::health", "--jobs", "1"])
            // Not a build: `gauntlet run` builds first when run by cargo.
            .env_remove("CARGO")
            .env_remove("GAUNTLET_CONFIG")
            .env("GAUNTLET_BIN_DIR", bins.path())
            .env("GAUNTLET_OUT", &out)
            .env("GAUNTLET_SANDBOX", sandbox)
            .env("GAUNTLET_N", "1")
            .output()
            .expect("gauntlet runs");
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        (o.status.code(), text)
    };
    let (code, text) = run("sealed");
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("gauntlet-seal"), "the cause is named: {text}");
    assert!(text.contains("verdict=error"), "{text}");
    let (code, text) = run("off");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("sandbox=off"), "{text}");
}

/// `sh -c script` sealed in a view that writes only `dir`, bounded by `limits`.
fn sealed_sh(
    dir: &Path,
    name: &str,
    script: &str,
    limits: gauntlet::sys::sandbox::Limits,
) -> gauntlet::sys::process::ProcessSpec {
    let mut env = std::collections::BTreeMap::new();
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    let mut view = gauntlet::sys::sandbox::View::new().write(dir);
    view.limits = limits;
    gauntlet::sys::process::ProcessSpec {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".into(), script.into()],
        cwd: dir.to_path_buf(),
        env,
        deadline: std::time::Duration::from_secs(60),
        stdout_path: dir.join(format!("{name}.stdout")),
        stderr_path: dir.join(format!("{name}.stderr")),
        rel_base: dir.to_path_buf(),
        output_cap: 1 << 16,
        marker: format!("sealing-{name}-{}", std::process::id()),
        seal: Some(view),
    }
}

/// Run `script` sealed to its end: the outcome, and what it wrote on stderr.
fn run_sealed(
    rt: &tokio::runtime::Runtime,
    dir: &Path,
    name: &str,
    script: &str,
    limits: gauntlet::sys::sandbox::Limits,
) -> (gauntlet::sys::process::ProcessOutcome, String) {
    let outcome = rt
        .block_on(gauntlet::sys::process::run(sealed_sh(
            dir, name, script, limits,
        )))
        .expect("sealed run");
    let stderr = std::fs::read_to_string(dir.join(format!("{name}.stderr"))).unwrap_or_default();
    (outcome, stderr)
}

/// Every sandbox runs as the same user, so a per-user process count would let one
/// trial's fork bomb make another's forks fail. Each sandbox's tasks are counted in a
/// group of its own: with both bounded at 40 tasks, one that holds 30 sleeping
/// processes does not keep the other from starting 30 of its own.
#[test]
fn a_sandbox_full_of_processes_leaves_the_one_beside_it_room_to_fork() {
    let limits = gauntlet::sys::sandbox::Limits {
        tasks: 40,
        ..Default::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let full = dir.path().join("full");
    std::fs::create_dir_all(&full).expect("dir");
    let rt = runtime();
    let outcome = rt.block_on(async {
        let holder = tokio::spawn(gauntlet::sys::process::run(sealed_sh(
            &full,
            "holder",
            "for i in $(seq 30); do sleep 20 & done; echo full > ready; wait",
            limits,
        )));
        // Wait until the first sandbox holds its 30 processes.
        let ready = full.join("ready");
        for _ in 0..600 {
            if ready.exists() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert!(ready.exists(), "the first sandbox never filled up");
        let beside = dir.path().join("beside");
        std::fs::create_dir_all(&beside).expect("dir");
        let outcome = gauntlet::sys::process::run(sealed_sh(
            &beside,
            "beside",
            "for i in $(seq 30); do sleep 0.2 & done; wait",
            limits,
        ))
        .await
        .expect("sealed run");
        holder.abort();
        let _ = holder.await;
        (
            outcome,
            std::fs::read_to_string(beside.join("beside.stderr")).unwrap_or_default(),
        )
    });
    let (outcome, stderr) = outcome;
    assert_eq!(
        outcome.end.exit_code,
        Some(0),
        "forks failed beside a full sandbox: {stderr}"
    );
}

/// Past its own bound a sandbox cannot fork (and what it started is counted), and past
/// its memory the kernel kills its process, not one of the machine's.
#[test]
fn a_sandbox_is_held_to_its_task_and_memory_bounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = runtime();
    let tasks = gauntlet::sys::sandbox::Limits {
        tasks: 20,
        ..Default::default()
    };
    let (forks, stderr) = run_sealed(
        &rt,
        dir.path(),
        "forks",
        "for i in $(seq 40); do sleep 20 & done; wait",
        tasks,
    );
    assert_ne!(
        forks.end.exit_code,
        Some(0),
        "40 forks under a bound of 20: {stderr}"
    );
    assert!(stderr.contains("fork"), "{stderr}");
    assert!(forks.stragglers_killed > 0, "{forks:?}");

    let memory = gauntlet::sys::sandbox::Limits {
        memory_bytes: 64 << 20,
        ..Default::default()
    };
    let (hog, _) = run_sealed(
        &rt,
        dir.path(),
        "hog",
        "exec python3 -c 'b = bytearray(512 << 20); print(len(b))'",
        memory,
    );
    assert_eq!(
        hog.end.signal,
        Some(9),
        "512 MiB under a bound of 64 MiB: {hog:?}"
    );
}

/// A sandbox's workspace and HOME are on the host's disk, where no quota applies: a
/// program that keeps writing is stopped while its disk still has room for everyone
/// else (here a 128 MiB disk, of which a sandbox must leave 5%), and says why on its
/// stderr.
#[test]
fn a_disk_hog_is_stopped_before_the_disk_is_full() {
    let dir = tempfile::tempdir().expect("tempdir");
    let disk = dir.path().join("disk");
    std::fs::create_dir_all(&disk).expect("dir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=128m", "tmpfs"])
        .arg(&disk)
        .status()
        .expect("mount runs");
    assert!(mounted.success(), "mounting a small disk for the test");
    let rt = runtime();
    let (hog, stderr) = run_sealed(
        &rt,
        &disk,
        "hog",
        "exec python3 -c '
import time
with open(\"fill\", \"wb\") as f:
    for _ in range(200):
        f.write(b\"x\" * (1 << 20)); f.flush(); time.sleep(0.025)
'",
        Default::default(),
    );
    let written = std::fs::metadata(disk.join("fill")).map_or(0, |m| m.len());
    let _ = Command::new("umount").arg(&disk).status();
    assert_eq!(hog.end.signal, Some(9), "{hog:?}\n{stderr}");
    assert!(
        stderr.contains("gauntlet-seal: stopped: the disk of"),
        "{stderr}"
    );
    assert!(written < 128 << 20, "the disk filled up: {written} bytes");
}

/// What the kernel keeps per user is shared by every sandbox (they all run as one
/// user): a key on the user's keyring would outlive the sandbox and let the next gate
/// run count the runs before it. The keyring is absent, and init, whose start time
/// would say how long the sandbox waited, is not in the program's process list.
#[test]
fn a_sealed_program_gets_no_keyring_and_no_view_of_init() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = runtime();
    let (outcome, stderr) = run_sealed(
        &rt,
        dir.path(),
        "probe",
        r#"python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(248, b"user", b"gauntlet-runs", b"1", 1, -4)
print("add_key", r, ctypes.get_errno())
'
[ -e /proc/1/stat ] && echo init-seen || echo init-hidden
[ -e /proc/self/stat ] && echo self-seen"#,
        Default::default(),
    );
    let stdout = std::fs::read_to_string(dir.path().join("probe.stdout")).unwrap_or_default();
    assert_eq!(outcome.end.exit_code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("add_key -1 38"), "{stdout}");
    assert!(stdout.contains("init-hidden"), "{stdout}");
    assert!(stdout.contains("self-seen"), "{stdout}");
}
