//! Off only on purpose, and the sandbox's own evidence: an unsealed trial says so in its
//! record, its summary line and on the results page; a harness that cannot seal refuses
//! the trial naming the cause; a sealed trial's record hashes the app's and every
//! mutant's logs, so an edited log fails rescore; and the loopback ports a sealed
//! program is handed are relayed byte for byte, half-closes and refusals included.

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
    let mut attempts = [0; 3];
    let mut want = vec!["app/app.stdout".to_owned(), "app/app.stderr".to_owned()];
    for target in &gate.order {
        let (label, slot) = match target {
            gauntlet::evidence::GateTarget::App => ("app", 0),
            gauntlet::evidence::GateTarget::Mutant => ("mutant", 1),
            gauntlet::evidence::GateTarget::Independent => ("independent", 2),
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

/// A harness directory with every binary but the sandbox helper: a sealed run must
/// refuse to start, naming the sandbox and how to install it, and
/// `GAUNTLET_SANDBOX=off` must run it.
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
    assert!(
        text.contains(gauntlet::binaries::INSTALL_HELPERS),
        "and how to install it: {text}"
    );
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

/// A host loopback server for the forwarding tests: each connection is handed to
/// `answer` on a thread of its own; the count is of connections accepted. It lives as
/// long as the test process.
fn serve(answer: fn(std::net::TcpStream)) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(30)));
            std::thread::spawn(move || answer(stream));
        }
    });
    (port, accepted)
}

/// Run the Python `script` sealed, with `env` added to the program's environment (a
/// `127.0.0.1:<port>` there is what forwards that port): its outcome, stdout and stderr.
fn run_sealed_python(
    dir: &Path,
    name: &str,
    script: &str,
    env: &[(&str, String)],
) -> (gauntlet::sys::process::ProcessOutcome, String, String) {
    std::fs::write(dir.join(format!("{name}.py")), script).expect("script");
    let mut spec = sealed_sh(
        dir,
        name,
        &format!("exec python3 {name}.py"),
        Default::default(),
    );
    for (key, value) in env {
        spec.env.insert((*key).to_string(), value.clone());
    }
    let outcome = runtime()
        .block_on(gauntlet::sys::process::run(spec))
        .expect("sealed run");
    let read =
        |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap_or_default();
    (outcome, read("stdout"), read("stderr"))
}

/// Every byte a sealed program sends through a forwarded port comes back, whatever the
/// connection's size or company: 50 connections one after another (empty, around the
/// relay's 64 KiB buffer, 1 MiB, and 8 MiB read only after a pause, so that every
/// buffer on the way fills; to `::1` too where the host has it) and 20 of 1 MiB at
/// once, each echoed by a host server while it is still being sent.
#[test]
fn a_forwarded_port_relays_many_connections_in_turn_and_at_once_byte_for_byte() {
    let (port, accepted) = serve(|mut stream| {
        let _ = std::io::copy(&mut stream.try_clone().expect("clone"), &mut stream);
        let _ = stream.shutdown(std::net::Shutdown::Write);
    });
    let v6 = std::net::TcpListener::bind("[::1]:0").is_ok();
    let dir = tempfile::tempdir().expect("tempdir");
    let (outcome, stdout, stderr) = run_sealed_python(
        dir.path(),
        "echo",
        r#"
import os, random, socket, sys, threading, time
port = int(os.environ["ECHO"].rsplit(":", 1)[1])
hosts = ["127.0.0.1"] + (["::1"] if os.environ["V6"] == "1" else [])

def exchange(i, size, pause=0):
    payload = random.Random(i).randbytes(size)
    host = hosts[i % len(hosts)]
    with socket.create_connection((host, port), timeout=30) as s:
        def send():
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        sender = threading.Thread(target=send)
        sender.start()
        time.sleep(pause)
        got = bytearray()
        while chunk := s.recv(1 << 16):
            got += chunk
        sender.join()
    if got != payload:
        raise SystemExit(f"connection {i} to {host}: sent {size} bytes, got {len(got)} back, not the same")

sizes = [0, 1, 1000, 65535, 65536, 65537, 1 << 20, 8 << 20]
for i in range(50):
    size = sizes[i % len(sizes)]
    # More than the sockets on the way hold, read only after a while: the relay
    # must stop reading, hold what it has, and go on where it stopped.
    exchange(i, size, pause=0.2 if size > 1 << 20 else 0)
print("in turn: 50")
failures = []
def at_once(i):
    try:
        exchange(100 + i, (1 << 20) + i)
    except BaseException as e:
        failures.append(repr(e))
threads = [threading.Thread(target=at_once, args=(i,)) for i in range(20)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if failures:
    raise SystemExit("; ".join(failures))
print("at once: 20")
"#,
        &[
            ("ECHO", format!("127.0.0.1:{port}")),
            ("V6", if v6 { "1" } else { "0" }.to_string()),
        ],
    );
    assert_eq!(outcome.end.exit_code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("in turn: 50"), "{stdout}");
    assert!(stdout.contains("at once: 20"), "{stdout}");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        70,
        "each connection inside is one on the host"
    );
}

