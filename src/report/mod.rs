//! Results pages from records. Reports are projections of records: nothing here is
//! evidence, and everything here regenerates from a run directory.
//!
//! One direction: [`load::load_run`] reads a run directory (re-deriving every verdict
//! from its evidence), [`aggregate::summarize`] turns records into figures (pure),
//! and [`markdown`], [`html`] and `summary.json` render the same [`Summary`].
//! [`publish`] keeps `results/` append-only.

pub mod aggregate;
pub mod base;
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
pub mod options;
pub mod prices;
pub mod provider;
pub mod publish;
pub mod reply;
mod rows;
mod run_tables;
pub mod suites;
pub mod svg;
pub mod synthetic;
pub mod thresholds;
pub mod transcript;

use std::path::Path;

pub use aggregate::{summarize, Figures, Summary};
pub(crate) use base::io;
pub use base::{is_within, relative_dir, ReportError, REPORT_HTML, REPORT_MD, SUMMARY_JSON};
pub use load::{load_run, LoadedRun, Problem};
pub use options::Options;
pub use prices::PriceTable;
pub use thresholds::Thresholds;

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
