//! The challenge scorer: task outcome and evaluation validity, two separate answers,
//! derived purely from recorded evidence.
//!
//! - `task_outcome` asks whether the task got done: the agent's YAML self-report must
//!   parse, hold every required field and meet the manifest's success assertions, and
//!   the world the harness observed after the trial must meet every world assertion.
//! - `evaluation_validity` asks whether the trial measured what it should, from what
//!   the kernel saw the trial's processes open: an open outside the profile's allowed
//!   roots makes it `contaminated`; an observation that failed or is incomplete makes
//!   it `unauditable`; only a complete observation with nothing forbidden is `clean`.
//!   The event stream's paths are the agent's account, compared with the observation
//!   but not deciding. Records made before opens were observed keep the account's
//!   rule (a shell command whose paths cannot be read out makes them `unauditable`).
//!
//! The self-report is kept as written; where it disagrees with what was observed the
//! disagreement is listed, and the observation never rewrites the report.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::evidence::observed_execs::ExecFindings;
use crate::evidence::observed_policy::ObservedPolicy;
use crate::evidence::observed_requests::RequestFindings;
use crate::evidence::policy::{PathCategory, PolicyFindings};
use crate::evidence::ProcessEnd;
use crate::spec::challenge::{Manifest, Profile};

/// The largest self-report block parsed; a longer one is a parse error.
pub const MAX_SELF_REPORT_BYTES: usize = 64 * 1024;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    Success,
    Failed,
    Timeout,
    ParseError,
    Unknown,
}

impl TaskOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskOutcome::Success => "success",
            TaskOutcome::Failed => "failed",
            TaskOutcome::Timeout => "timeout",
            TaskOutcome::ParseError => "parse_error",
            TaskOutcome::Unknown => "unknown",
        }
    }
}

/// A name that is not one of an enum's values (an audit's outcome or validity).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{name}` is not {of}")]
pub struct UnknownName {
    pub name: String,
    /// What the name should be, with the values it may take.
    pub of: &'static str,
}

impl std::str::FromStr for TaskOutcome {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        [
            TaskOutcome::Success,
            TaskOutcome::Failed,
            TaskOutcome::Timeout,
            TaskOutcome::ParseError,
            TaskOutcome::Unknown,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
        .ok_or_else(|| UnknownName {
            name: s.to_owned(),
            of: "a task outcome (success, failed, timeout, parse_error, unknown)",
        })
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Validity {
    Clean,
    Contaminated,
    Unauditable,
}

impl Validity {
    pub fn as_str(self) -> &'static str {
        match self {
            Validity::Clean => "clean",
            Validity::Contaminated => "contaminated",
            Validity::Unauditable => "unauditable",
        }
    }
}

impl std::str::FromStr for Validity {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, UnknownName> {
        [
            Validity::Clean,
            Validity::Contaminated,
            Validity::Unauditable,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
        .ok_or_else(|| UnknownName {
            name: s.to_owned(),
            of: "an evaluation validity (clean, contaminated, unauditable)",
        })
    }
}

/// What the harness read from the app (or the workspace) for one world assertion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorldObservation {
    pub id: String,
    /// The whole JSON document observed, when it could be read.
    pub document: Option<Value>,
    /// Why it could not be read (app down, file missing, not JSON).
    pub error: Option<String>,
}

/// The agent's self-report, as found in its final message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SelfReport {
    /// The YAML block's text, as written (bounded).
    pub raw: Option<String>,
    /// The parsed mapping.
    pub fields: Option<BTreeMap<String, Value>>,
    /// Why it could not be parsed; `raw` keeps the text.
    pub error: Option<String>,
}

/// One assertion checked: on the self-report or on the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AssertionResult {
    pub id: String,
    pub expected: Value,
    pub observed: Option<Value>,
    pub holds: bool,
}

/// Where the self-report and the observed evidence disagree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Discrepancy {
    pub field: String,
    pub self_reported: Option<Value>,
    pub observed: Option<Value>,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChallengeVerdict {
    pub task_outcome: TaskOutcome,
    pub evaluation_validity: Validity,
    /// One line each for the outcome and the validity.
    pub outcome_reason: String,
    pub validity_reason: String,
    pub self_report: SelfReport,
    pub missing_fields: Vec<String>,
    pub report_assertions: Vec<AssertionResult>,
    pub world_assertions: Vec<AssertionResult>,
    pub discrepancies: Vec<Discrepancy>,
    /// Provisional: a manual audit (`manual-audit.yaml`) is authoritative.
    pub provisional: bool,
    /// The trial's test passes iff the task succeeded on a clean trial.
    pub passed: bool,
}

