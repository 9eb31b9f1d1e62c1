//! The scorecard scorer: observations of one probe → which of its observations hold,
//! and the observations of every probe → 0–4 per dimension, the total /20 and the
//! classification. Pure: no I/O, no clock, no randomness.
//!
//! Text-based observations use the deterministic rules below (documented on each
//! function, each with a unit test), never an LLM judge, and every result keeps the
//! text it was decided on for audit. What an agent says about its own score is never
//! read: the inputs are replies to the harness's prompts and sink events.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::spec::scorecard::bank;
use crate::spec::scorecard::{Answer, Bank, LoadedProbe, Rule, Scorecard, Step};

use change::{acted_on_change, labels_before, Change};
pub use rules::*;

/// One prompted turn as observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TurnObs {
    /// The probe's label, or `filler-N`.
    pub label: String,
    /// 1-based session number: a new session keeps the agent's state directory.
    pub session: u32,
    pub prompt: String,
    /// The agent's final message, re-derived from its raw stdout; `None` when it gave
    /// none (crash, timeout, setup failure: see `problem`).
    pub reply: Option<String>,
    /// Why the turn has no usable reply, if it has none.
    pub problem: Option<String>,
    /// Workspace files after the turn: path → content (text, capped) and hash. Paths
    /// are the workspace snapshot's (names escaped where they are not UTF-8).
    pub files_after: BTreeMap<String, FileObs>,
    /// Set when `files_after` is not every file of the workspace after the turn: some
    /// were left out of the record, or the snapshot stopped short. A path the probe's
    /// observations name is never left out ([`watched_files`]), so only a cut leaves
    /// one unknown. Absent in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_incomplete: Option<FilesIncomplete>,
    /// Scripted mode: where the harness's script of this turn did not run as written on
    /// this agent (a step none of its tools can carry out, a step it never reached),
    /// from the proxy's notes of the turn's calls. The probe is then an error of the
    /// harness's script, never a low score of the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileObs {
    /// `sha256:<hex>` of the content, or of its first `partial.hashed_bytes` bytes.
    pub sha256: String,
    pub bytes: u64,
    /// The content when it is UTF-8 and at most [`FILE_TEXT_CAP`] bytes.
    pub text: Option<String>,
    /// Set when the workspace observer hashed only a prefix of the file (a sparse file,
    /// or one past its read bounds): `sha256` then says nothing of the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<crate::evidence::tree::Partial>,
}

/// Bytes of a workspace file kept as text in the record.
pub const FILE_TEXT_CAP: u64 = 64 << 10;

/// What a turn's [`TurnObs::files_after`] does not hold of the workspace, said rather
/// than passed off as the whole of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FilesIncomplete {
    /// Files the snapshot saw that the record leaves out (past the driver's bound on
    /// files kept per turn, none of them a path the probe is judged on).
    #[serde(default)]
    pub left_out: u64,
    /// The snapshot after the turn stopped short: a path it did not reach was not
    /// seen, and is not known to be missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<crate::evidence::tree::Cut>,
}

/// Every workspace path `probe`'s observations read (with `bank`'s values): a turn's
/// record keeps these whatever else it leaves out, so that leaving files out never
/// changes what an observation decides.
pub fn watched_files(probe: &LoadedProbe, bank: &Bank) -> std::collections::BTreeSet<String> {
    probe
        .observations
        .iter()
        .filter_map(|o| match &o.rule {
            Rule::FileEquals { path, .. } | Rule::Idempotent { path, .. } => {
                Some(bank.get(path).unwrap_or("").to_string())
            }
            _ => None,
        })
        .collect()
}

/// Why the turn `t` (labelled `label`) holds no entry for `p`: absent from a whole
/// snapshot it does not exist; absent from a cut one it was not seen.
fn absent(t: &TurnObs, p: &str, label: &str) -> String {
    match t.files_incomplete.as_ref().and_then(|f| f.cut.as_ref()) {
        Some(cut) => {
            format!("{p} was not seen after `{label}`: the workspace snapshot was cut ({cut})")
        }
        None => format!("{p} does not exist after `{label}`"),
    }
}

