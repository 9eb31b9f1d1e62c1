//! Per-trial challenge reports: `metrics.json`, `final-report.md`, and the manual
//! audit (`manual-audit.yaml`), which every report treats as authoritative.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::evidence::normalize::{Preview, ReportedUsage};
use crate::evidence::observed_execs::ExecFindings;
use crate::evidence::observed_policy::ObservedPolicy;
use crate::evidence::policy::PolicyFindings;
use crate::record::challenge::ChallengeRecord;
use crate::score::challenge::{TaskOutcome, Validity};
use crate::spec::Suite;

pub const METRICS_FILE: &str = "metrics.json";
pub const FINAL_REPORT: &str = "final-report.md";
pub const AUDIT_FILE: &str = "manual-audit.yaml";
/// Bytes of a tool output shown in `metrics.json` (the whole is in the raw stdout).
pub const OUTPUT_PREVIEW: usize = 512;

/// Why a challenge trial's report files (`metrics.json`, `final-report.md`,
/// `manual-audit.yaml`) or a run's challenge table could not be read or written; the
/// run's pages fail with [`ReportError`](super::base::ReportError).
#[derive(Debug, thiserror::Error)]
pub enum ChallengeReportError {
    #[error("{file}: {reason}")]
    Io { file: PathBuf, reason: String },
    #[error(transparent)]
    Record(#[from] crate::record::RecordError),
}

fn io_err(file: &Path, e: impl std::fmt::Display) -> ChallengeReportError {
    ChallengeReportError::Io {
        file: file.to_path_buf(),
        reason: e.to_string(),
    }
}

/// One tool call, normalized for reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallMetrics {
    pub ordinal: usize,
    pub call_id: String,
    pub tool: String,
    pub status: String,
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    pub input: Value,
    pub title: Option<String>,
    pub metadata: Option<Value>,
    pub output_bytes: Option<u64>,
    pub output_preview: Option<String>,
    pub output_sha256: Option<String>,
    pub paths: Vec<String>,
    pub failed: bool,
}

/// Tokens and cost as the agent reported them (labelled so: never metered).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentObserved {
    pub label: String,
    pub total: Option<u64>,
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub reasoning: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
    pub cost_usd: Option<serde_json::Number>,
    pub per_step: Vec<ReportedUsage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProxyMetered {
    pub calls: u64,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub assistant_steps: u64,
    pub tool_calls: u64,
    pub tool_calls_by_tool: BTreeMap<String, u64>,
    pub failed_tool_calls: u64,
    pub shell_commands: u64,
    pub file_reads_and_searches: u64,
    pub distinct_paths_read: u64,
    /// Commands that drive the app under test (`curl`, `$APP_BIN`, `gauntlet flow`).
    pub app_commands: u64,
    pub unknown_events: BTreeMap<String, u64>,
    pub garbage_lines: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub trial: String,
    pub challenge: String,
    pub profile: String,
    pub task_outcome: TaskOutcome,
    pub evaluation_validity: Validity,
    pub duration_ms: u64,
    pub process_result: String,
    pub agent_observed: AgentObserved,
    pub proxy_metered: ProxyMetered,
    pub counts: Counts,
    pub tool_calls: Vec<ToolCallMetrics>,
    /// The agent's account: the paths its event stream names.
    pub policy: PolicyFindings,
    /// What the kernel saw opened, and where it disagrees with the account. Absent for
    /// records made before opens were observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedPolicy>,
    /// What the kernel saw executed: every program with its arguments, the runs the
    /// challenge requires, and the programs the account names that never ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execs: Option<ExecFindings>,
}

fn is_shell(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "shell" | "bash" | "exec_command" | "command_execution" | "local_shell"
    )
}

