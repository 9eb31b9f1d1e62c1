//! The in-sandbox probe of the tell finder: `gauntlet tells-probe` (hidden), run by the
//! harness as a gate run's test command, so it sees its target exactly as a claimed test
//! does: through `APP_URL` / `APP_BIN` / `EXTENSION_DIR`, inside the gate's own sandbox.
//! It prints one JSON object ([`ProbeReport`]) of everything it observed and exits 0;
//! the harness compares the reports of the app's runs and of each mutant.
//!
//! What it observes:
//!
//! - CLI (`APP_BIN`): `--help`, `-h`, `--version`, `-V`, an unknown flag, each
//!   subcommand word followed by an unknown flag, each word alone on empty stdin, no
//!   arguments, a garbage argument: stdout, stderr and exit code of each.
//! - HTTP (`APP_URL`, raw HTTP/1.1 over TCP so that headers are seen as sent): `GET /`,
//!   an unknown path, `HEAD /`, `OPTIONS /`, and every documented endpoint it is given
//!   (`--endpoint 'GET /health'`; `<placeholders>` become `0`): status line, header names
//!   in order, each header's value, the body.
//! - Artifacts: every entry under the target's locator mount (`--artifacts`): kind,
//!   mode, link target; size and SHA-256 of files.
//! - What else a test reads about its target: its environment, `/proc/self/mountinfo`
//!   (ids and device numbers left out), the processes in `/proc` and their command
//!   lines, the host name, `/proc/self/cgroup`, the listening TCP sockets.
//! - Timing: how long the first request (HTTP `GET /`, else `$APP_BIN --help`) took.
//!
//! Values are normalised for what differs between two runs of the app itself: the
//! target's own URL becomes `$APP_URL`, its port `$PORT`, a `Date` header `<date>`.
//! Everything else is reported as seen; the harness calls what still varies between the
//! app's own runs volatile.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The format of [`ProbeReport`].
pub const PROBE_VERSION: u32 = 1;

/// An unknown flag no app defines.
pub const BOGUS_FLAG: &str = "--tells-no-such-flag";
/// A positional argument no app expects.
pub const GARBAGE: &str = "tells-garbage-argument";
/// A path no app serves.
pub const UNKNOWN_PATH: &str = "/tells-no-such-path";

/// Bounds of one CLI invocation and one HTTP exchange.
const CLI_DEADLINE: Duration = Duration::from_secs(10);
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes kept of a response or an output stream.
const READ_CAP: usize = 4 << 20;
/// Texts up to this long are kept whole; longer ones as size, hash and a prefix.
const KEEP_WHOLE: usize = 8 << 10;
/// Bounds of the artifact walk.
const MAX_ENTRIES: usize = 10_000;
const MAX_DEPTH: usize = 16;
const MAX_HASHED: u64 = 256 << 20;
/// Artifacts up to this long are kept as text when they are UTF-8.
pub const MAX_TEXT: u64 = 256 << 10;

/// What a finding is about; every observation has exactly one class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Output text: a CLI's stdout or stderr, an HTTP body.
    Text,
    /// An HTTP status line, header name or value.
    Header,
    /// A CLI's exit code.
    Exit,
    /// The environment a test is handed.
    Env,
    /// What `/proc` says: mounts, processes, host name, cgroup, sockets.
    Proc,
    /// Which files the target hands a test, and their kind, mode and link targets.
    ArtifactName,
    /// The bytes of a file the app and a mutant both hand over.
    ArtifactBytes,
    /// Start-up or first-response time beyond the app's own spread.
    Timing,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Text => "text",
            Class::Header => "header",
            Class::Exit => "exit",
            Class::Env => "env",
            Class::Proc => "proc",
            Class::ArtifactName => "artifact-name",
            Class::ArtifactBytes => "artifact-bytes",
            Class::Timing => "timing",
        }
    }
}

/// One thing the probe saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// What was done: `$APP_BIN --help`, `GET /health`, `artifacts`, `env`, ...
    pub probe: String,
    /// Which part of the answer: `stdout`, `status`, `header content-type`, ...
    pub field: String,
    pub class: Class,
    pub value: String,
    /// For the behaviour-carrying fields of a documented request (status, body,
    /// content length; stdout, stderr, exit code): the request as the corpus writes it
    /// (`GET /transactions/<id>`, `--version`, `sum`). A mutant whose capability's
    /// acceptance criteria name it may answer it differently: that is its behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