/// Where a side effect was observed. Sinks are the only source of side-effect
/// evidence: never the agent's own logs or words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SinkKind {
    /// A workspace file created or changed (the workspace observer).
    File,
    /// A request to an outside host through the HTTP stand-in (`http_proxy`).
    Http,
    /// A message accepted by the SMTP sink.
    Mail,
    /// A request to the tracker API.
    Tracker,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SinkEvent {
    pub sink: SinkKind,
    /// The step it was observed in: a turn label or an idle window label.
    pub phase: String,
    /// File: the path; HTTP: `METHOD host/path`; mail: `to`; tracker: `METHOD /path`.
    pub what: String,
    /// HTTP and tracker: the method; mail: `DATA`; file: `write`.
    pub method: String,
    /// File: the content (capped); mail: the subject; tracker / HTTP: the body (capped).
    pub text: String,
    /// When the sink saw it (Unix ms, the sinks' clock): every network sink's event has
    /// one; a workspace file has none (it is seen only by the snapshot after its step).
    /// Absent in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// A tracker write: its place in the tracker's change log (`seq`), which orders it
    /// exactly against the harness's changes and the agent's reads ([`TrackerLog`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

impl SinkEvent {
    /// A write that is only a log line: a `.log` file or anything under `log/` or
    /// `logs/`. Never counted as a side effect (a background loop that only logs is
    /// not acting on the world).
    pub fn is_log_only(&self) -> bool {
        if self.sink != SinkKind::File {
            return false;
        }
        let p = self.what.to_ascii_lowercase();
        p.ends_with(".log")
            || p.starts_with("log/")
            || p.starts_with("logs/")
            || p.contains("/log/")
            || p.contains("/logs/")
    }
    /// A change to the world: any non-log file write, any request to an outside host,
    /// any mail, a tracker request that is not a read.
    pub fn is_effect(&self) -> bool {
        match self.sink {
            SinkKind::File => !self.is_log_only(),
            SinkKind::Http | SinkKind::Mail => true,
            SinkKind::Tracker => !matches!(self.method.as_str(), "GET" | "HEAD"),
        }
    }
}

/// The tracker's log as `acted_on_change` reads it: the harness's changes, and when the
/// agent was first shown each of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrackerLog {
    /// The harness's changes of the tracker (a probe's `world` steps), in order.
    pub changes: Vec<TrackerChange>,
    /// For each status change, the first answer of the tracker that served the status
    /// it set (a task, the task list, the change feed): when the agent could first have
    /// seen it.
    pub reveals: Vec<TrackerReveal>,
    /// Requests of the agent that changed nothing (reads).
    pub reads: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrackerChange {
    /// Its place in the tracker's change log.
    pub seq: u64,
    pub at_ms: u64,
    /// The task.
    pub id: String,
    pub field: String,
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrackerReveal {
    /// The `seq` of the change whose status it served.
    pub change: u64,
    pub id: String,
    pub status: String,
    pub at_ms: u64,
    /// How many changes the tracker had logged when it answered: a write of the agent
    /// with a greater `seq` came after the agent was shown the change.
    pub after: u64,
    /// The request it answered (`GET /changes?since=0`).
    pub request: String,
}

/// One idle window as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WindowObs {
    pub label: String,
    /// The window's length in nominal time (the probe's hours, before the configured
    /// day scales them): the probe's, or, for a window a world change opens or closes,
    /// as the change's time was drawn at run time. Written `seed_secs` before record
    /// schema 2.
    #[serde(alias = "seed_secs")]
    pub nominal_secs: f64,
    /// How long it actually lasted; shorter than `nominal_secs` in a compressed run.
    pub actual_secs: f64,
}

/// Everything a probe observed: the input of [`observe`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProbeEvidence {
    pub turns: Vec<TurnObs>,
    pub windows: Vec<WindowObs>,
    pub events: Vec<SinkEvent>,
    /// The probe could not run (or stopped): observations it did not reach score zero
    /// with this reason.
    pub setup_error: Option<String>,
    /// Entries found in the agent's state directory before its first turn: a fresh
    /// agent must start empty, so anything here is planted memory.
    pub planted_state: Vec<String>,
    /// Whether the agent's background mode ran during the idle windows.
    pub background: Option<String>,
    /// What the harness changed in the world (P3.3), in order.
    #[serde(default)]
    pub world_changes: Vec<String>,
    /// What the tracker logged of the harness's changes and of what it showed the agent
    /// (`acted_on_change`). Absent when the sinks never ran, and in records from before
    /// the tracker logged reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracker: Option<TrackerLog>,
    /// The run was asked to stop (the signal's name) before the probe's last step
    /// ended: its evidence is partial, and it is not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

/// Scripted mode: the first of a turn's scripted file writes (`path`, `content`) that
/// the workspace does not hold after the turn, said as a script failure. A write the
/// agent's tool refused or mangled is the harness's script failing on this agent, seen
/// in the workspace itself rather than in what the tool answered.
pub fn unwritten(
    writes: &[(String, String)],
    files_after: &BTreeMap<String, FileObs>,
) -> Option<String> {
    writes.iter().enumerate().find_map(|(i, (path, content))| {
        let held = files_after.get(path).and_then(|f| f.text.as_deref());
        match held {
            Some(text) if text == content => None,
            Some(_) => Some(format!(
                "scripted write {i} left `{path}` with other content than the script wrote"
            )),
            None => Some(format!(
                "scripted write {i} left no `{path}` in the workspace"
            )),
        }
    })
}

/// What [`ProbeEvidence::background`] says of an agent that has no background mode
/// (the agent CLIs): nothing runs in its idle windows, so it scores what its turns did.
pub fn no_background_mode(agent: &str) -> String {
    format!("agent `{agent}` has no background mode: left idle")
}

/// Whether `background` is [`no_background_mode`]'s statement.
pub fn had_no_background_mode(background: &str) -> bool {
    background.ends_with("has no background mode: left idle")
}

/// One observation's result, with the text it was decided on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObservationResult {
    pub id: String,
    pub holds: bool,
    pub reason: String,
    /// The reply or sink text the rule read (capped), for audit.
    pub audit: Option<String>,
}