/// The metrics of a record: a pure function of it.
pub fn metrics(rec: &ChallengeRecord) -> Metrics {
    let report = &rec.derived.agent_report;
    let policy = &rec.derived.policy;
    let u = &report.reported_usage;
    let parts = [
        u.input_tokens,
        u.output_tokens,
        u.reasoning_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
    ];
    let total = parts
        .iter()
        .any(Option::is_some)
        .then(|| parts.iter().flatten().sum());
    let mut by_tool = BTreeMap::new();
    let mut tool_calls = Vec::new();
    for (i, c) in report.tool_calls.iter().enumerate() {
        *by_tool.entry(c.name.clone()).or_insert(0u64) += 1;
        let out = c.output.as_ref();
        tool_calls.push(ToolCallMetrics {
            ordinal: i,
            call_id: c.id.clone(),
            tool: c.name.clone(),
            status: c.status.clone(),
            started_ms: c.started_ms,
            ended_ms: c.ended_ms,
            input: if c.input.is_null() {
                c.input_preview
                    .as_ref()
                    .map(|p| Value::String(p.text.clone()))
                    .unwrap_or(Value::Null)
            } else {
                c.input.clone()
            },
            title: c.title.clone(),
            metadata: c.metadata.clone(),
            output_bytes: out.map(|o| o.bytes),
            output_preview: out.map(|o| Preview::bounded_to(&o.text, OUTPUT_PREVIEW).text),
            output_sha256: out.map(|o| o.sha256.clone()),
            paths: policy
                .paths
                .iter()
                .filter(|p| p.call == i)
                .map(|p| p.resolved.clone())
                .collect(),
            failed: c.failed,
        });
    }
    let non_shell = report
        .tool_calls
        .iter()
        .filter(|c| !is_shell(&c.name))
        .count() as u64;
    let shell_reads = policy
        .paths
        .iter()
        .filter(|p| {
            matches!(
                p.access,
                crate::evidence::policy::Access::Read | crate::evidence::policy::Access::Search
            ) && report
                .tool_calls
                .get(p.call)
                .is_some_and(|c| is_shell(&c.name))
        })
        .count() as u64;
    let structured_reads = report
        .tool_calls
        .iter()
        .filter(|c| !is_shell(&c.name))
        .filter(|c| {
            let n = c.name.to_ascii_lowercase();
            n.contains("read")
                || n.contains("grep")
                || n.contains("glob")
                || n.contains("search")
                || n == "list"
                || n == "ls"
        })
        .count() as u64;
    let _ = non_shell;
    let distinct: std::collections::BTreeSet<&str> = policy
        .paths
        .iter()
        .filter(|p| {
            matches!(
                p.access,
                crate::evidence::policy::Access::Read | crate::evidence::policy::Access::Search
            )
        })
        .map(|p| p.resolved.as_str())
        .collect();
    let usage = &rec.evidence.usage;
    let sum = |f: fn(&crate::evidence::usage::UsageEntry) -> Option<u64>| -> Option<u64> {
        usage
            .iter()
            .map(f)
            .try_fold(0u64, |acc, v| v.map(|v| acc + v))
            .filter(|_| !usage.is_empty())
    };
    let end = &rec.evidence.agent.end;
    Metrics {
        trial: rec.header.trial.clone(),
        challenge: rec.provenance.challenge_id.clone(),
        profile: rec.provenance.profile.to_string(),
        task_outcome: rec.verdict.task_outcome,
        evaluation_validity: rec.verdict.evaluation_validity,
        duration_ms: end.duration_ms,
        process_result: process_result(rec),
        agent_observed: AgentObserved {
            label: format!("agent-observed ({}): as the agent's own event stream reports them; semantics vary by agent and version", report.format),
            total,
            input: u.input_tokens,
            output: u.output_tokens,
            reasoning: u.reasoning_tokens,
            cache_read: u.cache_read_tokens,
            cache_write: u.cache_write_tokens,
            cost_usd: u.cost_usd.clone(),
            per_step: report.step_usage.clone(),
        },
        proxy_metered: ProxyMetered {
            calls: usage.len() as u64,
            input_tokens: sum(|u| u.input_tokens),
            output_tokens: sum(|u| u.output_tokens),
        },
        counts: Counts {
            // Model turns: the stream's step markers, or its per-turn usage reports where
            // those are more (the gauntlet protocol marks no step without a tool call).
            assistant_steps: report.steps.max(report.step_usage.len() as u64),
            tool_calls: report.tool_calls.len() as u64,
            tool_calls_by_tool: by_tool,
            failed_tool_calls: report.failed_tool_calls,
            shell_commands: policy.shell_commands,
            file_reads_and_searches: structured_reads + shell_reads,
            distinct_paths_read: distinct.len() as u64,
            app_commands: policy.app_commands,
            unknown_events: report.unknown_events.clone(),
            garbage_lines: report.garbage_lines,
        },
        tool_calls,
        policy: policy.clone(),
        observed: rec.derived.observed.clone(),
        execs: rec.derived.execs.clone(),
    }
}

