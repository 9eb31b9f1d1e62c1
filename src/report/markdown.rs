//! `report.md`: the summary as GitHub-flavoured markdown.

use std::fmt::Write;

use super::aggregate::{Figures, Summary};
use super::rows::{CapabilityRow, FigureCells};

pub fn pct(x: Option<f64>) -> String {
    x.map(|v| format!("{:.1}%", 100.0 * v))
        .unwrap_or_else(|| "n/a".into())
}

pub fn usd(cost: Option<f64>, unpriced: &[String]) -> String {
    match cost {
        Some(c) => format!("${c:.6}"),
        None if unpriced.is_empty() => "unknown".into(),
        None => format!("unknown (no price for {})", unpriced.join(", ")),
    }
}

pub fn ms(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into())
}

/// A rate with its 95% interval: `83.3% [70.1–91.8%]`.
pub fn pct_ci(x: Option<f64>, ci: Option<crate::score::interval::Interval>) -> String {
    match (x, ci) {
        (Some(_), Some(i)) => format!("{} [{:.1}–{:.1}%]", pct(x), 100.0 * i.low, 100.0 * i.high),
        _ => pct(x),
    }
}

/// The last value of a per-k series (k = K), as a percentage.
pub fn at_k(v: &[super::aggregate::KValue]) -> String {
    v.last()
        .map(|kv| format!("{} (k={})", pct_ci(Some(kv.value), kv.ci), kv.k))
        .unwrap_or_else(|| "n/a".into())
}

/// Outcomes of a capability's repeats: each in order for a few, counted for many.
pub fn outcomes(v: &[crate::score::Outcome]) -> String {
    if v.len() <= SHOWN_REPEATS {
        return v.iter().map(|o| o.as_str()).collect::<Vec<_>>().join(", ");
    }
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for o in v {
        *counts.entry(o.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = counts.iter().map(|(o, n)| format!("{n} {o}")).collect();
    format!("{} of {} repeats", parts.join(", "), v.len())
}

/// Repeats listed one by one up to this many; beyond it they are counted.
pub const SHOWN_REPEATS: usize = 10;

/// Trial rows shown open up to this many; beyond it the table is folded.
pub const OPEN_TRIAL_ROWS: usize = 100;

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The warning every page of a scripted run carries.
pub const ILLUSTRATION: &str = "**Harness illustration.** This run used the scripted model: it shows the pipeline working end to end. It is not a benchmark result and is never ranked next to real runs.";

pub const UNSEALED: &str = "**Unsealed.** Some trials of this run ran without their sandbox (GAUNTLET_SANDBOX=off, or recorded before trials were sealed): their agents could have seen around the gate or rewritten evidence (docs/sealing.md). It is never ranked.";

pub fn render(s: &Summary) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# gauntlet results\n");
    if s.illustration {
        let _ = writeln!(o, "> {ILLUSTRATION}\n");
    }
    if s.unsealed {
        let _ = writeln!(o, "> {UNSEALED}\n");
    }
    harness(&mut o, s);
    let _ = writeln!(o, "## Run\n");
    let _ = writeln!(o, "| figure | value |\n| --- | --- |");
    let rows = super::run_rows(s);
    for (k, v) in rows {
        let _ = writeln!(o, "| {k} | {} |", cell(&v));
    }

    let _ = writeln!(o, "\n## Per suite\n");
    let (head, rows) = super::suite_table(s);
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let _ = writeln!(o, "| --- | ---: | ---: | ---: | ---: | ---: | --- |");
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }

    let _ = writeln!(o, "\n## Per app\n");
    let _ = writeln!(
        o,
        "| app | capabilities | trials | verified rate | false verifications | errors | pass^k | pass@k | spread | tokens in / out | cost | wall median / max ms | thresholds met |"
    );
    let _ = writeln!(o, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for a in &s.apps {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} | {} |",
            a.app,
            a.capabilities,
            a.figures.trials,
            figure_cells(&FigureCells::of(&a.figures)),
            a.thresholds_met
                .map(|t| t.to_string())
                .unwrap_or_else(|| "-".into()),
        );
    }

    let _ = writeln!(o, "\n## Per capability\n");
    let _ = writeln!(
        o,
        "| capability | kind | outcome by repeat | passed | verified rate | false verifications | errors | pass^k | pass@k | spread | tokens in / out | cost | wall median / max ms | threshold |"
    );
    let _ = writeln!(o, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for c in s.capabilities.iter().map(CapabilityRow::of) {
        let _ = writeln!(
            o,
            "| `{}::{}` | {} | {} | {}/{} | {} | {} |",
            c.app,
            c.capability,
            c.kind,
            c.outcomes,
            c.passed,
            c.trials,
            figure_cells(&c.figures),
            c.threshold,
        );
    }

    let _ = writeln!(o, "\n## Trials\n");
    let folded = s.trials.len() > OPEN_TRIAL_ROWS;
    if folded {
        let _ = writeln!(o, "<details><summary>{} trials</summary>\n", s.trials.len());
    }
    let _ = writeln!(
        o,
        "| trial | kind | verdict | passed | reason | tokens in | tokens out | cost | wall ms |"
    );
    let _ = writeln!(
        o,
        "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |"
    );
    for t in &s.trials {
        let _ = writeln!(
            o,
            "| `{}` | {:?} | {} | {} | {} | {} | {} | {} | {} |",
            t.trial,
            t.kind,
            t.outcome,
            if t.passed { "yes" } else { "no" },
            cell(&t.reason),
            t.tokens_in,
            t.tokens_out,
            t.cost_usd
                .map(|c| format!("${c:.6}"))
                .unwrap_or_else(|| "unknown".into()),
            t.wall_ms
        );
    }

    if folded {
        let _ = writeln!(o, "\n</details>");
    }

    if !s.problems.is_empty() {
        let _ = writeln!(
            o,
            "\n## Problems\n\nThese files were not counted as records (a planned trial without a record is counted above as an error); everything else above was.\n"
        );
        for p in &s.problems {
            let _ = writeln!(o, "- `{}`: {}", p.file, p.cause);
        }
    }
    if !s.superseded_attempts.is_empty() {
        let _ = writeln!(
            o,
            "\n## Retried trials\n\nEarlier attempts kept on disk and not counted (the last attempt counts):\n"
        );
        for d in &s.superseded_attempts {
            let _ = writeln!(o, "- `{d}`");
        }
    }
    o
}

