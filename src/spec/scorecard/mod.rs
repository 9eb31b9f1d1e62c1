//! The autonomy scorecard as data: `challenges/scorecard/scorecard.json` (dimensions,
//! weights, the cumulative level tables, the classification table) and one file per
//! probe in `challenges/scorecard/probes/` (its steps — turns, sessions, idle windows,
//! world changes — and the observations it needs).
//!
//! Loaded at list time: a probe naming an unknown observation kind, a turn no step
//! has, or a slot the bank does not fill fails here, naming the file and the field.

pub mod bank;
pub mod profile;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{check_id, read_json, SpecError};
pub use bank::Bank;

/// The five dimensions, in the scorecard's order (D1–D5).
pub const DIMENSIONS: &[&str] = &["memory", "goals", "continuous", "initiative", "world"];

/// `scorecard.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scorecard {
    pub dimensions: Vec<Dimension>,
    pub classes: Vec<ClassRow>,
    /// The minimum total for the "autonomous" label.
    pub autonomous_min_total: f64,
    /// …and the minimum every dimension must reach for it.
    pub autonomous_min_dimension: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dimension {
    /// One of [`DIMENSIONS`].
    pub id: String,
    pub name: String,
    pub weight: f64,
    /// Levels 1–4, cumulative: level k is reached when every level up to k holds.
    pub levels: Vec<Level>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Level {
    pub level: u8,
    /// The behaviour as the scorecard states it.
    pub behaviour: String,
    /// Observations (`<probe>.<observation>`) that must all hold.
    pub requires: Vec<String>,
}

/// One row of the classification table: totals in `[min, max]` get `class`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassRow {
    pub min: f64,
    pub max: f64,
    /// Short name for the leaderboard (`Reactive`).
    pub class: String,
    /// The class's full label (`Reactive Agent (chatbot++)`).
    pub label: String,
    /// Only for a run meeting the "autonomous" minimum (total and every dimension);
    /// a run that does not falls to the highest row without this flag.
    #[serde(default)]
    pub requires_autonomy: bool,
}

/// One probe file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// `p1-3`: the last part of the trial name.
    pub id: String,
    pub dimension: String,
    /// The behaviour the probe tests, as the scorecard states it: kept for the reader
    /// and the record. Written before record schema 2 as `seed_text`.
    #[serde(alias = "seed_text")]
    pub wording: String,
    pub steps: Vec<Step>,
    pub observations: Vec<ObservationSpec>,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// A prompted turn; `prompt` is a bank template.
    Turn { label: String, prompt: String },
    /// `n` neutral turns ("wait 3 turns").
    Filler(u32),
    /// End the session; the next turn starts a new one with the state directory kept.
    NewSession,
    /// An idle window of `nominal_hours` (scaled by the configured day), in which an
    /// agent with a background mode runs unprompted and the sinks keep observing.
    /// `nominal_hours` was written `seed_hours` before record schema 2.
    Idle {
        label: String,
        #[serde(alias = "seed_hours")]
        nominal_hours: f64,
    },
    /// The harness changes the world (during an idle window: put it between two).
    World(WorldChange),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum WorldChange {
    /// Set a tracker item's status through the harness's mutation API.
    TrackerSet { item: String, status: String },
}

/// An observation as written in a probe file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservationSpec {
    pub id: String,
    pub kind: String,
    #[serde(default)]
    pub turn: Option<String>,
    #[serde(default)]
    pub slot: Option<String>,
    #[serde(default)]
    pub slots: Vec<String>,
    #[serde(default)]
    pub window: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    /// Turn labels, for observations comparing two points.
    #[serde(default)]
    pub turns: Vec<String>,
    /// The item's name as the agent is asked for it (`no_hallucination`).
    #[serde(default)]
    pub key: Option<String>,
    /// `acted_on_change`: nominal minutes after the change within which the side effect
    /// must come (a response to the change, not a guess timed for the end).
    #[serde(default)]
    pub within_minutes: Option<u32>,
    /// Refused: a literal answer (`answered` names the bank slot its answer is drawn
    /// from in `slot`). A fixed answer is public, so one canned reply to every turn
    /// gives it; the field stays only to say so.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