fn process_result(rec: &ChallengeRecord) -> String {
    let e = &rec.evidence;
    if let Some(s) = &e.setup_error {
        return format!("not run: {s}");
    }
    let end = &e.agent.end;
    if let Some(signal) = &end.interrupted {
        return format!("stopped when the run was interrupted ({signal})");
    }
    match (end.timed_out, end.exit_code, end.signal) {
        (true, _, _) => format!("killed at the deadline ({} s)", rec.provenance.timeout_secs),
        (_, Some(c), _) => format!("exit {c}"),
        (_, None, Some(s)) => format!("signal {s}"),
        _ => "unknown".into(),
    }
}

/// One manual audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub outcome: TaskOutcome,
    pub validity: Validity,
    pub note: String,
    pub audited_at: String,
}

/// `manual-audit.yaml`: the current audit, and every earlier one it superseded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManualAudit {
    pub trial: String,
    pub current: AuditEntry,
    #[serde(default)]
    pub history: Vec<AuditEntry>,
}

/// The manual audit of a trial directory, if any.
pub fn read_audit(trial_dir: &Path) -> Result<Option<ManualAudit>, ChallengeReportError> {
    let f = trial_dir.join(AUDIT_FILE);
    match std::fs::symlink_metadata(&f) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&f, e)),
        Ok(m) if !m.is_file() => {
            return Err(io_err(
                &f,
                "not a regular file: an audit is never read through a link",
            ))
        }
        Ok(_) => {}
    }
    // Never through a link, never a FIFO, never more than an audit could hold.
    let (bytes, more) = crate::record::raw::read_plain(trial_dir, AUDIT_FILE, AUDIT_MAX)
        .ok_or_else(|| io_err(&f, "cannot be read as a regular file"))?;
    if more {
        return Err(io_err(
            &f,
            format!("larger than {AUDIT_MAX} bytes: not a manual audit"),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| io_err(&f, format!("not UTF-8: {e}")))?;
    yaml_serde::from_str(&text)
        .map(Some)
        .map_err(|e| io_err(&f, format!("not a manual audit: {e}")))
}

/// The most bytes a `manual-audit.yaml` may hold.
const AUDIT_MAX: u64 = 1 << 20;

/// Record a manual audit for the trial in `trial_dir`: it becomes current, the previous
/// one moves into the history; then the final report is regenerated.
pub fn audit(
    trial_dir: &Path,
    outcome: TaskOutcome,
    validity: Validity,
    note: &str,
) -> Result<ManualAudit, ChallengeReportError> {
    let rec_file = trial_dir.join(crate::record::RECORD_FILE);
    let rec = crate::record::challenge::load(&rec_file)?;
    let entry = AuditEntry {
        outcome,
        validity,
        note: note.to_owned(),
        audited_at: chrono::Utc::now().to_rfc3339(),
    };
    let audit = match read_audit(trial_dir)? {
        None => ManualAudit {
            trial: rec.header.trial.clone(),
            current: entry,
            history: vec![],
        },
        Some(mut prev) => {
            let old = std::mem::replace(&mut prev.current, entry);
            prev.history.push(old);
            prev
        }
    };
    let text = yaml_serde::to_string(&audit).map_err(|e| io_err(&trial_dir.join(AUDIT_FILE), e))?;
    replace_file(&trial_dir.join(AUDIT_FILE), text.as_bytes())?;
    replace_file(
        &trial_dir.join(FINAL_REPORT),
        final_report(&rec, Some(&audit)).as_bytes(),
    )?;
    Ok(audit)
}

/// [`write_reports`] after a trial's record is written: a report that cannot be
/// generated never loses the record; why it failed is kept beside it
/// (`report-error.txt`) and said on stderr.
pub fn write_reports_after_trial(trial_dir: &Path, rec: &ChallengeRecord) {
    if let Err(e) = write_reports(trial_dir, rec) {
        let _ = std::fs::write(trial_dir.join("report-error.txt"), format!("{e}\n"));
        eprintln!(
            "gauntlet: {}: report generation failed (the record is kept): {e}",
            trial_dir.display()
        );
    }
}

/// Write `metrics.json` and `final-report.md` beside the record.
pub fn write_reports(trial_dir: &Path, rec: &ChallengeRecord) -> Result<(), ChallengeReportError> {
    let m = metrics(rec);
    let json =
        serde_json::to_vec_pretty(&m).map_err(|e| io_err(&trial_dir.join(METRICS_FILE), e))?;
    replace_file(&trial_dir.join(METRICS_FILE), &json)?;
    let audit = read_audit(trial_dir)?;
    replace_file(
        &trial_dir.join(FINAL_REPORT),
        final_report(rec, audit.as_ref()).as_bytes(),
    )
}

/// Never a half-written report ([`crate::record::replace_whole`]).
fn replace_file(file: &Path, bytes: &[u8]) -> Result<(), ChallengeReportError> {
    crate::record::replace_whole(file, bytes).map_err(|e| io_err(file, e))
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|v| v.to_string())
        .unwrap_or_else(|| "null (not reported)".into())
}