/// A client that sends its request and then shuts down its write side (as `nc -N`, or
/// an HTTP/1.0 client, does) must still read the whole answer: the host server sees the
/// end of the request only through the relay, and answers only after it.
#[test]
fn a_client_that_half_closes_after_its_request_still_reads_the_whole_answer() {
    use sha2::Digest;
    use std::io::{Read, Write};
    let (port, _) = serve(|mut stream| {
        let mut request = Vec::new();
        let head = match stream.read_to_end(&mut request) {
            Ok(n) => format!("{n} {:x}\n", sha2::Sha256::digest(&request)),
            Err(e) => format!("no end of request: {e}\n"),
        };
        let body: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(&body);
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let (outcome, stdout, stderr) = run_sealed_python(
        dir.path(),
        "half",
        r#"
import hashlib, os, random, socket
port = int(os.environ["SERVER"].rsplit(":", 1)[1])
request = random.Random(7).randbytes(200_000)
with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
    s.sendall(request)
    s.shutdown(socket.SHUT_WR)
    got = bytearray()
    while chunk := s.recv(1 << 16):
        got += chunk
head, _, body = bytes(got).partition(b"\n")
expected = f"{len(request)} {hashlib.sha256(request).hexdigest()}".encode()
if head != expected:
    raise SystemExit(f"the server read {head!r}, not {expected!r}")
if body != bytes(range(256)) * 4096:
    raise SystemExit(f"answer: {len(body)} bytes of 1048576, or not the ones sent")
print("whole answer")
"#,
        &[("SERVER", format!("127.0.0.1:{port}"))],
    );
    assert_eq!(outcome.end.exit_code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("whole answer"), "{stdout}");
}

/// A named port nothing listens on in the host: the connection inside is accepted (the
/// sandbox's listener cannot know) and then closed at once, as a refusal, never left
/// open for a client to wait on.
#[test]
fn a_connection_the_host_refuses_is_closed_inside_not_left_open() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        probe.local_addr().expect("addr").port()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (outcome, stdout, stderr) = run_sealed_python(
        dir.path(),
        "refused",
        r#"
import os, socket
port = int(os.environ["NOBODY"].rsplit(":", 1)[1])
for _ in range(3):
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        try:
            got = s.recv(1)
        except ConnectionResetError:
            got = b""
        except TimeoutError:
            raise SystemExit("left open")
    assert got == b"", got
print("closed")
"#,
        &[("NOBODY", format!("127.0.0.1:{port}"))],
    );
    assert_eq!(outcome.end.exit_code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("closed"), "{stdout}");
}

/// A CLI app reached through the relay can print its working directory: that path
/// must say no more than the locators do. It once ended in `<label>.cwd`, where the
/// label was the gate's `app-1`, `mutant-1` or `independent-2`, so a test could read
/// its target from `pwd`. The tell finder found it (`gauntlet tells`, a CLI app that
/// prints its directory).
#[test]
fn a_cli_app_behind_the_relay_works_in_a_directory_that_names_no_target() {
    use gauntlet::spec::app::AppStart;
    use gauntlet::spec::{AppSpec, Modality};
    let tmp = tempfile::tempdir().expect("tempdir");
    let app = AppSpec {
        dir: tmp.path().to_path_buf(),
        name: "pwd-app".into(),
        modality: Modality::Cli,
        description: "prints its working directory".into(),
        start: AppStart::Command(vec!["sh".into(), "-c".into(), "pwd".into()]),
        frozen: false,
        content: vec![],
        content_hash: String::new(),
        capabilities: vec![],
        superseded_by: None,
    };
    let rt = runtime();
    let mut seen = Vec::new();
    for (label, mutant) in [
        ("app-1", None),
        ("mutant-1", Some("x")),
        ("independent-1", Some("y")),
    ] {
        let run = tmp.path().join(format!("run-{}", seen.len() + 1));
        let logs = tmp.path().join("logs");
        let mut target = rt
            .block_on(gauntlet::world::target::Target::start(
                &app,
                mutant,
                &run.join("target"),
                &logs,
                label,
            ))
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let env = target.host_env();
        let out = Command::new(&env["APP_BIN"])
            .env_clear()
            .env("GAUNTLET_APP_SOCKET", &env["GAUNTLET_APP_SOCKET"])
            .output()
            .expect("the relay runs");
        rt.block_on(target.stop(tmp.path()));
        let cwd = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(out.status.success(), "{label}: {out:?}");
        assert!(
            !cwd.contains(label) && !cwd.contains("mutant") && !cwd.contains("independent"),
            "{label}: the app works in {cwd}"
        );
        // Relative to its run's directory (which says only the run's position), every
        // target's directory is the same.
        let rel = cwd
            .strip_prefix(run.to_string_lossy().as_ref())
            .unwrap_or_else(|| panic!("{label}: {cwd} is not under {}", run.display()))
            .to_string();
        seen.push(rel);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
}
