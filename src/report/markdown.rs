//! `report.md`: the summary as GitHub-flavoured markdown.

use std::fmt::Write;

use super::aggregate::Summary;
pub use super::cells::{at_k, ms, outcomes, pct, pct_ci, usd, SHOWN_REPEATS};
use super::rows::{CapabilityRow, FigureCells};

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
    let rows = super::run_tables::run_rows(s);
    for (k, v) in rows {
        let _ = writeln!(o, "| {k} | {} |", cell(&v));
    }

    let _ = writeln!(o, "\n## Per suite\n");
    let (head, rows) = super::run_tables::suite_table(s);
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
            t.verdict_label(),
            if t.passed { "yes" } else { "no" },
            cell(&t.why()),
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

fn harness(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "## Harness\n");
    let Some(h) = &s.harness else {
        let _ = writeln!(o, "No usable record: the harness config is unknown.\n");
        return;
    };
    let _ = writeln!(o, "| setting | value |\n| --- | --- |");
    let rows = super::run_tables::harness_rows(h, s);
    for (k, v) in rows {
        let _ = writeln!(o, "| {} | {} |", cell(&k), cell(&v));
    }
    let _ = writeln!(o);
}