/// `final-report.md`: the final report's eight sections. Bounded: no tool output beyond the
/// previews in `metrics.json`.
pub fn final_report(rec: &ChallengeRecord, audit: Option<&ManualAudit>) -> String {
    let m = metrics(rec);
    let p = &rec.provenance;
    let v = &rec.verdict;
    let mut s = format!("# Challenge trial `{}`\n\n", rec.header.trial);
    s += "## 1. Trial identity and prompt provenance\n\n";
    s += &format!(
        "- challenge: `{}` (manifest `{}`, {})\n",
        p.challenge_id, p.manifest_path, p.manifest_sha256
    );
    s += &format!("- instruction profile: `{}`\n", p.profile);
    for (what, l) in [
        ("base prompt", &p.prompt.base),
        ("profile fragment", &p.prompt.profile),
        ("challenge prompt", &p.prompt.challenge),
    ] {
        s += &format!("- {what}: `{}` {}\n", l.path, l.sha256);
    }
    s += &format!(
        "- rendered prompt: `{}` {}\n",
        p.prompt.path, p.prompt.sha256
    );
    match &p.bundle {
        Some(b) => {
            s += &format!(
                "- skills bundle `{}` ({}): {} files under `.agent/skills/`\n",
                b.name,
                b.manifest_sha256,
                b.files.len()
            )
        }
        None => s += "- skills bundle: none supplied\n",
    }
    s += &format!(
        "- agent: {} ({}), model `{}`, mode {:?}\n- repository commit: {} (dirty: {}), harness {}\n- run: {}, started {}\n\n",
        p.agent, p.agent_version, p.model, rec.header.config.mode, opt(&p.commit), opt(&p.dirty), p.harness_version, rec.header.run_id, rec.header.started_at
    );
    s += "## 2. Task outcome and provisional evaluation validity\n\n";
    s += &format!(
        "- task_outcome: **{}** — {}\n",
        v.task_outcome.as_str(),
        v.outcome_reason
    );
    s += &format!(
        "- evaluation_validity: **{}** — {}\n",
        v.evaluation_validity.as_str(),
        v.validity_reason
    );
    for a in &v.world_assertions {
        s += &format!(
            "- world `{}`: {} (expected {}, observed {})\n",
            a.id,
            if a.holds { "holds" } else { "FAILS" },
            a.expected,
            opt(&a.observed)
        );
    }
    s += "- provisional: the manual audit (section 8) is authoritative.\n\n";
    s += "## 3. Duration, tokens and cost\n\n";
    let ao = &m.agent_observed;
    s += &format!(
        "- duration: {} ms (trial wall {} ms); process: {}\n",
        m.duration_ms, rec.header.wall_ms, m.process_result
    );
    s += &format!(
        "- proxy-metered: {} calls, input {}, output {}\n",
        m.proxy_metered.calls,
        opt(&m.proxy_metered.input_tokens),
        opt(&m.proxy_metered.output_tokens)
    );
    s += &format!(
        "- {}: total {}, input {}, output {}, reasoning {}, cache read {}, cache write {}, cost {} USD, {} steps reported\n\n",
        ao.label, opt(&ao.total), opt(&ao.input), opt(&ao.output), opt(&ao.reasoning), opt(&ao.cache_read), opt(&ao.cache_write), opt(&ao.cost_usd), ao.per_step.len()
    );
    s += "## 4. Tools and commands\n\n";
    let c = &m.counts;
    s += &format!(
        "- assistant steps {}, tool calls {}, failed {}, shell commands {}, reads/searches {}, distinct paths read {}, app commands {}\n",
        c.assistant_steps, c.tool_calls, c.failed_tool_calls, c.shell_commands, c.file_reads_and_searches, c.distinct_paths_read, c.app_commands
    );
    for (t, n) in &c.tool_calls_by_tool {
        s += &format!("- `{t}`: {n}\n");
    }
    if !c.unknown_events.is_empty() {
        s += &format!("- unknown event types (kept raw): {:?}\n", c.unknown_events);
    }
    s +=
        "\n| # | tool | status | input (first 120 bytes) | output bytes |\n|---|---|---|---|---|\n";
    for t in &m.tool_calls {
        let input = Preview::bounded_to(&t.input.to_string(), 120)
            .text
            .replace('|', "\\|")
            .replace('\n', " ");
        s += &format!(
            "| {} | {} | {} | `{}` | {} |\n",
            t.ordinal,
            t.tool,
            t.status,
            input,
            opt(&t.output_bytes)
        );
    }
    s += "\n## 5. Observed reads and policy findings\n\n";
    s += &observed_section(rec.derived.observed.as_ref());
    s += &execs_section(rec.derived.execs.as_ref());
    s += &relayed_section(
        rec.evidence.relayed_runs.as_deref(),
        rec.evidence.relayed_runs_dropped,
    );
    s += "### The agent's account (its event stream)\n\n";
    let pol = &rec.derived.policy;
    s += &format!("- paths by category: {:?}\n", pol.by_category);
    if reads_heading(&mut s, pol.escalated_to_product_code, &pol.disallowed_reads) {
        for r in &pol.disallowed_reads {
            let why =
                crate::evidence::policy::answer_key(&rec.evidence.roots, std::path::Path::new(r))
                    .map(|why| format!(" — **{why}**, which no profile allows"))
                    .unwrap_or_default();
            s += &format!("  - `{r}`{why}\n");
        }
    }
    if pol.opaque_shell_commands.is_empty() {
        s += "- opaque shell commands: none\n\n";
    } else {
        s += "- opaque shell commands (kept for audit):\n";
        for o in &pol.opaque_shell_commands {
            s += &format!(
                "  - call {} ({}): `{}`\n",
                o.call,
                o.reason,
                Preview::bounded_to(&o.command, 200).text.replace('`', "'")
            );
        }
        s += "\n";
    }
    if let Some(o) = &rec.derived.observed {
        s += &discrepancy_section(o);
    }
    s += "## 6. Agent self-report and discrepancies\n\n";
    match (&v.self_report.raw, &v.self_report.error) {
        (Some(raw), _) => {
            s += &format!(
                "```yaml\n{}\n```\n\n",
                Preview::bounded_to(raw.trim_end(), 4096).text
            )
        }
        (None, Some(e)) => s += &format!("No self-report: {e}\n\n"),
        _ => {}
    }
    if let Some(e) = &v.self_report.error {
        s += &format!("- parse error: {e}\n");
    }
    if !v.missing_fields.is_empty() {
        s += &format!("- missing fields: {}\n", v.missing_fields.join(", "));
    }
    if v.discrepancies.is_empty() {
        s += "- discrepancies with observed evidence: none\n\n";
    } else {
        for d in &v.discrepancies {
            s += &format!(
                "- DISCREPANCY `{}`: self-reported {}, observed {} — {}\n",
                d.field,
                opt(&d.self_reported),
                opt(&d.observed),
                d.note
            );
        }
        s += "\n";
    }
    s += "## 7. Final agent answer\n\n";
    match &rec.derived.final_message {
        Some(t) => s += &format!("{}\n\n", quote(&Preview::bounded_to(t, 4096).text)),
        None => s += "(no final message)\n\n",
    }
    s += "## 8. Manual audit\n\n";
    match audit {
        None => s += "Not audited yet: the outcome above is provisional. Record one with `gauntlet audit <trial dir> --outcome … --validity … --note …`.\n",
        Some(a) => {
            s += &format!(
                "**Authoritative:** task_outcome **{}**, evaluation_validity **{}** ({}): {}\n",
                a.current.outcome.as_str(), a.current.validity.as_str(), a.current.audited_at, a.current.note
            );
            for h in a.history.iter().rev() {
                s += &format!("- superseded: {} / {} ({}): {}\n", h.outcome.as_str(), h.validity.as_str(), h.audited_at, h.note);
            }
        }
    }
    s
}

