//! A real model, end to end, offline: SmolLM2-135M served by llama-cpp-python's
//! OpenAI-compatible server (`tools/local-model/local-model.sh`), behind gauntlet's
//! byok proxy, driving the reference agent and OpenCode through real trials of every
//! suite. Nothing here is about the model's skill (a 135M model does badly): each test
//! asserts only what must hold whatever the model says.
//!
//! - the proxy metered every call it sent the server, each answer it read with the
//!   tokens the server reported (read from the server's own bytes, captured by a relay
//!   between the proxy and the server), a call cut before its answer (the agent killed
//!   at its deadline) with none, and a stream the server sent no usage for as unknown,
//!   never as an estimate;
//! - the record's verdict re-derives offline (rescore agrees), and a `verified` has
//!   its gate: N green app runs and a red mutant run;
//! - nothing of the trial is left running;
//! - the agent's placeholder key never reaches the server (its requests, its log),
//!   and the key the proxy holds is what it sent.
//!
//! One test per trial: `local_model::<suite…>::<agent>[::stream]`. Where the server's
//! virtual environment (`target/local-model`, `local-model.sh install`) or, for
//! OpenCode, the pinned CLI is missing, the test is listed as ignored, with the reason,
//! except under `CI=true`, where it runs and fails: CI installs both.
//!
//! `cargo nextest run -E 'binary(local_model)'`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gauntlet::config::{AgentChoice, AgentKind, Config};
use gauntlet::evidence::usage::UsageEntry;
use gauntlet::record::any::AnyRecord;
use gauntlet::score::Outcome;
use libtest_mimic::{Arguments, Failed, Trial};

/// The key the proxy holds for this provider (the server ignores keys; the test checks
/// that this is what reached it, and that the agent's placeholder did not).
const PROVIDER_KEY: &str = "local-model-key-7c41";
const KEY_VAR: &str = "GAUNTLET_LOCAL_MODEL_TEST_KEY";
/// What every agent is handed as its key (`trial::model_env`).
const AGENT_PLACEHOLDER: &str = "gauntlet-proxy";

/// Budgets for a 135M model on 2 CPU cores (docs/local-model.md): a few model calls
/// per trial, and a deadline that is the backstop, not a measure. OpenCode's gets a
/// shorter one: it streams with tools, which this server cannot do (the stream is cut
/// at once), and it retries until its deadline.
const MAX_TOKENS_PER_TRIAL: u64 = 12_000;
const TIMEOUT: Duration = Duration::from_secs(150);
const OPENCODE_TIMEOUT: Duration = Duration::from_secs(45);

/// One trial of the subset.
#[derive(Clone, Copy)]
struct Case {
    /// The planned trial's name.
    trial: &'static str,
    agent: AgentKind,
    stream: bool,
}

const CASES: [Case; 6] = [
    Case {
        trial: "qa::api-ledger::balance",
        agent: AgentKind::Reference,
        stream: false,
    },
    Case {
        trial: "qa::api-ledger::balance",
        agent: AgentKind::Reference,
        stream: true,
    },
    Case {
        trial: "qa::cli-tally-2::sum",
        agent: AgentKind::Reference,
        stream: false,
    },
    Case {
        trial: "qa::api-ledger::health",
        agent: AgentKind::OpenCode,
        stream: true,
    },
    Case {
        trial: "challenge::ledger-reconcile::none",
        agent: AgentKind::Reference,
        stream: false,
    },
    Case {
        trial: "scorecard::memory::p1-1",
        agent: AgentKind::Reference,
        stream: false,
    },
];

