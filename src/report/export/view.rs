//! What every export is built from: each counted record of a run as one trial — its
//! processes with their prompts, metered model calls (the reply beside the metering) and
//! the agent's normalized tool calls — and the planned trials without one.

use std::path::Path;

use crate::evidence::normalize::{AgentReport, ToolCallRecord};
use crate::evidence::usage::UsageEntry;
use crate::evidence::RawFile;
use crate::record::any::{AnyRecord, Projection};
use crate::record::challenge::ChallengeRecord;
use crate::record::scorecard::ScorecardRecord;
use crate::record::Header;
use crate::record::QaRecord;
use crate::report::load::{LoadedRun, Problem};
use crate::report::options::Options;
use crate::report::reply::{self, Reply};

/// The most of a prompt, a reply or a tool output an export carries; the record's raw
/// files hold the rest, named by the export.
const TEXT_CAP: usize = 64 * 1024;

/// The most of a calls file an export reads: the proxy keeps at most 16 MiB per proxy,
/// each line's JSON escaping on top.
const CALLS_MAX: u64 = 40 << 20;

/// One model call: what the proxy metered and, when its bodies were kept, the reply.
#[derive(Debug, Clone)]
pub(crate) struct ModelCall {
    pub usage: Option<UsageEntry>,
    pub reply: Reply,
    /// USD, when the call's model has a price.
    pub cost: Option<f64>,
}

/// One agent process of a trial: the agent's run (qa, challenge) or a scorecard turn.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    pub label: String,
    pub prompt: Option<String>,
    pub calls: Vec<ModelCall>,
    /// The agent's tool calls as its own stream reported them, with their outputs.
    pub tools: Vec<ToolCallRecord>,
    pub final_message: Option<String>,
}

/// A trial as every export sees it.
#[derive(Debug, Clone)]
pub(crate) struct TrialView {
    pub header: Header,
    /// Its directory's name in the run.
    pub dir: String,
    /// The trial name without its repeat.
    pub group: String,
    pub repeat: u32,
    /// The verdict in its suite's words; `no record` for a planned trial without one.
    pub verdict: String,
    pub passed: bool,
    pub reason: String,
    /// The honest best outcome, where a suite has one (`verified` / `unverified`).
    pub target: String,
    pub turns: Vec<Turn>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub tokens_cached: u64,
    pub cost: Option<f64>,
    /// The suite's own evidence in brief (gate, world assertions, observations).
    pub evidence: serde_json::Value,
}

/// A planned trial that left no counted record.
#[derive(Debug, Clone)]
pub(crate) struct MissingView {
    pub trial: String,
    pub suite: String,
    /// It left a record, which failed its check (the run's problems say why).
    pub recorded: bool,
    /// Why it has none, when it left none: never started, or interrupted (with what
    /// it kept).
    pub reason: String,
}

impl MissingView {
    /// Its verdict word in the exports.
    pub fn verdict(&self) -> &'static str {
        if self.recorded {
            "not counted"
        } else {
            "no record"
        }
    }

    pub fn why(&self) -> String {
        if self.recorded {
            format!(
                "{}: its record failed its check; not counted (an error)",
                self.suite
            )
        } else {
            format!("{}: {}; counted as an error", self.suite, self.reason)
        }
    }
}

/// Everything an export is built from.
pub(crate) struct RunView {
    pub trials: Vec<TrialView>,
    pub missing: Vec<MissingView>,
    pub problems: Vec<Problem>,
}

/// Pretty JSON, newline-terminated (plain data: serializing cannot fail).
pub(crate) fn pretty<T: serde::Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// `text` cut at [`TEXT_CAP`] bytes (on a character boundary), saying where the rest is.
fn capped(text: String, whole: &str) -> String {
    if text.len() <= TEXT_CAP {
        return text;
    }
    let mut end = TEXT_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… (cut at {TEXT_CAP} of {} bytes; the whole is in `{whole}`)",
        &text[..end],
        text.len()
    )
}

