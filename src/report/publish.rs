//! `results/` is append-only: `results/runs/<label>/` holds published runs, copied
//! once and never written again; `results/published/` holds pages generated from
//! them and is regenerated whole on every publish.
//!
//! Scripted runs are published as harness illustrations, in their own table: they
//! are never ranked next to real runs.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use super::aggregate::Summary;
use super::base::{io, ReportError, REPORT_HTML, REPORT_MD, SUMMARY_JSON};
use super::falsifier::{self, Contender};
use super::load::load_run;
use super::markdown::{pct_ci, usd, ILLUSTRATION};
use super::options::Options;
use super::provider::Statement;
use super::svg::esc;
use crate::record::merge::copy_tree;

pub const RUNS_DIR: &str = "runs";
pub const PUBLISHED_DIR: &str = "published";

/// `results/` at the repository root.
pub fn default_results_dir() -> PathBuf {
    crate::binaries::repo_root().join("results")
}

fn check_label(label: &str) -> Result<(), ReportError> {
    let ok = !label.is_empty()
        && label.len() <= 80
        && label.starts_with(|c: char| c.is_ascii_alphanumeric())
        && label
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(ReportError::Refused(format!(
            "label `{label}`: expected lowercase letters, digits, `.`, `_` or `-` (at most 80, starting with a letter or digit)"
        )))
    }
}

/// Copy `run_dir` into `results/runs/<label>/` and regenerate `results/published/`.
/// Refuses an existing label, and a run whose records do not all load and rescore:
/// a published run must stand on its own evidence. `provider` is what served the
/// model, as the publisher states it ([`super::provider`]), kept beside the run.
pub fn publish(
    run_dir: &Path,
    results: &Path,
    label: &str,
    provider: Option<&Statement>,
    opts: &Options,
) -> Result<PathBuf, ReportError> {
    check_label(label)?;
    let dest = results.join(RUNS_DIR).join(label);
    if dest.exists() {
        return Err(ReportError::Refused(format!(
            "{}: already published; results are append-only, choose a new label",
            dest.display()
        )));
    }
    let run = load_run(run_dir)?;
    if !run.problems.is_empty() {
        let list: Vec<String> = run
            .problems
            .iter()
            .map(|p| format!("{}: {}", p.file, p.cause))
            .collect();
        return Err(ReportError::Refused(format!(
            "{}: not published, the run has problems: {}",
            run_dir.display(),
            list.join("; ")
        )));
    }
    if run.records.is_empty() {
        return Err(ReportError::Refused(format!(
            "{}: no records to publish",
            run_dir.display()
        )));
    }
    let runs = results.join(RUNS_DIR);
    std::fs::create_dir_all(&runs).map_err(io(&runs))?;
    let staging = runs.join(format!(".publish-{}-{label}", std::process::id()));
    let copied = (|| {
        std::fs::create_dir(&staging).map_err(io(&staging))?;
        let mut entries: Vec<_> = std::fs::read_dir(run_dir)
            .map_err(io(run_dir))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(io(run_dir))?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name();
            let n = name.to_string_lossy();
            if [REPORT_MD, REPORT_HTML, SUMMARY_JSON].contains(&n.as_ref()) || n.starts_with('.') {
                continue;
            }
            let from = e.path();
            let to = staging.join(&name);
            // Never through a link: a `merge.json` or trial directory that points at a
            // host file would publish that file.
            let ty = e.file_type().map_err(io(&from))?;
            if ty.is_dir() {
                copy_tree(&from, &to).map_err(|e| ReportError::Refused(e.to_string()))?;
                // A projection, regenerated beside the published pages: the runs kept
                // here are evidence only.
                let page = to.join(super::transcript::TRANSCRIPT_HTML);
                if std::fs::symlink_metadata(&page).is_ok() {
                    std::fs::remove_file(&page).map_err(io(&page))?;
                }
            } else if ty.is_file() {
                std::fs::copy(&from, &to).map_err(io(&from))?;
            } else {
                return Err(ReportError::Refused(format!(
                    "{}: not a regular file or directory (a symlink, FIFO or socket); a run directory holds none at its top",
                    from.display()
                )));
            }
        }
        // The publisher's statement replaces one the run already carried (a run
        // published before, copied back out): the page states what this publish says.
        if let Some(fields) = provider {
            super::provider::write(&staging, fields)?;
        }
        // create_dir, then rename into it only if still absent: never overwrite.
        if dest.exists() {
            return Err(ReportError::Refused(format!(
                "{}: already published; results are append-only",
                dest.display()
            )));
        }
        std::fs::rename(&staging, &dest).map_err(io(&dest))
    })();
    if copied.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    copied?;
    regenerate_published(results, opts)?;
    Ok(dest)
}

/// One published run, as the index lists it.
struct Entry {
    label: String,
    summary: Summary,
    /// The audit the run's tasks were checked against, as the run recorded it.
    audit: Option<crate::record::hackability::RunHackability>,
}

