//! One ATIF trajectory per trial (Agent Trajectory Interchange Format, Harbor's
//! `ATIF-v1.8`, published as the pydantic models of `harbor.models.trajectories`).
//!
//! Steps: a `user` step per agent process with what it was asked; an `agent` step per
//! model call the proxy metered — the reply's text and tool calls, each call's output
//! (from the agent's normalized account, matched by the call's id, else by name in
//! order) as its observation, and the call's metered tokens and cost as the step's
//! metrics; an `agent` step with no model call for each tool call the agent reported
//! that no reply asked for; and a closing `system` step with gauntlet's verdict.
//! Every key ATIF does not define lives under `extra`, since the format rejects
//! unknown keys.

use serde::Serialize;

use super::view::{arguments_object, match_output, pretty, RunView, TrialView};

const SCHEMA_VERSION: &str = "ATIF-v1.8";

#[derive(Serialize)]
struct Trajectory {
    schema_version: &'static str,
    session_id: String,
    agent: Agent,
    steps: Vec<Step>,
    #[serde(skip_serializing_if = "Option::is_none")]
    notes: Option<String>,
    final_metrics: FinalMetrics,
    extra: serde_json::Value,
}

#[derive(Serialize)]
struct Agent {
    name: String,
    version: String,
    model_name: String,
}

#[derive(Serialize)]
struct Step {
    step_id: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
    source: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observation: Option<Observation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    llm_call_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<serde_json::Value>,
}

#[derive(Serialize)]
struct ToolCall {
    tool_call_id: String,
    function_name: String,
    arguments: serde_json::Value,
}

#[derive(Serialize)]
struct Observation {
    results: Vec<ObservationResult>,
}

#[derive(Serialize)]
struct ObservationResult {
    source_call_id: String,
    content: String,
}

#[derive(Serialize)]
struct Metrics {
    prompt_tokens: u64,
    completion_tokens: u64,
    cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
}

#[derive(Serialize)]
struct FinalMetrics {
    total_prompt_tokens: u64,
    total_completion_tokens: u64,
    total_cached_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_cost_usd: Option<f64>,
    total_steps: usize,
}

/// `(file name, text)` per trial.
pub fn trajectories(run: &RunView) -> Vec<(String, String)> {
    run.trials
        .iter()
        .map(|t| (format!("{}.trajectory.json", t.dir), pretty(&trajectory(t))))
        .collect()
}

fn step(source: &'static str, message: String) -> Step {
    Step {
        step_id: 0,
        timestamp: None,
        source,
        message,
        model_name: None,
        tool_calls: None,
        observation: None,
        metrics: None,
        llm_call_count: None,
        extra: None,
    }
}

fn output_text(t: &crate::evidence::normalize::ToolCallRecord) -> String {
    match &t.output {
        Some(p) if p.truncated => format!(
            "{}\n… ({} bytes in all, sha256 {})",
            p.text, p.bytes, p.sha256
        ),
        Some(p) => p.text.clone(),
        None => format!("(no output; status `{}`)", t.status),
    }
}