fn venv() -> PathBuf {
    std::env::var_os("GAUNTLET_LOCAL_MODEL_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| gauntlet::binaries::repo_root().join("target/local-model"))
}

fn script() -> PathBuf {
    gauntlet::binaries::repo_root().join("tools/local-model/local-model.sh")
}

/// Why this case cannot run here, if it cannot.
fn missing(case: &Case) -> Option<String> {
    if !venv().join("bin/python").is_file() {
        return Some(format!(
            "no model server environment at {} (tools/local-model/local-model.sh install)",
            venv().display()
        ));
    }
    if case.agent == AgentKind::OpenCode && !gauntlet::agent::cli::installed("opencode") {
        return Some(format!(
            "{} is not installed (cd workspace && npm ci)",
            gauntlet::agent::cli::npm_bin("opencode").display()
        ));
    }
    None
}

fn name(case: &Case) -> String {
    let agent = AgentChoice::of(case.agent);
    let stream = if case.stream && case.agent == AgentKind::Reference {
        "::stream"
    } else {
        ""
    };
    format!("local_model::{}::{}{stream}", case.trial, agent.name())
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let trials = CASES
        .iter()
        .map(|case| {
            let why = missing(case);
            let ignored = why.is_some() && !ci;
            if let (true, Some(why), true) = (ignored, &why, args.list) {
                eprintln!("{}: ignored: {why}", name(case));
            }
            let case = *case;
            Trial::test(name(&case), move || check(case)).with_ignored_flag(ignored)
        })
        .collect();
    gauntlet::harness::run(args, trials)
}

fn fail(msg: String) -> Failed {
    eprintln!("Error: {msg}");
    Failed::from(msg)
}

fn check(case: Case) -> Result<(), Failed> {
    if let Some(why) = missing(&case) {
        return Err(fail(why));
    }
    let out = tempfile::tempdir().map_err(|e| fail(format!("tempdir: {e}")))?;
    let server = Server::start(out.path())?;
    let relay = Relay::start(server.port)?;
    // Configured as a user would, through the variables (docs/local-model.md); the
    // proxy's key is read from the variable GAUNTLET_API_KEY_ENV names.
    let env: BTreeMap<String, String> = [
        ("GAUNTLET_MODE", "byok".to_string()),
        (
            "GAUNTLET_UPSTREAM_URL",
            format!("http://127.0.0.1:{}/v1", relay.port),
        ),
        ("GAUNTLET_MODEL", "smollm2-135m".to_string()),
        ("GAUNTLET_API_KEY_ENV", KEY_VAR.to_string()),
        (KEY_VAR, PROVIDER_KEY.to_string()),
        (
            "GAUNTLET_AGENT",
            AgentChoice::of(case.agent).name().to_string(),
        ),
        ("GAUNTLET_AGENT_STREAM", u8::from(case.stream).to_string()),
        ("GAUNTLET_N", "2".to_string()),
        (
            "GAUNTLET_TIMEOUT_SECS",
            match case.agent {
                AgentKind::OpenCode => OPENCODE_TIMEOUT,
                _ => TIMEOUT,
            }
            .as_secs()
            .to_string(),
        ),
        (
            "GAUNTLET_CHALLENGE_TIMEOUT_SECS",
            TIMEOUT.as_secs().to_string(),
        ),
        (
            "GAUNTLET_MAX_TOKENS_PER_TRIAL",
            MAX_TOKENS_PER_TRIAL.to_string(),
        ),
        ("GAUNTLET_SCORECARD_IDLE_SECS", "2".to_string()),
        ("GAUNTLET_OUT", out.path().to_string_lossy().into_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let cfg = Config::from_sources(&env).map_err(|e| fail(format!("config: {e}")))?;
    let started = Instant::now();
    let trial_dir = run(&cfg, case.trial, &out.path().join("run"))?;
    let took = started.elapsed();
    let checked = gauntlet::record::any::check(&trial_dir.join("record.json"));
    let record = checked
        .record
        .ok_or_else(|| fail(format!("{}: no readable record", trial_dir.display())))?;

    let mut problems = Vec::new();
    // The verdict re-derives, and every raw file hashes as recorded.
    let row = &checked.row;
    problems.extend(row.raw_problems.iter().map(|p| format!("raw file: {p}")));
    if let Some(a) = &row.axes {
        if !a.agrees() {
            problems.push(format!(
                "verdict does not re-derive: stored {:?}, derived {:?}",
                a.stored, a.derived
            ));
        }
    } else if row.stored.as_ref() != row.derived.as_ref().ok() {
        problems.push(format!(
            "verdict does not re-derive: stored {:?}, derived {:?}",
            row.stored, row.derived
        ));
    }
    if let AnyRecord::Qa(r) = &record {
        if r.verdict.outcome == Outcome::Verified {
            let green = r.evidence.gate.as_ref().is_some_and(|g| {
                g.runs
                    .iter()
                    .filter(|x| x.target == gauntlet::evidence::GateTarget::App && x.end.success())
                    .count() as u32
                    == g.required
                    && g.runs.iter().any(|x| {
                        x.target == gauntlet::evidence::GateTarget::Mutant && !x.end.success()
                    })
            });
            if !green {
                problems.push("verified without a green gate and a red mutant run".into());
            }
        }
    }
    // Metered exactly as the server reported, call for call.
    let metered = upstream_entries(&record);
    let reported = relay.responses();
    problems.extend(compare_usage(&metered, &reported));
    // The agent's key never reached the server; the proxy's did.
    let sent = relay.requests();
    if contains(&sent, AGENT_PLACEHOLDER.as_bytes()) {
        problems.push(format!(
            "the agent's placeholder key `{AGENT_PLACEHOLDER}` reached the server"
        ));
    }
    if !metered.is_empty() && !contains(&sent, format!("Bearer {PROVIDER_KEY}").as_bytes()) {
        problems.push("the proxy's key is not in what reached the server".into());
    }
    let log = server.log();
    if log.contains(AGENT_PLACEHOLDER) {
        problems.push("the agent's placeholder key is in the server's log".to_string());
    }
    // Nothing of the trial is left running.
    let left = leftovers(out.path());
    if !left.is_empty() {
        problems.push(format!("left running: {left:?}"));
    }
    println!(
        "{}: {} in {:.1} s, {} model calls ({} streamed), {} tokens in, {} out, {} unmetered",
        name(&case),
        verdict_of(&record),
        took.as_secs_f64(),
        metered.len(),
        metered.iter().filter(|e| e.stream).count(),
        metered.iter().filter_map(|e| e.input_tokens).sum::<u64>(),
        metered.iter().filter_map(|e| e.output_tokens).sum::<u64>(),
        metered.iter().filter(|e| e.input_tokens.is_none()).count(),
    );
    drop(relay);
    drop(server);
    if problems.is_empty() && std::env::var_os("GAUNTLET_LOCAL_MODEL_KEEP").is_none() {
        return Ok(());
    }
    // Kept for a person to read: the failure names it.
    let kept = out.keep();
    println!("{}: kept {}", name(&case), kept.display());
    if problems.is_empty() {
        Ok(())
    } else {
        Err(fail(format!(
            "{} ({}): {}",
            name(&case),
            trial_dir.display(),
            problems.join("; ")
        )))
    }
}

fn verdict_of(record: &AnyRecord) -> String {
    match record {
        AnyRecord::Qa(r) => r.verdict.outcome.to_string(),
        AnyRecord::Scorecard(r) => r.verdict.outcome.to_string(),
        AnyRecord::Challenge(r) => format!(
            "{}/{}",
            r.verdict.task_outcome.as_str(),
            r.verdict.evaluation_validity.as_str()
        ),
    }
}

/// Run the planned trial named `trial` into `run_dir`, as `gauntlet run` and the suite
/// harnesses do; its trial directory.
fn run(cfg: &Config, trial: &str, run_dir: &Path) -> Result<PathBuf, Failed> {
    let suites = gauntlet::suites::load(cfg).map_err(|e| fail(format!("suites: {e}")))?;
    let plan = gauntlet::suites::plan(&suites, cfg, None, || None);
    let t = plan
        .iter()
        .find(|t| t.name == trial)
        .ok_or_else(|| fail(format!("no planned trial `{trial}`")))?;
    std::fs::create_dir_all(run_dir).map_err(|e| fail(format!("{}: {e}", run_dir.display())))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail(format!("tokio runtime: {e}")))?;
    let finished = rt
        .block_on(gauntlet::harness::run_trial(&suites, t, cfg, run_dir))
        .map_err(|e| fail(format!("{trial}: {e}")))?;
    Ok(finished.trial_dir)
}

/// Every usage entry of calls the proxy forwarded to the server, in the order made.
fn upstream_entries(record: &AnyRecord) -> Vec<UsageEntry> {
    let all: Vec<UsageEntry> = match record {
        AnyRecord::Qa(r) => r.evidence.usage.clone(),
        AnyRecord::Challenge(r) => r.evidence.usage.clone(),
        AnyRecord::Scorecard(r) => r.usage.clone(),
    };
    all.into_iter().filter(|e| e.source == "upstream").collect()
}

/// What one response of the server said about tokens.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Reported {
    stream: bool,
    input: Option<u64>,
    output: Option<u64>,
}

/// Whether the proxy recorded `e` as cut before the server's answer reached it (the
/// agent was killed mid-call): metered, with no tokens, whether or not the server went
/// on to answer.
fn cut_before_answer(e: &UsageEntry) -> bool {
    e.error
        .as_deref()
        .is_some_and(|m| m.contains("cut before the provider's answer"))
}

/// The proxy's entries against the server's answers: the tokens of every call the
/// proxy read to its end among them (as multisets: the proxy's connections may
/// interleave), and no answer the proxy did not meter; a call cut before its answer is
/// metered with no tokens, whether or not the server went on to answer it. (Requests
/// are not counted: one written into a pooled connection the server had just closed
/// reaches the relay, never the server, and the proxy records it as its own 502.)
fn compare_usage(metered: &[UsageEntry], reported: &[Reported]) -> Vec<String> {
    let mut problems = Vec::new();
    let (cut, whole): (Vec<&UsageEntry>, Vec<&UsageEntry>) =
        metered.iter().partition(|e| cut_before_answer(e));
    if let Some(e) = cut
        .iter()
        .find(|e| e.input_tokens.is_some() || e.output_tokens.is_some())
    {
        problems.push(format!("a call cut before its answer has tokens: {e:?}"));
    }
    if reported.len() < whole.len() || reported.len() > metered.len() {
        problems.push(format!(
            "the server answered {} calls; the proxy read {} answers to their end and cut {}",
            reported.len(),
            whole.len(),
            cut.len()
        ));
    }
    let mut unmatched = reported.to_vec();
    for e in &whole {
        let want = Reported {
            stream: e.stream,
            input: e.input_tokens,
            output: e.output_tokens,
        };
        match unmatched.iter().position(|r| *r == want) {
            Some(i) => {
                unmatched.swap_remove(i);
            }
            None => problems.push(format!(
                "metered {want:?}, which no answer of the server reported (answers: {reported:?})"
            )),
        }
    }
    problems
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Processes whose command line, working directory or environment names `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let me = std::process::id();
    let mut left = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        left.clear();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            let p = e.path();
            let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
            if stat
                .rsplit(')')
                .next()
                .is_some_and(|s| s.trim_start().starts_with('Z'))
            {
                continue;
            }
            let cmd = std::fs::read(p.join("cmdline")).unwrap_or_default();
            let env = std::fs::read(p.join("environ")).unwrap_or_default();
            let cwd = std::fs::read_link(p.join("cwd")).unwrap_or_default();
            if contains(&cmd, needle.as_bytes())
                || contains(&env, needle.as_bytes())
                || cwd.starts_with(dir)
            {
                left.push(format!(
                    "{pid} {}",
                    String::from_utf8_lossy(&cmd).replace('\0', " ")
                ));
            }
        }
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The model server, started by the install's own script in a process group of its
/// own, killed with the group when dropped.
struct Server {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Server {
    fn start(dir: &Path) -> Result<Server, Failed> {
        let log = dir.join("server.log");
        let err =
            std::fs::File::create(&log).map_err(|e| fail(format!("{}: {e}", log.display())))?;
        let mut child = Command::new("bash")
            .arg(script())
            .args(["serve", "--venv"])
            .arg(venv())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| fail(format!("{}: {e}", script().display())))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| fail("server stdout".into()))?;
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            match lines.next() {
                Some(Ok(l)) => {
                    if let Some(u) = l.strip_prefix("GAUNTLET_UPSTREAM_URL=") {
                        break u.to_string();
                    }
                }
                _ => {
                    let _ = child.kill();
                    let text = std::fs::read_to_string(&log).unwrap_or_default();
                    return Err(fail(format!("the model server did not start: {text}")));
                }
            }
        };
        // Drain the rest, so the script never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .split('/')
            .next()
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| fail(format!("no port in `{url}`")))?;
        Ok(Server { child, port, log })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signalling a process group this test started.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// A byte relay between the proxy and the server that keeps both directions of every
/// connection: the server's own account of each call, read independently of the
/// proxy's.
struct Relay {
    port: u16,
    connections: Arc<Mutex<Vec<Connection>>>,
}

/// One connection's bytes, as the proxy sent them and as the server answered.
type Bytes = Arc<Mutex<Vec<u8>>>;
type Connection = (Bytes, Bytes);

impl Relay {
    fn start(upstream: u16) -> Result<Relay, Failed> {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| fail(format!("relay bind: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| fail(format!("relay: {e}")))?
            .port();
        let connections: Arc<Mutex<Vec<_>>> = Arc::new(Mutex::new(Vec::new()));
        let conns = Arc::clone(&connections);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let up = Arc::new(Mutex::new(Vec::new()));
                let down = Arc::new(Mutex::new(Vec::new()));
                if let Ok(mut c) = conns.lock() {
                    c.push((Arc::clone(&up), Arc::clone(&down)));
                }
                let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                std::thread::spawn(move || copy(client, server, &up));
                std::thread::spawn(move || copy(s2, c2, &down));
            }
        });
        Ok(Relay { port, connections })
    }

    /// Every byte the proxy sent the server.
    fn requests(&self) -> Vec<u8> {
        self.connections
            .lock()
            .map(|c| {
                c.iter()
                    .flat_map(|(up, _)| up.lock().map(|b| b.clone()).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every response of the server, parsed for what it said about tokens.
    fn responses(&self) -> Vec<Reported> {
        let downs: Vec<Vec<u8>> = self
            .connections
            .lock()
            .map(|c| {
                c.iter()
                    .map(|(_, down)| down.lock().map(|b| b.clone()).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default();
        downs.iter().flat_map(|d| http_responses(d)).collect()
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream, keep: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if let Ok(mut k) = keep.lock() {
                    k.extend_from_slice(&buf[..n]);
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// The HTTP/1.1 responses in one connection's bytes (content-length or chunked
/// bodies), each read for its usage: a JSON body's `usage`, or the last `usage` of an
/// event stream; `None`s when the server sent none.
fn http_responses(mut bytes: &[u8]) -> Vec<Reported> {
    let mut out = Vec::new();
    while let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
        let mut rest = &bytes[end + 4..];
        let headers: BTreeMap<String, String> = head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let body: Vec<u8> = if headers
            .get("transfer-encoding")
            .is_some_and(|t| t.contains("chunked"))
        {
            let mut body = Vec::new();
            loop {
                let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") else {
                    rest = &[];
                    break;
                };
                let size = usize::from_str_radix(
                    String::from_utf8_lossy(&rest[..nl])
                        .split(';')
                        .next()
                        .unwrap_or("")
                        .trim(),
                    16,
                )
                .unwrap_or(0);
                rest = &rest[nl + 2..];
                if size == 0 {
                    rest = rest.get(2..).unwrap_or(&[]);
                    break;
                }
                body.extend_from_slice(&rest[..size.min(rest.len())]);
                rest = rest.get(size + 2..).unwrap_or(&[]);
            }
            body
        } else {
            let len: usize = headers
                .get("content-length")
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            let body = rest[..len.min(rest.len())].to_vec();
            rest = rest.get(len..).unwrap_or(&[]);
            body
        };
        bytes = rest;
        let stream = headers
            .get("content-type")
            .is_some_and(|t| t.contains("text/event-stream"));
        let usage = if stream {
            String::from_utf8_lossy(&body)
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
                .filter_map(|v| v.get("usage").filter(|u| !u.is_null()).cloned())
                .next_back()
        } else {
            serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.get("usage").cloned())
        };
        let tokens = |k: &str| {
            usage
                .as_ref()
                .and_then(|u| u.get(k))
                .and_then(|t| t.as_u64())
        };
        out.push(Reported {
            stream,
            input: tokens("prompt_tokens"),
            output: tokens("completion_tokens"),
        });
    }
    out
}
