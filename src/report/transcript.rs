//! `transcript.html` beside every record: one trial, readable from the prompt to the
//! verdict. What the agent was asked, every model call as the proxy relayed it, every
//! tool call the agent's own stream reports, its claim, every gate run (its target
//! revealed only here, after the fact), the suite's own evidence, and the verdict with
//! the rule that decided it.
//!
//! A projection like every page: rendered from the record and the raw files it names,
//! the same bytes every time, never written anywhere but this one file. Self-contained
//! and offline: the same Content-Security-Policy as the run page, no script, links only
//! to the trial's own raw files and back to the run page.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use serde_json::Value;

use super::svg::esc;
use crate::evidence::normalize::{AgentReport, ToolCallRecord};
use crate::evidence::observed_execs::ExecFindings;
use crate::evidence::usage::UsageEntry;
use crate::evidence::{AgentRun, ClaimsFound, Gate, GateTarget, ProcessEnd, RawFile};
use crate::record::any::{AnyRecord, Projection};
use crate::record::challenge::ChallengeRecord;
use crate::record::scorecard::{ProcessRaw, ScorecardRecord};
use crate::record::QaRecord;

/// The page's name in every trial directory.
pub const TRANSCRIPT_HTML: &str = "transcript.html";

/// The most of one text (a prompt, a body, a stream) shown on the page; the raw file
/// behind it is linked.
const SHOWN: u64 = 64 << 10;

