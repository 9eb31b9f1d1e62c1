//! Results pages from records. Reports are projections of records: nothing here is
//! evidence, and everything here regenerates from a run directory.
//!
//! One direction: [`load::load_run`] reads a run directory (re-deriving every verdict
//! from its evidence), [`aggregate::summarize`] turns records into figures (pure),
//! and [`markdown`], [`html`] and `summary.json` render the same [`Summary`].
//! [`publish`] keeps `results/` append-only.

pub mod aggregate;
pub mod cells;
pub mod challenge;
pub mod compare;
pub mod export;
pub mod falsifier;
pub mod hackability;
pub mod html;
pub mod leaderboard;
pub mod load;
pub mod markdown;
pub mod prices;
pub mod provider;
pub mod publish;
pub mod reply;
mod rows;
pub mod suites;
pub mod svg;
pub mod synthetic;
pub mod thresholds;
pub mod transcript;

use std::path::{Path, PathBuf};

pub use aggregate::{summarize, Figures, Summary};
pub use load::{load_run, LoadedRun, Problem};
pub use prices::PriceTable;
pub use thresholds::Thresholds;

/// The files `gauntlet report` writes.
pub const REPORT_MD: &str = "report.md";
pub const REPORT_HTML: &str = "report.html";
pub const SUMMARY_JSON: &str = "summary.json";

/// Why a run could not be loaded, rendered, exported or published (`gauntlet report`,
/// `compare`, `publish`); a challenge trial's own report files fail with
/// [`ChallengeReportError`](challenge::ChallengeReportError).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {reason}")]
    Invalid { file: PathBuf, reason: String },
    #[error("{0}")]
    Refused(String),
}

pub(crate) fn io(file: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        file: file.to_path_buf(),
        source,
    }
}

/// What a report is computed with besides the records.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub prices: PriceTable,
    pub thresholds: Thresholds,
}

/// The three pages of one run, rendered from one summary.
pub struct Pages {
    pub summary: Summary,
    pub markdown: String,
    pub html: String,
    pub json: String,
}