/// Everything one probe run saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    pub probe_version: u32,
    pub observations: Vec<Observation>,
    /// Milliseconds the first request took (HTTP `GET /`, else `$APP_BIN --help`).
    pub first_response_ms: Option<f64>,
    /// The text of every artifact that is UTF-8 and at most [`MAX_TEXT`] bytes, by
    /// path: where two targets' bytes differ, which bytes (not an observation itself).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifact_texts: BTreeMap<String, String>,
}

/// The probe's arguments (`gauntlet tells-probe`).
#[derive(Debug, Clone, Default)]
pub struct ProbeArgs {
    /// Documented HTTP requests, `METHOD /path` (or a bare `/path`, read as GET).
    pub endpoints: Vec<String>,
    /// Subcommand words of a CLI.
    pub words: Vec<String>,
    /// The target's locator mount: every file under it is an artifact.
    pub artifacts: Option<PathBuf>,
}

/// Run every probe and print the report; exit 0 unless the report cannot be written.
pub fn main(args: &ProbeArgs) -> ExitCode {
    let report = probe(args);
    let mut out = std::io::stdout().lock();
    match serde_json::to_writer(&mut out, &report).and_then(|()| {
        out.write_all(b"\n")
            .and_then(|()| out.flush())
            .map_err(serde_json::Error::io)
    }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gauntlet tells-probe: cannot write the report: {e}");
            ExitCode::from(2)
        }
    }
}

/// Every probe, in a fixed order: what `/proc` and the environment say first, before
/// the probe starts anything of its own.
pub fn probe(args: &ProbeArgs) -> ProbeReport {
    let url = std::env::var("APP_URL").ok().filter(|u| !u.is_empty());
    let norm = Normaliser::new(url.as_deref());
    let mut obs = Observations {
        list: Vec::new(),
        norm: &norm,
    };
    observe_proc(&mut obs);
    observe_env(&mut obs);
    let mut artifact_texts = BTreeMap::new();
    if let Some(dir) = &args.artifacts {
        artifact_texts = observe_artifacts(&mut obs, dir);
    }
    let mut first_response_ms = None;
    if let Some(url) = &url {
        first_response_ms = observe_http(&mut obs, url, &args.endpoints);
    }
    if let Some(bin) = std::env::var_os("APP_BIN").filter(|b| !b.is_empty()) {
        let first = observe_cli(&mut obs, Path::new(&bin), &args.words);
        first_response_ms = first_response_ms.or(first);
    }
    ProbeReport {
        probe_version: PROBE_VERSION,
        observations: obs.list,
        first_response_ms,
        artifact_texts,
    }
}

struct Observations<'a> {
    list: Vec<Observation>,
    norm: &'a Normaliser,
}

impl Observations<'_> {
    fn push(&mut self, probe: &str, field: &str, class: Class, value: &str) {
        self.push_req(probe, field, class, value, None);
    }

    fn push_req(
        &mut self,
        probe: &str,
        field: &str,
        class: Class,
        value: &str,
        request: Option<&str>,
    ) {
        self.list.push(Observation {
            probe: probe.to_string(),
            field: field.to_string(),
            class,
            value: self.norm.apply(value),
            request: request.map(str::to_string),
        });
    }
}

/// What differs between two runs of the same app by construction: its URL and port.
pub struct Normaliser {
    url: Option<String>,
    port: Option<String>,
}

impl Normaliser {
    pub fn new(url: Option<&str>) -> Normaliser {
        let port = url
            .and_then(|u| u.rsplit_once(':'))
            .map(|(_, p)| p.trim_end_matches('/').to_string())
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        Normaliser {
            url: url.map(|u| u.trim_end_matches('/').to_string()),
            port,
        }
    }

    pub fn apply(&self, value: &str) -> String {
        let mut v = value.to_string();
        if let Some(url) = &self.url {
            v = v.replace(url.as_str(), "$APP_URL");
        }
        if let Some(port) = &self.port {
            for host in ["127.0.0.1:", "localhost:", "[::1]:"] {
                v = replace_port(&v, host, port);
            }
        }
        v
    }