fn trajectory(t: &TrialView) -> Trajectory {
    let h = &t.header;
    let mut steps = Vec::new();
    for turn in &t.turns {
        let mut ask = step(
            "user",
            turn.prompt.clone().unwrap_or_else(|| {
                if turn.label == "background" {
                    "(the background mode: no prompt; it ran through the idle windows)".into()
                } else {
                    "(the prompt was not kept)".into()
                }
            }),
        );
        ask.timestamp = Some(h.started_at.clone());
        ask.extra = Some(serde_json::json!({ "gauntlet.process": turn.label }));
        steps.push(ask);
        let mut used = vec![false; turn.tools.len()];
        for call in &turn.calls {
            let mut s = step("agent", call.reply.text.clone());
            s.model_name = Some(
                call.usage
                    .as_ref()
                    .and_then(|u| u.model.clone())
                    .unwrap_or_else(|| h.config.model.clone()),
            );
            s.llm_call_count = Some(1);
            if let Some(u) = &call.usage {
                s.metrics = Some(Metrics {
                    prompt_tokens: u.input_tokens.unwrap_or(0),
                    completion_tokens: u.output_tokens.unwrap_or(0),
                    cached_tokens: u.cached_input_tokens.unwrap_or(0),
                    cost_usd: call.cost,
                });
                s.extra = Some(serde_json::json!({
                    "gauntlet.proxy_seq": u.seq,
                    "gauntlet.protocol": u.protocol,
                    "gauntlet.stream": u.stream,
                    "gauntlet.duration_ms": u.duration_ms,
                    "gauntlet.status": u.status,
                }));
            }
            if !call.reply.calls.is_empty() {
                let mut calls = Vec::new();
                let mut results = Vec::new();
                for (i, c) in call.reply.calls.iter().enumerate() {
                    let id = if c.id.is_empty() {
                        format!("call-{}-{i}", steps.len() + 1)
                    } else {
                        c.id.clone()
                    };
                    if let Some(k) = match_output(&turn.tools, &mut used, &c.id, &c.name) {
                        results.push(ObservationResult {
                            source_call_id: id.clone(),
                            content: output_text(&turn.tools[k]),
                        });
                    }
                    calls.push(ToolCall {
                        tool_call_id: id,
                        function_name: c.name.clone(),
                        arguments: arguments_object(&c.arguments),
                    });
                }
                s.tool_calls = Some(calls);
                s.observation = Some(Observation { results });
            }
            steps.push(s);
        }
        // What the agent reports running that no reply asked for (a CLI's own tools,
        // or calls whose bodies were not kept).
        for (k, tool) in turn.tools.iter().enumerate().filter(|(k, _)| !used[*k]) {
            let mut s = step("agent", tool.title.clone().unwrap_or_default());
            s.llm_call_count = Some(0);
            let id = if tool.id.is_empty() {
                format!("tool-{k}")
            } else {
                tool.id.clone()
            };
            s.tool_calls = Some(vec![ToolCall {
                tool_call_id: id.clone(),
                function_name: tool.name.clone(),
                arguments: match &tool.input {
                    v @ serde_json::Value::Object(_) => v.clone(),
                    serde_json::Value::Null => serde_json::json!({
                        "input": tool.input_preview.as_ref().map(|p| p.text.clone()),
                    }),
                    other => serde_json::json!({ "input": other }),
                },
            }]);
            s.observation = Some(Observation {
                results: vec![ObservationResult {
                    source_call_id: id,
                    content: output_text(tool),
                }],
            });
            s.extra = Some(serde_json::json!({
                "gauntlet.source": "the agent's own stream; no metered reply asked for it",
            }));
            steps.push(s);
        }
    }
    let mut verdict = step(
        "system",
        format!("gauntlet verdict: {} — {}", t.verdict, t.reason),
    );
    verdict.timestamp = Some(h.finished_at.clone());
    verdict.extra = Some(serde_json::json!({
        "gauntlet.verdict": t.verdict,
        "gauntlet.passed": t.passed,
        "gauntlet.evidence": t.evidence,
    }));
    steps.push(verdict);
    for (i, s) in steps.iter_mut().enumerate() {
        s.step_id = i + 1;
    }
    Trajectory {
        schema_version: SCHEMA_VERSION,
        session_id: format!("{}/{}", h.run_id, h.trial),
        agent: Agent {
            name: h.config.agent.clone(),
            version: h.config.agent_version.clone(),
            model_name: h.config.model.clone(),
        },
        final_metrics: FinalMetrics {
            total_prompt_tokens: t.tokens_in,
            total_completion_tokens: t.tokens_out,
            total_cached_tokens: t.tokens_cached,
            total_cost_usd: t.cost,
            total_steps: steps.len(),
        },
        steps,
        notes: Some(
            "Exported by gauntlet from a trial record: tokens are the metering proxy's, never the agent's word; the last step is gauntlet's verdict, derived from the recorded evidence."
                .into(),
        ),
        extra: serde_json::json!({
            "gauntlet.trial": h.trial,
            "gauntlet.suite": h.suite.as_str(),
            "gauntlet.repeat": t.repeat,
            "gauntlet.wall_ms": h.wall_ms,
            "gauntlet.record": format!("{}/{}", t.dir, crate::record::RECORD_FILE),
        }),
    }
}