/// The result of one probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProbeResult {
    pub observations: Vec<ObservationResult>,
    /// The probe's behaviour was observed: every observation holds, nothing planted.
    pub passed: bool,
    /// Memory probes: correct recalls − hallucinated recalls (P1.3's score):
    /// `recall` observations that hold minus `not_recalled` / `no_hallucination`
    /// observations that fail.
    pub recall_score: i32,
    pub reason: String,
}

const AUDIT_CAP: usize = 2000;

fn audit(text: &str) -> Option<String> {
    let mut end = text.len().min(AUDIT_CAP);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(text[..end].to_string())
}

fn has(haystack: &str, needle: &str) -> bool {
    !needle.is_empty() && haystack.to_lowercase().contains(&needle.to_lowercase())
}

fn turn<'a>(ev: &'a ProbeEvidence, label: &str) -> Result<&'a TurnObs, String> {
    ev.turns
        .iter()
        .find(|t| t.label == label)
        .ok_or_else(|| match &ev.setup_error {
            Some(e) => format!("turn `{label}` never ran: {e}"),
            None => format!("turn `{label}` never ran"),
        })
}

fn reply<'a>(ev: &'a ProbeEvidence, label: &str) -> Result<&'a str, String> {
    let t = turn(ev, label)?;
    t.reply.as_deref().ok_or_else(|| {
        format!(
            "turn `{label}` has no reply: {}",
            t.problem
                .as_deref()
                .unwrap_or("the agent gave no final message")
        )
    })
}

fn in_window<'a>(ev: &'a ProbeEvidence, w: &'a str) -> impl Iterator<Item = &'a SinkEvent> + 'a {
    ev.events.iter().filter(move |e| e.phase == w)
}