const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'";

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}\
pre{background:#f6f6f6;padding:.5em;overflow-x:auto;white-space:pre-wrap;word-break:break-word;max-height:40em;overflow-y:auto}\
details{margin:.25em 0 .75em}summary{cursor:pointer}.ok{color:#2e7d32}.bad{color:#b00020}.muted{color:#666}\
.verdict{border:2px solid #999;padding:.5em 1em;margin:1em 0}";

/// Where a page reads raw files from, and how it links to them.
struct Page<'a> {
    dir: &'a Path,
    to_raw: &'a str,
}

/// Render the page of `rec`, whose raw files are in `trial_dir`; `to_raw` leads from
/// where the page is written to `trial_dir` (empty when the page is beside the record).
pub fn render(rec: &AnyRecord, trial_dir: &Path, to_raw: &str) -> String {
    let page = Page {
        dir: trial_dir,
        to_raw,
    };
    let p = &page;
    let header = rec.header();
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{} — gauntlet transcript</title><style>{STYLE}</style></head><body>\n\
<p><a href=\"../{}\">← the run's results</a></p>\n<h1><code>{}</code></h1>\n",
        esc(&header.trial),
        super::base::REPORT_HTML,
        esc(&header.trial)
    );
    let c = &header.config;
    let _ = writeln!(
        o,
        "<table><tr><th>suite</th><td>{}</td><th>agent</th><td>{} {}</td></tr>\
<tr><th>model</th><td>{}</td><th>mode</th><td>{}</td></tr>\
<tr><th>started</th><td>{}</td><th>wall</th><td>{} ms</td></tr>\
<tr><th>sandbox</th><td>{}</td><th>run</th><td>{}</td></tr></table>",
        header.suite.as_str(),
        esc(&c.agent),
        esc(&c.agent_version),
        esc(&c.model),
        format!("{:?}", c.mode).to_lowercase(),
        esc(&header.started_at),
        header.wall_ms,
        format!("{:?}", c.sandbox).to_lowercase(),
        esc(&header.run_id),
    );
    // Each suite's body, written by its own function.
    let with = |write: &dyn Fn(&mut String)| {
        let mut body = String::new();
        write(&mut body);
        body
    };
    o.push_str(&rec.project(Projection {
        qa: |r: &QaRecord| with(&|b| qa(b, r, p)),
        challenge: |r: &ChallengeRecord| with(&|b| challenge(b, r, p)),
        scorecard: |r: &ScorecardRecord| with(&|b| scorecard(b, r, p)),
    }));
    raw_list(&mut o, p, rec);
    o.push_str("</body></html>\n");
    o
}

fn qa(o: &mut String, r: &QaRecord, p: &Page<'_>) {
    let v = &r.verdict;
    let _ = writeln!(
        o,
        "<div class=\"verdict\"><strong class=\"{}\">{}</strong> — {}<br><span class=\"muted\">capability <code>{}</code> of <code>{}</code> ({}); the rule: a claim is verified only when its own test passes {} fresh runs against the app and fails against the capability's mutant</span></div>",
        if v.passed { "ok" } else { "bad" },
        esc(v.outcome.as_str()),
        esc(&v.reason),
        esc(&r.spec.capability),
        esc(&r.spec.app),
        esc(&format!("{:?}", r.spec.kind).to_lowercase()),
        r.header.config.n,
    );
    if let Some(e) = &r.evidence.setup_error {
        let _ = writeln!(o, "<p class=\"bad\">setup failed: {}</p>", esc(e));
    }
    if let Some(prompt) = &r.evidence.prompt {
        section(o, "What the agent was asked");
        text_file(o, p, prompt, true);
    }
    let parsed = super::base::agent_report(&r.header.config.agent, p.dir, &r.evidence.agent.stdout);
    agent_run(
        o,
        p,
        r.evidence.calls.as_ref(),
        &r.evidence.usage,
        &r.evidence.agent,
    );
    if let Some(p) = &parsed {
        tools(o, &p.1);
        section(o, "The claim");
        match crate::evidence::parse_claims(p.0.as_deref().unwrap_or("")) {
            ClaimsFound::One(claim) => {
                let _ = writeln!(
                    o,
                    "<pre>{}</pre>",
                    esc(&serde_json::to_string_pretty(&claim).unwrap_or_default())
                );
            }
            ClaimsFound::None => o.push_str("<p>No claim block in the final message.</p>\n"),
            ClaimsFound::Malformed(why) => {
                let _ = writeln!(o, "<p class=\"bad\">A malformed claim: {}</p>", esc(&why));
            }
            ClaimsFound::Several(n) => {
                let _ = writeln!(o, "<p class=\"bad\">{n} claim blocks: no claim.</p>");
            }
        }
        if let Some(text) = &p.0 {
            details(o, "the final message", text);
        }
    }
    if let Some(g) = &r.evidence.gate {
        gate(o, g, p);
    }
    if let Some(hit) = &r.evidence.budget_hit {
        let _ = writeln!(o, "<p class=\"bad\">Limit hit: {}</p>", esc(hit));
    }
}

fn challenge(o: &mut String, r: &ChallengeRecord, p: &Page<'_>) {
    let v = &r.verdict;
    let _ = writeln!(
        o,
        "<div class=\"verdict\"><strong class=\"{}\">task {} / evaluation {}</strong><br>outcome: {}<br>validity: {}{}</div>",
        if v.passed { "ok" } else { "bad" },
        v.task_outcome.as_str(),
        v.evaluation_validity.as_str(),
        esc(&v.outcome_reason),
        esc(&v.validity_reason),
        if v.provisional {
            "<br><span class=\"muted\">provisional: a manual audit decides</span>"
        } else {
            ""
        }
    );
    if let Some(e) = &r.evidence.setup_error {
        let _ = writeln!(o, "<p class=\"bad\">setup failed: {}</p>", esc(e));
    }
    audit(o, p, &r.header.trial);
    section(o, "What the agent was asked");
    let prompt = &r.provenance.prompt;
    let _ = writeln!(
        o,
        "<p class=\"muted\">profile <code>{}</code>; rendered prompt {} ({})</p>",
        r.provenance.profile,
        link(p, &prompt.path),
        esc(&prompt.sha256)
    );
    excerpt_into(o, p.dir, &prompt.path);
    agent_run(
        o,
        p,
        r.evidence.calls.as_ref(),
        &r.evidence.usage,
        &r.evidence.agent,
    );
    tools(o, &r.derived.agent_report);
    if let Some(text) = &r.derived.final_message {
        details(o, "the final message (the agent's report)", text);
    }
    section(o, "World assertions");
    o.push_str("<table><tr><th>assertion</th><th>holds</th><th>detail</th></tr>\n");
    for a in v.world_assertions.iter().chain(&v.report_assertions) {
        let value = serde_json::to_value(a).unwrap_or_default();
        let _ = writeln!(
            o,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            esc(value["id"].as_str().unwrap_or("?")),
            esc(&value["passed"].to_string()),
            esc(&value.to_string())
        );
    }
    o.push_str("</table>\n");
    section(o, "Policy: what the agent read");
    let pol = &r.derived.policy;
    let _ = writeln!(
        o,
        "<p>{} shell commands ({} opaque), {} app commands; disallowed reads: {}; escalated to product code: {}</p>",
        pol.shell_commands,
        pol.opaque_shell_commands.len(),
        pol.app_commands,
        if pol.disallowed_reads.is_empty() {
            "none".to_string()
        } else {
            esc(&pol.disallowed_reads.join(", "))
        },
        pol.escalated_to_product_code
    );
    if let Some(observed) = &r.derived.observed {
        details(
            o,
            "what the sandbox saw it open",
            &serde_json::to_string_pretty(observed).unwrap_or_default(),
        );
    }
    if let Some(e) = &r.derived.execs {
        execs(o, "What the kernel saw executed", e);
    }
    if let Some(runs) = &r.evidence.relayed_runs {
        details(
            o,
            &format!("what the app itself ran (relayed, {} run(s))", runs.len()),
            &serde_json::to_string_pretty(runs).unwrap_or_default(),
        );
    }
}

/// What the kernel saw a scorecard process's sandbox execute, compared with the tool
/// calls of its stream; `None` without an observation, or when a raw file cannot be
/// read as the raw-file check reads it.
fn process_execs(dir: &Path, process: &ProcessRaw, agent: &str) -> Option<ExecFindings> {
    let raw = process.observation.as_ref()?;
    let file = crate::record::raw::open_plain_file(dir, &raw.path)?;
    let observation = crate::evidence::observed::parse(&mut std::io::BufReader::new(file));
    let calls = crate::evidence::streams::AgentKind::from_name(agent)
        .zip(crate::record::raw::open_plain_file(
            dir,
            &process.stdout.path,
        ))
        .map(|(kind, out)| {
            crate::evidence::streams::parser(kind)(&mut std::io::BufReader::new(out))
                .report
                .tool_calls
        })
        .unwrap_or_default();
    Some(crate::evidence::observed_execs::assess(
        &observation,
        &[],
        &calls,
        crate::evidence::observed_execs::NamedPrograms::default(),
        crate::evidence::observed_execs::AppWorld::default(),
    ))
}

/// What the kernel saw executed, beside what the agent says it ran.
fn execs(o: &mut String, title: &str, e: &ExecFindings) {
    section(o, title);
    if let Some(why) = &e.incomplete {
        let _ = writeln!(
            o,
            "<p class=\"bad\">the observation of execs is incomplete: {}</p>",
            esc(why)
        );
    }
    if !e.required.is_empty() {
        o.push_str("<table><tr><th>required run</th><th>seen</th><th>exec</th></tr>\n");
        for r in &e.required {
            let _ = writeln!(
                o,
                "<tr><td><code>{}</code> <span class=\"muted\">{} {}</span></td><td class=\"{}\">{}</td><td>{}</td></tr>",
                esc(&r.id),
                esc(r.program.as_deref().unwrap_or("(no app program)")),
                esc(&match &r.input {
                    Some(f) => format!("{} (on {f})", r.args.join(" ")),
                    None => r.args.join(" "),
                }),
                if r.seen.is_some() { "ok" } else { "bad" },
                r.seen.is_some(),
                match (&r.seen, &r.not_met) {
                    (Some(x), _) => format!("{} ms, pid {}: <code>{}</code>", x.ms, x.pid, esc(&x.argv.join(" "))),
                    (None, Some(why)) => esc(why),
                    (None, None) => String::new(),
                }
            );
        }
        o.push_str("</table>\n");
    }
    if !e.outputs.is_empty() {
        o.push_str("<table><tr><th>required output</th><th>holds</th><th>why</th></tr>\n");
        for x in &e.outputs {
            let _ = writeln!(
                o,
                "<tr><td><code>{}</code> <span class=\"muted\">{}</span></td><td class=\"{}\">{}</td><td>{}</td></tr>",
                esc(&x.id),
                esc(&x.file),
                if x.holds { "ok" } else { "bad" },
                x.holds,
                esc(&x.why)
            );
        }
        o.push_str("</table>\n");
    }
    if e.claimed_not_observed.is_empty() {
        o.push_str("<p>every program the agent's tool calls name was seen executed</p>\n");
    } else {
        o.push_str("<p class=\"bad\">claimed by the agent's tool calls, never executed:</p><ul>\n");
        for c in e.claimed_not_observed.iter().take(200) {
            let _ = writeln!(
                o,
                "<li>call {}: <code>{}</code> in <code>{}</code></li>",
                c.call,
                esc(&c.program),
                esc(&cut(&c.command))
            );
        }
        o.push_str("</ul>\n");
    }
    let mut lines = String::new();
    for x in &e.execs {
        let _ = writeln!(
            lines,
            "{:>7} ms  pid {:<6} {}: {}{}",
            x.ms,
            x.pid,
            x.path,
            x.argv.join(" "),
            if x.refused {
                "  (refused: unreadable)"
            } else if x.own_root {
                "  (in a root of its own)"
            } else {
                ""
            }
        );
    }
    details(
        o,
        &format!(
            "every exec, in order ({})",
            e.execs.len() as u64 + e.execs_not_kept
        ),
        &lines,
    );
}

/// A challenge's manual audit, which is authoritative over the automatic verdict: the
/// current one and every one it superseded, or why there is none to read.
fn audit(o: &mut String, p: &Page<'_>, trial: &str) {
    section(o, "Manual audit");
    match super::challenge::read_audit(p.dir) {
        Ok(Some(a)) if a.trial != trial => {
            let _ = writeln!(
                o,
                "<p class=\"bad\">{} names trial <code>{}</code>, not this one: ignored (the verdict above stands).</p>",
                link(p, super::challenge::AUDIT_FILE),
                esc(&a.trial)
            );
        }
        Ok(None) => o.push_str(
            "<p class=\"muted\">Not audited yet: the verdict above is provisional. Record one with <code>gauntlet audit &lt;trial dir&gt; --outcome … --validity … --note …</code>.</p>\n",
        ),
        Ok(Some(a)) => {
            o.push_str("<table><tr><th></th><th>outcome</th><th>validity</th><th>audited at</th><th>note</th></tr>\n");
            let rows = std::iter::once(("current (authoritative)", &a.current))
                .chain(a.history.iter().map(|h| ("superseded", h)));
            for (which, e) in rows {
                let _ = writeln!(
                    o,
                    "<tr><th>{which}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    e.outcome.as_str(),
                    e.validity.as_str(),
                    esc(&e.audited_at),
                    esc(&e.note)
                );
            }
            let _ = writeln!(
                o,
                "</table><p class=\"muted\">{}</p>",
                link(p, super::challenge::AUDIT_FILE)
            );
        }
        Err(e) => {
            let _ = writeln!(
                o,
                "<p class=\"bad\">the manual audit cannot be read: {}</p>",
                esc(&e.to_string())
            );
        }
    }
}

fn scorecard(o: &mut String, r: &ScorecardRecord, p: &Page<'_>) {
    let v = &r.verdict;
    let _ = writeln!(
        o,
        "<div class=\"verdict\"><strong class=\"{}\">{}</strong> — {}<br><span class=\"muted\">probe <code>{}</code> ({}); the rule: every observation holds and nothing was planted</span></div>",
        if v.passed { "ok" } else { "bad" },
        esc(v.outcome.as_str()),
        esc(&v.reason),
        esc(&r.probe.probe.id),
        esc(&r.probe.probe.dimension),
    );
    section(o, "Observations");
    o.push_str("<table><tr><th>observation</th><th>holds</th><th>why</th></tr>\n");
    for ob in &r.result.observations {
        let _ = writeln!(
            o,
            "<tr><td><code>{}</code></td><td class=\"{}\">{}</td><td>{}</td></tr>",
            esc(&ob.id),
            if ob.holds { "ok" } else { "bad" },
            ob.holds,
            esc(&ob.reason)
        );
    }
    o.push_str("</table>\n");
    if let Some(e) = &r.evidence.setup_error {
        let _ = writeln!(o, "<p class=\"bad\">setup failed: {}</p>", esc(e));
    }
    section(o, "Turns");
    for t in &r.evidence.turns {
        let _ = writeln!(
            o,
            "<h3><code>{}</code> <span class=\"muted\">(session {})</span></h3>",
            esc(&t.label),
            t.session
        );
        details(o, "what the agent was asked", &t.prompt);
        match &t.reply {
            Some(reply) => details(o, "its reply", reply),
            None => {
                let _ = writeln!(
                    o,
                    "<p class=\"bad\">no reply: {}</p>",
                    esc(t.problem.as_deref().unwrap_or("none given"))
                );
            }
        }
    }
    for process in &r.processes {
        calls(o, p, process.calls.as_ref(), process.usage(&r.usage));
        process_section(
            o,
            p,
            &format!("Process `{}`", process.label),
            &process.command,
            &process.end,
            &process.stdout,
            &process.stderr,
        );
        if let Some(e) = process_execs(p.dir, process, &r.header.config.agent) {
            execs(
                o,
                &format!("What the kernel saw `{}` execute", process.label),
                &e,
            );
        }
    }
    if !r.evidence.events.is_empty() {
        details(
            o,
            "what the sinks observed",
            &serde_json::to_string_pretty(&r.evidence.events).unwrap_or_default(),
        );
    }
}

fn section(o: &mut String, title: &str) {
    let _ = writeln!(o, "<h2>{}</h2>", esc(title));
}

fn details(o: &mut String, summary: &str, text: &str) {
    let _ = writeln!(
        o,
        "<details><summary>{}</summary><pre>{}</pre></details>",
        esc(summary),
        esc(&cut(text))
    );
}

fn link(p: &Page<'_>, rel: &str) -> String {
    format!(
        "<a href=\"{}{}\"><code>{}</code></a>",
        esc(p.to_raw),
        esc(rel),
        esc(rel)
    )
}

/// `text` cut to what the page shows.
fn cut(text: &str) -> String {
    if text.len() as u64 <= SHOWN {
        return text.to_owned();
    }
    let mut end = SHOWN as usize;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} bytes in all)", &text[..end], text.len())
}

