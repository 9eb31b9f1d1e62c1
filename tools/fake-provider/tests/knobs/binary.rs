//! The binary: flags, the `listening on` line, the ledger over HTTP and in its file on
//! SIGTERM.

use std::io::BufRead;
use std::process::{Command, Stdio};

use gauntlet_fake_provider::{Ledger, LEDGER_PATH};

use crate::client::client;

const EXE: &str = env!("CARGO_BIN_EXE_gauntlet-fake-provider");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_until_sigterm_and_writes_its_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger_file = dir.path().join("ledger.json");
    let mut child = Command::new(EXE)
        .args([
            "--latency",
            "20",
            "--seed",
            "4",
            "--answer-chunks",
            "3",
            "--ledger",
        ])
        .arg(&ledger_file)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a first line");
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("not a listening line: {line:?}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let answer: serde_json::Value = client()
        .post(format!("{url}/v1/chat/completions"))
        .bearer_auth("bench-key")
        .json(&serde_json::json!({"model": "m", "messages": []}))
        .send()
        .await
        .expect("the binary answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(answer["usage"]["completion_tokens"], 3);
    let over_http: Ledger = client()
        .get(format!("{url}{LEDGER_PATH}"))
        .send()
        .await
        .expect("the ledger answers")
        .json()
        .await
        .expect("JSON");
    assert_eq!(over_http.keys["bench-key"].billed_calls, 1);
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = child.wait().expect("the binary exits");
    assert!(status.success(), "{status}");
    let written: Ledger =
        serde_json::from_slice(&std::fs::read(&ledger_file).expect("the ledger file"))
            .expect("the ledger file is JSON");
    assert_eq!(written, over_http);
}

#[test]
fn a_bad_flag_is_refused_naming_its_field() {
    let out = Command::new(EXE)
        .args(["--disconnect", "1.5"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`faults.disconnect`"), "{stderr}");
}