/// Rebuild `results/published/` from `results/runs/*`: each run's pages, and an
/// index that ranks real runs and lists harness illustrations apart.
pub fn regenerate_published(results: &Path, opts: &Options) -> Result<PathBuf, ReportError> {
    let runs = results.join(RUNS_DIR);
    let mut labels: Vec<String> = match std::fs::read_dir(&runs) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
        Err(e) => return Err(io(&runs)(e)),
    };
    labels.sort();
    let out = results.join(PUBLISHED_DIR);
    let staging = results.join(format!(".published-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(io(&staging))?;
    let mut entries = Vec::new();
    for label in labels {
        let run = load_run(&runs.join(&label))?;
        let (pages, audit) = super::run_pages(&runs.join(&label), &run, opts);
        let dir = staging.join(&label);
        // Beside the published pages; their raw-file links lead into `runs/<label>/`.
        super::transcript::write_all(&runs.join(&label), &dir)?;
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        if let Some(a) = &audit {
            super::write_hackability(a, &dir)?;
        }
        for (name, text) in [
            (REPORT_MD, &pages.markdown),
            (REPORT_HTML, &pages.html),
            (SUMMARY_JSON, &pages.json),
        ] {
            let f = dir.join(name);
            std::fs::write(&f, text).map_err(io(&f))?;
        }
        entries.push(Entry {
            label,
            summary: pages.summary,
            audit,
        });
    }
    let (real, illustrations): (Vec<&Entry>, Vec<&Entry>) = entries
        .iter()
        .partition(|e| !e.summary.illustration && !e.summary.unsealed);
    let mut ranked = real;
    ranked.sort_by(|a, b| {
        let key = |e: &Entry| {
            (
                e.summary.run.verified_rate.unwrap_or(-1.0),
                -e.summary.run.false_verification_rate.unwrap_or(1.0),
            )
        };
        key(b)
            .partial_cmp(&key(a))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.label.cmp(&b.label))
    });
    let contenders: Vec<Contender> = ranked
        .iter()
        .filter_map(|e| Contender::of(&e.label, &e.summary))
        .collect();
    let claim = falsifier::status(&contenders);
    for (name, text) in [
        ("index.md", index_md(&ranked, &illustrations, &claim)),
        ("index.html", index_html(&ranked, &illustrations, &claim)),
    ] {
        let f = staging.join(name);
        std::fs::write(&f, text).map_err(io(&f))?;
    }
    // Swap in the new pages in one rename; the old ones go only after.
    let old = results.join(format!(".published-old-{}", std::process::id()));
    if out.exists() {
        std::fs::rename(&out, &old).map_err(io(&out))?;
    }
    std::fs::rename(&staging, &out).map_err(io(&out))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(out)
}

fn columns(e: &Entry) -> Vec<String> {
    let s = &e.summary;
    let h = s.harness.as_ref();
    let f = &s.run;
    vec![
        e.label.clone(),
        h.map(|h| format!("{} {}", h.agent, h.agent_version))
            .unwrap_or_default(),
        h.map(|h| h.model.clone()).unwrap_or_default(),
        h.map(|h| format!("{}/{}", h.n, h.k)).unwrap_or_default(),
        format!(
            "{} ({}/{})",
            pct_ci(f.verified_rate, f.verified_rate_ci),
            f.verified,
            f.verifiable_trials
        ),
        format!(
            "{} ({})",
            pct_ci(f.false_verification_rate, f.false_verification_rate_ci),
            f.false_verifications
        ),
        f.errors.to_string(),
        super::markdown::at_k(&f.pass_hat_k),
        usd(f.cost_usd, &f.unpriced_models),
        h.and_then(|h| h.commit.clone())
            .map(|c| c.chars().take(12).collect())
            .unwrap_or_else(|| "unknown".into()),
    ]
}

const HEADERS: [&str; 10] = [
    "run",
    "agent",
    "model",
    "N/K",
    "verified rate",
    "false verifications",
    "errors",
    "pass^k",
    "cost",
    "commit",
];

/// The index's hackability rows: per run, a line per suite of the audit its tasks
/// were checked against, and the audit's page.
/// Each run's label, whether it has an audit page, and its cells.
fn hackability_rows(entries: &[&Entry]) -> Vec<(String, bool, Vec<String>)> {
    entries
        .iter()
        .map(|e| {
            let cells = crate::spec::Suite::ALL
                .iter()
                .map(|s| match &e.audit {
                    Some(a) => super::hackability::suite_line(a, *s).unwrap_or_else(|| "-".into()),
                    None => "no audit recorded (a run from before audits)".into(),
                })
                .collect();
            (e.label.clone(), e.audit.is_some(), cells)
        })
        .collect()
}

fn hackability_md(o: &mut String, entries: &[&Entry]) {
    o.push_str("\n## Hackability\n\nWhich audit each run's tasks passed (`gauntlet redteam`): per suite, the tasks audited, the adversaries run, the hackable tasks. Each run's audit page: `published/<run>/hackability.md`.\n\n| run | qa | challenge | scorecard |\n| --- | --- | --- | --- |\n");
    for (label, page, cells) in hackability_rows(entries) {
        let run = if page {
            format!("[{label}]({label}/hackability.md)")
        } else {
            label
        };
        let _ = writeln!(o, "| {run} | {} |", cells.join(" | ").replace('\n', " "));
    }
}