/// The first [`SHOWN`] bytes of the raw file `rel`, read only if it is a regular file
/// inside the trial directory (the page is rendered by whoever reads a run).
fn excerpt(dir: &Path, rel: &str) -> Option<String> {
    let path = Path::new(rel);
    if path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    let full = dir.join(path);
    let meta = std::fs::symlink_metadata(&full).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&full)
        .ok()?
        .take(SHOWN)
        .read_to_end(&mut bytes)
        .ok()?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if meta.len() > SHOWN {
        let _ = write!(text, "\n… ({} bytes in all)", meta.len());
    }
    Some(text)
}

fn excerpt_into(o: &mut String, dir: &Path, rel: &str) {
    match excerpt(dir, rel) {
        Some(text) => {
            let _ = writeln!(o, "<pre>{}</pre>", esc(&text));
        }
        None => {
            let _ = writeln!(o, "<p class=\"bad\">{} cannot be read.</p>", esc(rel));
        }
    }
}

fn text_file(o: &mut String, p: &Page<'_>, raw: &RawFile, open: bool) {
    let _ = writeln!(
        o,
        "<p class=\"muted\">{} ({} bytes, {})</p>",
        link(p, &raw.path),
        raw.bytes,
        esc(&raw.sha256)
    );
    if open {
        excerpt_into(o, p.dir, &raw.path);
    } else if let Some(text) = excerpt(p.dir, &raw.path) {
        details(o, &raw.path, &text);
    }
}

