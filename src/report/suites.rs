//! The other suites on a run's results page: the challenge table and the scorecard's
//! leaderboard rows, rendered by their own modules, for runs (such as the main job's)
//! that hold more than qa trials.
//!
//! The qa summary stays qa-only; these sections are appended after it, so a qa-only run
//! renders exactly as before.

use std::fmt::Write as _;
use std::path::Path;

use super::load::LoadedRun;
use super::svg::esc;
use crate::spec::Suite;

/// One suite's section: its heading, a sentence on where it comes from, and either a
/// markdown table or the reason it could not be built (never a reason to lose the page).
#[derive(Debug)]
pub struct Section {
    pub title: &'static str,
    pub intro: &'static str,
    pub table: Result<String, SectionError>,
}

/// Why a suite's section has no table.
#[derive(Debug, thiserror::Error)]
pub enum SectionError {
    #[error(transparent)]
    Challenges(#[from] super::challenge::ChallengeReportError),
    #[error(transparent)]
    Scorecard(#[from] super::leaderboard::LeaderboardError),
}

/// The sections for every other suite `run` holds, in the suites' order.
pub fn sections(run_dir: &Path, run: &LoadedRun) -> Vec<Section> {
    Suite::ALL
        .into_iter()
        .filter(|s| run.other_suites.contains_key(s.as_str()))
        .filter_map(|s| section(s, run_dir))
        .collect()
}

/// The pages' registry of suites: each suite's section of a run's page, written by
/// the suite's own report module. qa has none: the page's summary is its own.
fn section(suite: Suite, run_dir: &Path) -> Option<Section> {
    match suite {
        Suite::Qa => None,
        Suite::Challenge => Some(Section {
            title: "Challenges",
            intro: "One row per challenge trial (`challenge::<id>::<profile>`): task outcome and \
evaluation validity are separate; a manual audit, when there is one, is authoritative. Each \
trial directory holds its `final-report.md` and `metrics.json`.",
            table: super::challenge::run_table(run_dir).map_err(SectionError::from),
        }),
        Suite::Scorecard => Some(Section {
            title: "Autonomy scorecard",
            intro: "Scores 0-4 per dimension from behaviour observed in gauntlet's sinks, total \
/20 (`gauntlet leaderboard` appends these rows to a leaderboard). D1 memory, D2 goals, D3 \
continuous operation, D4 initiative, D5 world.",
            table: super::leaderboard::collect(&[run_dir.to_path_buf()])
                .map(|entries| super::leaderboard::render_markdown(&entries))
                .map_err(SectionError::from),
        }),
    }
}

pub fn markdown(sections: &[Section]) -> String {
    let mut o = String::new();
    for s in sections {
        let _ = write!(o, "\n## {}\n\n{}\n\n", s.title, s.intro);
        match &s.table {
            Ok(table) => o.push_str(table),
            Err(why) => {
                let _ = writeln!(o, "Not available: {why}");
            }
        }
    }
    o
}

pub fn html(sections: &[Section]) -> String {
    let mut o = String::new();
    for s in sections {
        let _ = write!(o, "<h2>{}</h2><p>{}</p>", esc(s.title), esc(s.intro));
        match &s.table {
            Ok(table) => o.push_str(&table_html(table)),
            Err(why) => {
                let _ = write!(
                    o,
                    "<p class=bad>Not available: {}</p>",
                    esc(&why.to_string())
                );
            }
        }
        o.push('\n');
    }
    o
}

/// A pipe table as the suites' modules write it (header, separator, rows; no pipes
/// inside cells) as an HTML table. Markdown emphasis and code marks are dropped.
fn table_html(table: &str) -> String {
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().replace("**", "").replace('`', ""))
            .collect()
    };
    let mut lines = table.lines().filter(|l| l.trim_start().starts_with('|'));
    let mut o = String::from("<table>");
    if let Some(head) = lines.next() {
        o.push_str("<tr>");
        for c in cells(head) {
            let _ = write!(o, "<th>{}</th>", esc(&c));
        }
        o.push_str("</tr>");
    }
    // The separator row is all pipes, dashes and colons; a data row that merely
    // contains "---" is still a row.
    let separator = |l: &str| l.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
    for line in lines.filter(|l| !separator(l)) {
        o.push_str("<tr>");
        for c in cells(line) {
            let _ = write!(o, "<td>{}</td>", esc(&c));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_table_becomes_an_escaped_html_table() {
        let html = table_html("| a | b |\n|---|---|\n| **1/20** | `<x>` |\n| a---b | - |\n");
        assert_eq!(
            html,
            "<table><tr><th>a</th><th>b</th></tr><tr><td>1/20</td><td>&lt;x&gt;</td></tr>\
             <tr><td>a---b</td><td>-</td></tr></table>"
        );
    }

    #[test]
    fn a_section_that_cannot_be_built_says_why_and_the_others_stay() {
        let sections = vec![
            Section {
                title: "Challenges",
                intro: "i",
                table: Err(SectionError::Challenges(
                    super::super::challenge::ChallengeReportError::Io {
                        file: "x/record.json".into(),
                        reason: "truncated".into(),
                    },
                )),
            },
            Section {
                title: "Autonomy scorecard",
                intro: "j",
                table: Ok("| a |\n|---|\n| 1 |\n".into()),
            },
        ];
        let md = markdown(&sections);
        assert!(md.contains("Not available: x/record.json: truncated"));
        assert!(md.contains("## Autonomy scorecard"));
        assert!(html(&sections).contains("<td>1</td>"));
    }
}