/// Items of each list the final report shows; metrics.json and the record hold all.
const REPORT_ITEMS: usize = 50;

fn observed_section(o: Option<&ObservedPolicy>) -> String {
    let title = "What the kernel saw opened";
    let Some(o) = o else {
        return format!("### {title}\n\nNo observation: this record was made before opens were observed, and its validity rests on the agent's account below.\n\n");
    };
    let mut s = observation_head(title, "observation", o.incomplete.as_deref());
    if !o.watched.is_empty() {
        s += &format!(
            "- watched: every filesystem of {} mount point(s); not watched: {}\n",
            o.watched.len(),
            if o.unwatched.is_empty() {
                "none".to_string()
            } else {
                o.unwatched.join(", ")
            }
        );
    }
    s += &format!(
        "- paths by category: {:?} (runtime is reported, never judged)\n",
        o.by_category
    );
    if reads_heading(&mut s, o.escalated_to_product_code, &o.disallowed_reads) {
        bounded_list(&mut s, &o.disallowed_reads, o.disallowed_reads.len(), |r| {
            let by = o
                .opens
                .iter()
                .find(|x| &x.path == r)
                .map(|x| {
                    format!(
                        " by `{}` (pid {})",
                        x.process.as_deref().unwrap_or("?"),
                        x.pid
                    )
                })
                .unwrap_or_default();
            let why = o
                .answer_keys
                .iter()
                .find(|k| &k.path == r)
                .map(|k| format!(" — **{}**, which no profile allows", k.why))
                .unwrap_or_default();
            format!("  - `{r}`{by}{why}\n")
        });
    }
    let total = o.opens.len() + o.opens_not_kept as usize;
    s += &format!("- opens outside the runtime ({total}):\n");
    bounded_list(&mut s, &o.opens, total, |x| {
        format!(
            "  - {} ms `{}` {} {} by `{}` (pid {}){}\n",
            x.ms,
            x.path,
            x.access.as_str(),
            x.category.as_str(),
            x.process.as_deref().unwrap_or("?"),
            x.pid,
            if x.allowed {
                ""
            } else {
                " — **not allowed**"
            }
        )
    });
    s += "\n";
    s
}