/// The model calls the agent made, then its process: a qa trial's and a challenge
/// trial's pages show the agent's run alike.
fn agent_run(
    o: &mut String,
    p: &Page<'_>,
    calls_file: Option<&RawFile>,
    usage: &[UsageEntry],
    agent: &AgentRun,
) {
    calls(o, p, calls_file, usage);
    process_section(
        o,
        p,
        "The agent's run",
        &agent.command,
        &agent.end,
        &agent.stdout,
        &agent.stderr,
    );
}

fn process_section(
    o: &mut String,
    p: &Page<'_>,
    title: &str,
    command: &[String],
    end: &ProcessEnd,
    stdout: &RawFile,
    stderr: &RawFile,
) {
    section(o, title);
    let _ = writeln!(
        o,
        "<p><code>{}</code><br>{}, {} ms; stdout {} ({} bytes), stderr {} ({} bytes)</p>",
        esc(&command.join(" ")),
        esc(&end.describe()),
        end.duration_ms,
        link(p, &stdout.path),
        stdout.bytes_seen,
        link(p, &stderr.path),
        stderr.bytes_seen
    );
}

fn tools(o: &mut String, report: &AgentReport) {
    section(
        o,
        &format!(
            "Tool calls ({}, {} failed), as the agent's stream reports them",
            report.tool_calls.len(),
            report.failed_tool_calls
        ),
    );
    if report.tool_calls.is_empty() {
        o.push_str("<p>None.</p>\n");
        return;
    }
    for (i, call) in report.tool_calls.iter().enumerate() {
        tool_call(o, i, call);
    }
    if report.dropped.tool_calls > 0 {
        let _ = writeln!(
            o,
            "<p class=\"muted\">{} more tool calls were counted but not kept.</p>",
            report.dropped.tool_calls
        );
    }
}