    /// The port as `/proc/net/tcp` writes it (4 upper-case hex digits).
    fn port_hex(&self) -> Option<String> {
        let p: u16 = self.port.as_deref()?.parse().ok()?;
        Some(format!("{p:04X}"))
    }
}

/// `host<port>` becomes `host$PORT` where the port is not followed by another digit.
fn replace_port(value: &str, host: &str, port: &str) -> String {
    let needle = format!("{host}{port}");
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find(&needle) {
        let after = &rest[at + needle.len()..];
        out.push_str(&rest[..at]);
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            out.push_str(&needle);
        } else {
            out.push_str(host);
            out.push_str("$PORT");
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A text kept whole when short, else as its size, hash and first line.
pub fn summarise(bytes: &[u8]) -> String {
    if bytes.len() <= KEEP_WHOLE {
        if let Ok(s) = std::str::from_utf8(bytes) {
            return s.to_string();
        }
    }
    let head: String = String::from_utf8_lossy(&bytes[..bytes.len().min(120)])
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    format!(
        "<{} bytes, {}> {head}",
        bytes.len(),
        crate::hash::sha256(bytes)
    )
}

// ---------------------------------------------------------------------------
// /proc and the environment
// ---------------------------------------------------------------------------

fn observe_proc(obs: &mut Observations<'_>) {
    let me = std::process::id();
    // Processes: the sandbox's own (init is hidden from it); this probe's pid is kept,
    // its command line is the harness's and the same for every target.
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    let listed: Vec<String> = pids.iter().map(u32::to_string).collect();
    obs.push("/proc", "pids", Class::Proc, &listed.join(" "));
    for pid in &pids {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .trim_end_matches('\0')
                    .replace('\0', " ")
            })
            .unwrap_or_else(|e| format!("<{}>", e.kind()));
        let who = if *pid == me { " (the probe)" } else { "" };
        obs.push(
            "/proc",
            &format!("cmdline of pid {pid}{who}"),
            Class::Proc,
            &cmdline,
        );
    }
    let hostname = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|e| format!("<{e}>"));
    obs.push("/proc", "hostname", Class::Proc, &hostname);
    obs.push(
        "/proc",
        "cgroup",
        Class::Proc,
        &read_text("/proc/self/cgroup"),
    );
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for line in read_text("/proc/self/mountinfo").lines() {
        let Some((point, value)) = mount_line(line) else {
            continue;
        };
        let n = seen.entry(point.clone()).or_default();
        *n += 1;
        let field = if *n == 1 {
            format!("mount {point}")
        } else {
            format!("mount {point} #{n}")
        };
        obs.push("/proc/self/mountinfo", &field, Class::Proc, &value);
    }
    let port_hex = obs.norm.port_hex();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let listening = listening_sockets(&read_text(table), port_hex.as_deref());
        obs.push(table, "listening", Class::Proc, &listening.join(" "));
    }
}

/// A mountinfo line as `(mount point, what it is)`, without the mount ids, the device
/// numbers and the peer group numbers, which count mounts made anywhere on the host.
pub fn mount_line(line: &str) -> Option<(String, String)> {
    let fields: Vec<&str> = line.split(' ').collect();
    let dash = fields.iter().position(|f| *f == "-")?;
    if dash < 6 || fields.len() < dash + 3 {
        return None;
    }
    let root = fields[3];
    let point = fields[4].to_string();
    let opts = fields[5];
    let tags: Vec<String> = fields[6..dash]
        .iter()
        .map(|t| t.trim_end_matches(|c: char| c.is_ascii_digit()).to_string())
        .collect();
    let fstype = fields[dash + 1];
    let source = fields[dash + 2];
    let super_opts = fields.get(dash + 3).copied().unwrap_or("");
    Some((
        point,
        format!(
            "{fstype} {source} root={root} {opts} {super_opts} {}",
            tags.join(",")
        )
        .trim_end()
        .to_string(),
    ))
}

/// The local addresses of listening sockets in a `/proc/net/tcp` table, the target's
/// port written `$PORT`.
fn listening_sockets(table: &str, port_hex: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(3) == Some(&"0A")).then(|| f.get(1).map(|a| a.to_string()))?
        })
        .map(|addr| match (addr.rsplit_once(':'), port_hex) {
            (Some((host, port)), Some(p)) if port == p => format!("{host}:$PORT"),
            _ => addr,
        })
        .collect();
    out.sort();
    out
}