fn execs_section(e: Option<&ExecFindings>) -> String {
    let title = "What the kernel saw executed";
    let Some(e) = e else {
        return format!("### {title}\n\nNo observation: nothing saw the trial's execs.\n\n");
    };
    let mut s = observation_head(title, "observation of execs", e.incomplete.as_deref());
    for r in &e.required {
        let program = r.program.as_deref().unwrap_or("(the app's program: none)");
        match &r.seen {
            Some(x) => {
                s += &format!(
                    "- required run `{}`: seen at {} ms, pid {}: `{}`\n",
                    r.id,
                    x.ms,
                    x.pid,
                    argv_line(&x.argv)
                )
            }
            None => {
                s += &format!(
                "- required run `{}`: **never seen** (`{program}` with arguments matching {}{}){}\n",
                r.id,
                if r.args.is_empty() {
                    "anything".to_string()
                } else {
                    r.args.join(", ")
                },
                r.input
                    .as_ref()
                    .map(|f| format!(", on `{f}` as the workspace template holds it"))
                    .unwrap_or_default(),
                r.not_met
                    .as_ref()
                    .map(|why| format!(" — {}", why.replace('`', "'")))
                    .unwrap_or_default()
            )
            }
        }
    }
    for o in &e.outputs {
        s += &format!(
            "- required output `{}` (`{}`): {} — {}\n",
            o.id,
            o.file,
            if o.holds {
                "holds"
            } else {
                "**does not hold**"
            },
            o.why
        );
    }
    let total = e.execs.len() + e.execs_not_kept as usize;
    s += &format!("- programs executed ({total} exec(s)):\n");
    bounded_list(&mut s, &e.by_program, e.by_program.len(), |(program, n)| {
        format!("  - `{program}` × {n}\n")
    });
    s += &format!("- execs in order ({total}):\n");
    bounded_list(&mut s, &e.execs, total, |x| {
        format!(
            "  - {} ms pid {} `{}`{}\n",
            x.ms,
            x.pid,
            argv_line(&x.argv),
            x.unreadable
                .as_ref()
                .map(|u| format!(" (unreadable: {u})"))
                .unwrap_or_default()
        )
    });
    let claimed = e.claimed_not_observed.len() + e.claims_not_kept as usize;
    if claimed == 0 {
        s += "- claimed by the agent's tool calls, never executed: none\n\n";
    } else {
        s += &format!("- claimed by the agent's tool calls, never executed ({claimed}):\n");
        bounded_list(&mut s, &e.claimed_not_observed, claimed, |c| {
            format!(
                "  - call {}: `{}` in `{}`\n",
                c.call,
                c.program.replace('`', "'"),
                Preview::bounded_to(&c.command, 200).text.replace('`', "'")
            )
        });
        s += "\n";
    }
    s
}