/// Render every page of a loaded run.
pub fn render(run: &LoadedRun, opts: &Options) -> Pages {
    let summary = summarize(run, opts);
    // Three independent renderings of one summary: the HTML page beside the other two.
    let (html, markdown, json) = std::thread::scope(|scope| {
        let html = scope.spawn(|| html::render(&summary));
        let markdown = markdown::render(&summary);
        let json = summary_json(&summary);
        match html.join() {
            Ok(html) => (html, markdown, json),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    Pages {
        markdown,
        html,
        json,
        summary,
    }
}

/// The agent's normalized account of one process (its final message and report),
/// derived again from its raw stdout with the parser of the agent that made it, read
/// the way rescore reads raw files; `None` for an agent without a parser or a stdout
/// that cannot be read so.
pub(crate) fn agent_report(
    agent: &str,
    dir: &Path,
    stdout: &crate::evidence::RawFile,
) -> Option<(Option<String>, crate::evidence::normalize::AgentReport)> {
    let parser = crate::evidence::streams::AgentKind::from_name(agent)
        .map(crate::evidence::streams::parser)?;
    let file = crate::record::raw::open_plain_file(dir, &stdout.path)?;
    let parsed = parser(&mut std::io::BufReader::new(file));
    Some((parsed.transcript.final_message, parsed.report))
}

/// Whether `path` is `dir` or lies below it, by where they really are: both made
/// absolute and `..` resolved, then the longest part that exists resolved through its
/// links, so that an `--out` that does not exist yet, is given relative, or runs through
/// a link cannot slip into a run a page or an export must not change.
pub fn is_within(path: &Path, dir: &Path) -> bool {
    fn resolve(p: &Path) -> PathBuf {
        let abs = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        let mut lexical = PathBuf::new();
        for c in abs.components() {
            match c {
                std::path::Component::ParentDir => {
                    lexical.pop();
                }
                std::path::Component::CurDir => {}
                other => lexical.push(other),
            }
        }
        let mut existing = lexical.clone();
        let mut rest = Vec::new();
        while !existing.exists() {
            match (
                existing.file_name().map(|n| n.to_owned()),
                existing.parent(),
            ) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    existing = parent.to_path_buf();
                }
                _ => break,
            }
        }
        let mut out = existing.canonicalize().unwrap_or(existing);
        for name in rest.iter().rev() {
            out.push(name);
        }
        out
    }
    resolve(path).starts_with(resolve(dir))
}

/// The relative path from directory `from` to directory `to`, ending in `/` (empty
/// when they are the same directory).
pub fn relative_dir(from: &Path, to: &Path) -> String {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (canon(from), canon(to));
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = String::new();
    for _ in common..a.len() {
        out.push_str("../");
    }
    for c in &b[common..] {
        out.push_str(&c.as_os_str().to_string_lossy());
        out.push('/');
    }
    out
}

/// `summary.json` text: pretty, newline-terminated.
pub fn summary_json(summary: &Summary) -> String {
    // Plain data with string keys: serializing cannot fail.
    let mut s = serde_json::to_string_pretty(summary).unwrap_or_default();
    s.push('\n');
    s
}

/// Load `run_dir`, render its pages and write them into `out` (created if missing).
/// Returns the pages, so a caller can report problems and figures.
pub fn write_report(run_dir: &Path, out: &Path, opts: &Options) -> Result<Pages, ReportError> {
    let run = load_run(run_dir)?;
    let (pages, audit) = run_pages(run_dir, &run, opts);
    std::fs::create_dir_all(out).map_err(io(out))?;
    // `<out>/<trial dir>/transcript.html`: beside every record when the pages are
    // written into the run directory; the run page links each trial row to its page.
    transcript::write_all(run_dir, out)?;
    for (name, text) in [
        (REPORT_MD, &pages.markdown),
        (REPORT_HTML, &pages.html),
        (SUMMARY_JSON, &pages.json),
    ] {
        let file = out.join(name);
        std::fs::write(&file, text).map_err(io(&file))?;
    }
    if let Some(a) = &audit {
        write_hackability(a, out)?;
    }
    Ok(pages)
}

/// Every page of a run as the report and the published copy show it: the qa pages,
/// the other suites' sections, and the line per suite of the audit the run's tasks
/// were checked against (returned, for the audit's own page beside them).
pub(crate) fn run_pages(
    run_dir: &Path,
    run: &LoadedRun,
    opts: &Options,
) -> (Pages, Option<crate::record::hackability::RunHackability>) {
    let mut pages = render(run, opts);
    let others = suites::sections(run_dir, run);
    if !others.is_empty() {
        pages.markdown.push_str(&suites::markdown(&others));
        let at = pages.html.rfind("</body>").unwrap_or(pages.html.len());
        pages.html.insert_str(at, &suites::html(&others));
    }
    let audit = crate::record::identity::read(run_dir)
        .ok()
        .flatten()
        .and_then(|id| id.hackability);
    if let Some(a) = &audit {
        insert_section(
            &mut pages.markdown,
            "\n## ",
            &hackability::run_section_md(a),
        );
        insert_section(&mut pages.html, "<h2>", &hackability::run_section_html(a));
    }
    (pages, audit)
}

/// The audit's own page (`hackability.md`, `hackability.html`) into `out`.
pub(crate) fn write_hackability(
    a: &crate::record::hackability::RunHackability,
    out: &Path,
) -> Result<(), ReportError> {
    let (md, html) = hackability::run_page(a);
    for (name, text) in [(hackability::PAGE_MD, md), (hackability::PAGE_HTML, html)] {
        let file = out.join(name);
        std::fs::write(&file, text).map_err(io(&file))?;
    }
    Ok(())
}

/// Put `section` before the first `marker` of `page` (its first section), or at its
/// end.
fn insert_section(page: &mut String, marker: &str, section: &str) {
    let at = page.find(marker).map_or(
        page.len(),
        |i| {
            if marker.starts_with('\n') {
                i + 1
            } else {
                i
            }
        },
    );
    page.insert_str(at, section);
}

/// The harness config every page states, as (setting, value) rows: one list, so that
/// the markdown and HTML pages cannot drift apart.
fn harness_rows(h: &aggregate::Harness, s: &Summary) -> Vec<(String, String)> {
    let rows: Vec<(&str, String)> = vec![
        ("agent", format!("{} {}", h.agent, h.agent_version)),
        ("model", h.model.clone()),
        ("mode", format!("{:?}", h.mode).to_lowercase()),
        ("N (green re-runs a verified claim needs)", h.n.to_string()),
        ("K (repeats per capability)", h.k.to_string()),
        (
            "agent timeout / gate timeout",
            format!("{} s / {} s", h.timeout_secs, h.gate_timeout_secs),
        ),
        (
            "upstream",
            h.upstream_url.clone().unwrap_or_else(|| "-".into()),
        ),
        (
            "token budget per trial",
            h.max_tokens_per_trial
                .map_or_else(|| "none".into(), |t| format!("{t} tokens")),
        ),
        ("sandbox", format!("{:?}", h.sandbox).to_lowercase()),
        ("gauntlet version", h.gauntlet_version.clone()),
        (
            "gauntlet commit",
            h.commit
                .clone()
                .unwrap_or_else(|| "unknown (no git)".into()),
        ),
        ("run ids", h.run_ids.join(", ")),
        (
            "prices",
            s.prices.clone().unwrap_or_else(|| "no price table".into()),
        ),
        (
            "thresholds",
            if s.thresholds.is_empty() {
                "none".into()
            } else {
                s.thresholds.join(", ")
            },
        ),
    ];
    let stated = s.provider.iter().flatten().map(|(k, v)| {
        (
            format!("provider: {k} (as the publisher states it)"),
            v.clone(),
        )
    });
    rows.into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .chain(stated)
        .collect()
}

/// The run's headline figures as (figure, value) rows: one list, so that the markdown
/// and HTML pages state the same figures in the same words.
fn run_rows(s: &Summary) -> Vec<(&'static str, String)> {
    let f = &s.run;
    vec![
        (
            "verified rate (over verifiable capabilities' trials)",
            format!(
                "{} ({}/{})",
                markdown::pct_ci(f.verified_rate, f.verified_rate_ci),
                f.verified,
                f.verifiable_trials
            ),
        ),
        (
            "honest on ambiguous",
            format!("{}/{}", f.honest_on_ambiguous, f.ambiguous_trials),
        ),
        (
            "false verifications",
            format!(
                "{} ({})",
                f.false_verifications,
                markdown::pct_ci(f.false_verification_rate, f.false_verification_rate_ci)
            ),
        ),
        ("errors", f.errors.to_string()),
        (
            "trials passed",
            format!(
                "{}/{} ({})",
                f.passed,
                f.trials,
                markdown::pct_ci(f.pass_rate, f.pass_rate_ci)
            ),
        ),
        ("pass@k", markdown::series(&f.pass_at_k)),
        ("pass^k", markdown::series(&f.pass_hat_k)),
        ("spread across repeats", cells::spread(f)),
        (
            "tokens in / out / cached (proxy-metered)",
            format!(
                "{} / {} / {} over {} calls",
                f.tokens_in, f.tokens_out, f.tokens_cached, f.calls
            ),
        ),
        ("cost", markdown::usd(f.cost_usd, &f.unpriced_models)),
        (
            "wall-clock per trial, median / max (ms)",
            format!(
                "{} / {}",
                markdown::ms(f.wall_ms_median),
                markdown::ms(f.wall_ms_max.map(|v| v as f64))
            ),
        ),
        (
            "capabilities meeting their threshold",
            s.thresholds_met
                .map(|t| t.to_string())
                .unwrap_or_else(|| "no thresholds configured".into()),
        ),
    ]
}

/// The per-suite table as (header, rows): one list, so that the markdown and HTML pages
/// count the same way. A planned trial without a record is an error, and named.
fn suite_table(s: &Summary) -> ([&'static str; 7], Vec<[String; 7]>) {
    let head = [
        "suite",
        "planned",
        "trials",
        "recorded",
        "passed",
        "errors",
        "planned but no record",
    ];
    let rows = s
        .suites
        .iter()
        .map(|c| {
            [
                c.suite.clone(),
                c.planned
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "no manifest".into()),
                c.trials.to_string(),
                c.recorded.to_string(),
                c.passed.to_string(),
                c.errors.to_string(),
                if c.missing.is_empty() {
                    "-".into()
                } else {
                    c.missing
                        .iter()
                        .map(|m| format!("{} ({})", m.trial, m.reason))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            ]
        })
        .collect();
    (head, rows)
}