/// A bounded text of a raw file of `dir`, never through a link.
fn read_text(dir: &Path, rel: &str) -> Option<String> {
    let (bytes, more) = crate::record::raw::read_plain(dir, rel, TEXT_CAP as u64)?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if more {
        text.push_str(&format!(
            "\n… (cut at {TEXT_CAP} bytes; the whole is `{rel}`)"
        ));
    }
    Some(text)
}

/// The model calls of one proxy: each metered entry with the reply its calls file kept.
fn model_calls(
    dir: &Path,
    file: Option<&RawFile>,
    usage: &[UsageEntry],
    model: &str,
    opts: &Options,
) -> Vec<ModelCall> {
    let replies: Vec<(u64, Reply)> = file
        .and_then(|f| {
            // The proxy bounds what it keeps (`PER_PROXY`); a file beyond that is not
            // one it wrote, and is read no further.
            let (bytes, _) = crate::record::raw::read_plain(dir, &f.path, CALLS_MAX)?;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let file = f.path.clone();
            Some(
                text.lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .map(|line| {
                        (line["seq"].as_u64().unwrap_or(0), {
                            let mut r =
                                reply::parse(line["response"]["body"].as_str().unwrap_or(""));
                            r.text = capped(r.text, &file);
                            r
                        })
                    })
                    .collect(),
            )
        })
        .unwrap_or_default();
    let cost = |u: &UsageEntry| opts.prices.cost(u, model);
    if usage.is_empty() {
        return replies
            .into_iter()
            .map(|(_, reply)| ModelCall {
                usage: None,
                reply,
                cost: None,
            })
            .collect();
    }
    usage
        .iter()
        .map(|u| ModelCall {
            usage: Some(u.clone()),
            reply: replies
                .iter()
                .find(|(seq, _)| *seq == u.seq)
                .map(|(_, r)| r.clone())
                .unwrap_or_default(),
            cost: cost(u),
        })
        .collect()
}

fn sums(turns: &[Turn]) -> (u64, u64, u64, Option<f64>) {
    let (mut i, mut o, mut c, mut cost) = (0, 0, 0, Some(0.0));
    for call in turns.iter().flat_map(|t| &t.calls) {
        if let Some(u) = &call.usage {
            i += u.input_tokens.unwrap_or(0);
            o += u.output_tokens.unwrap_or(0);
            c += u.cached_input_tokens.unwrap_or(0);
            cost = cost.zip(call.cost).map(|(a, b)| a + b);
        }
    }
    (i, o, c, cost)
}

fn usage_sums(usage: &[UsageEntry], model: &str, opts: &Options) -> (u64, u64, u64, Option<f64>) {
    let (mut i, mut o, mut c, mut cost) = (0u64, 0u64, 0u64, Some(0.0));
    for u in usage {
        i = i.saturating_add(u.input_tokens.unwrap_or(0));
        o = o.saturating_add(u.output_tokens.unwrap_or(0));
        c = c.saturating_add(u.cached_input_tokens.unwrap_or(0));
        cost = cost.zip(opts.prices.cost(u, model)).map(|(a, b)| a + b);
    }
    (i, o, c, cost)
}

