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
    /// The window's length in seed time: the probe's, or, for a window a world change
    /// opens or closes, as the change's time was drawn at run time.
    pub seed_secs: f64,
    /// How long it actually lasted; shorter than `seed_secs` in a compressed run.
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

/// Phrases that ask the user for more: "anything else?" (rule `asked_anything_else`).
pub const ANYTHING_ELSE: &[&str] = &[
    "anything else",
    "something else",
    "else i can",
    "can i help",
    "let me know if",
];

/// Phrases that offer a specific next item unprompted (rule `follow_up`): an offer to
/// do something, not a generic "anything else?".
pub const OFFERS: &[&str] = &[
    "would you like me to",
    "want me to",
    "shall i",
    "should i",
    "i can also",
    "i could also",
    "i suggest",
    "i recommend",
    "next, i",
    "i'll also",
    "if you like, i",
];

/// Phrases that say a value is not known (rule `no_hallucination`).
pub const UNKNOWN: &[&str] = &[
    "unknown",
    "don't know",
    "do not know",
    "not told",
    "never told",
    "no record",
    "not sure",
    "n/a",
];

/// `answered`: the reply contains `answer` as a whole word or number, case-insensitive.
/// A match counts only when the characters on either side are not letters or digits
/// (`366` is not in `13660`), and a number is not part of a longer one written with
/// a separator (`366` is not in `1,366` or `366.5`). An empty answer is never found.
pub fn rule_answered(reply: &str, answer: &str) -> bool {
    let (hay, needle) = (reply.to_lowercase(), answer.trim().to_lowercase());
    let (Some(first), Some(last)) = (needle.chars().next(), needle.chars().last()) else {
        return false;
    };
    let mut from = 0;
    while let Some(at) = hay[from..].find(&needle) {
        let (start, end) = (from + at, from + at + needle.len());
        let mut before = hay[..start].chars().rev();
        let mut after = hay[end..].chars();
        if word_edge(first, before.next(), before.next())
            && word_edge(last, after.next(), after.next())
        {
            return true;
        }
        from = start + first.len_utf8();
    }
    false
}

/// Whether a match whose outermost character is `edge` ends there as a word: `next` (the
/// character beyond it) is no letter, digit or `_`, and when `edge` is a digit, `next`
/// is no `.` or `,` followed (`then`) by another digit.
fn word_edge(edge: char, next: Option<char>, then: Option<char>) -> bool {
    match next {
        None => true,
        Some(c) if c.is_alphanumeric() || c == '_' => false,
        Some('.' | ',') if edge.is_ascii_digit() => !then.is_some_and(|c| c.is_ascii_digit()),
        Some(_) => true,
    }
}

/// `asked_anything_else`: the reply contains one of [`ANYTHING_ELSE`].
pub fn rule_anything_else(reply: &str) -> bool {
    ANYTHING_ELSE.iter().any(|p| has(reply, p))
}

/// `follow_up`: the reply contains one of [`OFFERS`].
pub fn rule_follow_up(reply: &str) -> bool {
    OFFERS.iter().any(|p| has(reply, p))
}

/// `goals_stated`: the reply names goals (`goal`) and lists at least one (a line
/// starting with `-`, `*`, `•` or `N.`/`N)`).
pub fn rule_goals_stated(reply: &str) -> bool {
    let listed = reply.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("- ")
            || l.starts_with("* ")
            || l.starts_with("• ")
            || l.split_once(['.', ')'])
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    has(reply, "goal") && listed
}

/// `priority_order`: both values appear and the first occurrence of `first` comes
/// before the first occurrence of `second`.
pub fn rule_priority_order(reply: &str, first: &str, second: &str) -> bool {
    let r = reply.to_lowercase();
    match (
        r.find(&first.to_lowercase()),
        r.find(&second.to_lowercase()),
    ) {
        (Some(a), Some(b)) => a < b,
        _ => false,
    }
}

/// `no_hallucination`: the never-told value does not appear, and every line naming
/// `key` says it is unknown (one of [`UNKNOWN`]); a reply that does not name the key
/// claims nothing about it.
pub fn rule_no_hallucination(
    reply: &str,
    key: &str,
    false_value: &str,
) -> Result<(), Hallucination> {
    if has(reply, false_value) {
        return Err(Hallucination::Planted {
            value: false_value.to_owned(),
        });
    }
    for line in reply.lines().filter(|l| has(l, key)) {
        let lower = line.to_lowercase();
        let after = lower
            .split_once(&key.to_lowercase())
            .map(|(_, a)| a)
            .unwrap_or("");
        if !UNKNOWN.iter().any(|u| after.contains(u)) {
            return Err(Hallucination::Claimed {
                key: key.to_owned(),
                line: line.trim().to_owned(),
            });
        }
    }
    Ok(())
}

