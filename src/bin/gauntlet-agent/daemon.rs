//! `gauntlet-agent daemon`: the reference agent's background mode, a real
//! long-running process the harness starts for an idle window and kills at its end.
//! What it does is data (a TOML config), so that one binary gives a "stub" (an empty
//! config: it only ticks), a "reactive" (self-checks) and an "autonomous" agent
//! (self-checks, watching the tracker and acting on changes, deriving and acting on
//! goals, following up on the last conversation). It does not call the model: every
//! action is a rule of the config, observable in the world sinks.
//!
//! Config (every section optional; unknown keys are an error naming the file):
//!
//! ```toml
//! tick_ms = 1000                     # loop period
//! [self_check]
//! every_ticks = 1
//! file = "selfcheck.log"             # workspace-relative; one line appended per check
//! [tracker]                          # needs GAUNTLET_TRACKER_URL
//! file_thread_on_blocked = true      # open a thread when a task turns `blocked`
//! derive_goals = true                # …and add a self-derived goal to unblock it
//! [goals]
//! act = true                         # act on the most important open goal not yet acted on
//! derive_from_workspace = true       # a workspace without INDEX.md is a gap: goal to write it
//! [model]                            # a background turn of the agent itself (the model
//! every_ticks = 1                    # decides; needs the model variables of `chat`)
//! prompt = "Background check: …"     # the turn's user message ({tick} is filled in)
//! max_turns = 20
//! [follow_up]
//! after_ticks = 2                    # once, on this tick
//! thread = true                      # open a tracker thread about the last conversation's topic
//! mail_to = "user@example.com"       # and/or mail it (GAUNTLET_SMTP_URL)
//! ```
//!
//! State it keeps across restarts: `daemon-state.json` (tick, change-feed position,
//! goals acted on); what it did: `notes.jsonl` (read by the next chat session) and
//! JSONL events on stdout.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gauntlet::evidence::Event;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::events::Emitter;
use crate::goals::{GoalStatus, Goals};
use crate::memory::{now_ms, Memory, NOTES};

const STATE: &str = "daemon-state.json";