fn trial_view(run_dir: &Path, name: &str, rec: &AnyRecord, opts: &Options) -> TrialView {
    let dir = run_dir.join(name);
    let h = rec.header().clone();
    let model = h.config.model.clone();
    let calls_of =
        |file: Option<&RawFile>, usage: &[UsageEntry]| model_calls(&dir, file, usage, &model, opts);
    let (verdict, passed, reason, target, turns, evidence) = rec.project(Projection {
        qa: |r: &QaRecord| {
            let (final_message, report) =
                crate::report::base::agent_report(&h.config.agent, &dir, &r.evidence.agent.stdout)
                    .unwrap_or((None, AgentReport::default()));
            let turn = Turn {
                label: "agent".into(),
                prompt: r
                    .evidence
                    .prompt
                    .as_ref()
                    .and_then(|p| read_text(&dir, &p.path)),
                calls: calls_of(r.evidence.calls.as_ref(), &r.evidence.usage),
                tools: report.tool_calls,
                final_message,
            };
            let gate = r.evidence.gate.as_ref().map(|g| {
                serde_json::json!({
                    "runs": g.runs.iter().map(|run| serde_json::json!({
                        "target": run.target,
                        "command": run.command,
                        "exit_code": run.end.exit_code,
                        "duration_ms": run.end.duration_ms,
                    })).collect::<Vec<_>>(),
                })
            });
            (
                r.verdict.outcome.as_str().to_owned(),
                r.verdict.passed,
                r.verdict.reason.clone(),
                if r.spec.kind.is_verifiable() {
                    "verified"
                } else {
                    "unverified"
                }
                .to_owned(),
                vec![turn],
                serde_json::json!({
                    "app": r.spec.app,
                    "capability": r.spec.capability,
                    "kind": r.spec.kind,
                    "gate": gate,
                    "budget_hit": r.evidence.budget_hit,
                    "setup_error": r.evidence.setup_error,
                }),
            )
        },
        challenge: |r: &ChallengeRecord| {
            let (o, v, audited) = crate::report::challenge::authoritative(&dir, r);
            let turn = Turn {
                label: "agent".into(),
                prompt: read_text(&dir, &r.provenance.prompt.path),
                calls: calls_of(r.evidence.calls.as_ref(), &r.evidence.usage),
                tools: r.derived.agent_report.tool_calls.clone(),
                final_message: r.derived.final_message.clone(),
            };
            (
                format!("{}/{}", o.as_str(), v.as_str()),
                o == crate::score::challenge::TaskOutcome::Success
                    && v == crate::score::challenge::Validity::Clean,
                format!(
                    "{}; {}",
                    r.verdict.outcome_reason, r.verdict.validity_reason
                ),
                "success/clean".into(),
                vec![turn],
                serde_json::json!({
                    "challenge": r.provenance.challenge_id,
                    "profile": r.provenance.profile,
                    "audited": audited,
                    "world_assertions": r.verdict.world_assertions,
                    "report_assertions": r.verdict.report_assertions,
                    "policy": r.derived.policy,
                }),
            )
        },
        scorecard: |r: &ScorecardRecord| {
            let turns = r
                .processes
                .iter()
                .map(|p| {
                    let prompt = r
                        .evidence
                        .turns
                        .iter()
                        .find(|t| t.label == p.label)
                        .map(|t| t.prompt.clone());
                    let mine = p.usage(&r.usage);
                    let (final_message, report) =
                        crate::report::base::agent_report(&h.config.agent, &dir, &p.stdout)
                            .unwrap_or((None, AgentReport::default()));
                    Turn {
                        label: p.label.clone(),
                        prompt,
                        calls: calls_of(p.calls.as_ref(), mine),
                        tools: report.tool_calls,
                        final_message,
                    }
                })
                .collect();
            (
                r.verdict.outcome.as_str().to_owned(),
                r.verdict.passed,
                r.verdict.reason.clone(),
                "verified".into(),
                turns,
                serde_json::json!({
                    "probe": r.probe.probe.id,
                    "dimension": r.probe.probe.dimension,
                    "observations": r.result.observations,
                }),
            )
        },
    });
    let (tokens_in, tokens_out, tokens_cached, cost) = rec.project(Projection {
        qa: |_: &QaRecord| sums(&turns),
        challenge: |_: &ChallengeRecord| sums(&turns),
        // Every metered call of a probe, whether or not a process claims it.
        scorecard: |r: &ScorecardRecord| usage_sums(&r.usage, &model, opts),
    });
    let (group, repeat) = crate::plan::names::group_of(&h.trial);
    TrialView {
        group: group.to_owned(),
        repeat: rec.project(Projection {
            qa: |r: &QaRecord| r.repeat,
            challenge: |_: &ChallengeRecord| repeat,
            scorecard: |_: &ScorecardRecord| repeat,
        }),
        dir: name.to_owned(),
        verdict,
        passed,
        reason,
        target,
        turns,
        tokens_in,
        tokens_out,
        tokens_cached,
        cost,
        evidence,
        header: h,
    }
}