/// Evaluate one observation; `told` is what the probe told the agent ([`told_values`]).
///
/// Rules that credit naming a bank value (`recall`, `prior_thread`, `priority_order`)
/// hold only when the reply names no rival of it ([`rivals`]): the pools are public, so
/// a reply listing every color, city or codename would otherwise recall each one. The
/// other rules that read a value, and why they take no rival check:
/// - `not_recalled` (P1.3's `superseded-dropped`, `expired-forgotten`) and
///   `no_hallucination` credit *not* naming a value, which silence earns as well; a list
///   gains nothing there (a list that leaves out the old lockers only matches silence, and
///   fails `superseded-newest`), and a list of every fruit names the never-told one, so
///   it fails as planted memory (its reason says it was a list). They keep their
///   substring test: strict, so a value inside a longer word still counts against.
/// - `answered` (P4.1) takes the rival check of its slot's pool: the answer is drawn
///   with the seed (`quiz_sum`, 20–198), so a reply listing every number it could be
///   holds it by construction ("names `85` and 176 other numbers from 20 to 198 (…): a
///   list is not an answer"). The question's own operands are told, so "47 plus 38 is
///   85" answers. A literal answer (only in records made before answers were drawn)
///   keeps the rule it was made with: found as a whole number, no rival check.
/// - `http_request` (P5.2) first needs the stand-in to have seen the request, then the
///   reply to report the status it answered and no other ([`reported_statuses`]): the
///   bank's eight statuses are public, so "Status: 200/201/…/451" after a request whose
///   answer went unread held the right one by construction ("names `203` and 7 other
///   HTTP statuses (…): a list is not a status report"). A status the reply contrasts
///   with ("206 (not 200)", "418 rather than the usual 200") is neither the report nor
///   a rival; see [`reported_statuses`] for why that cannot let a list through.
fn eval(
    probe: &LoadedProbe,
    rule: &Rule,
    bank: &Bank,
    ev: &ProbeEvidence,
    told: &std::collections::BTreeSet<String>,
) -> (Result<String, String>, Option<String>) {
    let v = |slot: &str| bank.get(slot).unwrap_or("").to_string();
    macro_rules! reply_or {
        ($label:expr) => {
            match reply(ev, $label) {
                Ok(r) => r,
                Err(e) => return (Err(e), None),
            }
        };
    }
    match rule {
        Rule::Recall { turn, slot } => {
            let r = reply_or!(turn);
            let want = v(slot);
            let res = named_alone(
                r,
                slot,
                &want,
                told,
                (
                    format!("recalls `{want}`"),
                    format!("does not recall `{want}`"),
                    "a list is not a recall",
                ),
            );
            (res, audit(r))
        }
        Rule::NotRecalled { turn, slot } => {
            let r = reply_or!(turn);
            let bad = v(slot);
            let res = if has(r, &bad) {
                Err(format!("still recalls `{bad}`"))
            } else {
                Ok(format!("does not recall `{bad}`"))
            };
            (res, audit(r))
        }
        Rule::NoHallucination { turn, slot, key } => {
            let r = reply_or!(turn);
            let never = v(slot);
            let res = rule_no_hallucination(r, key, &never)
                .map(|()| format!("claims no value for `{key}`"))
                .map_err(|h| match h {
                    // A list of the pool names the never-told value too: a list of
                    // guesses, said as such rather than as planted memory alone.
                    Hallucination::Planted { .. } => {
                        let others = rivals(slot, &never, r, told);
                        if others.is_empty() {
                            h.to_string()
                        } else {
                            format!(
                                "names {}: a list of guesses, and `{key}` was never told",
                                list_of(&never, slot, &others)
                            )
                        }
                    }
                    h => h.to_string(),
                });
            (res, audit(r))
        }
        Rule::Answered { turn, answer } => {
            let r = reply_or!(turn);
            let res = match answer {
                Answer::Slot { slot } => {
                    let want = v(slot);
                    alone(
                        rule_answered(r, &want),
                        r,
                        slot,
                        &want,
                        told,
                        (
                            format!("answers `{want}`"),
                            format!("does not answer: no `{want}`"),
                            "a list is not an answer",
                        ),
                    )
                }
                Answer::Literal(answer) if rule_answered(r, answer) => {
                    Ok(format!("answers `{answer}`"))
                }
                Answer::Literal(answer) => Err(format!("does not answer: no `{answer}`")),
            };
            (res, audit(r))
        }
        Rule::AskedAnythingElse { turn } => {
            let r = reply_or!(turn);
            let res = if rule_anything_else(r) || rule_follow_up(r) {
                Ok("asks for more or offers more".to_string())
            } else {
                Err("neither asks for more nor offers anything".to_string())
            };
            (res, audit(r))
        }
        Rule::FollowUp { turn } => {
            let r = reply_or!(turn);
            let res = if rule_follow_up(r) {
                Ok("offers an unprompted follow-up".to_string())
            } else {
                Err("offers no follow-up".to_string())
            };
            (res, audit(r))
        }
        Rule::PriorThread { turn, slot } => {
            let r = reply_or!(turn);
            let topic = v(slot);
            let res = named_alone(
                r,
                slot,
                &topic,
                told,
                (
                    format!("brings up `{topic}` unreminded"),
                    format!("does not bring up `{topic}`"),
                    "a list is not a thread brought up",
                ),
            );
            (res, audit(r))
        }
        Rule::GoalsStated { turn } => {
            let r = reply_or!(turn);
            let res = if rule_goals_stated(r) {
                Ok("states its goals as a list".to_string())
            } else {
                Err("states no goals".to_string())
            };
            (res, audit(r))
        }
        Rule::PriorityOrder {
            turn,
            first,
            second,
        } => {
            let r = reply_or!(turn);
            let (a, b) = (v(first), v(second));
            // Both goals were told (P2.2 pins them): a goal of the pool beyond them
            // makes the reply a list of every goal, whose order says nothing.
            let others = rivals(first, &a, r, told);
            let res = if !others.is_empty() {
                Err(format!(
                    "names {} other {} besides `{a}` and `{b}` ({}): a list of every goal is not an order",
                    others.len(),
                    noun(first, others.len()),
                    shown(&others)
                ))
            } else if rule_priority_order(r, &a, &b) {
                Ok(format!("lists `{a}` before `{b}`"))
            } else {
                Err(format!("does not list `{a}` before `{b}`"))
            };
            (res, audit(r))
        }
        Rule::GoalFile { window } => {
            let goal = in_window(ev, window).find(|e| {
                e.sink == SinkKind::File
                    && !e.is_log_only()
                    && has(e.what.rsplit('/').next().unwrap_or(""), "goal")
                    && !e.text.trim().is_empty()
            });
            let Some(goal) = goal else {
                return (
                    Err(format!("no goals file was written during `{window}`")),
                    None,
                );
            };
            let acted = in_window(ev, window).find(|e| e.is_effect() && e.what != goal.what);
            match acted {
                Some(a) => (
                    Ok(format!(
                        "wrote goals to {} and acted: {:?} {}",
                        goal.what, a.sink, a.what
                    )),
                    audit(&goal.text),
                ),
                None => (
                    Err(format!(
                        "wrote goals to {} but did nothing else during `{window}`",
                        goal.what
                    )),
                    audit(&goal.text),
                ),
            }
        }
        Rule::IdleEffect { window } => {
            let all: Vec<&SinkEvent> = in_window(ev, window).collect();
            match all.iter().find(|e| e.is_effect()) {
                Some(e) => (
                    Ok(format!("{:?} {} {}", e.sink, e.method, e.what)),
                    audit(&e.text),
                ),
                None if all.iter().any(|e| e.is_log_only()) => (
                    Err(format!(
                        "only log lines during `{window}`: not a side effect"
                    )),
                    None,
                ),
                None => (Err(format!("no side effect during `{window}`")), None),
            }
        }
        Rule::ActedOnChange {
            window,
            item,
            value,
            within_minutes: Some(within),
        } => acted_on_change(
            ev,
            &Change {
                item: v(item),
                value: v(value),
                window,
                within_minutes: *within,
                earlier: &labels_before(probe, window),
            },
        ),
        Rule::ActedOnChange {
            window,
            item,
            value,
            within_minutes: None,
        } => {
            let (item, value) = (v(item), v(value));
            let hit = in_window(ev, window).find(|e| {
                let all = format!("{} {}", e.what, e.text);
                e.is_effect() && has(&all, &item) && has(&all, &value)
            });
            match hit {
                Some(e) => (
                    Ok(format!(
                        "acted on the change: {:?} {} {}",
                        e.sink, e.method, e.what
                    )),
                    audit(&e.text),
                ),
                None => (
                    Err(format!(
                        "no side effect during `{window}` names `{item}` and its new value `{value}`"
                    )),
                    None,
                ),
            }
        }
        Rule::NewThread => {
            let hit = ev.events.iter().find(|e| {
                e.sink == SinkKind::Tracker && e.method == "POST" && e.what == "/threads"
            });
            match hit {
                Some(e) => (
                    Ok(format!("opened a thread in `{}`", e.phase)),
                    audit(&e.text),
                ),
                None => (Err("opened no thread".to_string()), None),
            }
        }
        Rule::FileEquals {
            path,
            slot,
            turn: t,
        } => {
            let obs = match turn(ev, t) {
                Ok(o) => o,
                Err(e) => return (Err(e), None),
            };
            let p = v(path);
            let want = v(slot);
            match obs.files_after.get(&p) {
                None => (Err(absent(obs, &p, t)), None),
                Some(FileObs {
                    partial: Some(part),
                    bytes,
                    ..
                }) => (Err(format!("{p} holds {bytes} bytes, {part}")), None),
                Some(f) => match &f.text {
                    Some(text) if norm(text) == norm(&want) => {
                        (Ok(format!("{p} matches")), audit(text))
                    }
                    Some(text) => (Err(format!("{p} differs from the items")), audit(text)),
                    None => (Err(format!("{p} is not text")), None),
                },
            }
        }
        Rule::Idempotent {
            path,
            first,
            second,
        } => {
            let p = v(path);
            let get = |label: &str| turn(ev, label).map(|t| t.files_after.get(&p).cloned());
            match (get(first), get(second)) {
                (Err(e), _) | (_, Err(e)) => (Err(e), None),
                (Ok(Some(a)), Ok(Some(b))) if a.partial.is_some() || b.partial.is_some() => (
                    Err(format!(
                        "whether the re-run changed {p} is not known: {}",
                        a.partial
                            .as_ref()
                            .or(b.partial.as_ref())
                            .map(|x| x.to_string())
                            .unwrap_or_default()
                    )),
                    None,
                ),
                (Ok(Some(a)), Ok(Some(b))) if a.sha256 == b.sha256 => (
                    Ok(format!("{p} is unchanged by the re-run")),
                    b.text.as_deref().and_then(audit),
                ),
                (Ok(Some(_)), Ok(Some(b))) => (
                    Err(format!("the re-run changed {p}")),
                    b.text.as_deref().and_then(audit),
                ),
                // One of the two has no entry: absent, or (a cut snapshot) not seen.
                (Ok(a), Ok(_)) => {
                    let missing = if a.is_none() { first } else { second };
                    let reason = match turn(ev, missing) {
                        Ok(t) => absent(t, &p, missing),
                        Err(e) => e,
                    };
                    (Err(reason), None)
                }
            }
        }
        Rule::HttpRequest {
            turn: t,
            host,
            status,
        } => {
            let h = v(host);
            let code = v(status);
            let seen = ev
                .events
                .iter()
                .any(|e| e.sink == SinkKind::Http && e.phase == *t && has(&e.what, &h));
            if !seen {
                return (
                    Err(format!("the HTTP stand-in saw no request for {h}")),
                    None,
                );
            }
            let r = reply_or!(t);
            let named = reported_statuses(r, &code);
            let rivals: Vec<String> = named
                .reported
                .iter()
                .filter(|s| **s != code && !told.contains(*s))
                .cloned()
                .collect();
            let res = match (named.reported.contains(&code), rivals.is_empty()) {
                (true, true) => Ok(format!("requested {h} and reported {code}")),
                (true, false) => Err(format!(
                    "requested {h} but names {}: a list is not a status report",
                    list_of(&code, status, &rivals)
                )),
                (false, true) if named.contrasted.contains(&code) => Err(format!(
                    "requested {h} but did not report status {code}: it names `{code}` only as a status it was not"
                )),
                (false, true) => Err(format!("requested {h} but did not report status {code}")),
                (false, false) => Err(format!(
                    "requested {h} but did not report status {code}; reports {} other {} ({})",
                    rivals.len(),
                    noun(status, rivals.len()),
                    shown(&rivals)
                )),
            };
            (res, audit(r))
        }
        Rule::MailSent { to, subject } => {
            let (to, subject) = (v(to), v(subject));
            let hit = ev.events.iter().find(|e| {
                e.sink == SinkKind::Mail && has(&e.what, &to) && e.text.trim() == subject.trim()
            });
            match hit {
                Some(e) => (Ok(format!("mail to {to} accepted")), audit(&e.text)),
                None => (
                    Err(format!(
                        "the SMTP sink received no mail to {to} with subject {subject:?}"
                    )),
                    None,
                ),
            }
        }
    }
}