/// What the scorer reads.
#[derive(Debug, Clone, Copy)]
pub struct ChallengeInputs<'a> {
    pub manifest: &'a Manifest,
    pub profile: Profile,
    pub end: &'a ProcessEnd,
    pub setup_error: Option<&'a str>,
    pub final_message: Option<&'a str>,
    pub world: &'a [WorldObservation],
    /// The agent's account: paths its event stream names.
    pub policy: &'a PolicyFindings,
    /// What the kernel saw opened; `None` only in records made before opens were
    /// observed, whose validity rests on the account.
    pub observed: Option<&'a ObservedPolicy>,
    /// What the kernel saw executed; `None` only where there is no observation.
    pub execs: Option<&'a ExecFindings>,
    /// What the sandbox's helper saw sent to the app; `None` where there is no
    /// observation (or the challenge requires no requests).
    pub requests: Option<&'a RequestFindings>,
}

/// The first required request that does not hold: `failed` when a matching request
/// came from another program (or too few came), `unknown` when the observation cannot
/// show it.
fn unmet_requests(i: &ChallengeInputs<'_>) -> Option<(TaskOutcome, String)> {
    use crate::evidence::observed_requests::RequestOutcome;
    let first = i.manifest.work.requests.first()?;
    let Some(found) = i.requests else {
        return Some((
            TaskOutcome::Unknown,
            format!(
                "required request `{}` cannot be checked: nothing observed the requests sent to the app",
                first.id
            ),
        ));
    };
    let bad = found
        .required
        .iter()
        .find(|r| r.outcome != RequestOutcome::Met)?;
    let outcome = match bad.outcome {
        RequestOutcome::Failed => TaskOutcome::Failed,
        _ => TaskOutcome::Unknown,
    };
    Some((
        outcome,
        format!(
            "required request `{}` ({} {} from a {}): {}",
            bad.id, bad.method, bad.path, bad.client, bad.why
        ),
    ))
}

/// Validity from what the kernel saw opened: a forbidden open contaminates even when
/// the observation is incomplete (what was seen was seen); otherwise only a complete
/// observation is clean.
fn observed_validity(o: &ObservedPolicy, profile: Profile) -> (Validity, String) {
    if let Some(first) = o.disallowed_reads.first() {
        let by = o
            .opens
            .iter()
            .find(|x| &x.path == first)
            .map(|x| match &x.process {
                Some(p) => format!(" by `{p}` (pid {})", x.pid),
                None => format!(" by pid {}", x.pid),
            })
            .unwrap_or_default();
        // An answer key is named, with why, whichever read came first: no profile
        // allows it.
        let key = match o.answer_keys.first() {
            None => String::new(),
            Some(k) if &k.path == first && o.answer_keys.len() == 1 => {
                format!(": {}, which no profile allows", k.why)
            }
            Some(k) => format!(
                "; {} of them an answer key no profile allows, first {}: {}",
                o.answer_keys.len(),
                k.path,
                k.why
            ),
        };
        return (
            Validity::Contaminated,
            format!(
                "the kernel saw {} path(s) opened outside the roots profile `{profile}` allows, first {first}{by}{key}",
                o.disallowed_reads.len()
            ),
        );
    }
    if let Some(why) = &o.incomplete {
        return (
            Validity::Unauditable,
            format!("the observation of the trial's opens is incomplete: {why}"),
        );
    }
    let counted: u64 = o
        .by_category
        .iter()
        .filter(|(k, _)| k.as_str() != PathCategory::Runtime.as_str())
        .map(|(_, v)| v)
        .sum();
    (
        Validity::Clean,
        format!(
            "the kernel saw every open: {counted} path(s) outside the runtime, all allowed under profile `{profile}`"
        ),
    )
}