/// Whether product code was read, and the heading of the reads no profile allows:
/// the agent's account and the kernel's observation state both alike. True when
/// there are reads to list under it.
fn reads_heading(s: &mut String, escalated: bool, disallowed: &[String]) -> bool {
    *s += &format!("- escalated to product code: {escalated}\n");
    if disallowed.is_empty() {
        *s += "- disallowed reads: none\n";
        false
    } else {
        *s += "- disallowed reads:\n";
        true
    }
}

/// The heading of a section on what the kernel saw, and whether the observation of
/// `what` saw everything, or why not.
fn observation_head(title: &str, what: &str, incomplete: Option<&str>) -> String {
    match incomplete {
        None => format!("### {title}\n\n- {what}: complete\n"),
        Some(why) => format!("### {title}\n\n- {what}: **incomplete** — {why}\n"),
    }
}

/// The app's own runs, as the relay made them outside the sandbox.
fn relayed_section(runs: Option<&[crate::evidence::RelayedRun]>, dropped: u64) -> String {
    let Some(runs) = runs else {
        return String::new();
    };
    let mut s = format!(
        "### What the app itself ran (relayed, {} run(s))\n\n",
        runs.len() as u64 + dropped
    );
    if runs.is_empty() {
        s += "- none: the app never ran\n\n";
        return s;
    }
    bounded_list(&mut s, runs, runs.len(), |r| {
        format!(
            "- `{}`: stdin {} bytes, stdout {} bytes ({}), exit {}{}\n",
            argv_line(&r.args),
            r.stdin_bytes,
            r.stdout_bytes,
            r.stdout_sha256,
            r.exit_code,
            r.exceeded
                .as_ref()
                .map(|e| format!(" — {e}"))
                .unwrap_or_default()
        )
    });
    s += "\n";
    s
}