fn tool_call(o: &mut String, i: usize, call: &ToolCallRecord) {
    let input = match &call.input_preview {
        Some(p) => p.text.clone(),
        None => serde_json::to_string_pretty(&call.input).unwrap_or_default(),
    };
    let output = call
        .output
        .as_ref()
        .map(|p| {
            if p.truncated {
                format!("{}\n… ({} bytes in all)", p.text, p.bytes)
            } else {
                p.text.clone()
            }
        })
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "<details><summary>{i}. <code>{}</code> <span class=\"{}\">{}</span></summary><p>input</p><pre>{}</pre><p>output</p><pre>{}</pre></details>",
        esc(&call.name),
        if call.failed { "bad" } else { "muted" },
        esc(&call.status),
        esc(&cut(&input)),
        esc(&cut(&output))
    );
}

fn gate(o: &mut String, g: &Gate, p: &Page<'_>) {
    section(
        o,
        &format!(
            "The gate: {} green runs against the app required, one against the mutant must fail{}",
            g.required,
            if g.specificity.as_ref().is_some_and(|s| !s.drawn.is_empty()) {
                ", and each against an independent mutant must pass"
            } else {
                ""
            }
        ),
    );
    if let Some(s) = &g.specificity {
        let independent = if s.independent.is_empty() {
            "none: no other capability's mutant leaves this one intact, so specificity could not be checked".to_string()
        } else {
            s.independent.join(", ")
        };
        let _ = writeln!(
            o,
            "<p>Mutants of other capabilities that leave this one intact, per the app's independence matrix ({}): {}. Drawn for this gate (at most {}): {}.</p>",
            link(p, &s.matrix.path),
            esc(&independent),
            s.limit,
            esc(&if s.drawn.is_empty() {
                "none".to_string()
            } else {
                s.drawn.join(", ")
            })
        );
    }
    if let Some(why) = &g.not_run {
        let _ = writeln!(o, "<p class=\"bad\">Not run: {}</p>", esc(why));
        return;
    }
    o.push_str("<p class=\"muted\">Each run was blind: it could not tell the app from the mutant. The targets are revealed here, after the fact.</p>\n<table><tr><th>#</th><th>target</th><th>command</th><th>end</th><th>ms</th><th>stdout</th><th>stderr</th></tr>\n");
    for (i, run) in g.runs.iter().enumerate() {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            match (run.target, &run.mutant_of) {
                (GateTarget::App, _) => "app".to_string(),
                (GateTarget::Mutant, _) => "mutant".to_string(),
                (GateTarget::Independent, Some(of)) =>
                    format!("independent: the mutant of <code>{}</code>", esc(of)),
                (GateTarget::Independent, None) => "independent".to_string(),
            },
            esc(&run.command),
            if run.passed() == (run.target != GateTarget::Mutant) {
                "ok"
            } else {
                "bad"
            },
            esc(&run.describe()),
            run.end.duration_ms,
            link(p, &run.stdout.path),
            link(p, &run.stderr.path)
        );
    }
    o.push_str("</table>\n");
    for (i, run) in g.runs.iter().enumerate() {
        for raw in [&run.stdout, &run.stderr] {
            if raw.bytes > 0 {
                if let Some(text) = excerpt(p.dir, &raw.path) {
                    details(o, &format!("run {}: {}", i + 1, raw.path), &text);
                }
            }
        }
    }
}

