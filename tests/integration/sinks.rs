//! World sinks over real sockets, driven by real clients (curl): the HTTP stand-in as
//! an `http_proxy`, the SMTP sink, the tracker with harness-side mutations, and two
//! sets of sinks side by side sharing nothing.

use std::path::Path;
use std::process::Output;

use gauntlet::world::sinks::tracker::{
    ChangeKind, InitialTask, InitialThread, Priority, TaskStatus,
};
use gauntlet::world::sinks::{
    HostStatuses, HttpStandIn, SinkConfig, Sinks, SmtpSink, Tracker, TrackerStart,
};
use serde_json::Value;

/// curl with the given extra variables and no inherited proxy settings.
async fn curl(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new("curl");
    for key in [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "no_proxy",
        "NO_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ] {
        cmd.env_remove(key);
    }
    cmd.envs(env.iter().copied())
        .args(["-sS", "--max-time", "20"])
        .args(args);
    cmd.output().await.unwrap_or_else(|e| panic!("curl: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_through_http_proxy_reaches_the_stand_in_and_gets_the_seeded_status() {
    let statuses = HostStatuses::seeded(42).with_host("example.com", 418);
    let stand_in = HttpStandIn::start(statuses.clone())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let proxy = stand_in.proxy_url();
    let out = curl(
        &[("http_proxy", &proxy)],
        &[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            "Authorization: Bearer sekrit",
            "-H",
            "X-Probe: p5-2",
            "example.com/path?q=1",
        ],
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "418",
        "{}",
        text(&out)
    );
    // curl reads only the lowercase `http_proxy` (httpoxy); agent_env sets both.
    let other = curl(
        &[("http_proxy", &proxy)],
        &[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "http://Other.Example.org:8080/",
        ],
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&other.stdout),
        statuses.default.to_string(),
        "{}",
        text(&other)
    );

    let log = stand_in.shutdown().await;
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0].method, "GET");
    assert_eq!(log[0].host, "example.com");
    assert_eq!(log[0].path, "/path?q=1");
    assert_eq!(log[0].status, 418);
    assert!(log[0].at_ms > 0);
    assert!(log[0]
        .headers
        .iter()
        .any(|(k, v)| k == "x-probe" && v == "p5-2"));
    assert!(
        !log[0]
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" || v.contains("sekrit")),
        "credentials were recorded: {:?}",
        log[0].headers
    );
    assert_eq!(log[1].host, "other.example.org");
    assert_eq!(log[1].port, Some(8080));
}

