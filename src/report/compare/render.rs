//! The comparison's pages: `compare.md` (a summary fit for a pull-request comment),
//! `compare.html` (every trial group, linked to both runs' transcripts) and
//! `compare.json`, all rendered from one [`Comparison`] through one list of rows per
//! table, so that they cannot drift apart.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::{
    interval_points, points, Better, Change, Comparison, Count, GroupChange, TrialFacts,
    COMPARE_HTML, COMPARE_JSON, COMPARE_MD, SUMMARY_ROWS,
};
use crate::report::base::ReportError;
use crate::report::markdown::{pct_ci, OPEN_TRIAL_ROWS, SHOWN_REPEATS};
use crate::report::svg::esc;

fn verdicts(v: &[TrialFacts]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    if v.len() <= SHOWN_REPEATS {
        return v
            .iter()
            .map(|t| t.verdict.as_str())
            .collect::<Vec<_>>()
            .join(", ");
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in v {
        *counts.entry(t.verdict.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = counts.iter().map(|(o, n)| format!("{n} {o}")).collect();
    format!("{} of {} repeats", parts.join(", "), v.len())
}

fn mean_tokens(v: &[TrialFacts]) -> Option<f64> {
    (!v.is_empty()).then(|| {
        v.iter()
            .map(|t| (t.tokens_in + t.tokens_out) as f64)
            .sum::<f64>()
            / v.len() as f64
    })
}

fn mean_wall(v: &[TrialFacts]) -> Option<f64> {
    let w: Vec<u64> = v.iter().filter_map(|t| t.wall_ms).collect();
    (!w.is_empty()).then(|| w.iter().sum::<u64>() as f64 / w.len() as f64)
}

fn signed(d: Option<f64>, unit: &str) -> String {
    match d {
        Some(d) => format!("{d:+.0}{unit}").replace('-', "−"),
        None => "-".into(),
    }
}

fn usd(v: Option<f64>, unpriced: &[String]) -> String {
    crate::report::markdown::usd(v, unpriced)
}

/// The rows every page shows, as cells: one list, so that markdown and HTML agree.
fn rate_rows(c: &Comparison) -> Vec<[String; 5]> {
    c.rates
        .iter()
        .map(|r| {
            let count = |x: &Count| format!("{} ({}/{})", pct_ci(x.rate, x.ci), x.hits, x.n);
            [
                format!("{} {}", r.suite, r.rate),
                count(&r.baseline),
                count(&r.candidate),
                match (r.delta, r.delta_ci) {
                    (Some(d), Some(i)) => format!("{} {}", points(d), interval_points(i)),
                    _ => "-".into(),
                },
                if r.regression {
                    "regression".into()
                } else {
                    match r.better {
                        Better::Higher => "higher is better".into(),
                        Better::Lower => "lower is better".into(),
                    }
                },
            ]
        })
        .collect()
}

fn cost_rows(c: &Comparison) -> Vec<[String; 4]> {
    let mut rows = Vec::new();
    for s in &c.costs {
        let (b, k) = (&s.baseline, &s.candidate);
        let delta_u = |x: u64, y: u64| signed(Some(y as f64 - x as f64), "");
        rows.push([
            format!("{} tokens in / out", s.suite),
            format!("{} / {}", b.tokens_in, b.tokens_out),
            format!("{} / {}", k.tokens_in, k.tokens_out),
            format!(
                "{} / {}",
                delta_u(b.tokens_in, k.tokens_in),
                delta_u(b.tokens_out, k.tokens_out)
            ),
        ]);
        rows.push([
            format!("{} cost", s.suite),
            usd(b.cost_usd, &b.unpriced_models),
            usd(k.cost_usd, &k.unpriced_models),
            match (b.cost_usd, k.cost_usd) {
                (Some(x), Some(y)) => format!("{:+.6}", y - x).replace('-', "−"),
                _ => "-".into(),
            },
        ]);
        rows.push([
            format!("{} wall-clock, median per trial / total (ms)", s.suite),
            format!(
                "{} / {}",
                crate::report::markdown::ms(b.wall_ms_median),
                b.wall_ms_total
            ),
            format!(
                "{} / {}",
                crate::report::markdown::ms(k.wall_ms_median),
                k.wall_ms_total
            ),
            format!(
                "{} / {}",
                signed(
                    b.wall_ms_median.zip(k.wall_ms_median).map(|(x, y)| y - x),
                    ""
                ),
                delta_u(b.wall_ms_total, k.wall_ms_total)
            ),
        ]);
    }
    rows
}

fn group_row(g: &GroupChange) -> [String; 6] {
    let pass = |v: &[TrialFacts]| format!("{}/{}", GroupChange::passes(v), v.len());
    [
        g.group.clone(),
        g.change.as_str().to_owned(),
        format!("{} ({})", pass(&g.baseline), verdicts(&g.baseline)),
        format!("{} ({})", pass(&g.candidate), verdicts(&g.candidate)),
        signed(
            mean_tokens(&g.baseline)
                .zip(mean_tokens(&g.candidate))
                .map(|(x, y)| y - x),
            "",
        ),
        signed(
            mean_wall(&g.baseline)
                .zip(mean_wall(&g.candidate))
                .map(|(x, y)| y - x),
            " ms",
        ),
    ]
}

const GROUP_HEAD: [&str; 6] = [
    "trial",
    "change",
    "baseline passes (verdicts)",
    "candidate passes (verdicts)",
    "Δ tokens per trial",
    "Δ wall per trial",
];

fn headline(c: &Comparison) -> String {
    let changed = c
        .groups
        .iter()
        .filter(|g| g.change != Change::Unchanged)
        .count();
    if c.regression {
        format!(
            "**Regression.** The candidate regressed against the baseline ({} finding{}); {} of {} trial groups changed.",
            c.reasons.len(),
            if c.reasons.len() == 1 { "" } else { "s" },
            changed,
            c.groups.len()
        )
    } else {
        format!(
            "**No regression.** {changed} of {} trial groups changed; no change passes the regression rule.",
            c.groups.len()
        )
    }
}

const RULE: &str = "Regression rule: a trial group that passed in every baseline repeat and in no candidate repeat; a baseline trial with a counted record that has none in the candidate; a group with a false verification in the candidate and none in the baseline; candidate records identical to the baseline's; or a pass rate or verified rate that fell, or a false-verification rate that rose, with the 95% interval of the difference (Newcombe's hybrid score interval) excluding zero. The baseline's trials are what is compared; a trial without a counted record is a failed error trial.";

/// Text from a run (a file name, a verdict's reason, a setting) as one markdown table
/// cell: no pipe or newline ends it, and no HTML, link, image or emphasis in it renders,
/// so a run cannot make a pull-request comment say what the comparison did not.
fn md_cell(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '\n' | '\r' => o.push(' '),
            '|' | '[' | ']' | '*' | '_' | '`' | '\\' | '!' | '#' | '~' => {
                o.push('\\');
                o.push(ch);
            }
            c => o.push(c),
        }
    }
    o
}

/// Text from a run inside a code span: nothing renders there, but a backtick would end
/// the span and a pipe the table cell.
fn md_code(s: &str) -> String {
    format!(
        "`{}`",
        s.replace('`', "'")
            .replace('|', "\\|")
            .replace(['\n', '\r'], " ")
    )
}

fn md_table<const N: usize>(o: &mut String, head: [&str; N], rows: &[[String; N]]) {
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(o, "|{}", "---|".repeat(N));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
}

/// `compare.md`: a summary fit for a pull-request comment.
pub fn markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## gauntlet compare\n");
    let _ = writeln!(
        o,
        "Baseline {} · candidate {}\n",
        md_code(&c.baseline.path),
        md_code(&c.candidate.path)
    );
    let _ = writeln!(o, "{}\n", headline(c));
    for r in &c.reasons {
        let _ = writeln!(o, "- {}", r.replace(['\n', '\r'], " "));
    }
    if !c.reasons.is_empty() {
        o.push('\n');
    }
    if c.baseline.illustration || c.candidate.illustration {
        let _ = writeln!(
            o,
            "_A scripted-model run is a harness illustration: the comparison shows the harness, not an agent._\n"
        );
    }
    md_table(
        &mut o,
        ["rate", "baseline", "candidate", "Δ [95% interval]", ""],
        &rate_rows(c),
    );
    let changed: Vec<&GroupChange> = c
        .groups
        .iter()
        .filter(|g| g.change != Change::Unchanged)
        .collect();
    let _ = writeln!(o, "\n### Changed trials ({})\n", changed.len());
    if changed.is_empty() {
        let _ = writeln!(o, "Every trial group has the same verdicts in both runs.");
    } else {
        let rows: Vec<[String; 6]> = changed
            .iter()
            .take(SUMMARY_ROWS)
            .map(|g| group_row(g))
            .collect();
        md_table(&mut o, GROUP_HEAD, &rows);
        if changed.len() > SUMMARY_ROWS {
            let _ = writeln!(
                o,
                "\n… and {} more changed groups ({COMPARE_HTML} lists every one).",
                changed.len() - SUMMARY_ROWS
            );
        }
    }
    let _ = writeln!(o, "\n### Tokens, cost and wall-clock\n");
    md_table(&mut o, ["", "baseline", "candidate", "Δ"], &cost_rows(c));
    if !c.settings.is_empty() {
        let _ = writeln!(o, "\n### What differs between the runs\n");
        let rows: Vec<[String; 3]> = c
            .settings
            .iter()
            .map(|d| [d.setting.clone(), d.baseline.clone(), d.candidate.clone()])
            .collect();
        md_table(&mut o, ["setting", "baseline", "candidate"], &rows);
    }
    for (side, run) in [("baseline", &c.baseline), ("candidate", &c.candidate)] {
        if !run.problems.is_empty() {
            let _ = writeln!(o, "\n### Files of the {side} that were not counted\n");
            for p in &run.problems {
                let _ = writeln!(o, "- {}: {}", md_code(&p.file), md_cell(&p.cause));
            }
        }
    }
    if !c.notes.is_empty() {
        let _ = writeln!(o, "\n### Notes\n");
        for n in &c.notes {
            let _ = writeln!(o, "- {}", n.replace(['\n', '\r'], " "));
        }
    }
    let _ = writeln!(o, "\n<sub>{RULE}</sub>");
    o
}

