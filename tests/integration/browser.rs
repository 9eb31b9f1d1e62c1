//! The browser driver against real Chromium: a page served by the test on 127.0.0.1,
//! a tiny MV3 extension written by the test, and the ways a launch or a page can fail.
//! After every test, no Chromium process with that test's profile is left.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use gauntlet::world::browser::{Browser, BrowserError, LaunchOptions};

/// The page under test: a form that adds items to a list, and a console error on load.
pub const PAGE: &str = r##"<!doctype html>
<html><head><title>items</title></head><body>
<h1>Items list for testing</h1>
<input id="name"><button id="add">add</button>
<ul id="items"></ul>
<p>count: <span id="count">0</span></p>
<script>
  console.error("boom from the page");
  document.getElementById("add").addEventListener("click", () => {
    const li = document.createElement("li");
    li.textContent = document.getElementById("name").value;
    document.getElementById("items").appendChild(li);
    document.getElementById("count").textContent =
      String(document.querySelectorAll("#items li").length);
  });
</script>
</body></html>"##;

/// A tiny HTTP/1.0 server on 127.0.0.1 answering every request with `body`. Runs
/// until the test process ends.
pub fn serve(body: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream, body));
        }
    });
    url
}

fn answer(mut stream: TcpStream, body: &str) {
    let mut buf = [0u8; 4096];
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let _ = write!(
        stream,
        "HTTP/1.0 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A server that accepts connections and never answers: a page that never loads.
pub fn serve_nothing() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    url
}

/// An MV3 extension whose content script counts the words of the page and whose
/// service worker shows the count as the tab's badge.
pub fn write_extension(dir: &Path) {
    std::fs::create_dir_all(dir).expect("mkdir extension");
    std::fs::write(
        dir.join("manifest.json"),
        r#"{
  "manifest_version": 3,
  "name": "word count test",
  "version": "1.0",
  "action": {},
  "background": {"service_worker": "bg.js"},
  "content_scripts": [{"matches": ["http://127.0.0.1/*"], "js": ["content.js"]}]
}"#,
    )
    .expect("write manifest");
    std::fs::write(
        dir.join("content.js"),
        "chrome.runtime.sendMessage({words: document.body.innerText.split(/\\s+/).filter(Boolean).length});\n",
    )
    .expect("write content.js");
    std::fs::write(
        dir.join("bg.js"),
        "chrome.runtime.onMessage.addListener((msg, sender) => {\n  if (sender.tab) chrome.action.setBadgeText({tabId: sender.tab.id, text: String(msg.words)});\n});\n",
    )
    .expect("write bg.js");
}