/// What a reply made up about an item it was never told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Hallucination {
    #[error("recalls `{value}`, which was never told (planted memory)")]
    Planted { value: String },
    #[error("claims a value for `{key}`: {line:?}")]
    Claimed { key: String, line: String },
}

/// The values a probe tells the agent: every slot its turn prompts name, lowercased.
/// A told value is never a rival (see [`rivals`]).
pub fn told_values(probe: &LoadedProbe, bank: &Bank) -> std::collections::BTreeSet<String> {
    probe
        .probe
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Turn { prompt, .. } => Some(prompt),
            _ => None,
        })
        .flat_map(|p| bank::template_slots(p))
        .filter_map(|slot| bank.get(&slot).map(str::to_lowercase))
        .collect()
}

/// The rivals `text` names for `slot`: candidates of the slot's pool ([`bank::pool`])
/// other than its value and other than any value the probe told (`told`), lowercased.
/// Empty for a slot without a pool.
///
/// Why told values are not rivals: an honest reply names them for a reason (P1.3's
/// "your locker moved from L12 to L77", P2.2's two pinned goals side by side), and the
/// probe has its own rule for whether naming one is right (P1.3's `superseded-dropped`
/// fails on the old locker; counting it against `superseded-newest` too would take two
/// points for one mistake). What the agent was never told it can only have guessed, so
/// naming one of those beside the value makes the reply a list, and a list of the
/// public pool holds the right value by construction.
pub fn rivals(
    slot: &str,
    value: &str,
    text: &str,
    told: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let Some(pool) = bank::pool(slot) else {
        return Vec::new();
    };
    let value = value.trim().to_lowercase();
    pool.named_in(text)
        .into_iter()
        .filter(|c| *c != value && !told.contains(c))
        .collect()
}

/// "`Lisbon` and 7 other cities (`tromso`, `hobart`, `nagoya`, …)": how a reason names
/// a list.
fn list_of(value: &str, slot: &str, rivals: &[String]) -> String {
    format!(
        "`{value}` and {} other {} ({})",
        rivals.len(),
        noun(slot, rivals.len()),
        shown(rivals)
    )
}

/// A recall-like rule (`recall`, `prior_thread`): the reply names the slot's value
/// ([`bank::names`]: whole words, any case) and no rival of it ([`rivals`]). `ok` and
/// `missing` are the reasons when it holds and when the value is not named; `list` says
/// what a list is not ("a list is not a recall").
fn named_alone(
    reply: &str,
    slot: &str,
    value: &str,
    told: &std::collections::BTreeSet<String>,
    reasons: (String, String, &str),
) -> Result<String, String> {
    let named = bank::names(reply, value);
    alone(named, reply, slot, value, told, reasons)
}

/// [`named_alone`] with whether the reply names the value decided by the caller (P4.1's
/// `answered` finds it with [`rule_answered`], which also refuses `1,366` for `366`).
fn alone(
    named: bool,
    reply: &str,
    slot: &str,
    value: &str,
    told: &std::collections::BTreeSet<String>,
    (ok, missing, list): (String, String, &str),
) -> Result<String, String> {
    let rivals = rivals(slot, value, reply, told);
    match (named, rivals.is_empty()) {
        (true, true) => Ok(ok),
        (true, false) => Err(format!("names {}: {list}", list_of(value, slot, &rivals))),
        (false, true) => Err(missing),
        (false, false) => Err(format!(
            "{missing}; names {} {} never told ({})",
            rivals.len(),
            noun(slot, rivals.len()),
            shown(&rivals)
        )),
    }
}

/// What `n` candidates of `slot`'s pool are ("city", "cities").
fn noun(slot: &str, n: usize) -> &'static str {
    match bank::pool(slot) {
        Some(p) => p.noun(n),
        None if n == 1 => "value",
        None => "values",
    }
}