fn html_table<const N: usize>(o: &mut String, head: [&str; N], rows: &[[String; N]]) {
    o.push_str("<table><tr>");
    for h in head {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    o.push_str("</tr>\n");
    for r in rows {
        o.push_str("<tr>");
        for c in r {
            let _ = write!(o, "<td>{}</td>", esc(c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}

/// `compare.html`: the same findings, every trial group, and links to both runs'
/// transcripts where their pages were written. `out` is where the page goes, so that
/// the links are relative and the pages can be moved together.
pub fn html(c: &Comparison, out: &Path) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>gauntlet compare</title><style>{}</style></head><body>\n<h1>gauntlet compare</h1>\n",
        crate::report::html::CSP,
        crate::report::html::STYLE
    );
    let _ = writeln!(
        o,
        "<p>Baseline <code>{}</code> · candidate <code>{}</code></p>",
        esc(&c.baseline.path),
        esc(&c.candidate.path)
    );
    let head = headline(c)
        .replace("**Regression.**", "\u{1}Regression.\u{2}")
        .replace("**No regression.**", "\u{1}No regression.\u{2}");
    let _ = writeln!(
        o,
        "<p class=\"{}\">{}</p>",
        if c.regression { "warn" } else { "ok" },
        esc(&head)
            .replace('\u{1}', "<strong>")
            .replace('\u{2}', "</strong>")
    );
    if !c.reasons.is_empty() {
        o.push_str("<ul>");
        for r in &c.reasons {
            let _ = write!(o, "<li>{}</li>", esc(r));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("<h2>Rates</h2>\n");
    html_table(
        &mut o,
        ["rate", "baseline", "candidate", "Δ [95% interval]", ""],
        &rate_rows(c),
    );
    let link_base = |run: &str| crate::report::base::relative_dir(out, Path::new(run));
    let (lb, lc) = (link_base(&c.baseline.path), link_base(&c.candidate.path));
    let links = |v: &[TrialFacts], base: &str| -> String {
        v.iter()
            .filter_map(|t| {
                t.transcript
                    .as_ref()
                    .map(|p| format!("<a href=\"{}{}\">r{}</a>", esc(base), esc(p), t.repeat))
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let group_table = |o: &mut String, groups: &[&GroupChange]| {
        o.push_str("<table><tr>");
        for h in GROUP_HEAD
            .iter()
            .chain(&["transcripts (baseline / candidate)"])
        {
            let _ = write!(o, "<th>{}</th>", esc(h));
        }
        o.push_str("</tr>\n");
        for g in groups {
            o.push_str("<tr>");
            for cell in group_row(g) {
                let _ = write!(o, "<td>{}</td>", esc(&cell));
            }
            let _ = writeln!(
                o,
                "<td>{} / {}</td></tr>",
                links(&g.baseline, &lb),
                links(&g.candidate, &lc)
            );
        }
        o.push_str("</table>\n");
    };
    let (changed, same): (Vec<&GroupChange>, Vec<&GroupChange>) =
        c.groups.iter().partition(|g| g.change != Change::Unchanged);
    let _ = writeln!(o, "<h2>Changed trials ({})</h2>", changed.len());
    if changed.is_empty() {
        o.push_str("<p>Every trial group has the same verdicts in both runs.</p>\n");
    } else {
        group_table(&mut o, &changed);
    }
    let _ = writeln!(o, "<h2>Unchanged trials ({})</h2>", same.len());
    if !same.is_empty() {
        let open = if same.len() <= OPEN_TRIAL_ROWS {
            " open"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "<details{open}><summary>{} trial groups with the same verdicts</summary>",
            same.len()
        );
        group_table(&mut o, &same);
        o.push_str("</details>\n");
    }
    o.push_str("<h2>Tokens, cost and wall-clock</h2>\n");
    html_table(&mut o, ["", "baseline", "candidate", "Δ"], &cost_rows(c));
    if !c.settings.is_empty() {
        o.push_str("<h2>What differs between the runs</h2>\n");
        let rows: Vec<[String; 3]> = c
            .settings
            .iter()
            .map(|d| [d.setting.clone(), d.baseline.clone(), d.candidate.clone()])
            .collect();
        html_table(&mut o, ["setting", "baseline", "candidate"], &rows);
    }
    for (side, run) in [("baseline", &c.baseline), ("candidate", &c.candidate)] {
        if !run.problems.is_empty() {
            let _ = writeln!(o, "<h2>Files of the {side} that were not counted</h2><ul>");
            for p in &run.problems {
                let _ = write!(
                    o,
                    "<li><code>{}</code>: {}</li>",
                    esc(&p.file),
                    esc(&p.cause)
                );
            }
            o.push_str("</ul>\n");
        }
    }
    if !c.notes.is_empty() {
        o.push_str("<h2>Notes</h2><ul>");
        for n in &c.notes {
            let _ = write!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>\n");
    }
    let _ = writeln!(o, "<p><small>{}</small></p>\n</body></html>", esc(RULE));
    o
}

/// `compare.json` text: pretty, newline-terminated.
pub fn json(c: &Comparison) -> String {
    // Plain data with string keys: serializing cannot fail.
    let mut s = serde_json::to_string_pretty(c).unwrap_or_default();
    s.push('\n');
    s
}

/// Write `compare.md`, `compare.html` and `compare.json` into `out` (created if
/// missing; never one of the two runs, which a comparison must not change).
pub fn write(c: &Comparison, out: &Path) -> Result<(), ReportError> {
    std::fs::create_dir_all(out).map_err(crate::report::base::io(out))?;
    for (name, text) in [
        (COMPARE_MD, markdown(c)),
        (COMPARE_HTML, html(c, out)),
        (COMPARE_JSON, json(c)),
    ] {
        let file = out.join(name);
        std::fs::write(&file, text).map_err(crate::report::base::io(&file))?;
    }
    Ok(())
}