/// Processes whose command line or environment mentions `needle` (a profile
/// directory, or the browser's temp root it lives in).
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next().map(str::to_string));
        if state.as_deref() == Some("Z") {
            continue;
        }
        let mentions = |file: &str| {
            std::fs::read(e.path().join(file))
                .map(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
                .unwrap_or(false)
        };
        if mentions("cmdline") || mentions("environ") {
            out.push(pid);
        }
    }
    out
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn opts(tmp: &Path) -> LaunchOptions {
    LaunchOptions {
        tmp_root: Some(tmp.to_path_buf()),
        ..LaunchOptions::default()
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The program the browser's process runs.
fn running_binary(b: &Browser) -> PathBuf {
    std::fs::read_link(format!("/proc/{}/exe", b.pid())).expect("the browser's /proc exe")
}

/// Close the browser and check that nothing of it is left.
async fn close_and_check(b: Browser) {
    let profile = b.profile_dir().to_string_lossy().into_owned();
    let pid = b.pid();
    assert!(
        !processes_mentioning(&profile).is_empty(),
        "chromium with profile {profile} should run before close"
    );
    b.close().await;
    let left = processes_mentioning(&profile);
    assert!(
        left.is_empty(),
        "chromium survived close: {left:?} (browser pid {pid})"
    );
    assert!(
        !Path::new(&profile).exists(),
        "profile {profile} not removed"
    );
}

#[test]
fn drives_a_page_goto_click_type_text_count_and_console() {
    let url = serve(PAGE);
    let dir = tmp();
    rt().block_on(async {
        let b = Browser::launch(opts(dir.path())).await.expect("launch");
        assert_eq!(
            running_binary(&b),
            gauntlet::binaries::chromium_without_extensions(),
            "a page without an extension gets the headless shell where it is installed"
        );
        if std::env::var_os("CI").is_some() && gauntlet::binaries::chromium_override().is_none() {
            assert_eq!(
                running_binary(&b),
                Path::new(gauntlet::binaries::DEFAULT_HEADLESS_SHELL),
                "CI installs Debian's chromium-headless-shell (.ci/run)"
            );
        }
        b.goto(&format!("{url}/")).await.expect("goto");
        assert_eq!(b.text("h1").await.expect("text"), "Items list for testing");
        assert_eq!(b.count("#items li").await.expect("count"), 0);
        b.type_text("#name", "milk").await.expect("type");
        b.click("#add").await.expect("click");
        b.type_text("#name", "").await.expect("type nothing");
        b.click("#add").await.expect("click again");
        b.wait_for("#items li").await.expect("wait_for");
        assert_eq!(b.count("#items li").await.expect("count"), 2);
        assert_eq!(b.text("#items li").await.expect("text"), "milk");
        assert_eq!(b.text("#count").await.expect("text"), "2");
        let err = b.text("#nope").await.expect_err("no match");
        assert!(matches!(err, BrowserError::NoMatch { .. }), "{err}");
        let err = b.count("#[").await.expect_err("bad selector");
        assert!(err.to_string().contains("`#[`"), "{err}");
        let console = b.console_errors();
        assert!(
            console.iter().any(|l| l.contains("boom from the page")),
            "{console:?}"
        );
        close_and_check(b).await;
    });
}

#[test]
fn reads_the_badge_an_extension_sets_for_the_current_tab() {
    let url = serve(PAGE);
    let dir = tmp();
    let ext = dir.path().join("ext");
    write_extension(&ext);
    rt().block_on(async {
        let mut b = Browser::launch(LaunchOptions {
            extension_dir: Some(ext.clone()),
            ..opts(dir.path())
        })
        .await
        .expect("launch with extension");
        assert_eq!(
            running_binary(&b),
            gauntlet::world::browser::chromium_path(),
            "the headless shell loads no extension: an extension gets the full browser"
        );
        b.goto(&format!("{url}/")).await.expect("goto");
        let words = b
            .text("body")
            .await
            .expect("body text")
            .split_whitespace()
            .count();
        // The content script reports asynchronously; poll like a flow's expect does.
        let mut badge = String::new();
        for _ in 0..100 {
            badge = b.badge().await.expect("badge");
            if !badge.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(badge, words.to_string());
        close_and_check(b).await;
    });
}

#[test]
fn an_invalid_manifest_is_an_error_naming_manifest_json() {
    let dir = tmp();
    let ext = dir.path().join("ext");
    write_extension(&ext);
    std::fs::write(
        ext.join("manifest.json"),
        r#"{"manifest_version": 2, "name": "x", "version": "1"}"#,
    )
    .expect("write");
    let err = rt()
        .block_on(Browser::launch(LaunchOptions {
            extension_dir: Some(ext.clone()),
            ..opts(dir.path())
        }))
        .err()
        .expect("invalid manifest refused");
    let msg = err.to_string();
    assert!(
        msg.contains("manifest.json") && msg.contains("manifest_version"),
        "{msg}"
    );
    std::fs::write(ext.join("manifest.json"), "{ nope").expect("write");
    let msg = rt()
        .block_on(Browser::launch(LaunchOptions {
            extension_dir: Some(ext),
            ..opts(dir.path())
        }))
        .err()
        .expect("unparsable manifest refused")
        .to_string();
    assert!(msg.contains("manifest.json"), "{msg}");
    // Refused before anything started: no profile was made.
    assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 1);
}

#[test]
fn a_page_that_never_loads_fails_after_its_deadline() {
    let url = serve_nothing();
    let dir = tmp();
    rt().block_on(async {
        let b = Browser::launch(LaunchOptions {
            goto_timeout: Duration::from_secs(2),
            ..opts(dir.path())
        })
        .await
        .expect("launch");
        let err = b.goto(&format!("{url}/")).await.expect_err("never loads");
        assert!(
            matches!(err, BrowserError::GotoTimeout { .. }),
            "expected a goto timeout, got {err}"
        );
        assert!(err.to_string().contains(&url), "{err}");
        close_and_check(b).await;
    });
}

#[test]
fn a_bad_chromium_binary_is_a_launch_error() {
    let dir = tmp();
    let missing = PathBuf::from("/nonexistent/chromium");
    let err = rt()
        .block_on(Browser::launch(LaunchOptions {
            chromium: Some(missing.clone()),
            ..opts(dir.path())
        }))
        .err()
        .expect("missing binary refused");
    assert!(
        matches!(err, BrowserError::NotFound { .. }) && err.to_string().contains("/nonexistent"),
        "{err}"
    );
    // A binary that exists but is not a browser: it exits before DevTools is ready.
    let err = rt()
        .block_on(Browser::launch(LaunchOptions {
            chromium: Some(PathBuf::from("/bin/false")),
            ..opts(dir.path())
        }))
        .err()
        .expect("not a browser");
    let msg = err.to_string();
    assert!(
        matches!(err, BrowserError::Start { .. })
            && msg.contains("/bin/false")
            && msg.contains("exited"),
        "{msg}"
    );
    // The failed launch removed its profile.
    assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 0);
}

/// A Chromium that crashes on its way up (SIGSEGV before its DevTools endpoint, as a
/// loaded 2-core machine shows now and then) is started again with a fresh profile: such
/// a crash says nothing of the test that asked for a browser.
#[test]
fn a_chromium_that_crashes_at_start_is_started_again() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp();
    let bin = tmp();
    let count = bin.path().join("starts");
    let wrapper = bin.path().join("chromium");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nn=$(( $(cat {c} 2>/dev/null || echo 0) + 1 ))\necho $n > {c}\n[ $n -lt 3 ] && kill -SEGV $$\nexec {real} \"$@\"\n",
            c = count.display(),
            real = gauntlet::world::browser::chromium_path().display()
        ),
    )
    .expect("write wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let url = serve(PAGE);
    rt().block_on(async {
        let b = Browser::launch(LaunchOptions {
            chromium: Some(wrapper.clone()),
            ..opts(dir.path())
        })
        .await
        .expect("the third start comes up");
        b.goto(&url).await.expect("goto");
        close_and_check(b).await;
    });
    assert_eq!(std::fs::read_to_string(&count).expect("count").trim(), "3");
    // One that never comes up is refused after the attempts, each one said.
    std::fs::write(&count, "-100").expect("reset");
    let err = rt()
        .block_on(Browser::launch(LaunchOptions {
            chromium: Some(wrapper),
            ..opts(dir.path())
        }))
        .err()
        .expect("never comes up");
    let msg = err.to_string();
    assert!(
        msg.contains("died before its DevTools endpoint was ready, 3 times")
            && msg.matches("SIGSEGV").count() == 3,
        "{msg}"
    );
}

