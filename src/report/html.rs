//! `report.html`: one self-contained page. A Content-Security-Policy forbids every
//! fetch and every script, so the page cannot depend on anything outside itself (and
//! a browser would say so on its console if it tried).

use std::fmt::Write;

use super::aggregate::Summary;
use super::markdown::{ILLUSTRATION, OPEN_TRIAL_ROWS};
use super::rows::CapabilityRow;
use super::svg::{esc, lines_over_k, stacked_bars, StackedBar};
use crate::score::Outcome;

pub(super) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

pub(super) const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}\
td.n{text-align:right}.warn{background:#fff3cd;border:1px solid #e0c36b;padding:.75em}\
.chart{display:block;margin:1em 0}.ct{font-size:14px;font-weight:600}.cl{font-size:11px;fill:#333}\
code{font-size:.9em}.bad{color:#b00020}";

pub fn outcome_colour(o: Outcome) -> &'static str {
    match o {
        Outcome::Verified => "#2e7d32",
        Outcome::Unverified => "#9e9e9e",
        Outcome::FalseVerification => "#c62828",
        Outcome::Error => "#ef6c00",
    }
}

const OUTCOMES: [Outcome; 4] = [
    Outcome::Verified,
    Outcome::Unverified,
    Outcome::FalseVerification,
    Outcome::Error,
];

pub fn render(s: &Summary) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>gauntlet results</title><style>{STYLE}</style></head><body>\n<h1>gauntlet results</h1>\n"
    );
    if s.illustration {
        let _ = writeln!(
            o,
            "<p class=\"warn\">{}</p>",
            esc(ILLUSTRATION).replace(
                "**Harness illustration.**",
                "<strong>Harness illustration.</strong>"
            )
        );
    }
    if s.unsealed {
        let _ = writeln!(
            o,
            "<p class=\"warn\">{}</p>",
            esc(super::markdown::UNSEALED).replace("**Unsealed.**", "<strong>Unsealed.</strong>")
        );
    }
    harness(&mut o, s);
    charts(&mut o, s);

    let _ = writeln!(o, "<h2>Run</h2><table>");
    let rows = super::run_tables::run_rows(s);
    for (k, v) in rows {
        let _ = writeln!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    let _ = writeln!(o, "</table>");

    let (head, rows) = super::run_tables::suite_table(s);
    let _ = write!(o, "<h2>Per suite</h2><table><tr>");
    for h in head {
        let _ = write!(o, "<th>{}</th>", esc(h));
    }
    let _ = writeln!(o, "</tr>");
    for r in rows {
        let _ = write!(o, "<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if (1..6).contains(&i) { " class=n" } else { "" };
            let _ = write!(o, "<td{class}>{}</td>", esc(c));
        }
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(o, "</table>");

    let _ = writeln!(o, "<h2>Per capability</h2><table><tr><th>capability</th><th>kind</th><th>outcome by repeat</th><th>passed</th><th>verified rate</th><th>false verif.</th><th>errors</th><th>pass^k</th><th>pass@k</th><th>tokens in / out</th><th>cost</th><th>wall median / max ms</th><th>threshold</th></tr>");
    for c in s.capabilities.iter().map(CapabilityRow::of) {
        let f = &c.figures;
        let _ = writeln!(
            o,
            "<tr><td><code>{}::{}</code></td><td>{}</td><td>{}</td><td class=n>{}/{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{} / {}</td><td class=n>{}</td><td class=n>{} / {}</td><td>{}</td></tr>",
            esc(c.app), esc(c.capability), c.kind, esc(&c.outcomes), c.passed, c.trials,
            esc(&f.verified_rate), f.false_verifications, f.errors, esc(&f.pass_hat_k), esc(&f.pass_at_k),
            f.tokens_in, f.tokens_out, esc(&f.cost), f.wall_ms_median,
            f.wall_ms_max, esc(&c.threshold)
        );
    }
    let _ = writeln!(o, "</table>");

    let folded = s.trials.len() > OPEN_TRIAL_ROWS;
    if folded {
        let _ = writeln!(
            o,
            "<h2>Trials</h2><details><summary>{} trials: each links to its transcript</summary>",
            s.trials.len()
        );
    } else {
        o.push_str("<h2>Trials</h2>");
    }
    let _ = writeln!(o, "<table><tr><th>trial</th><th>verdict</th><th>reason</th><th>tokens in</th><th>tokens out</th><th>wall ms</th></tr>");
    for t in &s.trials {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td></tr>",
            match &t.transcript {
                Some(page) => format!("<a href=\"{}\"><code>{}</code></a>", esc(page), esc(&t.trial)),
                None => format!("<code>{}</code>", esc(&t.trial)),
            },
            esc(&t.verdict_label()), esc(&t.why()), t.tokens_in, t.tokens_out, t.wall_ms
        );
    }
    let _ = writeln!(o, "</table>");
    if folded {
        o.push_str("</details>\n");
    }
    if !s.problems.is_empty() {
        let _ = writeln!(o, "<h2 class=bad>Problems</h2><p>These files were not counted as records (a planned trial without a record is counted as an error); everything else was.</p><ul>");
        for p in &s.problems {
            let _ = writeln!(
                o,
                "<li><code>{}</code>: {}</li>",
                esc(&p.file),
                esc(&p.cause)
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    o.push_str("</body></html>\n");
    o
}

fn harness(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "<h2>Harness</h2>");
    let Some(h) = &s.harness else {
        let _ = writeln!(o, "<p>No usable record: the harness config is unknown.</p>");
        return;
    };
    let rows = super::run_tables::harness_rows(h, s);
    let _ = writeln!(o, "<table>");
    for (k, v) in rows {
        let _ = writeln!(o, "<tr><th>{}</th><td>{}</td></tr>", esc(&k), esc(&v));
    }
    let _ = writeln!(o, "</table>");
}

fn charts(o: &mut String, s: &Summary) {
    let legend: Vec<(&str, &str)> = OUTCOMES
        .iter()
        .map(|x| (x.as_str(), outcome_colour(*x)))
        .collect();
    let rows: Vec<StackedBar> = s
        .capabilities
        .iter()
        .map(|c| StackedBar {
            label: format!("{}::{}", c.app, c.capability),
            segments: OUTCOMES
                .iter()
                .map(|x| {
                    (
                        c.outcomes.iter().filter(|o| *o == x).count() as f64,
                        outcome_colour(*x),
                        x.as_str(),
                    )
                })
                .collect(),
        })
        .collect();
    let _ = writeln!(o, "<h2>Charts</h2>");
    o.push_str(&stacked_bars(
        "Outcomes per capability (all repeats)",
        &rows,
        &legend,
    ));
    o.push('\n');
    let pts =
        |v: &[super::aggregate::KValue]| v.iter().map(|kv| (kv.k, kv.value)).collect::<Vec<_>>();
    o.push_str(&lines_over_k(
        "pass^k and pass@k over k (run)",
        &[
            ("pass^k", "#1565c0", pts(&s.run.pass_hat_k)),
            ("pass@k", "#6a1b9a", pts(&s.run.pass_at_k)),
        ],
    ));
    o.push('\n');
    let tokens: Vec<StackedBar> = s
        .capabilities
        .iter()
        .map(|c| StackedBar {
            label: format!("{}::{}", c.app, c.capability),
            segments: vec![
                (c.figures.tokens_in as f64, "#00838f", "tokens in"),
                (c.figures.tokens_out as f64, "#f9a825", "tokens out"),
            ],
        })
        .collect();
    o.push_str(&stacked_bars(
        "Proxy-metered tokens per capability (all repeats)",
        &tokens,
        &[("tokens in", "#00838f"), ("tokens out", "#f9a825")],
    ));
    o.push('\n');
}