/// An exec's arguments as one line, for reading (the record keeps them apart).
fn argv_line(argv: &[String]) -> String {
    Preview::bounded_to(&argv.join(" "), 300)
        .text
        .replace(['`', '\n'], "'")
}

fn discrepancy_section(o: &ObservedPolicy) -> String {
    let d = &o.discrepancies;
    let mut s = String::from("### Account and observation\n\n");
    if o.watched.is_empty() {
        s += "Nothing was observed, so nothing is compared.\n\n";
        return s;
    }
    for (title, list) in [
        ("opened, never reported", &d.observed_not_reported),
        ("reported, never opened", &d.reported_not_observed),
    ] {
        if list.is_empty() {
            s += &format!("- {title}: none\n");
        } else {
            s += &format!("- {title} ({}):\n", list.len());
            bounded_list(&mut s, list, list.len(), |p| format!("  - `{p}`\n"));
        }
    }
    if d.not_kept > 0 {
        s += &format!(
            "- further discrepancies counted, not listed: {}\n",
            d.not_kept
        );
    }
    s += "\n";
    s
}

/// Up to [`REPORT_ITEMS`] of `items`, a line each, then how many of `total` were not
/// listed.
fn bounded_list<T>(
    s: &mut String,
    items: impl IntoIterator<Item = T>,
    total: usize,
    line: impl Fn(T) -> String,
) {
    for x in items.into_iter().take(REPORT_ITEMS) {
        *s += &line(x);
    }
    if total > REPORT_ITEMS {
        *s += &format!(
            "  - … and {} more (metrics.json lists them)\n",
            total - REPORT_ITEMS
        );
    }
}

fn quote(t: &str) -> String {
    t.lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The authoritative outcome of a trial: the manual audit's when there is one.
/// An audit that names another trial (copied from its directory) is not this trial's.
pub fn authoritative(trial_dir: &Path, rec: &ChallengeRecord) -> (TaskOutcome, Validity, bool) {
    match read_audit(trial_dir) {
        Ok(Some(a)) if a.trial == rec.header.trial => (a.current.outcome, a.current.validity, true),
        _ => (
            rec.verdict.task_outcome,
            rec.verdict.evaluation_validity,
            false,
        ),
    }
}

/// A markdown table of every challenge trial in a run directory, the manual audit's
/// outcome beside the automatic one (the audit is authoritative). For the run pages:
/// `report::challenge::run_table(run_dir)`.
pub fn run_table(run_dir: &Path) -> Result<String, ChallengeReportError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(run_dir)
        .map_err(|e| io_err(run_dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(crate::record::RECORD_FILE).is_file())
        .collect();
    dirs.sort();
    let mut s = String::from(
        "| trial | task_outcome | evaluation_validity | audited | discrepancies | tokens in/out (metered) | duration |\n|---|---|---|---|---|---|---|\n",
    );
    for d in dirs {
        let file = d.join(crate::record::RECORD_FILE);
        if !crate::record::load_header(&file).is_ok_and(|h| h.suite == Suite::Challenge) {
            continue;
        }
        let Some(rec) = crate::record::any::load_any(&file)?.into_challenge() else {
            continue;
        };
        let (o, v, audited) = authoritative(&d, &rec);
        let (tin, tout) = rec.evidence.usage.iter().fold((0u64, 0u64), |(i, o), u| {
            (
                i + u.input_tokens.unwrap_or(0),
                o + u.output_tokens.unwrap_or(0),
            )
        });
        s += &format!(
            "| {} | {} | {} | {} | {} | {tin}/{tout} | {} ms |\n",
            rec.header.trial,
            o.as_str(),
            v.as_str(),
            if audited {
                "yes (authoritative)"
            } else {
                "no (provisional)"
            },
            rec.verdict.discrepancies.len(),
            rec.evidence.agent.end.duration_ms
        );
    }
    Ok(s)
}
