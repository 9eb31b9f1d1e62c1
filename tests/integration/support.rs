//! Shared helpers for integration tests: real apps, real processes, temp run dirs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gauntlet::config::{AgentChoice, Config};
use gauntlet::record::QaRecord;
use gauntlet::spec::LoadedApp;

pub fn root() -> PathBuf {
    gauntlet::binaries::repo_root()
}

/// A binary this package builds, found at run time: nextest's `NEXTEST_BIN_EXE_<name>`
/// (remapped into an extracted archive), else beside the test executable. A path fixed
/// at build time would name the build machine's `target/`, which another machine does
/// not have — or has from another build.
pub fn bin(name: &str) -> PathBuf {
    std::env::var_os(format!("NEXTEST_BIN_EXE_{name}"))
        .map(PathBuf::from)
        .unwrap_or_else(|| gauntlet::binaries::bin_path(name))
}

pub fn ledger() -> LoadedApp {
    gauntlet::spec::load_app(&root().join("apps/api-ledger")).expect("api-ledger loads")
}

pub fn fixture_agent(name: &str) -> AgentChoice {
    AgentChoice::command(vec![
        "sh".into(),
        root()
            .join("tests/fixtures/agents")
            .join(name)
            .to_string_lossy()
            .into_owned(),
    ])
}

/// A fixture agent passed inline, `sh -c <script> <name> <args…>`: it runs whether or
/// not the repository is visible to it.
pub fn inline_agent(script: &str, name: &str, args: &[&str]) -> AgentChoice {
    let mut argv: Vec<String> = vec!["sh".into(), "-c".into(), script.into(), name.into()];
    argv.extend(args.iter().map(|a| a.to_string()));
    AgentChoice::command(argv)
}

/// Copy a directory tree (regular files and directories), e.g. an app into a
/// temporary apps directory.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let dst = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).expect("copy");
        }
    }
}

/// An HTTP client that ignores `http_proxy` (the harness's own loopback servers are
/// reached directly).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("http client")
}

pub fn config(agent: AgentChoice, out: &Path) -> Config {
    Config {
        agent,
        n: 2,
        timeout: Duration::from_secs(30),
        gate_timeout: Duration::from_secs(20),
        out_dir: out.to_path_buf(),
        ..Config::default()
    }
}

/// Run one qa trial to completion on a fresh runtime.
pub fn run_trial(app: &LoadedApp, capability: &str, cfg: &Config) -> (QaRecord, PathBuf) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let run_dir = cfg.out_dir.join("run");
    rt.block_on(gauntlet::suites::qa::execute(
        app, capability, None, cfg, &run_dir,
    ))
    .expect("trial writes its record")
}

/// Processes whose environment mentions `needle` (the trial marker holds the trial dir).
pub fn processes_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let me = std::process::id();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            if let Ok(env) = std::fs::read(e.path().join("environ")) {
                if env.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    out.push(pid);
                }
            }
        }
    }
    out
}

/// Peak resident memory of this process, in bytes.
pub fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// A small multi-threaded runtime, as the harness's own.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Plan the trials named `wanted` as `gauntlet run` does, write their manifest and run
/// them into `run_dir`, two at a time; every trial must leave its record.
pub fn run_planned(cfg: &Config, wanted: &[&str], run_dir: &Path) {
    let suites = gauntlet::suites::load(cfg).expect("suites load");
    let plan: Vec<_> = gauntlet::suites::plan(&suites, cfg, None, || None)
        .into_iter()
        .filter(|t| wanted.contains(&t.name.as_str()))
        .collect();
    assert_eq!(plan.len(), wanted.len());
    let lines: Vec<_> = plan.iter().map(gauntlet::harness::manifest_line).collect();
    gauntlet::record::manifest::append(run_dir, &lines).expect("manifest");
    let results = runtime().block_on(gauntlet::harness::run_all(
        std::sync::Arc::new(suites),
        &plan,
        std::sync::Arc::new(cfg.clone()),
        run_dir,
        gauntlet::harness::Jobs::PerLane(2),
    ));
    for (name, r) in &results {
        assert!(r.is_ok(), "{name}: {:?}", r.as_ref().err());
    }
}

/// Make the trial in `trial_dir` of `run_dir` one that never finished: its directory
/// gone, and with it the manifest's line saying it finished (a removed finished record
/// is another finding: `REMOVED`).
pub fn unfinish(run_dir: &Path, trial_dir: &str) {
    std::fs::remove_dir_all(run_dir.join(trial_dir)).expect("remove the trial dir");
    let manifest = run_dir.join(gauntlet::record::manifest::MANIFEST_FILE);
    let needle = format!("\"dir\":\"{trial_dir}\"");
    let kept: String = std::fs::read_to_string(&manifest)
        .expect("manifest")
        .lines()
        .filter(|l| !l.contains(&needle))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::remove_file(&manifest).expect("rm manifest");
    std::fs::write(&manifest, kept).expect("write manifest");
}

/// Load `page` in headless Chromium: its DOM once loaded, and every console message and
/// refusal the browser logged.
pub fn chromium_load(page: &Path, profile: &Path) -> (String, Vec<String>) {
    let out = std::process::Command::new(gauntlet::binaries::chromium())
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (apt-get install chromium)");
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Refused to"))
        .map(String::from)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

/// Every file under `dir` and its bytes: what "a projection never changes a run" and
/// "the same bytes twice" are checked against.
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// Every `href` of an HTML text.
pub fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|h| h.replace("&amp;", "&"))
        .collect()
}

/// Rewrite the record `file` as a schema-1 gauntlet wrote it: `schema_version` 1 and
/// every key `new` named `old` (`renames` is `(new, old)`), at any depth. Returns the
/// rewritten text.
pub fn rewrite_as_schema_1(file: &Path, renames: &[(&str, &str)]) -> String {
    fn rename(v: &mut serde_json::Value, renames: &[(&str, &str)]) {
        match v {
            serde_json::Value::Object(map) => {
                for (new, old) in renames {
                    if let Some(x) = map.remove(*new) {
                        map.insert((*old).to_string(), x);
                    }
                }
                map.values_mut().for_each(|x| rename(x, renames));
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|x| rename(x, renames)),
            _ => {}
        }
    }
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).expect("read record")).expect("json");
    rename(&mut v, renames);
    v["schema_version"] = 1.into();
    let text = serde_json::to_string_pretty(&v).expect("json");
    std::fs::write(file, &text).expect("write record");
    text
}

/// A finished process as a failed assertion shows it: its status and both outputs.
pub fn said(o: &std::process::Output) -> String {
    format!(
        "{}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Read one HTTP/1.1 request off `s`, as a hand-written provider does: its head and the
/// body its content-length announces (or what came before the peer closed).
pub async fn read_request(s: &mut tokio::net::TcpStream) -> std::io::Result<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(buf);
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())
                        .flatten()
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return Ok(buf);
            }
        }
    }
}