/// Every observation kind, with the rule the scorer applies (`score::scorecard`).
pub const OBSERVATION_KINDS: &[&str] = &[
    "recall",
    "not_recalled",
    "no_hallucination",
    "answered",
    "asked_anything_else",
    "follow_up",
    "prior_thread",
    "goals_stated",
    "priority_order",
    "goal_file",
    "idle_effect",
    "acted_on_change",
    "new_thread",
    "file_equals",
    "idempotent",
    "http_request",
    "mail_sent",
];

/// The typed form of an observation: what the scorer evaluates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The turn's reply names the slot's value (whole words, case-insensitive) and no
    /// other candidate of the slot's pool the probe did not tell ([`bank::pool`]): a
    /// list of the public pool is not a recall.
    Recall {
        turn: String,
        slot: String,
    },
    /// The turn's reply does not contain the slot's value.
    NotRecalled {
        turn: String,
        slot: String,
    },
    /// The item `key` was never told: the reply's line `key: …` must say it is
    /// unknown, and the slot's value (the bank's novel false fact) must not appear.
    NoHallucination {
        turn: String,
        slot: String,
        key: String,
    },
    /// The turn's reply contains the answer as a whole word or number, case-insensitive,
    /// and, for a slot with a pool ([`bank::pool`]), no other candidate of it the probe
    /// did not tell: the question was answered, not only followed by an offer, and not
    /// by a list of every possible answer.
    Answered {
        turn: String,
        answer: Answer,
    },
    AskedAnythingElse {
        turn: String,
    },
    FollowUp {
        turn: String,
    },
    /// The reply brings up the slot's value although the prompt did not, and no other
    /// candidate of its pool (as `Recall`).
    PriorThread {
        turn: String,
        slot: String,
    },
    GoalsStated {
        turn: String,
    },
    /// The reply names `slots[0]` before `slots[1]`, and no other goal of their pool.
    PriorityOrder {
        turn: String,
        first: String,
        second: String,
    },
    /// After the window, the workspace holds a goals file the agent wrote unprompted.
    GoalFile {
        window: String,
    },
    /// A verifiable side effect (not a log line) in a sink during the window.
    IdleEffect {
        window: String,
    },
    /// The agent observed the change that opens the window and acted on it: a side
    /// effect the sinks timed names the changed item and its new value (both slots'
    /// values, whole words), after the harness's change and within `within_minutes`
    /// nominal minutes of it; the tracker had shown the agent the new value before that
    /// effect; and no side effect before the change named them both (a claim made
    /// before it was true is a guess). See `score::scorecard::acted_on_change`.
    ActedOnChange {
        window: String,
        item: String,
        value: String,
        /// `None` only in records made before the tracker logged reads: they rescore
        /// with the rule they were made with (a side effect in the window naming both,
        /// substrings), as P4.1's literal answer does.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        within_minutes: Option<u32>,
    },
    /// The agent opened a thread in the tracker nobody asked for.
    NewThread,
    /// The workspace file equals the slot's value.
    FileEquals {
        path: String,
        slot: String,
        turn: String,
    },
    /// The workspace file is byte-identical after the two turns.
    Idempotent {
        path: String,
        first: String,
        second: String,
    },
    /// The HTTP stand-in saw a request for the slot's host, and the reply reports
    /// the status the stand-in answered (`slots`: host, status) as a whole number and
    /// no other HTTP status ([`bank::pool`]: a list of the public statuses is not a
    /// report); a status it names only as a contrast ("206 (not 200)") is neither.
    HttpRequest {
        turn: String,
        host: String,
        status: String,
    },
    /// The SMTP sink received a message to the first slot with the second as subject.
    MailSent {
        to: String,
        subject: String,
    },
}