#[test]
fn dropping_a_browser_kills_it_too() {
    let dir = tmp();
    let profile = rt().block_on(async {
        let b = Browser::launch(opts(dir.path())).await.expect("launch");
        let p = b.profile_dir().to_string_lossy().into_owned();
        assert!(!processes_mentioning(&p).is_empty());
        drop(b);
        p
    });
    assert!(processes_mentioning(&profile).is_empty());
}

/// A fake chat-completions endpoint: the reply to a request is `script[k]`, k being the
/// number of tool results the request carries. A tool step is (tool, arguments); the
/// last reply is the final text.
fn fake_model(script: Vec<(&'static str, serde_json::Value)>, last: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut got = Vec::new();
            let mut buf = [0u8; 65536];
            let (head_end, length) = loop {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break (0, 0),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
                if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..i]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    break (i + 4, len);
                }
            };
            while got.len() < head_end + length {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let req: serde_json::Value =
                serde_json::from_slice(&got[head_end.min(got.len())..]).unwrap_or_default();
            let k = req["messages"]
                .as_array()
                .map(|m| m.iter().filter(|m| m["role"] == "tool").count())
                .unwrap_or(0);
            let message = match script.get(k) {
                Some((name, args)) => serde_json::json!({"role": "assistant", "content": null,
                    "tool_calls": [{"id": format!("call_{k}"), "type": "function",
                        "function": {"name": name, "arguments": args.to_string()}}]}),
                None => serde_json::json!({"role": "assistant", "content": last}),
            };
            let body = serde_json::json!({"id": "c", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
            .to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn the_reference_agent_drives_the_browser_tool_and_leaves_no_browser() {
    use serde_json::json;
    let url = serve(PAGE);
    let dir = tmp();
    let ext = dir.path().join("ext");
    write_extension(&ext);
    let agent_tmp = dir.path().join("agent-tmp");
    std::fs::create_dir(&agent_tmp).expect("mkdir");
    let graph = dir.path().join("corpus.json");
    std::fs::write(
        &graph,
        json!({
            "schema_version": 1, "app": "items", "title": "Items",
            "requirements": [{"id": "r1", "title": "Items", "text": "Items can be added."}],
            "capabilities": [{"id": "add-item", "requirement": "r1", "title": "Add an item",
                "kind": "feature", "difficulty": "easy", "acceptance": ["the count goes up"]}],
        })
        .to_string(),
    )
    .expect("write corpus");
    let model = fake_model(
        vec![
            ("browser", json!({"action": "goto", "url": "/"})),
            (
                "browser",
                json!({"action": "type", "selector": "#name", "text": "tea"}),
            ),
            ("browser", json!({"action": "click", "selector": "#add"})),
            ("browser", json!({"action": "text", "selector": "#count"})),
            (
                "browser",
                json!({"action": "count", "selector": "#items li"}),
            ),
            ("browser", json!({"action": "badge"})),
            (
                "browser",
                json!({"action": "click", "selector": "#missing"}),
            ),
        ],
        "Done; nothing to claim here.".into(),
    );
    let out = std::process::Command::new(crate::support::bin("gauntlet-agent"))
        .args(["qa", "--graph-file"])
        .arg(&graph)
        .args(["--url", &url, "--capability", "add-item", "--n", "1"])
        .current_dir(dir.path())
        .env("OPENAI_BASE_URL", &model)
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_MODEL", "fake")
        .env("EXTENSION_DIR", &ext)
        .env("TMPDIR", &agent_tmp)
        .output()
        .expect("run the agent");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<(String, bool)> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "tool_result")
        .map(|e| {
            (
                e["output"].as_str().unwrap_or("").to_string(),
                e["failed"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(results.len(), 7, "{stdout}");
    assert!(
        results[0].0.starts_with(&format!("loaded {url}/")) && !results[0].1,
        "{results:?}"
    );
    assert!(
        results[0].0.contains("boom from the page"),
        "console errors are reported: {results:?}"
    );
    assert_eq!(results[3], ("1".to_string(), false));
    assert_eq!(results[4], ("1".to_string(), false));
    assert_eq!(results[5], ("7".to_string(), false));
    assert!(
        results[6].1 && results[6].0.contains("#missing"),
        "{results:?}"
    );
    let tmp = agent_tmp.to_string_lossy().into_owned();
    let left = processes_mentioning(&tmp);
    assert!(left.is_empty(), "the agent's chromium survived: {left:?}");
}

/// A copy of the frozen ledger app whose manifest says it is driven through a browser
/// (the modality is not part of the content hash): the smallest browser trial.
fn browser_apps(modality: &str) -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("read_dir").flatten() {
            if e.path().is_dir() {
                copy(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
            }
        }
    }
    let dir = tmp();
    let app = dir.path().join("api-ledger");
    copy(&crate::support::root().join("apps/api-ledger"), &app);
    let manifest = app.join("app.json");
    let text = std::fs::read_to_string(&manifest).expect("read app.json");
    std::fs::write(
        &manifest,
        text.replace("\"http-api\"", &format!("\"{modality}\"")),
    )
    .expect("write app.json");
    dir
}

fn gauntlet(apps: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(crate::support::bin("gauntlet"));
    cmd.env("GAUNTLET_APPS_DIR", apps)
        .env_remove("CARGO")
        .env_remove("CI")
        .env_remove("GAUNTLET_CONFIG");
    cmd
}

#[test]
fn without_chromium_browser_trials_are_listed_ignored_except_in_ci() {
    let apps = browser_apps("browser-flow");
    let out = gauntlet(apps.path())
        .arg("list")
        .env("GAUNTLET_CHROMIUM", "/nonexistent/chromium")
        .output()
        .expect("gauntlet list");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // The other suites are listed too; this apps directory holds one qa app.
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("qa::")).collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    for l in &lines {
        assert!(
            l.contains("(ignored: chromium not found at /nonexistent/chromium"),
            "{l}"
        );
    }
    let out = gauntlet(apps.path())
        .arg("list")
        .env("GAUNTLET_CHROMIUM", "/nonexistent/chromium")
        .env("CI", "true")
        .output()
        .expect("gauntlet list in CI");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let qa: Vec<&str> = stdout.lines().filter(|l| l.starts_with("qa::")).collect();
    assert_eq!(qa.len(), 6, "{stdout}");
    assert!(
        !qa.iter().any(|l| l.contains("ignored")),
        "in CI no qa trial is ignored: {stdout}"
    );
    // With Chromium present, nothing is ignored either.
    let out = gauntlet(apps.path()).arg("list").output().expect("list");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout
        .lines()
        .any(|l| l.starts_with("qa::") && l.contains("ignored")));
}

/// In CI a missing browser is an error: the trial runs, fails with an `error` verdict
/// naming the browser, and still writes its record.
#[test]
fn a_browser_that_cannot_start_is_the_trials_error_verdict() {
    let apps = browser_apps("browser-flow");
    let out_dir = tmp();
    let out = gauntlet(apps.path())
        .args(["run", "--filter", "qa::api-ledger::health", "--jobs", "1"])
        .env("CI", "true")
        .env("GAUNTLET_CHROMIUM", "/bin/false")
        .env("GAUNTLET_OUT", out_dir.path())
        .env("GAUNTLET_N", "1")
        .output()
        .expect("gauntlet run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_dir = std::fs::read_dir(out_dir.path())
        .expect("out dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run directory");
    let records = gauntlet::record::find_records(&run_dir).expect("records");
    assert_eq!(records.len(), 1, "{stdout}");
    let rec = gauntlet::record::load(&records[0]).expect("record loads");
    assert_eq!(
        rec.verdict.outcome.to_string(),
        "error",
        "{:?}",
        rec.verdict
    );
    assert!(
        rec.verdict.reason.contains("browser check failed")
            && rec.verdict.reason.contains("/bin/false"),
        "{}",
        rec.verdict.reason
    );
    // The agent never ran.
    assert!(rec.evidence.agent.command.is_empty());
}