/// Validity from the event stream alone, for records made before opens were
/// observed: "clean" there means only that nothing forbidden was reported.
fn account_validity(policy: &PolicyFindings, profile: Profile) -> (Validity, String) {
    let not_kept = &policy.not_kept;
    if !policy.disallowed_reads.is_empty() {
        (
            Validity::Contaminated,
            format!(
                "{} path(s) outside the roots profile `{}` allows, first {}",
                policy.disallowed_reads.len() as u64 + not_kept.disallowed_reads,
                profile,
                policy.disallowed_reads[0]
            ),
        )
    } else if let Some(c) = policy.opaque_shell_commands.first() {
        (
            Validity::Unauditable,
            format!(
                "{} opaque shell command(s), first ({}): {}",
                policy.opaque_shell_commands.len() as u64 + not_kept.opaque_shell_commands,
                c.reason,
                c.command
            ),
        )
    } else if not_kept.tool_calls > 0 {
        (
            Validity::Unauditable,
            format!(
                "{} tool call(s) past the report's cap of {} were counted, not kept: their paths cannot be audited",
                not_kept.tool_calls,
                crate::evidence::normalize::MAX_ITEMS
            ),
        )
    } else {
        (
            Validity::Clean,
            format!("every observed path is allowed under profile `{profile}`"),
        )
    }
}

/// The first required run the kernel was not seen making: `failed` when the execs were
/// all observed (the work was not done as required, whatever the report says), else
/// `unknown` (nothing can show whether it was); then the first required output that is
/// not what the app printed.
fn unobserved_work(i: &ChallengeInputs<'_>) -> Option<(TaskOutcome, String)> {
    let required = &i.manifest.work.runs;
    let first = required.first()?;
    let Some(execs) = i.execs else {
        return Some((
            TaskOutcome::Unknown,
            format!(
                "required run `{}` cannot be checked: nothing observed the trial's execs",
                first.id
            ),
        ));
    };
    let Some(missing) = execs.required.iter().find(|r| r.seen.is_none()) else {
        // Every run was seen: what the app printed must be what the files hold.
        let bad = execs.outputs.iter().find(|o| !o.holds)?;
        return Some((
            if bad.decidable {
                TaskOutcome::Failed
            } else {
                TaskOutcome::Unknown
            },
            format!("required output `{}`: {}", bad.id, bad.why),
        ));
    };
    let what = format!(
        "required run `{}` ({}{}{})",
        missing.id,
        missing
            .program
            .as_deref()
            .unwrap_or("the app's program, which the trial did not have"),
        if missing.args.is_empty() {
            String::new()
        } else {
            format!(" with arguments matching {}", missing.args.join(", "))
        },
        missing
            .input
            .as_ref()
            .map(|f| format!(", on {f} as the workspace template holds it"))
            .unwrap_or_default()
    );
    Some(match (&execs.incomplete, &missing.not_met) {
        // The app ran it, on other data, as the relay's log of its runs shows.
        (None, Some(other)) => (TaskOutcome::Failed, format!("{what} was not met: {other}")),
        (Some(why), other) => (
            TaskOutcome::Unknown,
            format!(
                "{what} was not seen{}, and the observation of execs is incomplete: {why}",
                other
                    .as_ref()
                    .map(|o| format!(" (what was: {o})"))
                    .unwrap_or_default()
            ),
        ),
        (None, None) => (
            TaskOutcome::Failed,
            format!(
                "{what} was never executed: the kernel saw {} exec(s), none of it",
                execs.by_program.values().sum::<u64>()
            ),
        ),
    })
}

/// The last fenced ```yaml (or ```yml) block of `text`.
pub fn find_yaml_block(text: &str) -> Option<&str> {
    let mut found = None;
    let mut rest = text;
    let mut offset = 0;
    while let Some(i) = rest.find("```") {
        let after = &rest[i + 3..];
        let line_end = after.find('\n').unwrap_or(after.len());
        let info = after[..line_end].trim();
        let body_start = i + 3 + line_end + 1;
        if body_start > rest.len() {
            break;
        }
        let body = &rest[body_start..];
        let Some(close) = body.find("```") else {
            break;
        };
        if info == "yaml" || info == "yml" {
            found = Some(&text[offset + body_start..offset + body_start + close]);
        }
        let consumed = body_start + close + 3;
        offset += consumed;
        rest = &rest[consumed..];
    }
    found
}

/// Parse the self-report from the final message: bounded, with the safe YAML parser.
pub fn parse_self_report(final_message: Option<&str>) -> SelfReport {
    let Some(text) = final_message else {
        return SelfReport {
            error: Some("no final message".into()),
            ..SelfReport::default()
        };
    };
    let Some(block) = find_yaml_block(text) else {
        return SelfReport {
            error: Some("the final message has no ```yaml block".into()),
            ..SelfReport::default()
        };
    };
    let raw = crate::evidence::normalize::Preview::bounded_to(block, MAX_SELF_REPORT_BYTES);
    if raw.truncated {
        return SelfReport {
            raw: Some(raw.text),
            error: Some(format!(
                "the yaml block is {} bytes, over the limit of {MAX_SELF_REPORT_BYTES}",
                raw.bytes
            )),
            fields: None,
        };
    }
    match serde_saphyr::from_str::<BTreeMap<String, Value>>(block) {
        Ok(fields) => SelfReport {
            raw: Some(block.to_owned()),
            fields: Some(fields),
            error: None,
        },
        Err(e) => SelfReport {
            raw: Some(block.to_owned()),
            fields: None,
            error: Some(format!("the yaml block is not a mapping: {e}")),
        },
    }
}

