//! `gauntlet flow run` as a real subprocess: http, cli and browser steps against a
//! server and a script made by the test, real Chromium, and the three exit codes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::browser::{processes_mentioning, write_extension, PAGE};

/// `GET /` → the items page; `POST /echo` → 201 with the request body; else 404.
fn serve_app() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || handle(stream));
        }
    });
    url
}

fn handle(mut stream: TcpStream) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while got.len() < head_end + length {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let body = String::from_utf8_lossy(&got[head_end..head_end + length]).to_string();
    let request_line = head.lines().next().unwrap_or("");
    let (status, ctype, out) = if request_line.starts_with("POST /echo ") {
        (201, "application/json", body)
    } else if request_line.starts_with("GET / ") {
        (200, "text/html; charset=utf-8", PAGE.to_string())
    } else if request_line.starts_with("GET /late ") {
        (200, "text/html; charset=utf-8", LATE_PAGE.to_string())
    } else if request_line.starts_with("GET /slow.gif ") {
        // An image that takes its time: the page is busy until its `load` has run.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        (200, "image/gif", GIF.to_string())
    } else if request_line.starts_with("GET /slow ") {
        // A request that takes its time: the page is busy, not idle, until it answers.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        (200, "text/plain", "answered late".to_string())
    } else {
        (404, "text/plain", "not found".to_string())
    };
    let _ = write!(
        stream,
        "HTTP/1.0 {status} X\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}",
        out.len()
    );
}

/// Served as an image but none: it settles with `error`, which runs handlers just as
/// `load` does.
const GIF: &str = "GIF89a";

/// Buttons whose effect comes late: after a timer, after a slow request, after a slow
/// image, or never.
const LATE_PAGE: &str = r##"<!doctype html><html><body>
<button id="timer">timer</button><button id="request">request</button><button id="image">image</button><button id="nothing">nothing</button><button id="leave">leave</button>
<p id="out">waiting</p>
<script>
  const out = document.getElementById("out");
  // Leaves for the items page a moment later: a wait spans the navigation.
  document.getElementById("leave").addEventListener("click", () => {
    setTimeout(() => { location.href = "/"; }, 200);
  });
  document.getElementById("image").addEventListener("click", () => {
    const img = document.createElement("img");
    img.onload = img.onerror = () => { out.textContent = "image settled"; };
    img.src = "/slow.gif";
    document.body.appendChild(img);
  });
  document.getElementById("timer").addEventListener("click", () => {
    setTimeout(() => { out.textContent = "timer fired"; }, 1500);
  });
  document.getElementById("request").addEventListener("click", async () => {
    const r = await fetch("/slow");
    out.textContent = await r.text();
  });
</script>
</body></html>"##;

/// A CLI app: `sum A B` prints A+B; `echo` copies stdin; anything else exits 3.
fn write_cli(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("tally");
    std::fs::write(
        &bin,
        "#!/bin/sh\ncase \"$1\" in\n  sum) echo $(($2 + $3));;\n  echo) cat;;\n  *) echo \"unknown command $1\" >&2; exit 3;;\nesac\n",
    )
    .expect("write cli");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

struct Env {
    dir: tempfile::TempDir,
    url: String,
    bin: PathBuf,
    ext: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = write_cli(dir.path());
    let ext = dir.path().join("ext");
    write_extension(&ext);
    std::fs::create_dir(dir.path().join("tmp")).expect("mkdir tmp");
    Env {
        url: serve_app(),
        bin,
        ext,
        dir,
    }
}

/// Run `gauntlet flow run` on `flow` with the env's target; the browser's profile goes
/// under the env's own TMPDIR so that its processes can be found afterwards.
fn flow_run(env: &Env, flow: &str, extra: &[(&str, &str)]) -> Output {
    let file = env.dir.path().join("check.json");
    std::fs::write(&file, flow).expect("write flow");
    let mut cmd = Command::new(crate::support::bin("gauntlet"));
    cmd.args(["flow", "run"])
        .arg(&file)
        .env("APP_URL", &env.url)
        .env("APP_BIN", &env.bin)
        .env("EXTENSION_DIR", &env.ext)
        .env("TMPDIR", env.dir.path().join("tmp"));
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run gauntlet flow run");
    let tmp = env.dir.path().join("tmp").to_string_lossy().into_owned();
    let left = processes_mentioning(&tmp);
    assert!(left.is_empty(), "chromium survived the flow run: {left:?}");
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn http_cli_and_browser_steps_pass() {
    let env = env();
    let out = flow_run(
        &env,
        r##"{"steps": [
  {"http": {"method": "POST", "path": "/echo", "json": {"text": "milk"}},
   "expect": {"status": 201, "body_contains": "milk"}},
  {"http": {"method": "GET", "path": "nothing-here"}, "expect": {"status": 404}},
  {"cli": {"args": ["sum", "1", "2"]}, "expect": {"exit": 0, "stdout_contains": "3", "equals": "3"}},
  {"cli": {"args": ["echo"], "stdin": "from stdin"}, "expect": {"equals": "from stdin"}},
  {"cli": {"args": ["bogus"]}, "expect": {"exit": 3, "stderr_contains": "unknown command bogus"}},
  {"browser": {"goto": "/"}},
  {"browser": {"badge": {}}, "expect": {"equals": "7"}},
  {"browser": {"type": {"selector": "#name", "text": "buy milk · café"}}},
  {"browser": {"click": "#add"}},
  {"browser": {"wait_for": "#items li"}},
  {"browser": {"text": "#count"}, "expect": {"equals": "1"}},
  {"browser": {"count": "#items li"}, "expect": {"equals": "1"}},
  {"browser": {"text": "#items li"}, "expect": {"contains": "milk · café", "not_contains": "eggs"}}
]}"##,
        &[],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    let ok_lines = stdout.lines().filter(|l| l.contains(" ok (")).count();
    assert_eq!(ok_lines, 13, "{stdout}");
    // Every step line says how long it took, and the browser's start has a line.
    let step7 = stdout
        .lines()
        .find(|l| l.starts_with("step 7 ok ("))
        .unwrap_or_default();
    assert!(step7.ends_with(" ms): browser badge -> \"7\""), "{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("browser started (") && l.ends_with(" ms)"))
            .count(),
        1,
        "{stdout}"
    );
}

#[test]
fn a_failing_expectation_exits_1_naming_the_step() {
    let env = env();
    let out = flow_run(
        &env,
        r##"{"steps": [
  {"cli": {"args": ["sum", "2", "2"]}, "expect": {"equals": "4"}},
  {"cli": {"args": ["sum", "2", "2"]}, "expect": {"equals": "5"}},
  {"http": {"method": "GET", "path": "/"}}
]}"##,
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("step 2 (cli sum 2 2): expected equals \"5\", saw \"4\""),
        "{stderr}"
    );
    // It stopped there: step 3 never ran.
    assert!(
        !text(&out.stdout).contains("step 3"),
        "{}",
        text(&out.stdout)
    );

    let out = flow_run(
        &env,
        r##"{"steps": [
  {"browser": {"goto": "/"}},
  {"browser": {"text": "#count"}, "expect": {"equals": "1"}}
]}"##,
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("step 2 (browser text #count): expected equals \"1\", saw \"0\""),
        "{stderr}"
    );
}