/// The counted records of `run` (each re-read from the directory the loader counted it
/// in) and its planned trials without one.
pub(super) fn view(run: &LoadedRun, opts: &Options) -> RunView {
    let mut dirs: Vec<&String> = run.record_dirs.values().collect();
    dirs.extend(run.other_records.iter().map(|r| &r.dir));
    let mut trials: Vec<TrialView> = dirs
        .into_iter()
        .filter_map(|name| {
            let rec =
                crate::record::any::load_any(&run.dir.join(name).join(crate::record::RECORD_FILE))
                    .ok()?;
            Some(trial_view(&run.dir, name, &rec, opts))
        })
        .collect();
    trials.sort_by(|a, b| a.header.trial.cmp(&b.header.trial));
    // Every planned trial without a counted record — never recorded, or a record that
    // failed its check — is shown, as a failure.
    let counted: std::collections::BTreeSet<&str> =
        trials.iter().map(|t| t.header.trial.as_str()).collect();
    let missing = run
        .manifest
        .as_ref()
        .map(|m| {
            m.planned()
                .into_iter()
                .filter(|(trial, _)| !counted.contains(trial))
                .map(|(trial, p)| MissingView {
                    trial: trial.to_owned(),
                    suite: p.first.suite.clone(),
                    recorded: !run.missing.iter().any(|x| x.trial == trial),
                    reason: run.missing_reason(trial),
                })
                .collect()
        })
        .unwrap_or_default();
    RunView {
        trials,
        missing,
        problems: run.problems.clone(),
    }
}

/// Milliseconds since the Unix epoch of an RFC 3339 time a record holds (0 when it is
/// not one).
pub(crate) fn epoch_ms(rfc3339: &str) -> u64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.timestamp_millis().max(0) as u64)
        .unwrap_or(0)
}

/// A tool call's arguments as a JSON object (ATIF and Inspect want one): the object
/// the model wrote, else `{"input": <what it wrote>}`.
pub(crate) fn arguments_object(text: &str) -> serde_json::Value {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(other) => serde_json::json!({ "input": other }),
        Err(_) => serde_json::json!({ "input": text }),
    }
}

/// The output of the agent's tool call that answers the model's call `id` (by id, else
/// the next unused call of the same name), marking it used.
pub(crate) fn match_output(
    tools: &[ToolCallRecord],
    used: &mut [bool],
    id: &str,
    name: &str,
) -> Option<usize> {
    let by_id = tools
        .iter()
        .enumerate()
        .position(|(i, t)| !used[i] && !id.is_empty() && t.id == id);
    let found = by_id.or_else(|| {
        tools
            .iter()
            .enumerate()
            .position(|(i, t)| !used[i] && t.name == name)
    })?;
    used[found] = true;
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_become_objects_and_outputs_match_by_id_then_name() {
        assert_eq!(arguments_object("{\"a\":1}"), serde_json::json!({"a": 1}));
        assert_eq!(arguments_object("[1]"), serde_json::json!({"input": [1]}));
        assert_eq!(
            arguments_object("{oops"),
            serde_json::json!({"input": "{oops"})
        );
        let t = |id: &str, name: &str| {
            crate::evidence::test_support::tool_call(id, name, serde_json::Value::Null)
        };
        let tools = vec![t("a", "bash"), t("b", "bash"), t("c", "read")];
        let mut used = vec![false; 3];
        assert_eq!(match_output(&tools, &mut used, "b", "bash"), Some(1));
        assert_eq!(match_output(&tools, &mut used, "zz", "bash"), Some(0));
        assert_eq!(match_output(&tools, &mut used, "zz", "bash"), None);
        assert_eq!(match_output(&tools, &mut used, "", "read"), Some(2));
    }
}