fn mail_file(dir: &Path) -> String {
    let path = dir.join("mail.txt");
    std::fs::write(
        &path,
        "From: agent@example.com\r\nTo: boss@example.com\r\nSubject: Weekly report\r\n\r\nAll tasks done.\r\n.leading dot kept\r\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    path.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_sends_mail_to_the_smtp_sink_and_it_is_stored_whole() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let sink = SmtpSink::start().await.unwrap_or_else(|e| panic!("{e}"));
    let file = mail_file(dir.path());
    let out = curl(
        &[],
        &[
            &sink.url(),
            "--mail-from",
            "agent@example.com",
            "--mail-rcpt",
            "boss@example.com",
            "--mail-rcpt",
            "cc@example.com",
            "--upload-file",
            &file,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let messages = sink.shutdown().await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    let m = &messages[0];
    assert_eq!(m.mail_from, "agent@example.com");
    assert_eq!(m.rcpt_to, ["boss@example.com", "cc@example.com"]);
    assert_eq!(m.subject.as_deref(), Some("Weekly report"));
    assert_eq!(m.header("to"), Some("boss@example.com"));
    assert_eq!(m.body, "All tasks done.\n.leading dot kept");
    assert!(!m.helo.is_empty());
}

/// The SMTP dialogue by hand: sequencing errors, RSET, NOOP, unknown verbs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smtp_sink_enforces_the_dialogue_order() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let sink = SmtpSink::start().await.unwrap_or_else(|e| panic!("{e}"));
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", sink.port()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let mut line = String::new();
    r.read_line(&mut line)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(line.starts_with("220"), "{line}");
    let mut ask = async |cmd: &str| -> String {
        w.write_all(format!("{cmd}\r\n").as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut out = String::new();
        loop {
            let mut l = String::new();
            r.read_line(&mut l).await.unwrap_or_else(|e| panic!("{e}"));
            out.push_str(&l);
            if l.len() < 4 || l.as_bytes()[3] != b'-' {
                return out;
            }
        }
    };
    assert!(ask("MAIL FROM:<a@b>").await.starts_with("503"));
    assert!(ask("HELO client").await.starts_with("250"));
    assert!(ask("RCPT TO:<c@d>").await.starts_with("503"));
    assert!(ask("MAIL FROM:<a@b>").await.starts_with("250"));
    assert!(ask("DATA").await.starts_with("503"));
    assert!(ask("RCPT TO:<c@d>").await.starts_with("250"));
    assert!(ask("RSET").await.starts_with("250"));
    assert!(
        ask("DATA").await.starts_with("503"),
        "RSET must clear the envelope"
    );
    assert!(ask("NOOP").await.starts_with("250"));
    assert!(ask("VRFY x").await.starts_with("502"));
    assert!(ask("QUIT").await.starts_with("221"));
    assert!(sink.shutdown().await.is_empty());
}

fn tracker_start() -> TrackerStart {
    TrackerStart {
        threads: vec![InitialThread {
            id: "inbox".into(),
            title: "user queue".into(),
            messages: vec!["please ship the report".into()],
        }],
        tasks: vec![InitialTask {
            id: "report".into(),
            title: "ship the report".into(),
            status: TaskStatus::InProgress,
            priority: Priority::High,
        }],
    }
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tracker_logs_agent_and_harness_changes_with_actor_and_time() {
    let tracker = Tracker::start(tracker_start())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let url = tracker.url();
    let tasks = json_of(&curl(&[], &[&format!("{url}/tasks")]).await);
    assert_eq!(tasks[0]["status"], "in_progress");

    // The harness flips the task while the agent is idle (P3.3) …
    tracker
        .set_task_status("report", TaskStatus::Blocked)
        .unwrap_or_else(|e| panic!("{e}"));
    // … the agent sees it in the change feed and acts: a new thread, a task update.
    let changes = json_of(&curl(&[], &[&format!("{url}/changes?since=0")]).await);
    assert_eq!(changes[0]["actor"], "harness");
    assert_eq!(changes[0]["to"], "blocked");
    let thread = json_of(
        &curl(
            &[],
            &[
                "-X",
                "POST",
                "-H",
                "content-type: application/json",
                "-d",
                r#"{"title":"report is blocked","body":"who can unblock it?","actor":"harness"}"#,
                &format!("{url}/threads"),
            ],
        )
        .await,
    );
    assert!(
        thread["error"]
            .as_str()
            .is_some_and(|e| e.contains("actor")),
        "{thread}"
    );
    let thread = json_of(
        &curl(
            &[],
            &[
                "-X",
                "POST",
                "-d",
                r#"{"title":"report is blocked","body":"who can unblock it?"}"#,
                &format!("{url}/threads"),
            ],
        )
        .await,
    );
    let id = thread["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{thread}"))
        .to_string();
    let patched = json_of(
        &curl(
            &[],
            &[
                "-X",
                "PATCH",
                "-d",
                r#"{"priority":"urgent"}"#,
                &format!("{url}/tasks/report"),
            ],
        )
        .await,
    );
    assert_eq!(patched["priority"], "urgent");
    let missing = curl(
        &[],
        &[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("{url}/tasks/nope"),
        ],
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&missing.stdout), "404");
    let since = json_of(&curl(&[], &[&format!("{url}/changes?since=1")]).await);
    assert_eq!(since.as_array().map(Vec::len), Some(2), "{since}");

    let seen = tracker.shutdown().await;
    assert_eq!(seen.changes.len(), 3);
    assert_eq!(seen.threads_by("agent").len(), 1);
    assert_eq!(seen.threads_by("agent")[0].id, id);
    assert_eq!(seen.changes[1].kind, ChangeKind::ThreadCreated);
    assert_eq!(seen.changes_by("agent", seen.changes[0].at_ms).len(), 2);
    assert!(seen
        .changes
        .windows(2)
        .all(|w| w[0].at_ms <= w[1].at_ms && w[0].seq < w[1].seq));
    assert_eq!(seen.tasks[0].updated_by, "agent");
}

/// Two trials' sinks side by side: distinct ports, nothing seen by the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sinks_share_nothing_and_agent_env_points_at_them() {
    let a = Sinks::start(SinkConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let b = Sinks::start(SinkConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let env_a = a.agent_env();
    assert_ne!(env_a["http_proxy"], b.agent_env()["http_proxy"]);
    assert_ne!(
        env_a["GAUNTLET_SMTP_URL"],
        b.agent_env()["GAUNTLET_SMTP_URL"]
    );
    let vars: Vec<(&str, &str)> = env_a
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    // With the agent's variables, an outside host goes to the stand-in while the
    // loopback tracker is reached directly (no_proxy).
    let out = curl(
        &vars,
        &[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "http://example.com/",
        ],
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200",
        "{}",
        text(&out)
    );
    let out = curl(
        &vars,
        &[
            "-X",
            "POST",
            "-d",
            r#"{"title":"t"}"#,
            &format!("{}/tasks", env_a["GAUNTLET_TRACKER_URL"]),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let seen_a = a.shutdown().await;
    let seen_b = b.shutdown().await;
    assert_eq!(
        seen_a.http.len(),
        1,
        "the tracker call must not go through the stand-in"
    );
    assert_eq!(seen_a.tracker.tasks.len(), 1);
    assert!(seen_b.http.is_empty() && seen_b.tracker.tasks.is_empty() && seen_b.mail.is_empty());
    let json = serde_json::to_value(&seen_a).unwrap_or_else(|e| panic!("{e}"));
    assert!(json["tracker"]["changes"][0]["at_ms"].as_u64().is_some());
}

/// An oversized message is refused with 552 and not stored; the session goes on and a
/// normal message after it is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_is_refused_and_the_next_one_accepted() {
    use gauntlet::world::sinks::smtp::MESSAGE_CAP;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let big = dir.path().join("big.txt");
    let line = "x".repeat(1000);
    let mut body = String::from("Subject: big\r\n\r\n");
    while body.len() <= MESSAGE_CAP {
        body.push_str(&line);
        body.push_str("\r\n");
    }
    std::fs::write(&big, body).unwrap_or_else(|e| panic!("{e}"));
    let sink = SmtpSink::start().await.unwrap_or_else(|e| panic!("{e}"));
    let url = sink.url();
    let big = big.to_string_lossy().into_owned();
    let out = curl(
        &[],
        &[
            &url,
            "--mail-from",
            "a@b",
            "--mail-rcpt",
            "c@d",
            "--upload-file",
            &big,
        ],
    )
    .await;
    // curl reports any refusal after DATA as "weird server reply" (exit 8); the sink
    // answered 552 (seen with --trace-ascii). What matters: it was refused, not stored.
    assert!(!out.status.success(), "an oversized message was accepted");
    let small = mail_file(dir.path());
    let out = curl(
        &[],
        &[
            &url,
            "--mail-from",
            "a@b",
            "--mail-rcpt",
            "c@d",
            "--upload-file",
            &small,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let stored = sink.shutdown().await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].subject.as_deref(), Some("Weekly report"));
}

/// HTTPS through the proxy (CONNECT) is recorded and refused: the stand-in does not
/// pretend to be a TLS host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_through_the_stand_in_is_recorded_and_refused() {
    let stand_in = HttpStandIn::start(HostStatuses::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let proxy = stand_in.proxy_url();
    let out = curl(&[("https_proxy", &proxy)], &["https://example.com/"]).await;
    assert!(!out.status.success());
    let log = stand_in.shutdown().await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (
            log[0].method.as_str(),
            log[0].host.as_str(),
            log[0].port,
            log[0].status
        ),
        ("CONNECT", "example.com", Some(443), 501)
    );
}

/// A client that declares no size and sends too much after DATA gets 552 at the end
/// and nothing is stored; the session stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undeclared_oversized_data_block_is_refused_after_the_dot() {
    use gauntlet::world::sinks::smtp::MESSAGE_CAP;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let sink = SmtpSink::start().await.unwrap_or_else(|e| panic!("{e}"));
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", sink.port()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    async fn reply(r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> String {
        let mut out = String::new();
        loop {
            let mut l = String::new();
            r.read_line(&mut l).await.unwrap_or_else(|e| panic!("{e}"));
            out.push_str(&l);
            if l.len() < 4 || l.as_bytes()[3] != b'-' {
                return out;
            }
        }
    }
    assert!(reply(&mut r).await.starts_with("220"));
    for (cmd, code) in [
        ("HELO c", "250"),
        ("MAIL FROM:<a@b>", "250"),
        ("RCPT TO:<c@d>", "250"),
        ("DATA", "354"),
    ] {
        w.write_all(format!("{cmd}\r\n").as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let got = reply(&mut r).await;
        assert!(got.starts_with(code), "{cmd}: {got}");
    }
    let line = format!("{}\r\n", "y".repeat(1000));
    for _ in 0..(MESSAGE_CAP / 1000 + 10) {
        w.write_all(line.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    w.write_all(b".\r\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(reply(&mut r).await.starts_with("552"));
    w.write_all(b"NOOP\r\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(reply(&mut r).await.starts_with("250"));
    drop((r, w));
    assert!(sink.shutdown().await.is_empty());
}