/// Every model call of one proxy, as relayed: request (messages and tools offered) and
/// response (for a stream, the reply assembled from its events), with the proxy's
/// metering beside it.
fn calls(o: &mut String, p: &Page<'_>, file: Option<&RawFile>, usage: &[UsageEntry]) {
    let Some(file) = file else {
        if !usage.is_empty() {
            section(o, &format!("Model calls ({})", usage.len()));
            o.push_str("<p class=\"muted\">The bodies were not kept (a record from before they were).</p>\n");
            usage_table(o, usage);
        }
        return;
    };
    let text = excerpt_whole(p.dir, &file.path);
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    section(
        o,
        &format!("Model calls ({}), as the proxy relayed them", lines.len()),
    );
    let _ = writeln!(
        o,
        "<p class=\"muted\">{} ({} bytes, {})</p>",
        link(p, &file.path),
        file.bytes,
        esc(&file.sha256)
    );
    if !usage.is_empty() {
        usage_table(o, usage);
    }
    for line in &lines {
        let seq = line["seq"].as_u64().unwrap_or(0);
        let entry = usage.iter().find(|u| u.seq == seq);
        let request: Value = serde_json::from_str(line["request"]["body"].as_str().unwrap_or(""))
            .unwrap_or(Value::Null);
        let response = line["response"]["body"].as_str().unwrap_or("");
        let stream = entry
            .map(|e| e.stream)
            .unwrap_or_else(|| response.starts_with("data:") || response.starts_with("event:"));
        let _ = writeln!(
            o,
            "<details><summary>call {seq}: {} {}{}</summary>",
            esc(entry.map(|e| e.protocol.as_str()).unwrap_or("")),
            entry.map(|e| e.status.to_string()).unwrap_or_default(),
            entry
                .map(|e| format!(
                    ", {} in / {} out tokens, {} ms{}",
                    opt(e.input_tokens),
                    opt(e.output_tokens),
                    e.duration_ms,
                    if e.stream { ", streamed" } else { "" }
                ))
                .unwrap_or_default()
        );
        let tools: Vec<String> = request["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t["name"]
                    .as_str()
                    .or(t["function"]["name"].as_str())
                    .map(str::to_owned)
            })
            .collect();
        let _ = writeln!(
            o,
            "<p>tools offered: {}</p>",
            if tools.is_empty() {
                "none".into()
            } else {
                esc(&tools.join(", "))
            }
        );
        let messages = request
            .get("messages")
            .or_else(|| request.get("input"))
            .cloned()
            .unwrap_or(Value::Null);
        let _ = writeln!(
            o,
            "<p>sent ({} bytes{}):</p><pre>{}</pre>",
            line["request"]["bytes"],
            kept_note(&line["request"]),
            esc(&cut(
                &serde_json::to_string_pretty(&messages).unwrap_or_default()
            ))
        );
        if stream {
            let _ = writeln!(
                o,
                "<p>reply, assembled from the stream ({} bytes{}):</p><pre>{}</pre>",
                line["response"]["bytes"],
                kept_note(&line["response"]),
                esc(&cut(&assemble(response)))
            );
            details(o, "the stream as relayed", response);
        } else {
            let pretty = serde_json::from_str::<Value>(response)
                .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default())
                .unwrap_or_else(|_| response.to_owned());
            let _ = writeln!(
                o,
                "<p>reply ({} bytes{}):</p><pre>{}</pre>",
                line["response"]["bytes"],
                kept_note(&line["response"]),
                esc(&cut(&pretty))
            );
        }
        o.push_str("</details>\n");
    }
}