/// Values equal as the manifest means them: numbers by value (`30` equals `30.0`).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Each object of an array cut down to `fields`; anything else as it is.
fn shape(v: Value, fields: Option<&[String]>) -> Value {
    let Some(fields) = fields else { return v };
    match v {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| match item {
                    Value::Object(o) => {
                        Value::Object(o.into_iter().filter(|(k, _)| fields.contains(k)).collect())
                    }
                    other => other,
                })
                .collect(),
        ),
        other => other,
    }
}

/// Whether two arrays hold the same items, each as often, in any order.
fn same_items(got: &[Value], want: &[Value]) -> bool {
    if got.len() != want.len() {
        return false;
    }
    let mut taken = vec![false; got.len()];
    want.iter().all(|w| {
        let found = got
            .iter()
            .enumerate()
            .find(|(i, g)| !taken[*i] && same(g, w))
            .map(|(i, _)| i);
        found.map(|i| taken[i] = true).is_some()
    })
}

/// Score one trial.
pub fn score(i: &ChallengeInputs<'_>) -> ChallengeVerdict {
    let self_report = parse_self_report(i.final_message);
    let fields = self_report.fields.clone().unwrap_or_default();
    let contract = &i.manifest.report;
    let missing_fields: Vec<String> = if self_report.fields.is_some() {
        contract
            .required_fields
            .iter()
            .chain(std::iter::once(&"task_outcome".to_string()))
            .filter(|f| !fields.contains_key(*f))
            .cloned()
            .collect()
    } else {
        vec![]
    };
    let report_assertions: Vec<AssertionResult> = contract
        .success_assertions
        .iter()
        .map(|(k, want)| {
            let got = fields.get(k).cloned();
            AssertionResult {
                id: k.clone(),
                holds: got.as_ref().is_some_and(|g| same(g, want)),
                expected: want.clone(),
                observed: got,
            }
        })
        .collect();
    let world_assertions: Vec<AssertionResult> = i
        .manifest
        .world
        .assertions
        .iter()
        .map(|a| {
            let doc = i
                .world
                .iter()
                .find(|o| o.id == a.id)
                .and_then(|o| o.document.as_ref());
            let got = doc.and_then(|d| match &a.pointer {
                Some(p) => d.pointer(p).cloned(),
                None => Some(d.clone()),
            });
            // A count is of the items the app holds; anything but an array has none.
            let (got, want) = match a.count {
                Some(n) => (
                    got.map(|g| match g {
                        Value::Array(items) => Value::from(items.len() as u64),
                        _ => Value::String("(not an array)".into()),
                    }),
                    Value::from(n),
                ),
                None => (
                    got.map(|g| shape(g, a.fields.as_deref())),
                    a.equals.clone().unwrap_or(Value::Null),
                ),
            };
            let holds = match (&got, a.unordered) {
                (Some(Value::Array(g)), true) => match &want {
                    Value::Array(w) => same_items(g, w),
                    _ => false,
                },
                (Some(g), _) => same(g, &want),
                (None, _) => false,
            };
            AssertionResult {
                id: a.id.clone(),
                holds,
                expected: want,
                observed: got,
            }
        })
        .collect();

    // Discrepancies: the report's fields against what the harness observed.
    let mut discrepancies = Vec::new();
    for a in &i.manifest.world.assertions {
        let Some(field) = &a.report_field else {
            continue;
        };
        let observed = world_assertions
            .iter()
            .find(|r| r.id == a.id)
            .and_then(|r| r.observed.clone());
        let reported = fields.get(field).cloned();
        let agree = matches!((&reported, &observed), (Some(r), Some(o)) if same(r, o));
        if self_report.fields.is_some() && !agree {
            discrepancies.push(Discrepancy {
                field: field.clone(),
                self_reported: reported,
                observed,
                note: format!("world assertion `{}` observed a different value", a.id),
            });
        }
    }
    let claimed = fields
        .get("task_outcome")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let world_ok = world_assertions.iter().all(|a| a.holds);
    if claimed.as_deref() == Some("success") && !world_ok {
        discrepancies.push(Discrepancy {
            field: "task_outcome".into(),
            self_reported: Some(Value::String("success".into())),
            observed: Some(Value::String("failed".into())),
            note: "the agent reports success but the world assertions do not hold".into(),
        });
    }
    if claimed.as_deref() == Some("success") && i.end.exit_code.is_some_and(|c| c != 0) {
        discrepancies.push(Discrepancy {
            field: "task_outcome".into(),
            self_reported: Some(Value::String("success".into())),
            observed: i.end.exit_code.map(Value::from),
            note: "the agent reports success but exited non-zero".into(),
        });
    }
    for c in i.execs.map_or(&[][..], |e| &e.claimed_not_observed[..]) {
        discrepancies.push(Discrepancy {
            field: format!("tool_calls[{}]", c.call),
            self_reported: Some(Value::String(c.command.clone())),
            observed: None,
            note: format!(
                "the agent's tool call runs `{}`; the kernel saw no exec of it",
                c.program
            ),
        });
    }
    if let Some(Value::Array(reads)) = fields.get("files_read") {
        let n = match i.observed {
            Some(o) => o.opens.len() + o.opens_not_kept as usize,
            None => i.policy.paths.len(),
        };
        if reads.is_empty() && n > 0 {
            discrepancies.push(Discrepancy {
                field: "files_read".into(),
                self_reported: Some(Value::Array(vec![])),
                observed: Some(Value::from(n as u64)),
                note: "the agent reports reading nothing; paths were observed".into(),
            });
        }
    }

    let (task_outcome, outcome_reason) = if let Some(e) = i.setup_error {
        (TaskOutcome::Unknown, format!("setup failed: {e}"))
    } else if let Some(signal) = &i.end.interrupted {
        (
            TaskOutcome::Unknown,
            format!(
                "the run was interrupted ({signal}) {} ms into the agent's run: stopped, not judged",
                i.end.duration_ms
            ),
        )
    } else if i.end.timed_out {
        (
            TaskOutcome::Timeout,
            format!("the agent hit its deadline after {} ms", i.end.duration_ms),
        )
    } else if let Some(e) = &self_report.error {
        (TaskOutcome::ParseError, e.clone())
    } else if !missing_fields.is_empty() {
        (
            TaskOutcome::Failed,
            format!("the self-report lacks {}", missing_fields.join(", ")),
        )
    } else if claimed.as_deref() != Some("success") {
        (
            TaskOutcome::Failed,
            format!(
                "the agent reports task_outcome {}",
                claimed.unwrap_or_else(|| "(not a string)".into())
            ),
        )
    } else if let Some(a) = report_assertions.iter().find(|a| !a.holds) {
        (
            TaskOutcome::Failed,
            format!(
                "self-report `{}` is {} (expected {})",
                a.id,
                show(&a.observed),
                a.expected
            ),
        )
    } else if let Some(a) = world_assertions.iter().find(|a| !a.holds) {
        (
            TaskOutcome::Failed,
            format!(
                "world assertion `{}` observed {} (expected {})",
                a.id,
                show(&a.observed),
                a.expected
            ),
        )
    } else if let Some((outcome, why)) = unobserved_work(i) {
        (outcome, why)
    } else if let Some((outcome, why)) = unmet_requests(i) {
        (outcome, why)
    } else {
        (
            TaskOutcome::Success,
            if i.manifest.work.runs.is_empty() {
                "every report and world assertion holds".into()
            } else {
                "every report and world assertion holds, and every required run was observed".into()
            },
        )
    };

    let (evaluation_validity, validity_reason) = match i.observed {
        Some(o) => observed_validity(o, i.profile),
        None => account_validity(i.policy, i.profile),
    };
    ChallengeVerdict {
        passed: task_outcome == TaskOutcome::Success && evaluation_validity == Validity::Clean,
        task_outcome,
        evaluation_validity,
        outcome_reason,
        validity_reason,
        self_report,
        missing_fields,
        report_assertions,
        world_assertions,
        discrepancies,
        provisional: true,
    }
}

fn show(v: &Option<Value>) -> String {
    v.as_ref()
        .map(Value::to_string)
        .unwrap_or_else(|| "nothing".into())
}

#[cfg(test)]
mod tests;