fn hackability_html(o: &mut String, entries: &[&Entry]) {
    o.push_str("<h2>Hackability</h2><p>Which audit each run's tasks passed (<code>gauntlet redteam</code>): per suite, the tasks audited, the adversaries run, the hackable tasks.</p><table><tr><th>run</th><th>qa</th><th>challenge</th><th>scorecard</th></tr>\n");
    for (label, page, cells) in hackability_rows(entries) {
        if page {
            let _ = write!(
                o,
                "<tr><td><a href=\"{0}/hackability.html\">{0}</a></td>",
                esc(&label)
            );
        } else {
            let _ = write!(o, "<tr><td>{}</td>", esc(&label));
        }
        for c in cells {
            let _ = write!(o, "<td>{}</td>", esc(&c));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}

fn index_md(ranked: &[&Entry], illustrations: &[&Entry], claim: &str) -> String {
    let mut o = String::from("# gauntlet: published results\n\nGenerated from `results/runs/`; do not edit. Each run's pages: `published/<run>/report.md`.\n\n");
    let _ = write!(
        o,
        "## The falsifier\n\n{}\n\n**Today:** {claim}\n\n## Leaderboard (real runs)\n\n",
        falsifier::STATEMENT
    );
    let table = |o: &mut String, rows: &[&Entry], rank: bool| {
        let mut h: Vec<&str> = HEADERS.to_vec();
        if rank {
            h.insert(0, "rank");
        }
        let _ = writeln!(o, "| {} |", h.join(" | "));
        let _ = writeln!(o, "|{}", " --- |".repeat(h.len()));
        for (i, e) in rows.iter().enumerate() {
            let mut c = columns(e);
            c[0] = format!("[{}]({}/report.md)", c[0], e.label);
            if rank {
                c.insert(0, (i + 1).to_string());
            }
            let c: Vec<String> = c.iter().map(|x| x.replace('|', "\\|")).collect();
            let _ = writeln!(o, "| {} |", c.join(" | "));
        }
    };
    if ranked.is_empty() {
        o.push_str("No real run published yet.\n");
    } else {
        table(&mut o, ranked, true);
    }
    let _ = writeln!(
        o,
        "\n## Harness illustrations (not ranked)\n\n> {ILLUSTRATION}\n"
    );
    if illustrations.is_empty() {
        o.push_str("None.\n");
    } else {
        table(&mut o, illustrations, false);
    }
    let all: Vec<&Entry> = ranked.iter().chain(illustrations).copied().collect();
    if !all.is_empty() {
        hackability_md(&mut o, &all);
    }
    o
}

fn index_html(ranked: &[&Entry], illustrations: &[&Entry], claim: &str) -> String {
    let mut o = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"><title>gauntlet: published results</title><style>body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.25em .5em}.warn{background:#fff3cd;padding:.75em}</style></head><body><h1>gauntlet: published results</h1>\n");
    let _ = write!(
        o,
        "<h2>The falsifier</h2>\n<p>{}</p>\n",
        esc(falsifier::STATEMENT)
    );
    for paragraph in claim.split("\n\n") {
        let _ = writeln!(
            o,
            "<p><strong>Today:</strong> {}</p>",
            esc(paragraph).replace('`', "")
        );
    }
    o.push_str("<h2>Leaderboard (real runs)</h2>\n");
    let table = |o: &mut String, rows: &[&Entry], rank: bool| {
        o.push_str("<table><tr>");
        if rank {
            o.push_str("<th>rank</th>");
        }
        for h in HEADERS {
            let _ = write!(o, "<th>{}</th>", esc(h));
        }
        o.push_str("</tr>\n");
        for (i, e) in rows.iter().enumerate() {
            o.push_str("<tr>");
            if rank {
                let _ = write!(o, "<td>{}</td>", i + 1);
            }
            for (j, c) in columns(e).iter().enumerate() {
                if j == 0 {
                    let _ = write!(o, "<td><a href=\"{0}/report.html\">{0}</a></td>", esc(c));
                } else {
                    let _ = write!(o, "<td>{}</td>", esc(c));
                }
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</table>\n");
    };
    if ranked.is_empty() {
        o.push_str("<p>No real run published yet.</p>\n");
    } else {
        table(&mut o, ranked, true);
    }
    let _ = writeln!(
        o,
        "<h2>Harness illustrations (not ranked)</h2><p class=\"warn\">{}</p>",
        esc(ILLUSTRATION).replace(
            "**Harness illustration.**",
            "<strong>Harness illustration.</strong>"
        )
    );
    if illustrations.is_empty() {
        o.push_str("<p>None.</p>\n");
    } else {
        table(&mut o, illustrations, false);
    }
    let all: Vec<&Entry> = ranked.iter().chain(illustrations).copied().collect();
    if !all.is_empty() {
        hackability_html(&mut o, &all);
    }
    o.push_str("</body></html>\n");
    o
}