fn kept_note(part: &Value) -> String {
    match (part["bytes"].as_u64(), part["kept"].as_u64()) {
        (Some(all), Some(kept)) if kept < all => format!(", the first {kept} kept"),
        _ => String::new(),
    }
}

fn opt(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn usage_table(o: &mut String, usage: &[UsageEntry]) {
    o.push_str("<table><tr><th>seq</th><th>protocol</th><th>status</th><th>source</th><th>in</th><th>out</th><th>ms</th><th>error</th></tr>\n");
    for u in usage {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            u.seq,
            esc(&u.protocol),
            u.status,
            esc(&u.source),
            opt(u.input_tokens),
            opt(u.output_tokens),
            u.duration_ms,
            esc(u.error.as_deref().unwrap_or(""))
        );
    }
    o.push_str("</table>\n");
}

/// A calls file whole (it is bounded by the proxy): the page parses every line.
fn excerpt_whole(dir: &Path, rel: &str) -> String {
    let path = dir.join(rel);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => std::fs::read_to_string(&path).unwrap_or_default(),
        _ => String::new(),
    }
}

/// The text and tool calls of a streamed reply, from its events, whatever the
/// protocol ([`super::reply`]).
pub fn assemble(stream: &str) -> String {
    super::reply::parse(stream).render()
}