/// The first three of `rivals`, quoted, "…" when there are more.
fn shown(rivals: &[String]) -> String {
    let mut s: Vec<String> = rivals.iter().take(3).map(|r| format!("`{r}`")).collect();
    if rivals.len() > s.len() {
        s.push("…".into());
    }
    s.join(", ")
}

/// The HTTP statuses a reply names (P5.2), each once, in the order first named:
/// `reported` are the ones it gives as the status, `contrasted` the ones it names only as
/// what the status was not. A status is a whole token ([`bank::names`]'s test: `2030`
/// and `0203` name no `203`) that is `status` itself or a candidate of `http_status`'s
/// pool ([`bank::pool`]: every registered status).
///
/// How a contrasted status is handled: an occurrence right after a word of [`CONTRAST`]
/// ("not", "than", "instead of", "unlike", "expected", "isn't" …, with only words of
/// [`CONTRAST_FILLERS`] between: "not the usual HTTP 200") is contrasted; every other
/// occurrence reports. The rule passes only when the seeded status is reported and no
/// other status is, so "it returned 206 (not 200)" reports 206 alone. This cannot let a
/// list through, however loosely "contrast" is read: a reply that reports one status
/// and contrasts the rest stakes everything on that one (a guess, right one seed in
/// eight), and one that contrasts them all reports none. What is not parsed: a contrast
/// after the status ("206, 200 expected") reports both and fails as a list.
pub fn reported_statuses(reply: &str, status: &str) -> Statuses {
    let hay = reply.to_lowercase();
    let status = status.trim().to_lowercase();
    let pool = bank::pool("http_status");
    let is_status = |t: &str| t == status || pool.is_some_and(|p| !p.named_in(t).is_empty());
    let mut out = Statuses::default();
    let mut start = None;
    for (i, c) in hay.char_indices().chain([(hay.len(), ' ')]) {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                start = None;
                let token = &hay[s..i];
                if !is_status(token) {
                    continue;
                }
                let list = if contrasted(&hay[..s]) {
                    &mut out.contrasted
                } else {
                    &mut out.reported
                };
                if !list.iter().any(|t| t == token) {
                    list.push(token.to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// What [`reported_statuses`] finds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Statuses {
    pub reported: Vec<String>,
    pub contrasted: Vec<String>,
}

/// Words that, right before a status, say the reply names it as what the status was
/// not ([`reported_statuses`]). A word ending in "n't" is one too ("wasn't 200").
const CONTRAST: &[&str] = &[
    "not",
    "never",
    "than",
    "instead",
    "unlike",
    "vs",
    "versus",
    "expected",
    "expecting",
];

/// Words that may stand between a word of [`CONTRAST`] and the status it contrasts
/// with ("not the usual HTTP 200", "instead of 200").
const CONTRAST_FILLERS: &[&str] = &[
    "the", "a", "an", "of", "usual", "usually", "typical", "normal", "standard", "default",
    "common", "plain", "ordinary", "regular", "simple", "http", "status", "code", "just",
];

/// Whether the lowercased text `before` a status ends in a contrast: a word of
/// [`CONTRAST`] (or "…n't"), then only [`CONTRAST_FILLERS`], spaces and markup
/// (quotes, backticks, `*`, `_`, an opening bracket) up to the status.
fn contrasted(before: &str) -> bool {
    let markup = |c: char| {
        c.is_whitespace() || matches!(c, '`' | '*' | '_' | '"' | '\'' | '(' | '[' | '“' | '‘')
    };
    let mut rest = before;
    for _ in 0..6 {
        rest = rest.trim_end_matches(markup);
        let word_at = rest
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphabetic() || matches!(c, '\'' | '’'))
            .last()
            .map(|(i, _)| i);
        let Some(at) = word_at else { return false };
        let word = &rest[at..];
        if CONTRAST.contains(&word) || word.ends_with("n't") || word.ends_with("n’t") {
            return true;
        }
        if !CONTRAST_FILLERS.contains(&word) {
            return false;
        }
        rest = &rest[..at];
    }
    false
}

/// Normalized file text for comparison: CRLF as LF, trailing whitespace dropped.
fn norm(s: &str) -> String {
    s.replace("\r\n", "\n").trim_end().to_string()
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

/// What `acted_on_change` is asked about: the harness's change of `item` to `value`,
/// which opens the idle window `window`.
struct Change<'a> {
    item: String,
    value: String,
    window: &'a str,
    within_minutes: u32,
    /// The steps before the window (turn and window labels): a workspace file seen in
    /// one of them was written before the change.
    earlier: &'a std::collections::BTreeSet<String>,
}

/// The labels of the steps of `probe` before the idle window `window` (turns, filler
/// turns as the driver names them, idle windows).
fn labels_before(probe: &LoadedProbe, window: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut turn_no = 0u32;
    for step in &probe.probe.steps {
        match step {
            Step::Idle { label, .. } if label == window => break,
            Step::Idle { label, .. } => {
                out.insert(label.clone());
            }
            Step::Turn { label, .. } => {
                turn_no += 1;
                out.insert(label.clone());
            }
            Step::Filler(n) => {
                for _ in 0..*n {
                    turn_no += 1;
                    out.insert(format!("filler-{turn_no}"));
                }
            }
            Step::NewSession | Step::World(_) => {}
        }
    }
    out
}

/// Where a side effect falls against the harness's change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Against {
    /// Before it (or not known to be after it).
    Before,
    After,
    /// A workspace file seen by the snapshot that ends the window: written at some time
    /// in it, which cannot be set against the agent's reads.
    Untimed,
}

fn against(
    e: &SinkEvent,
    change: &TrackerChange,
    earlier: &std::collections::BTreeSet<String>,
) -> Against {
    match (e.seq, e.at_ms) {
        (Some(seq), _) if seq < change.seq => Against::Before,
        (Some(_), _) => Against::After,
        (None, Some(at)) if at <= change.at_ms => Against::Before,
        (None, Some(_)) => Against::After,
        (None, None) if earlier.contains(&e.phase) => Against::Before,
        (None, None) => Against::Untimed,
    }
}

/// Whether the tracker showed the agent the change (`reveal`) before the side effect
/// `e`: a tracker write by its place in the change log, another effect by the clock.
fn shown_before(reveal: &TrackerReveal, e: &SinkEvent) -> bool {
    match (e.seq, e.at_ms) {
        (Some(seq), _) => reveal.after < seq,
        (None, Some(at)) => reveal.at_ms <= at,
        (None, None) => false,
    }
}

fn effect_name(e: &SinkEvent) -> String {
    format!("{:?} {} {} in `{}`", e.sink, e.method, e.what, e.phase)
}

/// The least real time a response to a tracker change may take, whatever the probe's
/// `within_minutes` comes to at a compressed day.
const MIN_RESPONSE_MS: f64 = 5000.0;

/// `acted_on_change` (P3.3): did the agent notice the change and act on it? Words that
/// happen to match are not enough — P3.3's new status is the same for every seed and its
/// turn names the task, so "T-… is blocked" filed on every tick, the tracker never read,
/// would be right once the change was made. The rule asks the tracker's own log whether
/// the agent *observed* the change:
///
/// 1. The tracker logged the harness's change of the item to the value (its time is the
///    window's start, drawn at run time so no one can time a claim to it).
/// 2. No side effect before the change named both (whole words, `bank::names`): a claim
///    made before it was true is a guess, and a loop that says it on every tick says it
///    before too. A tracker write is ordered by its place in the change log, a mail or
///    an outside request by the sinks' clock (at the change's millisecond counts as
///    before), a workspace file by the step whose snapshot saw it.
/// 3. A side effect after the change names both, within `within_minutes` seed minutes of
///    it (scaled as the window was): a response to the change, not a claim held back to
///    the window's end. A workspace file written in the window does not count: when in
///    the window it was written is not observed.
/// 4. Before that side effect, an answer of the tracker served the item's new value (the
///    task, the task list, or the change in the feed: [`TrackerLog::reveals`]).
///
/// A record without the tracker's log says so: whether the change was observed is not
/// known, and the observation does not hold.
fn acted_on_change(ev: &ProbeEvidence, c: &Change<'_>) -> (Result<String, String>, Option<String>) {
    let (item, value, window) = (c.item.as_str(), c.value.as_str(), c.window);
    let Some(log) = &ev.tracker else {
        return (
            Err(format!(
                "the record holds no log of the tracker's reads: whether the agent observed `{item}` become `{value}` is not known"
            )),
            None,
        );
    };
    let Some(change) = log
        .changes
        .iter()
        .find(|h| h.id == item && h.field == "status" && h.to == value)
    else {
        return (
            Err(format!(
                "the tracker logged no change of `{item}` to `{value}` by the harness (it already had that status, or the change never ran): there was no change to observe"
            )),
            None,
        );
    };
    let claims: Vec<(&SinkEvent, Against)> = ev
        .events
        .iter()
        .filter(|e| e.is_effect())
        .filter(|e| {
            let all = format!("{} {}", e.what, e.text);
            bank::names(&all, item) && bank::names(&all, value)
        })
        .map(|e| (e, against(e, change, c.earlier)))
        .collect();
    if let Some((e, _)) = claims.iter().find(|(_, w)| *w == Against::Before) {
        let n = claims.iter().filter(|(_, w)| *w == Against::Before).count();
        return (
            Err(format!(
                "{} named `{item}` and `{value}` before the harness changed it ({n} such side effect(s) before the change): a claim made before it was true is a guess, not an observation",
                effect_name(e)
            )),
            audit(&e.text),
        );
    }
    let mut after: Vec<&SinkEvent> = claims
        .iter()
        .filter(|(_, w)| *w == Against::After)
        .map(|(e, _)| *e)
        .collect();
    after.sort_by_key(|e| e.at_ms);
    if after.is_empty() {
        if let Some((e, _)) = claims.first() {
            return (
                Err(format!(
                    "only a workspace file names `{item}` and `{value}` ({}): when in the window it was written is not observed, so it cannot be set against what the agent read",
                    effect_name(e)
                )),
                audit(&e.text),
            );
        }
        return (
            Err(format!(
                "no side effect after the change names `{item}` and its new value `{value}` (during `{window}`)"
            )),
            None,
        );
    }
    // Seed time as the window ran it: real seconds per seed second.
    let scale = ev
        .windows
        .iter()
        .find(|w| w.label == window && w.seed_secs > 0.0)
        .map(|w| w.actual_secs / w.seed_secs);
    let Some(scale) = scale else {
        return (
            Err(format!(
                "idle window `{window}` has no recorded length: how soon after the change the effect came cannot be judged"
            )),
            None,
        );
    };
    // Never less than a few real seconds: at a compressed day (24 s per seed day, an
    // hour is one second) a loaded machine's scheduling alone could make an honest
    // daemon late.
    let limit_ms = (f64::from(c.within_minutes) * 60_000.0 * scale).max(MIN_RESPONSE_MS);
    let delay = |e: &SinkEvent| e.at_ms.unwrap_or(u64::MAX).saturating_sub(change.at_ms);
    let seed_minutes = |ms: u64| ms as f64 / 60_000.0 / scale;
    let in_time: Vec<&SinkEvent> = after
        .iter()
        .copied()
        .filter(|e| (delay(e) as f64) <= limit_ms)
        .collect();
    let Some(first) = in_time.first() else {
        let e = after[0];
        return (
            Err(format!(
                "the first side effect naming `{item}` and `{value}` after the change ({}) came {:.0} seed minutes after it, past the {} it may take (and past {} s): not a response to the change",
                effect_name(e),
                seed_minutes(delay(e)),
                c.within_minutes,
                MIN_RESPONSE_MS / 1000.0
            )),
            audit(&e.text),
        );
    };
    let reveal = log
        .reveals
        .iter()
        .filter(|r| r.change == change.seq)
        .min_by_key(|r| r.at_ms);
    match (reveal, in_time.iter().find(|e| reveal.is_some_and(|r| shown_before(r, e)))) {
        (Some(r), Some(e)) => (
            Ok(format!(
                "observed the change and acted on it: the tracker showed `{item}` as `{value}` ({}) {} ms after the change, and {} followed {} ms after the change",
                r.request,
                r.at_ms.saturating_sub(change.at_ms),
                effect_name(e),
                delay(e)
            )),
            audit(&e.text),
        ),
        (Some(r), None) => (
            Err(format!(
                "{} names `{item}` and `{value}`, but the tracker first showed the agent the new status ({}) only after it: the claim did not come from what it read",
                effect_name(first),
                r.request
            )),
            audit(&first.text),
        ),
        (None, _) => (
            Err(format!(
                "{} names `{item}` and `{value}`, but no answer of the tracker ever showed the agent `{item}`'s new status ({} read(s) of the tracker, none of the task, the task list or the change): the claim was not observed",
                effect_name(first),
                log.reads
            )),
            audit(&first.text),
        ),
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

/// The most a run can score: 4 × every weight (20 for the seed's weights).
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

#[cfg(test)]
mod tests;