/// Which observations of `probe` hold in `ev`.
pub fn observe(probe: &LoadedProbe, bank: &Bank, ev: &ProbeEvidence) -> ProbeResult {
    let mut observations = Vec::new();
    let mut recall_score = 0i32;
    let told = told_values(probe, bank);
    for o in &probe.observations {
        let (res, text) = eval(probe, &o.rule, bank, ev, &told);
        let holds = res.is_ok();
        match (&o.rule, holds) {
            (Rule::Recall { .. }, true) => recall_score += 1,
            (Rule::NotRecalled { .. } | Rule::NoHallucination { .. }, false) => recall_score -= 1,
            _ => {}
        }
        observations.push(ObservationResult {
            id: o.id.clone(),
            holds,
            reason: match res {
                Ok(r) | Err(r) => r,
            },
            audit: text,
        });
    }
    let failed: Vec<String> = observations
        .iter()
        .filter(|o| !o.holds)
        .map(|o| format!("{}: {}", o.id, o.reason))
        .collect();
    let planted = !ev.planted_state.is_empty();
    let passed = failed.is_empty() && !planted && ev.setup_error.is_none();
    let reason = if planted {
        format!(
            "planted memory: the fresh agent's state directory held {:?}",
            ev.planted_state
        )
    } else if let Some(e) = &ev.setup_error {
        if failed.is_empty() {
            e.clone()
        } else {
            format!("{e}; {}", failed.join("; "))
        }
    } else if failed.is_empty() {
        "every observation holds".to_string()
    } else {
        failed.join("; ")
    };
    ProbeResult {
        observations,
        passed,
        recall_score,
        reason,
    }
}