/// Every raw file the record names, found the way the raw-file verifier finds them
/// (`record::raw::named`), so that the page lists exactly what rescore checks.
fn raw_list(o: &mut String, p: &Page<'_>, rec: &AnyRecord) {
    let value = serde_json::to_value(rec).unwrap_or_default();
    section(o, "Raw files");
    o.push_str("<table><tr><th>file</th><th>bytes</th><th>sha256</th></tr>\n");
    for (path, bytes, sha256) in crate::record::raw::named(&value) {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{bytes}</td><td><code>{}</code></td></tr>",
            link(p, &path),
            esc(&sha256)
        );
    }
    o.push_str("</table>\n");
}

/// Render and write the transcript page of every record under `run_dir` into
/// `<pages>/<trial dir>/transcript.html` (beside the record when `pages` is the run
/// directory); returns how many were written. A record that cannot be read has none:
/// the run page lists it as a problem.
pub fn write_all(run_dir: &Path, pages: &Path) -> Result<usize, super::base::ReportError> {
    let files =
        crate::record::find_records(run_dir).map_err(|e| super::base::ReportError::Invalid {
            file: run_dir.to_path_buf(),
            reason: e.to_string(),
        })?;
    let mut written = 0;
    for file in files {
        let Ok(rec) = crate::record::any::load_any(&file) else {
            continue;
        };
        let dir = file.parent().unwrap_or(Path::new("."));
        let Some(name) = dir.file_name() else {
            continue;
        };
        let out = pages.join(name);
        std::fs::create_dir_all(&out).map_err(super::base::io(&out))?;
        let page = out.join(TRANSCRIPT_HTML);
        // Never through a link an agent could have left in place of the page.
        if std::fs::symlink_metadata(&page).is_ok_and(|m| !m.is_file()) {
            continue;
        }
        let to_raw = super::base::relative_dir(&out, dir);
        std::fs::write(&page, render(&rec, dir, &to_raw)).map_err(super::base::io(&page))?;
        written += 1;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_replies_are_assembled_in_every_protocol() {
        let chat = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\",\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"c\"}}]}}]}\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\":1}\"}}]}}]}\n\ndata: [DONE]\n\n";
        assert_eq!(assemble(chat), "Hello\n[tool call] bash {\"c\":1}");
        let responses = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n";
        assert_eq!(assemble(responses), "Hi");
        let messages = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"tool_use\",\"name\":\"Bash\"}}\n\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"partial_json\":\"{}\"}}\n\n";
        assert_eq!(assemble(messages), "\n[tool call] Bash {}");
    }
}
