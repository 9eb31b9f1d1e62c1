//! Inspect AI eval logs (the JSON log format, version 2), one per suite: the suite is the
//! task, a trial group is a sample and each repeat an epoch. A sample's messages are the
//! prompt, each metered model call's reply with its tool calls, and each call's output;
//! its score is gauntlet's verdict (its value the verdict's word, its explanation the
//! rule's reason); its `model_usage` is the proxy's metering. A planned trial without a
//! counted record is a sample whose score is `no record`, with an error.
//!
//! Names follow Inspect's own (`<created>_<task>_<id>.json`), so `inspect view` lists
//! them; keys are written in Inspect's order, `samples` last, which its header-only
//! reader needs.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::view::{arguments_object, match_output, pretty, RunView, TrialView};

const SCORER: &str = "gauntlet";

#[derive(Serialize)]
struct Log {
    version: u32,
    status: &'static str,
    eval: Value,
    plan: Value,
    results: Value,
    stats: Value,
    invalidated: bool,
    tags: Vec<String>,
    metadata: Value,
    samples: Vec<Value>,
}

#[derive(Default, Clone, Copy)]
struct Usage {
    input: u64,
    output: u64,
    cached: u64,
    cost: Option<f64>,
    priced: bool,
}

impl Usage {
    fn of(t: &TrialView) -> Usage {
        Usage {
            input: t.tokens_in,
            output: t.tokens_out,
            cached: t.tokens_cached,
            cost: t.cost,
            priced: t.cost.is_some(),
        }
    }

    fn add(&mut self, o: Usage) {
        self.input += o.input;
        self.output += o.output;
        self.cached += o.cached;
        self.cost = match (self.cost, o.cost) {
            (Some(a), Some(b)) => Some(a + b),
            (None, Some(b)) if !self.priced => Some(b),
            _ => None,
        };
        self.priced = true;
    }

    fn json(&self) -> Value {
        let mut v = json!({
            "input_tokens": self.input,
            "output_tokens": self.output,
            "total_tokens": self.input + self.output,
            "input_tokens_cache_read": self.cached,
        });
        if let Some(c) = self.cost {
            v["total_cost"] = json!(c);
        }
        v
    }
}

/// `(file name, text)` per suite of the run.
pub fn logs(run: &RunView) -> Vec<(String, String)> {
    let mut by_suite: BTreeMap<&str, Vec<&TrialView>> = BTreeMap::new();
    for t in &run.trials {
        by_suite.entry(t.header.suite.as_str()).or_default().push(t);
    }
    let mut out = Vec::new();
    for suite in crate::spec::Suite::ALL.map(|s| s.as_str()) {
        let Some(trials) = by_suite.get(suite) else {
            continue;
        };
        let missing: Vec<&super::view::MissingView> =
            run.missing.iter().filter(|m| m.suite == suite).collect();
        out.push(log(suite, trials, &missing));
    }
    out
}

/// Inspect's file-name form of a time: `2026-01-15T10-00-00-00-00`.
fn clean(time: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(time)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H-%M-%S-00-00")
                .to_string()
        })
        .unwrap_or_else(|_| time.replace([':', '+', '.'], "-"))
}