fn read_text(path: &str) -> String {
    match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => format!("<{}>", e.kind()),
    }
}

fn observe_env(obs: &mut Observations<'_>) {
    let vars: BTreeMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let names: Vec<&str> = vars.keys().map(String::as_str).collect();
    obs.push("env", "names", Class::Env, &names.join(" "));
    for (k, v) in &vars {
        obs.push("env", k, Class::Env, v);
    }
}

// ---------------------------------------------------------------------------
// Artifacts
// ---------------------------------------------------------------------------

/// Observe every entry under `dir`; the texts of the small UTF-8 files among them.
fn observe_artifacts(obs: &mut Observations<'_>, dir: &Path) -> BTreeMap<String, String> {
    let mut entries = Vec::new();
    walk(dir, Path::new(""), 0, &mut entries);
    let names: Vec<String> = entries.iter().map(|(rel, _, _)| rel.clone()).collect();
    obs.push("artifacts", "names", Class::ArtifactName, &names.join(" "));
    let mut texts = BTreeMap::new();
    for (rel, what, bytes) in entries {
        obs.push(
            "artifacts",
            &format!("entry {rel}"),
            Class::ArtifactName,
            &what,
        );
        if let Some(bytes) = bytes {
            obs.push(
                "artifacts",
                &format!("bytes {rel}"),
                Class::ArtifactBytes,
                &bytes,
            );
            let path = dir.join(&rel);
            let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_TEXT);
            if let Some(text) = small
                .then(|| std::fs::read(&path).ok())
                .flatten()
                .and_then(|b| String::from_utf8(b).ok())
            {
                texts.insert(rel, text);
            }
        }
    }
    texts
}

/// `(relative path, kind and mode and link target, size and hash of a file's bytes)`
/// of every entry under `root/rel`, sorted by path.
fn walk(root: &Path, rel: &Path, depth: usize, out: &mut Vec<(String, String, Option<String>)>) {
    let Ok(listing) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    let mut names: Vec<_> = listing.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        if out.len() >= MAX_ENTRIES {
            out.push(("…".into(), "more entries than the probe walks".into(), None));
            return;
        }
        let rel = rel.join(&name);
        let path = root.join(&rel);
        let shown = rel.to_string_lossy().into_owned();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let mode = format!("{:o}", meta.permissions().mode() & 0o7777);
        let ft = meta.file_type();
        if ft.is_symlink() {
            let to = std::fs::read_link(&path)
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((shown, format!("symlink -> {to}"), file_bytes(&path)));
        } else if ft.is_dir() {
            out.push((shown, format!("dir {mode}"), None));
            if depth < MAX_DEPTH {
                walk(root, &rel, depth + 1, out);
            }
        } else if ft.is_file() {
            out.push((shown, format!("file {mode}"), file_bytes(&path)));
        } else if ft.is_socket() {
            out.push((shown, format!("socket {mode}"), None));
        } else {
            out.push((shown, format!("other {mode}"), None));
        }
    }
}

/// Size and SHA-256 of the file at `path` (followed), if it is one.
fn file_bytes(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.len() > MAX_HASHED {
        return Some(format!("{} bytes (not hashed)", meta.len()));
    }
    let mut hasher = crate::hash::Sha256Stream::default();
    let mut file = std::fs::File::open(path).ok()?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) => return Some(format!("<{}>", e.kind())),
        }
    }
    Some(format!("{} bytes {}", meta.len(), hasher.finish()))
}

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------

/// The probes of an HTTP target; the milliseconds its first request took.
fn observe_http(obs: &mut Observations<'_>, url: &str, endpoints: &[String]) -> Option<f64> {
    let Some(addr) = url
        .strip_prefix("http://")
        .map(|a| a.trim_end_matches('/').to_string())
    else {
        obs.push("APP_URL", "scheme", Class::Env, "not http://");
        return None;
    };
    let t0 = Instant::now();
    let first = http(&addr, "GET", "/");
    let first_ms = t0.elapsed().as_secs_f64() * 1000.0;
    record_http(obs, "GET /", &first, None);
    for (method, path) in [("GET", UNKNOWN_PATH), ("HEAD", "/"), ("OPTIONS", "/")] {
        let answer = http(&addr, method, path);
        record_http(obs, &format!("{method} {path}"), &answer, None);
    }
    for template in endpoints {
        let (method, path) = match template.split_once(' ') {
            Some((m, p)) => (m.to_string(), p.to_string()),
            None => ("GET".to_string(), template.clone()),
        };
        let path = fill_placeholders(&path);
        let answer = http(&addr, &method, &path);
        record_http(obs, template, &answer, Some(template.as_str()));
    }
    Some(first_ms)
}