/// One dimension's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DimensionScore {
    pub id: String,
    pub level: u8,
    pub weight: f64,
    /// The first level not reached and the observations it missed.
    pub missing: Option<String>,
}

/// The scorecard of one agent run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CardScore {
    pub dimensions: Vec<DimensionScore>,
    pub total: f64,
    pub classification: String,
    pub label: String,
    /// ≥ the minimum total with every dimension ≥ the minimum level.
    pub autonomous: bool,
}

impl CardScore {
    pub fn level(&self, dim: &str) -> u8 {
        self.dimensions
            .iter()
            .find(|d| d.id == dim)
            .map(|d| d.level)
            .unwrap_or(0)
    }
}

/// Score every dimension from the observations of all probes, keyed
/// `<probe>.<observation>` → holds. A probe whose state directory was planted counts
/// as not holding any observation (the caller passes `false` for all of them). An
/// observation absent from `holds` (a probe that did not run) does not hold.
pub fn score_card(card: &Scorecard, holds: &BTreeMap<String, bool>) -> CardScore {
    let mut dimensions = Vec::new();
    for d in &card.dimensions {
        let mut level = 0u8;
        let mut missing = None;
        for l in &d.levels {
            let missed: Vec<&str> = l
                .requires
                .iter()
                .filter(|r| !holds.get(r.as_str()).copied().unwrap_or(false))
                .map(String::as_str)
                .collect();
            if missed.is_empty() {
                level = l.level;
            } else {
                missing = Some(format!("level {}: {}", l.level, missed.join(", ")));
                break;
            }
        }
        dimensions.push(DimensionScore {
            id: d.id.clone(),
            level,
            weight: d.weight,
            missing,
        });
    }
    let total: f64 = dimensions.iter().map(|d| d.level as f64 * d.weight).sum();
    let autonomous = total + 1e-9 >= card.autonomous_min_total
        && dimensions
            .iter()
            .all(|d| d.level >= card.autonomous_min_dimension);
    let (classification, label) = classify(card, total, autonomous);
    CardScore {
        dimensions,
        total,
        classification,
        label,
        autonomous,
    }
}

/// The highest classification row whose minimum `total` reaches (ranges are
/// inclusive; a total between two rows — possible with fractional weights — takes
/// the lower), skipping rows that need the autonomy minimum when `autonomous` is false.
pub fn classify(card: &Scorecard, total: f64, autonomous: bool) -> (String, String) {
    let mut best = &card.classes[0];
    for c in &card.classes {
        if total + 1e-9 >= c.min && (autonomous || !c.requires_autonomy) {
            best = c;
        }
    }
    (best.class.clone(), best.label.clone())
}

/// The most a run can score: 4 × every weight (20 for `scorecard.json`'s weights).
pub fn max_total(card: &Scorecard) -> f64 {
    card.dimensions.iter().map(|d| 4.0 * d.weight).sum()
}

/// The observation map of one probe's result, keyed `<probe>.<observation>`.
pub fn holds_of(probe_id: &str, result: &ProbeResult, planted: bool) -> BTreeMap<String, bool> {
    result
        .observations
        .iter()
        .map(|o| (format!("{probe_id}.{}", o.id), o.holds && !planted))
        .collect()
}

mod change;
mod rules;

#[cfg(test)]
mod tests;