#[derive(Debug, clap::Args)]
pub struct DaemonArgs {
    /// The agent's persistent state (shared with `chat`).
    #[arg(long)]
    pub state_dir: PathBuf,
    /// What the background mode does (TOML; see the module docs).
    #[arg(long)]
    pub config: PathBuf,
    /// Stop after this many ticks (tests); without it the daemon runs until killed.
    #[arg(long)]
    pub max_ticks: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    #[serde(default = "default_tick")]
    pub tick_ms: u64,
    pub self_check: Option<SelfCheck>,
    pub tracker: Option<TrackerWatch>,
    pub goals: Option<GoalsAct>,
    pub follow_up: Option<FollowUp>,
    pub model: Option<ModelTick>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTick {
    #[serde(default = "one")]
    pub every_ticks: u64,
    pub prompt: String,
    #[serde(default = "twenty")]
    pub max_turns: u32,
}

fn twenty() -> u32 {
    20
}

fn default_tick() -> u64 {
    1000
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelfCheck {
    #[serde(default = "one")]
    pub every_ticks: u64,
    #[serde(default = "selfcheck_file")]
    pub file: String,
}

fn one() -> u64 {
    1
}
fn selfcheck_file() -> String {
    "selfcheck.log".into()
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrackerWatch {
    #[serde(default)]
    pub file_thread_on_blocked: bool,
    #[serde(default)]
    pub derive_goals: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalsAct {
    #[serde(default)]
    pub act: bool,
    #[serde(default)]
    pub derive_from_workspace: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowUp {
    #[serde(default = "one")]
    pub after_ticks: u64,
    #[serde(default)]
    pub thread: bool,
    pub mail_to: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("{path}: cannot read the daemon config: {source}")]
    ReadConfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: bad daemon config: {source}")]
    BadConfig {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error("{path}: tick_ms must be at least 10")]
    Tick { path: PathBuf },
    #[error("{path}: cannot create the state directory: {source}")]
    StateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot determine the workspace (current directory): {0}")]
    Cwd(#[source] std::io::Error),
    #[error("cannot write an event to stdout: {0}")]
    Emit(#[from] std::io::Error),
}

pub fn load_config(path: &Path) -> Result<DaemonConfig, DaemonError> {
    let text = std::fs::read_to_string(path).map_err(|source| DaemonError::ReadConfig {
        path: path.to_path_buf(),
        source,
    })?;
    let config: DaemonConfig = toml::from_str(&text).map_err(|source| DaemonError::BadConfig {
        path: path.to_path_buf(),
        source,
    })?;
    if config.tick_ms < 10 {
        return Err(DaemonError::Tick {
            path: path.to_path_buf(),
        });
    }
    Ok(config)
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    tick: u64,
    since_seq: u64,
    acted_goals: BTreeSet<String>,
    followed_up: bool,
}

struct Daemon<'a, W: Write> {
    config: DaemonConfig,
    state_dir: PathBuf,
    workspace: PathBuf,
    emitter: &'a mut Emitter<W>,
    http: Option<reqwest::blocking::Client>,
    tracker: Option<String>,
    smtp: Option<String>,
    state: State,
    /// Built on the first model tick; `Err` keeps why it cannot be.
    client: Option<Result<crate::model::ChatClient, crate::model::ModelError>>,
}

pub fn daemon<W: Write>(args: &DaemonArgs, emitter: &mut Emitter<W>) -> Result<(), DaemonError> {
    let config = load_config(&args.config)?;
    std::fs::create_dir_all(&args.state_dir).map_err(|source| DaemonError::StateDir {
        path: args.state_dir.clone(),
        source,
    })?;
    emitter.emit(&Event::Start {
        agent: crate::AGENT_NAME.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        model: String::new(),
    })?;
    let state = std::fs::read(args.state_dir.join(STATE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut d = Daemon {
        config,
        state_dir: args.state_dir.clone(),
        workspace: std::env::current_dir().map_err(DaemonError::Cwd)?,
        emitter,
        http: reqwest::blocking::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .ok(),
        tracker: env("GAUNTLET_TRACKER_URL").map(|u| u.trim_end_matches('/').to_string()),
        smtp: env("GAUNTLET_SMTP_URL"),
        state,
        client: None,
    };
    let mut ran = 0u64;
    loop {
        d.state.tick += 1;
        d.tick()?;
        d.save_state();
        ran += 1;
        if args.max_ticks.is_some_and(|m| ran >= m) {
            d.emitter.emit(&Event::Final {
                text: format!("daemon stopped after {ran} ticks"),
            })?;
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(d.config.tick_ms));
    }
}

impl<W: Write> Daemon<'_, W> {
    fn tick(&mut self) -> Result<(), DaemonError> {
        if let Some(check) = self.config.self_check.clone() {
            if self.state.tick % check.every_ticks.max(1) == 0 {
                self.self_check(&check)?;
            }
        }
        if let Some(watch) = self.config.tracker.clone() {
            self.watch_tracker(&watch)?;
        }
        if let Some(goals) = self.config.goals.clone() {
            self.goals(&goals)?;
        }
        if let Some(model) = self.config.model.clone() {
            if self.state.tick % model.every_ticks.max(1) == 0 {
                self.model_tick(&model)?;
            }
        }
        if let Some(follow) = self.config.follow_up.clone() {
            if !self.state.followed_up && self.state.tick >= follow.after_ticks {
                self.state.followed_up = true;
                self.follow_up(&follow)?;
            }
        }
        Ok(())
    }

    /// Record an action: a note for the next chat session, an event on stdout.
    fn note(&mut self, kind: &str, text: String) -> Result<(), DaemonError> {
        let line = json!({"at_ms": now_ms(), "tick": self.state.tick, "kind": kind, "text": text});
        let path = self.state_dir.join(NOTES);
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            eprintln!(
                "gauntlet-agent daemon: {}: cannot write a note: {e}",
                path.display()
            );
        }
        self.emitter.emit(&Event::Message {
            text: format!("daemon {kind}: {text}"),
        })?;
        Ok(())
    }

    fn save_state(&self) {
        let path = self.state_dir.join(STATE);
        let tmp = path.with_extension("json.tmp");
        let saved = serde_json::to_vec(&self.state)
            .map_err(std::io::Error::other)
            .and_then(|b| std::fs::write(&tmp, b))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if let Err(e) = saved {
            eprintln!(
                "gauntlet-agent daemon: {}: cannot save state: {e}",
                path.display()
            );
        }
    }

    /// One background turn of the agent: a fresh conversation with the chat system
    /// prompt, the tick prompt, and every chat tool. A model failure is noted, never
    /// fatal: the daemon keeps ticking.
    fn model_tick(&mut self, tick: &ModelTick) -> Result<(), DaemonError> {
        if self.client.is_none() {
            let client =
                crate::model::ChatClient::new(crate::model::ModelConfig::from_env(), false);
            self.client = Some(client);
        }
        let client = match &self.client {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                let e = e.to_string();
                return self.note("model", format!("no model client: {e}"));
            }
            None => return Ok(()),
        };
        let prompt = tick.prompt.replace("{tick}", &self.state.tick.to_string());
        let mut messages = vec![
            json!({"role": "system", "content": crate::chat::system_prompt(&self.state_dir, &self.workspace)}),
            json!({"role": "user", "content": prompt}),
        ];
        let memory = Memory::new(&self.state_dir);
        let goals = Goals::new(&self.state_dir);
        let extra = |name: &str, arguments: &str| {
            crate::memory::run(&memory, name, arguments)
                .or_else(|| crate::goals::run(&goals, name, arguments))
        };
        let toolbox = crate::tools::Toolbox::new(self.workspace.clone(), String::new());
        let outcome = crate::agent_loop::AgentLoop {
            client,
            toolbox: &toolbox,
            emitter: &mut *self.emitter,
            max_turns: tick.max_turns,
        }
        .converse(&mut messages, &crate::chat::all_tools(), &extra);
        match outcome {
            Ok(text) => self.note("model", text),
            Err(crate::agent_loop::LoopError::Emit(e)) => Err(DaemonError::Emit(e)),
            Err(e) => self.note("model", format!("background turn failed: {e}")),
        }
    }

    fn self_check(&mut self, check: &SelfCheck) -> Result<(), DaemonError> {
        let facts = Memory::new(&self.state_dir).current(now_ms()).len();
        let open = Goals::new(&self.state_dir)
            .load()
            .iter()
            .filter(|g| g.status == GoalStatus::Open)
            .count();
        let tracker = match (&self.tracker, &self.http) {
            (Some(url), Some(http)) => match http.get(format!("{url}/")).send() {
                Ok(r) => format!("tracker {}", r.status().as_u16()),
                Err(e) => format!("tracker unreachable ({e})"),
            },
            _ => "no tracker".into(),
        };
        let line = format!(
            "{} self-check tick {}: {facts} facts, {open} open goals, {tracker}\n",
            now_ms(),
            self.state.tick
        );
        let path = self.workspace.join(&check.file);
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        match written {
            Ok(()) => self.note("self_check", line.trim().to_string()),
            Err(e) => self.note(
                "self_check",
                format!("{}: cannot write: {e}", path.display()),
            ),
        }
    }

    fn get(&self, path: &str) -> Result<Value, TrackerError> {
        let (Some(url), Some(http)) = (&self.tracker, &self.http) else {
            return Err(TrackerError::None);
        };
        Ok(http
            .get(format!("{url}{path}"))
            .send()
            .and_then(|r| r.json::<Value>())?)
    }

    fn post(&self, path: &str, body: &Value) -> Result<Value, TrackerError> {
        let (Some(url), Some(http)) = (&self.tracker, &self.http) else {
            return Err(TrackerError::None);
        };
        Ok(http
            .post(format!("{url}{path}"))
            .json(body)
            .send()
            .and_then(|r| r.json::<Value>())?)
    }

    fn watch_tracker(&mut self, watch: &TrackerWatch) -> Result<(), DaemonError> {
        let changes = match self.get(&format!("/changes?since={}", self.state.since_seq)) {
            Ok(Value::Array(c)) => c,
            Ok(other) => return self.note("tracker", format!("unexpected change feed: {other}")),
            Err(e) => return self.note("tracker", format!("cannot read the change feed: {e}")),
        };
        for change in changes {
            if let Some(seq) = change["seq"].as_u64() {
                self.state.since_seq = self.state.since_seq.max(seq);
            }
            // Its own changes are not news.
            if change["actor"] == "agent" {
                continue;
            }
            let id = change["id"].as_str().unwrap_or_default().to_string();
            let blocked = change["kind"] == "task_updated"
                && change["field"] == "status"
                && change["to"] == "blocked";
            self.note("tracker", format!("noticed change {change}"))?;
            if !blocked {
                continue;
            }
            if watch.file_thread_on_blocked {
                let body = json!({
                    "title": format!("Task {id} is blocked"),
                    "body": format!(
                        "I noticed while idle that task {id} went from {} to blocked (changed by {}). \
                         What is blocking it, and who can unblock it?",
                        change["from"].as_str().unwrap_or("?"),
                        change["actor"].as_str().unwrap_or("?"),
                    ),
                });
                let result = self.post("/threads", &body);
                let text = match result {
                    Ok(t) => format!("opened thread {} about blocked task {id}", t["id"]),
                    Err(e) => format!("cannot open a thread about task {id}: {e}"),
                };
                self.note("tracker", text)?;
            }
            if watch.derive_goals {
                let goal = format!("unblock-{id}");
                let text = format!("Get task {id} unblocked");
                match Goals::new(&self.state_dir).set(&goal, Some(&text), Some(1), None, "self") {
                    Ok(_) => self.note("goal", format!("derived goal {goal}: {text}"))?,
                    Err(e) => self.note("goal", format!("cannot store goal {goal}: {e}"))?,
                }
            }
        }
        Ok(())
    }

    fn goals(&mut self, config: &GoalsAct) -> Result<(), DaemonError> {
        let store = Goals::new(&self.state_dir);
        if config.derive_from_workspace && !self.workspace.join("INDEX.md").exists() {
            let id = "index-workspace";
            if !store.load().iter().any(|g| g.id == id) {
                let text = "The workspace has no INDEX.md: list its files there";
                match store.set(id, Some(text), Some(5), None, "self") {
                    Ok(_) => self.note("goal", format!("derived goal {id}: {text}"))?,
                    Err(e) => self.note("goal", format!("cannot store goal {id}: {e}"))?,
                }
            }
        }
        if !config.act {
            return Ok(());
        }
        let next = store
            .load()
            .into_iter()
            .find(|g| g.status == GoalStatus::Open && !self.state.acted_goals.contains(&g.id));
        let Some(goal) = next else {
            return Ok(());
        };
        self.state.acted_goals.insert(goal.id.clone());
        let (path, content) = if goal.id == "index-workspace" {
            let mut files: Vec<String> = std::fs::read_dir(&self.workspace)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            files.sort();
            let list: String = files.iter().map(|f| format!("- {f}\n")).collect();
            (
                self.workspace.join("INDEX.md"),
                format!("# Workspace index\n\n{list}"),
            )
        } else {
            let dir = self.workspace.join("goals");
            let _ = std::fs::create_dir_all(&dir);
            (
                dir.join(format!("{}.md", sanitize(&goal.id))),
                format!(
                    "# {}\n\npriority {}, from {}\nworked on at {} (tick {})\n",
                    goal.text,
                    goal.priority,
                    goal.source,
                    now_ms(),
                    self.state.tick
                ),
            )
        };
        let text = match std::fs::write(&path, content) {
            Ok(()) => format!(
                "acted on goal {} (priority {}): wrote {}",
                goal.id,
                goal.priority,
                path.display()
            ),
            Err(e) => format!("cannot act on goal {}: {}: {e}", goal.id, path.display()),
        };
        self.note("goal", text)
    }

    fn follow_up(&mut self, config: &FollowUp) -> Result<(), DaemonError> {
        let Some(topic) = last_topic(&self.state_dir) else {
            return self.note(
                "follow_up",
                "no earlier conversation to follow up on".into(),
            );
        };
        let short: String = topic.chars().take(60).collect();
        let body = format!(
            "Following up on our last conversation (\"{short}\"): is there anything still open \
             there I should take care of?"
        );
        if config.thread {
            let text = match self.post(
                "/threads",
                &json!({"title": format!("Follow-up: {short}"), "body": body}),
            ) {
                Ok(t) => format!("opened follow-up thread {}", t["id"]),
                Err(e) => format!("cannot open a follow-up thread: {e}"),
            };
            self.note("follow_up", text)?;
        }
        if let Some(to) = &config.mail_to {
            let text = match &self.smtp {
                None => "cannot mail: GAUNTLET_SMTP_URL unset".to_string(),
                Some(url) => match send_mail(
                    url,
                    "gauntlet-agent@agent.local",
                    to,
                    &format!("Follow-up: {short}"),
                    &body,
                ) {
                    Ok(()) => format!("mailed a follow-up to {to}"),
                    Err(e) => format!("cannot mail {to}: {e}"),
                },
            };
            self.note("follow_up", text)?;
        }
        Ok(())
    }
}

fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The last user message of the most recently written conversation.
fn last_topic(state_dir: &Path) -> Option<String> {
    let dir = std::fs::read_dir(state_dir.join("sessions")).ok()?;
    let newest = dir
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())?;
    let session: Value = serde_json::from_slice(&std::fs::read(newest.path()).ok()?).ok()?;
    session["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Why the tracker could not be asked.
#[derive(Debug, thiserror::Error)]
enum TrackerError {
    #[error("no tracker (GAUNTLET_TRACKER_URL unset)")]
    None,
    #[error(transparent)]
    Http(#[from] reqwest::Error),
}

/// Why a mail was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("{addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("expected {expected}, got {got:?}")]
    Reply { expected: String, got: String },
}

/// A minimal SMTP client: one message to one recipient, every reply checked.
pub fn send_mail(
    url: &str,
    from: &str,
    to: &str,
    subject: &str,
    body: &str,
) -> Result<(), MailError> {
    let addr = url
        .strip_prefix("smtp://")
        .unwrap_or(url)
        .trim_end_matches('/');
    let stream = TcpStream::connect(addr).map_err(|source| MailError::Connect {
        addr: addr.to_owned(),
        source,
    })?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut expect = |code: &str| -> Result<(), MailError> {
        loop {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            if !line.starts_with(code) {
                return Err(MailError::Reply {
                    expected: code.to_owned(),
                    got: line.trim().to_owned(),
                });
            }
            if line.as_bytes().get(3) != Some(&b'-') {
                return Ok(());
            }
        }
    };
    expect("220")?;
    let mut send = |line: &str| writer.write_all(format!("{line}\r\n").as_bytes());
    send("EHLO gauntlet-agent")?;
    expect("250")?;
    send(&format!("MAIL FROM:<{from}>"))?;
    expect("250")?;
    send(&format!("RCPT TO:<{to}>"))?;
    expect("250")?;
    send("DATA")?;
    expect("354")?;
    let mut data = format!("From: {from}\r\nTo: {to}\r\nSubject: {subject}\r\n\r\n");
    for line in body.lines() {
        if line.starts_with('.') {
            data.push('.');
        }
        data.push_str(line);
        data.push_str("\r\n");
    }
    data.push('.');
    send(&data)?;
    expect("250")?;
    send("QUIT")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_tiny_ticks_are_rejected_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.toml");
        std::fs::write(&path, "tick_ms = 100\n[self_check]\nevery = 2\n").unwrap();
        let err = load_config(&path).unwrap_err().to_string();
        assert!(err.contains("d.toml") && err.contains("every"), "{err}");
        std::fs::write(&path, "tick_ms = 1\n").unwrap();
        assert!(load_config(&path)
            .unwrap_err()
            .to_string()
            .contains("tick_ms"));
        std::fs::write(&path, "").unwrap();
        let empty = load_config(&path).unwrap();
        assert!(empty.self_check.is_none() && empty.tracker.is_none());
    }
}