pub(super) fn series(v: &[super::aggregate::KValue]) -> String {
    if v.is_empty() {
        return "n/a".into();
    }
    let shown = crate::score::interval::shown_ks(v.last().map_or(0, |kv| kv.k));
    v.iter()
        .filter(|kv| shown.contains(&kv.k))
        .map(|kv| format!("k={}: {}", kv.k, pct_ci(Some(kv.value), kv.ci)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The figure columns of a per-app or per-capability row, from verified rate to
/// wall-clock.
fn figure_cells(f: &FigureCells) -> String {
    format!(
        "{} | {} | {} | {} | {} | {} | {} / {} | {} | {} / {}",
        f.verified_rate,
        f.false_verifications,
        f.errors,
        f.pass_hat_k,
        f.pass_at_k,
        f.spread,
        f.tokens_in,
        f.tokens_out,
        cell(&f.cost),
        f.wall_ms_median,
        f.wall_ms_max,
    )
}

pub(super) fn spread(f: &Figures) -> String {
    match f.spread {
        Some(sp) if f.per_repeat_pass_rate.len() > SHOWN_REPEATS => format!(
            "{} (pass rate per repeat from {} to {}, over {} repeats)",
            pct(Some(sp)),
            pct(f.per_repeat_pass_rate.iter().copied().reduce(f64::min)),
            pct(f.per_repeat_pass_rate.iter().copied().reduce(f64::max)),
            f.per_repeat_pass_rate.len()
        ),
        Some(sp) => format!(
            "{} ({})",
            pct(Some(sp)),
            f.per_repeat_pass_rate
                .iter()
                .map(|r| pct(Some(*r)))
                .collect::<Vec<_>>()
                .join(" / ")
        ),
        None => "n/a (one repeat)".into(),
    }
}

fn harness(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "## Harness\n");
    let Some(h) = &s.harness else {
        let _ = writeln!(o, "No usable record: the harness config is unknown.\n");
        return;
    };
    let _ = writeln!(o, "| setting | value |\n| --- | --- |");
    let rows = super::harness_rows(h, s);
    for (k, v) in rows {
        let _ = writeln!(o, "| {} | {} |", cell(&k), cell(&v));
    }
    let _ = writeln!(o);
}