#[test]
fn a_malformed_flow_exits_2_naming_the_file_and_field() {
    let env = env();
    let out = flow_run(
        &env,
        r##"{"steps": [{"http": {"method": "GET", "path": "/"}}, {"browser": {"text": "#a"}, "expect": {"equal": "1"}}]}"##,
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("check.json")
            && stderr.contains("steps[1].expect")
            && stderr.contains("`equal`"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing ran: {}", text(&out.stdout));
    let missing = env.dir.path().join("nope.json");
    let out = Command::new(crate::support::bin("gauntlet"))
        .args(["flow", "run"])
        .arg(&missing)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nope.json"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn browser_failures_exit_1_naming_the_cause() {
    let env = env();
    let flow = r##"{"steps": [{"browser": {"goto": "/"}}]}"##;
    let out = flow_run(
        &env,
        flow,
        &[("GAUNTLET_CHROMIUM", "/nonexistent/chromium")],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("step 1 (browser goto /)") && stderr.contains("/nonexistent/chromium"),
        "{stderr}"
    );
    std::fs::write(
        env.ext.join("manifest.json"),
        r#"{"name": "x", "version": "1"}"#,
    )
    .expect("break the manifest");
    let out = flow_run(&env, flow, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("manifest.json") && stderr.contains("manifest_version"),
        "{stderr}"
    );
}

/// A read or wait that cannot hold stops once the page has gone idle, and says so; one
/// whose page still has a timer pending or a request in flight waits for it, so a
/// correct test of a slow page still passes.
#[test]
fn reads_wait_for_a_busy_page_and_give_up_on_an_idle_one() {
    let env = env();
    let out = flow_run(
        &env,
        r##"{"steps": [
  {"browser": {"goto": "/late"}},
  {"browser": {"click": "#timer"}},
  {"browser": {"text": "#out"}, "expect": {"equals": "timer fired"}},
  {"browser": {"click": "#request"}},
  {"browser": {"text": "#out"}, "expect": {"equals": "answered late"}},
  {"browser": {"click": "#image"}},
  {"browser": {"text": "#out"}, "expect": {"equals": "image settled"}},
  {"browser": {"click": "#leave"}},
  {"browser": {"wait_for": "#items"}},
  {"browser": {"text": "h1"}, "expect": {"equals": "Items list for testing"}}
]}"##,
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    let out = flow_run(
        &env,
        r##"{"steps": [
  {"browser": {"goto": "/late"}},
  {"browser": {"click": "#nothing"}},
  {"browser": {"text": "#out"}, "expect": {"equals": "timer fired"}}
]}"##,
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("saw \"waiting\" (re-read until the page went idle"),
        "{stderr}"
    );

    let out = flow_run(
        &env,
        r##"{"steps": [
  {"browser": {"goto": "/late"}},
  {"browser": {"wait_for": "#never"}}
]}"##,
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nothing matched `#never` before the page went idle"),
        "{stderr}"
    );
}