/// `<id>` and every other `<placeholder>` become `0`.
pub fn fill_placeholders(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push('0');
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

/// A response as read: the bytes up to the end of the headers, and the body.
struct Answer {
    head: Vec<(String, String)>,
    status: String,
    body: Vec<u8>,
}

fn http(addr: &str, method: &str, path: &str) -> Result<Answer, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect: {}", e.kind()))?;
    let _ = stream.set_read_timeout(Some(HTTP_TIMEOUT));
    let _ = stream.set_write_timeout(Some(HTTP_TIMEOUT));
    let body = if matches!(method, "POST" | "PUT" | "PATCH") {
        "Content-Length: 0\r\n"
    } else {
        ""
    };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: gauntlet-tells\r\nAccept: */*\r\n{body}Connection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("write: {}", e.kind()))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 << 10];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if raw.len() >= READ_CAP {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                // No end of stream within the timeout: take what came.
                break;
            }
            Err(e) => return Err(format!("read: {}", e.kind())),
        }
    }
    parse_answer(&raw)
}

fn parse_answer(raw: &[u8]) -> Result<Answer, String> {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(format!("no complete response head in {} bytes", raw.len()));
    };
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("").to_string();
    let headers = lines
        .map(|l| match l.split_once(':') {
            Some((n, v)) => (n.to_string(), v.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect();
    Ok(Answer {
        head: headers,
        status,
        body: raw[end + 4..].to_vec(),
    })
}

fn record_http(
    obs: &mut Observations<'_>,
    probe: &str,
    answer: &Result<Answer, String>,
    request: Option<&str>,
) {
    let a = match answer {
        Ok(a) => a,
        Err(e) => {
            obs.push_req(probe, "status", Class::Header, &format!("<{e}>"), request);
            return;
        }
    };
    obs.push_req(probe, "status", Class::Header, &a.status, request);
    let names: Vec<&str> = a.head.iter().map(|(n, _)| n.as_str()).collect();
    obs.push(probe, "header names", Class::Header, &names.join(", "));
    let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (n, v) in &a.head {
        let lower = n.to_ascii_lowercase();
        let v = if lower == "date" {
            "<date>".to_string()
        } else {
            v.clone()
        };
        values.entry(lower).or_default().push(v);
    }
    for (n, vs) in values {
        // The body's length follows the body: the behaviour of a documented request.
        let req = (n == "content-length").then_some(request).flatten();
        obs.push_req(
            probe,
            &format!("header {n}"),
            Class::Header,
            &vs.join(" | "),
            req,
        );
    }
    obs.push_req(probe, "body", Class::Text, &summarise(&a.body), request);
}

// ---------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------

/// The probes of a CLI target; the milliseconds its first invocation took.
fn observe_cli(obs: &mut Observations<'_>, bin: &Path, words: &[String]) -> Option<f64> {
    // (arguments, documented request it may answer as behaviour)
    let mut calls: Vec<(Vec<String>, Option<String>)> = Vec::new();
    for flag in ["--help", "-h", "--version", "-V"] {
        calls.push((vec![flag.into()], Some(flag.into())));
    }
    calls.push((vec![BOGUS_FLAG.into()], None));
    for w in words {
        calls.push((vec![w.clone(), BOGUS_FLAG.into()], None));
        calls.push((vec![w.clone()], Some(w.clone())));
    }
    calls.push((vec![], None));
    calls.push((vec![GARBAGE.into()], None));
    let mut first = None;
    for (args, request) in calls {
        let probe = if args.is_empty() {
            "$APP_BIN (no arguments)".to_string()
        } else {
            format!("$APP_BIN {}", args.join(" "))
        };
        let t0 = Instant::now();
        let ran = run_cli(bin, &args);
        if first.is_none() {
            first = Some(t0.elapsed().as_secs_f64() * 1000.0);
        }
        let req = request.as_deref();
        match ran {
            Ok((stdout, stderr, exit)) => {
                obs.push_req(&probe, "stdout", Class::Text, &summarise(&stdout), req);
                obs.push_req(&probe, "stderr", Class::Text, &summarise(&stderr), req);
                obs.push_req(&probe, "exit", Class::Exit, &exit, req);
            }
            Err(e) => obs.push_req(&probe, "exit", Class::Exit, &format!("<{e}>"), req),
        }
    }
    first
}

/// Run `bin args` with empty stdin: stdout, stderr, and how it ended.
fn run_cli(bin: &Path, args: &[String]) -> Result<(Vec<u8>, Vec<u8>, String), String> {
    let mut child = std::process::Command::new(bin)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {}", e.kind()))?;
    // Empty stdin: closed at once.
    drop(child.stdin.take());
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if t0.elapsed() > CLI_DEADLINE => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(format!("wait: {}", e.kind())),
        }
    };
    let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    let (stdout, stderr) = (join(out), join(err));
    let exit = match status {
        None => "timed out".to_string(),
        Some(s) => {
            use std::os::unix::process::ExitStatusExt;
            match (s.code(), s.signal()) {
                (Some(c), _) => c.to_string(),
                (None, Some(sig)) => format!("signal {sig}"),
                (None, None) => "unknown".to_string(),
            }
        }
    };
    Ok((stdout, stderr, exit))
}

fn reader<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = (&mut r).take(READ_CAP as u64).read_to_end(&mut bytes);
        // Drain the rest so that the writer is never blocked on a full pipe.
        let _ = std::io::copy(&mut r, &mut std::io::sink());
        bytes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_targets_url_and_port_are_normalised_and_nothing_else() {
        let n = Normaliser::new(Some("http://127.0.0.1:41234"));
        assert_eq!(n.apply("at http://127.0.0.1:41234/x"), "at $APP_URL/x");
        assert_eq!(n.apply("Host: 127.0.0.1:41234"), "Host: 127.0.0.1:$PORT");
        assert_eq!(n.apply("127.0.0.1:412345"), "127.0.0.1:412345");
        assert_eq!(n.apply("port 41234 alone"), "port 41234 alone");
        assert_eq!(n.port_hex().as_deref(), Some("A112"));
        assert_eq!(Normaliser::new(None).apply("x:1"), "x:1");
    }

    #[test]
    fn mount_ids_devices_and_peer_groups_are_left_out() {
        let a = "412 400 0:93 / /run/gauntlet/target ro,nosuid master:7 - ext4 /dev/vda1 rw";
        let b = "977 960 0:121 / /run/gauntlet/target ro,nosuid master:15 - ext4 /dev/vda1 rw";
        assert_eq!(mount_line(a), mount_line(b));
        let (point, what) = mount_line(a).expect("parsed");
        assert_eq!(point, "/run/gauntlet/target");
        assert_eq!(what, "ext4 /dev/vda1 root=/ ro,nosuid rw master:");
        assert_eq!(mount_line("garbage"), None);
    }

    #[test]
    fn placeholders_become_zero() {
        assert_eq!(fill_placeholders("/transactions/<id>"), "/transactions/0");
        assert_eq!(
            fill_placeholders("/accounts/<account>/balance"),
            "/accounts/0/balance"
        );
        assert_eq!(fill_placeholders("/api/notes?q=<query>"), "/api/notes?q=0");
        assert_eq!(fill_placeholders("/plain"), "/plain");
    }

    #[test]
    fn a_raw_response_is_split_into_status_headers_and_body() {
        let a = parse_answer(
            b"HTTP/1.1 404 Not Found\r\ncontent-type: text/plain\r\nDate: x\r\n\r\nnope",
        )
        .expect("parsed");
        assert_eq!(a.status, "HTTP/1.1 404 Not Found");
        assert_eq!(a.head[0], ("content-type".into(), "text/plain".into()));
        assert_eq!(a.body, b"nope");
        assert!(parse_answer(b"HTTP/1.1 200").is_err());
    }

    #[test]
    fn long_or_binary_texts_are_summarised() {
        assert_eq!(summarise(b"short"), "short");
        let long = vec![b'a'; KEEP_WHOLE + 1];
        assert!(summarise(&long).starts_with(&format!("<{} bytes, sha256:", long.len())));
        assert!(summarise(&[0xff, 0xfe]).starts_with("<2 bytes"));
    }
}