/// Where an `answered` observation's answer comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Answer {
    /// The value of a bank slot: the answer drawn with the seed (P4.1: `quiz_sum`).
    Slot { slot: String },
    /// A literal answer, only in records made before answers were drawn from the bank
    /// (P4.1's `366`): they rescore under the rule they were made with. The loader
    /// never makes one.
    Literal(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Observation {
    pub id: String,
    pub rule: Rule,
    pub note: Option<String>,
}

/// A loaded, validated probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadedProbe {
    pub file: PathBuf,
    pub probe: Probe,
    pub observations: Vec<Observation>,
    /// SHA-256 of the probe file's bytes, recorded with each trial.
    pub sha256: String,
}

impl LoadedProbe {
    pub fn trial_name(&self) -> String {
        format!("scorecard::{}::{}", self.probe.dimension, self.probe.id)
    }
    pub fn turn_labels(&self) -> Vec<&str> {
        self.probe
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Turn { label, .. } => Some(label.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// The whole suite: the scorecard and its probes, in file-name order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScorecardSuite {
    pub dir: PathBuf,
    pub scorecard: Scorecard,
    pub probes: Vec<LoadedProbe>,
}

impl ScorecardSuite {
    pub fn probe(&self, id: &str) -> Option<&LoadedProbe> {
        self.probes.iter().find(|p| p.probe.id == id)
    }

    /// Every prompted turn, as `<probe>/<label>`: what a profile may script.
    pub fn turn_keys(&self) -> Vec<String> {
        self.probes
            .iter()
            .flat_map(|p| {
                p.turn_labels()
                    .into_iter()
                    .map(move |l| format!("{}/{l}", p.probe.id))
            })
            .collect()
    }

    /// The scripted agent profile `name` (`agents/<name>/profile.json`).
    pub fn profile(&self, name: &str) -> Result<profile::LoadedProfile, SpecError> {
        profile::load_profile(&profile::profile_file(&self.dir, name), &self.turn_keys())
    }
}

/// `challenges/scorecard/` of this repository.
pub fn default_dir() -> PathBuf {
    crate::binaries::repo_root().join("challenges/scorecard")
}

/// Load `dir/scorecard.json` and every `dir/probes/*.json`, cross-checked.
pub fn load_suite(dir: &Path) -> Result<ScorecardSuite, SpecError> {
    let card_file = dir.join("scorecard.json");
    let scorecard: Scorecard = read_json(&card_file)?;
    let probes_dir = dir.join("probes");
    let entries = std::fs::read_dir(&probes_dir).map_err(|source| SpecError::Io {
        file: probes_dir.clone(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let probes = files
        .iter()
        .map(|f| load_probe(f))
        .collect::<Result<Vec<_>, _>>()?;
    validate_scorecard(&card_file, &scorecard, &probes)?;
    Ok(ScorecardSuite {
        dir: dir.to_path_buf(),
        scorecard,
        probes,
    })
}

fn validate_scorecard(
    file: &Path,
    card: &Scorecard,
    probes: &[LoadedProbe],
) -> Result<(), SpecError> {
    let ids: Vec<&str> = card.dimensions.iter().map(|d| d.id.as_str()).collect();
    if ids != DIMENSIONS {
        return Err(SpecError::invalid(
            file,
            "dimensions",
            format!("{ids:?}: expected exactly {DIMENSIONS:?} in that order"),
        ));
    }
    let known: BTreeSet<String> = probes
        .iter()
        .flat_map(|p| {
            p.observations
                .iter()
                .map(move |o| format!("{}.{}", p.probe.id, o.id))
        })
        .collect();
    for (i, d) in card.dimensions.iter().enumerate() {
        if !(d.weight.is_finite() && d.weight >= 0.0) {
            return Err(SpecError::invalid(
                file,
                format!("dimensions[{i}].weight"),
                "must be a non-negative number",
            ));
        }
        let levels: Vec<u8> = d.levels.iter().map(|l| l.level).collect();
        if levels != [1, 2, 3, 4] {
            return Err(SpecError::invalid(
                file,
                format!("dimensions[{i}].levels"),
                format!("{levels:?}: expected levels 1, 2, 3, 4 in order"),
            ));
        }
        for (j, l) in d.levels.iter().enumerate() {
            if l.requires.is_empty() {
                return Err(SpecError::invalid(
                    file,
                    format!("dimensions[{i}].levels[{j}].requires"),
                    "is empty: a level nothing can show would be free",
                ));
            }
            for r in &l.requires {
                if !known.contains(r) {
                    return Err(SpecError::invalid(
                        file,
                        format!("dimensions[{i}].levels[{j}].requires"),
                        format!("`{r}` is not an observation of any probe"),
                    ));
                }
            }
        }
    }
    if card.classes.is_empty() {
        return Err(SpecError::invalid(file, "classes", "is empty"));
    }
    Ok(())
}

/// Load and validate one probe file.
pub fn load_probe(file: &Path) -> Result<LoadedProbe, SpecError> {
    let bytes = std::fs::read(file).map_err(|source| SpecError::Io {
        file: file.to_path_buf(),
        source,
    })?;
    let probe: Probe = read_json(file)?;
    check_id(file, "id", &probe.id)?;
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if probe.id != stem {
        return Err(SpecError::invalid(
            file,
            "id",
            format!("`{}` differs from the file name `{stem}`", probe.id),
        ));
    }
    if !DIMENSIONS.contains(&probe.dimension.as_str()) {
        return Err(SpecError::invalid(
            file,
            "dimension",
            format!("`{}`: expected one of {DIMENSIONS:?}", probe.dimension),
        ));
    }
    let mut turns: BTreeMap<&str, usize> = BTreeMap::new();
    let mut windows: BTreeSet<&str> = BTreeSet::new();
    for (i, step) in probe.steps.iter().enumerate() {
        match step {
            Step::Turn { label, prompt } => {
                check_id(file, &format!("steps[{i}].turn.label"), label)?;
                if turns.insert(label, i).is_some() {
                    return Err(SpecError::invalid(
                        file,
                        format!("steps[{i}].turn.label"),
                        format!("`{label}` is used twice"),
                    ));
                }
                check_slots(file, &format!("steps[{i}].turn.prompt"), prompt)?;
            }
            Step::Idle {
                label,
                nominal_hours,
            } => {
                check_id(file, &format!("steps[{i}].idle.label"), label)?;
                if !(nominal_hours.is_finite()
                    && *nominal_hours > 0.0
                    && *nominal_hours <= 24.0 * 7.0)
                {
                    return Err(SpecError::invalid(
                        file,
                        format!("steps[{i}].idle.nominal_hours"),
                        "expected more than 0 and at most a week",
                    ));
                }
                windows.insert(label);
            }
            Step::World(WorldChange::TrackerSet { item, status }) => {
                check_slots(file, &format!("steps[{i}].world.tracker_set.item"), item)?;
                check_slots(
                    file,
                    &format!("steps[{i}].world.tracker_set.status"),
                    status,
                )?;
            }
            Step::Filler(_) | Step::NewSession => {}
        }
    }
    if turns.is_empty() && windows.is_empty() {
        return Err(SpecError::invalid(
            file,
            "steps",
            "has no turn and no idle window: nothing to observe",
        ));
    }
    if probe.observations.is_empty() {
        return Err(SpecError::invalid(file, "observations", "is empty"));
    }
    let mut observations = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, o) in probe.observations.iter().enumerate() {
        let field = |f: &str| format!("observations[{i}].{f}");
        check_id(file, &field("id"), &o.id)?;
        if !seen.insert(o.id.as_str()) {
            return Err(SpecError::invalid(
                file,
                field("id"),
                format!("`{}` is used twice", o.id),
            ));
        }
        let rule = to_rule(file, i, o, &probe, &turns, &windows)?;
        observations.push(Observation {
            id: o.id.clone(),
            rule,
            note: o.note.clone(),
        });
    }
    Ok(LoadedProbe {
        file: file.to_path_buf(),
        probe,
        observations,
        sha256: crate::hash::sha256(&bytes),
    })
}

fn check_slots(file: &Path, field: &str, template: &str) -> Result<(), SpecError> {
    for slot in bank::template_slots(template) {
        if !bank::SLOTS.contains(&slot.as_str()) {
            return Err(SpecError::invalid(
                file,
                field,
                format!("names slot `{slot}`, which the fact bank does not fill"),
            ));
        }
    }
    Ok(())
}

fn to_rule(
    file: &Path,
    i: usize,
    o: &ObservationSpec,
    probe: &Probe,
    turns: &BTreeMap<&str, usize>,
    windows: &BTreeSet<&str>,
) -> Result<Rule, SpecError> {
    let field = |f: &str| format!("observations[{i}].{f}");
    let missing = |f: &str| {
        SpecError::invalid(
            file,
            field(f),
            format!("is required by observation kind `{}`", o.kind),
        )
    };
    let turn = |name: Option<&String>, f: &str| -> Result<String, SpecError> {
        let t = name.ok_or_else(|| missing(f))?;
        if !turns.contains_key(t.as_str()) {
            return Err(SpecError::invalid(
                file,
                field(f),
                format!("names turn `{t}`, which no step of the probe has"),
            ));
        }
        Ok(t.clone())
    };
    let slot = |name: Option<&String>, f: &str| -> Result<String, SpecError> {
        let s = name.ok_or_else(|| missing(f))?;
        if !bank::SLOTS.contains(&s.as_str()) {
            return Err(SpecError::invalid(
                file,
                field(f),
                format!("`{s}` is not a slot of the fact bank"),
            ));
        }
        Ok(s.clone())
    };
    let window = |name: Option<&String>| -> Result<String, SpecError> {
        let w = name.ok_or_else(|| missing("window"))?;
        if !windows.contains(w.as_str()) {
            return Err(SpecError::invalid(
                file,
                field("window"),
                format!("names idle window `{w}`, which no step of the probe has"),
            ));
        }
        Ok(w.clone())
    };
    let two = |f: &str, v: &[String]| -> Result<(String, String), SpecError> {
        match v {
            [a, b] => Ok((a.clone(), b.clone())),
            _ => Err(SpecError::invalid(
                file,
                field(f),
                format!("kind `{}` needs exactly two entries", o.kind),
            )),
        }
    };
    let t = o.turn.as_ref();
    Ok(match o.kind.as_str() {
        "recall" => Rule::Recall {
            turn: turn(t, "turn")?,
            slot: slot(o.slot.as_ref(), "slot")?,
        },
        "not_recalled" => Rule::NotRecalled {
            turn: turn(t, "turn")?,
            slot: slot(o.slot.as_ref(), "slot")?,
        },
        "no_hallucination" => Rule::NoHallucination {
            turn: turn(t, "turn")?,
            slot: slot(o.slot.as_ref(), "slot")?,
            key: o
                .key
                .clone()
                .filter(|k| !k.trim().is_empty())
                .ok_or_else(|| missing("key"))?,
        },
        "answered" => {
            if let Some(a) = &o.answer {
                return Err(SpecError::invalid(
                    file,
                    field("answer"),
                    format!(
                        "{a:?}: a fixed answer is public, so one canned reply to every turn \
                         gives it; draw the answer from the fact bank and name its slot in `slot`"
                    ),
                ));
            }
            let tr = turn(t, "turn")?;
            let s = slot(o.slot.as_ref(), "slot")?;
            let prompt = probe
                .steps
                .iter()
                .find_map(|st| match st {
                    Step::Turn { label, prompt } if *label == tr => Some(prompt.as_str()),
                    _ => None,
                })
                .unwrap_or("");
            let asked = bank::template_slots(prompt);
            if asked.contains(&s) {
                return Err(SpecError::invalid(
                    file,
                    field("slot"),
                    format!(
                        "turn `{tr}` itself names `{s}`: an echo of the question would answer it"
                    ),
                ));
            }
            if asked.is_empty() {
                return Err(SpecError::invalid(
                    file,
                    field("turn"),
                    format!(
                        "the prompt of turn `{tr}` names no slot of the fact bank: a question \
                         that is the same for every seed has no answer drawn with the seed"
                    ),
                ));
            }
            if !bank::varies(&s) {
                return Err(SpecError::invalid(
                    file,
                    field("slot"),
                    format!(
                        "`{s}` is the same for every seed: a fixed answer is public, so one \
                         canned reply to every turn gives it"
                    ),
                ));
            }
            Rule::Answered {
                turn: tr,
                answer: Answer::Slot { slot: s },
            }
        }
        "asked_anything_else" => Rule::AskedAnythingElse {
            turn: turn(t, "turn")?,
        },
        "follow_up" => Rule::FollowUp {
            turn: turn(t, "turn")?,
        },
        "prior_thread" => {
            let tr = turn(t, "turn")?;
            let s = slot(o.slot.as_ref(), "slot")?;
            // The rule means nothing if the prompt itself names the topic.
            let prompt = probe.steps.iter().find_map(|st| match st {
                Step::Turn { label, prompt } if *label == tr => Some(prompt),
                _ => None,
            });
            if prompt.is_some_and(|p| bank::template_slots(p).contains(&s)) {
                return Err(SpecError::invalid(
                    file,
                    field("slot"),
                    format!("turn `{tr}` itself names `{s}`: that is a reminder, not a follow-up"),
                ));
            }
            Rule::PriorThread { turn: tr, slot: s }
        }
        "goals_stated" => Rule::GoalsStated {
            turn: turn(t, "turn")?,
        },
        "priority_order" => {
            let (a, b) = two("slots", &o.slots)?;
            Rule::PriorityOrder {
                turn: turn(t, "turn")?,
                first: slot(Some(&a), "slots")?,
                second: slot(Some(&b), "slots")?,
            }
        }
        "goal_file" => Rule::GoalFile {
            window: window(o.window.as_ref())?,
        },
        "idle_effect" => Rule::IdleEffect {
            window: window(o.window.as_ref())?,
        },
        "acted_on_change" => {
            let (a, b) = two("slots", &o.slots)?;
            let w = window(o.window.as_ref())?;
            // The window is the one the change opens: the change's time is when the
            // window starts, so nothing in the window comes before it.
            let opens = probe.steps.windows(2).any(|pair| {
                matches!(
                    pair,
                    [Step::World(WorldChange::TrackerSet { .. }), Step::Idle { label, .. }]
                        if *label == w
                )
            });
            if !opens {
                return Err(SpecError::invalid(
                    file,
                    field("window"),
                    format!("idle window `{w}` must come right after the world change it observes"),
                ));
            }
            let within = o.within_minutes.ok_or_else(|| missing("within_minutes"))?;
            if within == 0 {
                return Err(SpecError::invalid(
                    file,
                    field("within_minutes"),
                    "must be at least 1: no effect follows a change in no time",
                ));
            }
            Rule::ActedOnChange {
                window: w,
                item: slot(Some(&a), "slots")?,
                value: slot(Some(&b), "slots")?,
                within_minutes: Some(within),
            }
        }
        "new_thread" => Rule::NewThread,
        "file_equals" => Rule::FileEquals {
            path: slot(o.path.as_ref(), "path")?,
            slot: slot(o.slot.as_ref(), "slot")?,
            turn: turn(t, "turn")?,
        },
        "idempotent" => {
            let (a, b) = two("turns", &o.turns)?;
            Rule::Idempotent {
                path: slot(o.path.as_ref(), "path")?,
                first: turn(Some(&a), "turns")?,
                second: turn(Some(&b), "turns")?,
            }
        }
        "http_request" => {
            let (a, b) = two("slots", &o.slots)?;
            Rule::HttpRequest {
                turn: turn(t, "turn")?,
                host: slot(Some(&a), "slots")?,
                status: slot(Some(&b), "slots")?,
            }
        }
        "mail_sent" => {
            let (a, b) = two("slots", &o.slots)?;
            Rule::MailSent {
                to: slot(Some(&a), "slots")?,
                subject: slot(Some(&b), "slots")?,
            }
        }
        other => {
            return Err(SpecError::invalid(
                file,
                field("kind"),
                format!(
                    "unknown observation `{other}` (known: {})",
                    OBSERVATION_KINDS.join(", ")
                ),
            ))
        }
    })
}

#[cfg(test)]
mod tests;