fn log(
    suite: &str,
    trials: &[&TrialView],
    missing: &[&super::view::MissingView],
) -> (String, String) {
    let first = trials[0];
    let h = &first.header;
    let created = trials
        .iter()
        .map(|t| t.header.started_at.as_str())
        .min()
        .unwrap_or(&h.started_at)
        .to_owned();
    let completed = trials
        .iter()
        .map(|t| t.header.finished_at.as_str())
        .max()
        .unwrap_or(&h.finished_at)
        .to_owned();
    let mut run_ids: Vec<&str> = trials.iter().map(|t| t.header.run_id.as_str()).collect();
    run_ids.sort();
    run_ids.dedup();
    let run_id = run_ids.join("+");
    let task = format!("gauntlet-{suite}");
    let epochs = trials.iter().map(|t| t.repeat).max().unwrap_or(1);
    let mut samples: Vec<Value> = trials.iter().map(|t| sample(t)).collect();
    samples.extend(missing.iter().map(|m| {
        let (id, epoch) = crate::plan::names::group_of(&m.trial);
        json!({
            "id": id,
            "epoch": epoch,
            "input": "",
            "target": "",
            "scores": { SCORER: { "value": m.verdict(), "explanation": m.why() } },
            "metadata": { "trial": m.trial },
            "error": {
                "message": m.why(),
                "traceback": "",
                "traceback_ansi": "",
            },
        })
    }));
    samples.sort_by(|a, b| {
        (a["epoch"].as_u64(), a["id"].as_str()).cmp(&(b["epoch"].as_u64(), b["id"].as_str()))
    });
    let mut sample_ids: Vec<&str> = samples.iter().filter_map(|s| s["id"].as_str()).collect();
    sample_ids.sort();
    sample_ids.dedup();
    let mut usage: BTreeMap<String, Usage> = BTreeMap::new();
    for t in trials {
        usage
            .entry(t.header.config.model.clone())
            .or_default()
            .add(Usage::of(t));
    }
    let n = samples.len();
    let passed = trials.iter().filter(|t| t.passed).count();
    let log = Log {
        version: 2,
        status: "success",
        eval: json!({
            "eval_id": format!("{run_id}-{suite}"),
            "run_id": run_id,
            "created": created,
            "task": task,
            "task_id": suite,
            "task_version": 0,
            "task_attribs": {},
            "task_args": {},
            "task_args_passed": {},
            "solver_args_passed": {},
            "dataset": { "name": suite, "samples": sample_ids.len(), "sample_ids": sample_ids },
            "model": h.config.model,
            "model_generate_config": {},
            "model_args": {},
            "config": { "epochs": epochs },
            "packages": { "gauntlet": crate::VERSION },
            "metadata": {
                "agent": h.config.agent,
                "agent_version": h.config.agent_version,
                "mode": h.config.mode,
                "n": h.config.n,
                "commit": h.config.commit,
                "illustration": h.config.mode == crate::config::Mode::Scripted,
            },
        }),
        plan: json!({
            "name": "plan",
            "steps": [{ "solver": format!("gauntlet/{}", h.config.agent), "params": {}, "params_passed": {} }],
            "config": {},
        }),
        results: json!({
            "total_samples": n,
            "completed_samples": trials.len(),
            "scores": [{
                "name": SCORER,
                "scorer": SCORER,
                "scored_samples": n,
                "unscored_samples": 0,
                "params": {},
                "metrics": {
                    "pass_rate": {
                        "name": "pass_rate",
                        "value": if n == 0 { 0.0 } else { passed as f64 / n as f64 },
                        "params": {},
                    },
                },
            }],
        }),
        stats: json!({
            "started_at": created,
            "completed_at": completed,
            "model_usage": usage.iter().map(|(m, u)| (m.clone(), u.json())).collect::<serde_json::Map<_, _>>(),
            "role_usage": {},
            "connection_limit_history": [],
        }),
        invalidated: false,
        tags: vec!["gauntlet".into(), suite.into()],
        metadata: json!({ "exported_by": "gauntlet export --format inspect" }),
        samples,
    };
    (
        format!("{}_{task}_{}.json", clean(&created), sanitize(&run_id)),
        pretty(&log),
    )
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn sample(t: &TrialView) -> Value {
    let h = &t.header;
    let mut messages = Vec::new();
    let mut input = String::new();
    let mut last_text = String::new();
    for turn in &t.turns {
        let prompt = turn.prompt.clone().unwrap_or_default();
        if input.is_empty() {
            input = prompt.clone();
        }
        messages.push(json!({ "role": "user", "content": prompt, "source": "input" }));
        let mut used = vec![false; turn.tools.len()];
        for call in &turn.calls {
            let model = call
                .usage
                .as_ref()
                .and_then(|u| u.model.clone())
                .unwrap_or_else(|| h.config.model.clone());
            let mut m = json!({
                "role": "assistant",
                "content": call.reply.text,
                "source": "generate",
                "model": model,
            });
            if !call.reply.text.is_empty() {
                last_text = call.reply.text.clone();
            }
            let mut outputs = Vec::new();
            if !call.reply.calls.is_empty() {
                let calls: Vec<Value> = call
                    .reply
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let id = if c.id.is_empty() {
                            format!("call-{}-{i}", messages.len())
                        } else {
                            c.id.clone()
                        };
                        if let Some(k) = match_output(&turn.tools, &mut used, &c.id, &c.name) {
                            let tool = &turn.tools[k];
                            outputs.push(json!({
                                "role": "tool",
                                "content": tool.output.as_ref().map(|p| p.text.clone()).unwrap_or_default(),
                                "tool_call_id": id,
                                "function": c.name,
                            }));
                        }
                        json!({
                            "id": id,
                            "function": c.name,
                            "arguments": arguments_object(&c.arguments),
                            "type": "function",
                        })
                    })
                    .collect();
                m["tool_calls"] = Value::Array(calls);
            }
            messages.push(m);
            messages.extend(outputs);
        }
        if let Some(f) = &turn.final_message {
            last_text = f.clone();
        }
    }
    let usage = Usage::of(t);
    json!({
        "id": t.group,
        "epoch": t.repeat,
        "input": input,
        "target": t.target,
        "messages": messages,
        "output": {
            "model": h.config.model,
            "choices": [{
                "message": { "role": "assistant", "content": last_text, "source": "generate" },
                "stop_reason": "stop",
            }],
            "completion": last_text,
            "usage": usage.json(),
        },
        "scores": {
            SCORER: {
                "value": t.verdict,
                "answer": if t.passed { "passed" } else { "failed" },
                "explanation": t.reason,
                "metadata": { "passed": t.passed },
            },
        },
        "metadata": {
            "trial": h.trial,
            "suite": h.suite.as_str(),
            "record": format!("{}/{}", t.dir, crate::record::RECORD_FILE),
            "wall_ms": h.wall_ms,
            "evidence": t.evidence,
        },
        "store": {},
        "events": [],
        "model_usage": { h.config.model.clone(): usage.json() },
        "started_at": h.started_at,
        "completed_at": h.finished_at,
        "total_time": h.wall_ms as f64 / 1000.0,
        "attachments": {},
    })
}
