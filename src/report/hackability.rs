//! The hackability audit's own pages (`hackability.md`, `hackability.html`), and the
//! one line per suite the results page and the published index carry: how many tasks
//! an audit covered, against how many adversaries, and how many were hackable.
//!
//! The table is one row per task and one column per adversary that plays the task's
//! suite: the floor (what doing nothing gets) first, the reference (what solving it
//! gets) last. A cell an adversary was credited in while the floor was not is what
//! makes the task hackable, and is marked so.

use std::fmt::Write;

use super::html::{CSP, STYLE};
use super::svg::esc;
use crate::record::hackability::{short, Cell, Hackability, RunHackability, Standing, TaskAudit};
use crate::spec::Suite;

pub use super::base::{HACKABILITY_HTML as PAGE_HTML, HACKABILITY_MD as PAGE_MD};

/// One cell's text: its outcome, marked when it beats the floor or the reference
/// misses the honest best.
fn cell_text(c: &Cell, beats: bool) -> String {
    if beats && c.luck {
        format!("{} (luck, within the gate's bound)", c.outcome)
    } else if beats {
        format!("{} BEATS THE FLOOR", c.outcome)
    } else {
        c.outcome.clone()
    }
}

fn suite_rows(a: &Hackability, suite: Suite) -> (Vec<String>, Vec<&TaskAudit>) {
    let rows: Vec<&TaskAudit> = a.tasks.iter().filter(|t| t.suite == suite).collect();
    let advs: Vec<String> = a
        .adversaries
        .iter()
        .filter(|r| r.id != a.floor_id())
        .filter(|r| rows.iter().any(|t| t.adversaries.contains_key(&r.id)))
        .map(|r| r.id.clone())
        .collect();
    (advs, rows)
}

/// The one line per suite: "`qa`: 20 tasks audited against 13 adversaries, 0 hackable".
pub fn suite_line(run: &RunHackability, suite: Suite) -> Option<String> {
    let l = run.line(suite);
    if l.tasks == 0 {
        return None;
    }
    let catalogue = run.audit.as_ref().map_or_else(
        || format!("no audit ({})", run.file),
        |a| {
            format!(
                "catalogue v{} {}{}",
                a.catalogue.version,
                short(&a.catalogue.sha256),
                if a.sampled { ", sample" } else { "" }
            )
        },
    );
    let mut s = format!(
        "{} of {} task(s) audited against {} adversaries ({catalogue}): {} hackable",
        l.audited,
        l.tasks,
        run.adversaries(suite),
        l.hackable
    );
    if l.unsolved > 0 {
        let _ = write!(s, ", {} the reference did not solve", l.unsolved);
    }
    if l.unaudited > 0 {
        let _ = write!(
            s,
            ", {} unaudited (changed since, or never audited)",
            l.unaudited
        );
    }
    Some(s)
}

/// The audit as markdown.
pub fn markdown(a: &Hackability) -> String {
    let mut o = String::from("# Hackability audit\n\n");
    head(&mut o, a);
    let floor = a.floor_id().to_string();
    for suite in Suite::ALL {
        let (advs, rows) = suite_rows(a, suite);
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(o, "## {}\n", suite.as_str());
        let _ = write!(o, "| task | floor ({floor}) |");
        for id in &advs {
            let _ = write!(o, " {id} |");
        }
        o.push_str(" reference | finding |\n|---|---|");
        for _ in &advs {
            o.push_str("---|");
        }
        o.push_str("---|---|\n");
        for t in rows {
            let _ = write!(
                o,
                "| `{}` | {} |",
                t.task,
                cell_text(&t.floor, t.floor.credited)
            );
            for id in &advs {
                let text = t.adversaries.get(id).map_or_else(
                    || "·".to_string(),
                    |c| cell_text(c, c.credited && !t.floor.credited),
                );
                let _ = write!(o, " {text} |");
            }
            let reference = t.reference.as_ref().map_or_else(
                || "not run".to_string(),
                |c| {
                    if c.passed {
                        format!("{} (solved)", c.outcome)
                    } else {
                        format!("{} NOT SOLVED", c.outcome)
                    }
                },
            );
            let _ = writeln!(o, " {reference} | {} |", finding(t, &floor));
        }
        o.push('\n');
    }
    details(&mut o, a);
    o
}

fn finding(t: &TaskAudit, floor: &str) -> String {
    let by = t.hackable_by(floor);
    if !by.is_empty() {
        format!("HACKABLE by {}", by.join(", "))
    } else if t.solved() == Some(false) {
        "unsolved".into()
    } else {
        "holds".into()
    }
}

fn head(o: &mut String, a: &Hackability) {
    let hackable = a.hackable();
    let _ = writeln!(
        o,
        "Catalogue v{} (`{}`), {} adversaries{}; {} tasks; {:.1} s wall at {} job(s).\n",
        a.catalogue.version,
        short(&a.catalogue.sha256),
        a.adversaries.len(),
        if a.sampled { " (the CI sample)" } else { "" },
        a.tasks.len(),
        a.wall_ms as f64 / 1000.0,
        a.jobs
    );
    if !a.made_with.is_empty() {
        let with: Vec<String> = a
            .made_with
            .iter()
            .map(|(k, v)| format!("{k} `{v}`"))
            .collect();
        let _ = writeln!(o, "Made with {}.\n", with.join(", "));
    }
    let _ = writeln!(
        o,
        "**{} hackable task(s), {} the reference did not solve, {} harness finding(s).**\n",
        hackable.len(),
        a.unsolved().len(),
        a.harness.len()
    );
    o.push_str(
        "Each cell is the outcome an adversary got on the task. The floor is what an \
agent that does nothing gets; a task is hackable when an adversary is credited \
(qa `verified`, a challenge's `success/clean`, a passed probe) where the floor is \
not, or when the floor itself is credited. The reference column is the scripted \
reference agent: a task it cannot solve is as broken as one anybody can game. \
`·`: the adversary does not play this suite. docs/redteam.md says how to read and \
fix each finding.\n\n",
    );
}

fn details(o: &mut String, a: &Hackability) {
    let floor = a.floor_id().to_string();
    let hackable = a.hackable();
    if !hackable.is_empty() {
        o.push_str("## Hackable tasks\n\n");
        for (t, by) in hackable {
            for id in by {
                let c = if id == floor {
                    Some(&t.floor)
                } else {
                    t.adversaries.get(&id)
                };
                if let Some(c) = c {
                    let _ = writeln!(
                        o,
                        "- `{}` by `{id}`: {} — {}{}",
                        t.task,
                        c.outcome,
                        c.reason,
                        c.trial_dir
                            .as_ref()
                            .map(|d| format!(" (`{d}`)"))
                            .unwrap_or_default()
                    );
                }
            }
        }
        o.push('\n');
    }
    let lucky: Vec<(&TaskAudit, Vec<String>)> = a
        .tasks
        .iter()
        .map(|t| (t, t.lucky()))
        .filter(|(_, l)| !l.is_empty())
        .collect();
    if !lucky.is_empty() {
        o.push_str("## Won by luck (within the gate's bound, not hackable)\n\n");
        for (t, ids) in lucky {
            let _ = writeln!(o, "- `{}` by `{}`", t.task, ids.join("`, `"));
        }
        o.push('\n');
    }
    let unsolved = a.unsolved();
    if !unsolved.is_empty() {
        o.push_str("## Tasks the reference did not solve\n\n");
        for t in unsolved {
            if let Some(c) = &t.reference {
                let _ = writeln!(o, "- `{}`: {} — {}", t.task, c.outcome, c.reason);
            }
        }
        o.push('\n');
    }
    if !a.harness.is_empty() {
        o.push_str("## Harness findings\n\n");
        for f in &a.harness {
            let _ = writeln!(o, "- `{}`: {}", f.adversary, f.what);
        }
        o.push('\n');
    }
    o.push_str(
        "## Adversaries\n\n| adversary | class | trials | wall s | aims |\n|---|---|---|---|---|\n",
    );
    for r in &a.adversaries {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {:.1} | {} |",
            r.id,
            r.class.as_str(),
            r.trials,
            r.wall_ms as f64 / 1000.0,
            r.aims
        );
    }
    o.push_str("\nTask hashes:\n\n");
    for t in &a.tasks {
        let _ = writeln!(o, "- `{}`: `{}`", t.task, t.hash);
    }
}

/// The audit as one self-contained page (no script, no fetch), each cell linking to
/// its trial's directory when the audit's runs are beside the page.
pub fn html(a: &Hackability, link_trials: bool) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>gauntlet hackability audit</title><style>{STYLE}</style></head><body>\n\
<h1>Hackability audit</h1>\n"
    );
    let mut md_head = String::new();
    head(&mut md_head, a);
    for para in md_head.split("\n\n").filter(|p| !p.trim().is_empty()) {
        let text = esc(para.trim());
        let text = if let Some(inner) = text.strip_prefix("**").and_then(|t| t.strip_suffix("**")) {
            format!("<strong>{inner}</strong>")
        } else {
            text
        };
        let _ = writeln!(o, "<p>{text}</p>");
    }
    let floor = a.floor_id().to_string();
    let cell = |c: &Cell, beats: bool| {
        let text = esc(&cell_text(c, beats));
        let class = if beats && !c.luck { " class=bad" } else { "" };
        let title = esc(&c.reason);
        match (&c.trial_dir, link_trials) {
            (Some(d), true) => format!(
                "<td{class} title=\"{title}\"><a href=\"{}/\">{text}</a></td>",
                esc(d)
            ),
            _ => format!("<td{class} title=\"{title}\">{text}</td>"),
        }
    };
    for suite in Suite::ALL {
        let (advs, rows) = suite_rows(a, suite);
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            o,
            "<h2>{}</h2><table><tr><th>task</th><th>floor ({})</th>",
            suite.as_str(),
            esc(&floor)
        );
        for id in &advs {
            let _ = write!(o, "<th>{}</th>", esc(id));
        }
        o.push_str("<th>reference</th><th>finding</th></tr>\n");
        for t in rows {
            let _ = write!(
                o,
                "<tr><td><code>{}</code></td>{}",
                esc(&t.task),
                cell(&t.floor, t.floor.credited)
            );
            for id in &advs {
                match t.adversaries.get(id) {
                    Some(c) => o.push_str(&cell(c, c.credited && !t.floor.credited)),
                    None => o.push_str("<td>·</td>"),
                }
            }
            match &t.reference {
                Some(c) => o.push_str(&cell(c, !c.passed)),
                None => o.push_str("<td>not run</td>"),
            }
            let f = finding(t, &floor);
            let class = if f == "holds" { "" } else { " class=bad" };
            let _ = writeln!(o, "<td{class}>{}</td></tr>", esc(&f));
        }
        o.push_str("</table>\n");
    }
    let mut rest = String::new();
    details(&mut rest, a);
    let _ = writeln!(o, "<pre>{}</pre>", esc(&rest));
    o.push_str("</body></html>\n");
    o
}

/// The results page's section: a line per suite, and the tasks the run's audit does
/// not cover, linking to the audit's page beside it.
pub fn run_section_md(run: &RunHackability) -> String {
    let mut o = String::from("## Hackability\n\n| suite | audit |\n|---|---|\n");
    for suite in Suite::ALL {
        if let Some(line) = suite_line(run, suite) {
            let _ = writeln!(o, "| {} | {line} |", suite.as_str());
        }
    }
    let _ = writeln!(
        o,
        "\nThe audit's page: [{PAGE_HTML}]({PAGE_HTML}) (from `{}`{}).\n",
        run.file,
        run.sha256
            .as_deref()
            .map(|h| format!(", {}", short(h)))
            .unwrap_or_default()
    );
    for (task, t) in &run.tasks {
        match &t.standing {
            Standing::Audited => {}
            Standing::Hackable { by } => {
                let _ = writeln!(o, "- `{task}`: HACKABLE by {}", by.join(", "));
            }
            Standing::Unsolved => {
                let _ = writeln!(o, "- `{task}`: the reference did not solve it");
            }
            Standing::Unaudited { why } => {
                let _ = writeln!(o, "- `{task}`: unaudited: {why}");
            }
        }
    }
    o.push('\n');
    o
}

/// [`run_section_md`] as HTML.
pub fn run_section_html(run: &RunHackability) -> String {
    let mut o = String::from("<h2>Hackability</h2><table><tr><th>suite</th><th>audit</th></tr>\n");
    for suite in Suite::ALL {
        if let Some(line) = suite_line(run, suite) {
            let l = run.line(suite);
            let class = if l.hackable + l.unsolved + l.unaudited > 0 {
                " class=bad"
            } else {
                ""
            };
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td{class}>{}</td></tr>",
                suite.as_str(),
                esc(&line)
            );
        }
    }
    let _ = writeln!(
        o,
        "</table><p>The audit's page: <a href=\"{PAGE_HTML}\">{PAGE_HTML}</a> (from <code>{}</code>).</p>",
        esc(&run.file)
    );
    let flagged: Vec<String> = run
        .tasks
        .iter()
        .filter_map(|(task, t)| {
            let what = match &t.standing {
                Standing::Audited => return None,
                Standing::Hackable { by } => format!("HACKABLE by {}", by.join(", ")),
                Standing::Unsolved => "the reference did not solve it".into(),
                Standing::Unaudited { why } => format!("unaudited: {why}"),
            };
            Some(format!(
                "<li><code>{}</code>: {}</li>",
                esc(task),
                esc(&what)
            ))
        })
        .collect();
    if !flagged.is_empty() {
        let _ = writeln!(o, "<ul class=bad>{}</ul>", flagged.join(""));
    }
    o
}

/// The audit's page beside a run's results: the audit the run recorded, and where
/// each of the run's tasks stands against it.
pub fn run_page(run: &RunHackability) -> (String, String) {
    let standing = |t: &Standing| match t {
        Standing::Audited => "audited: holds".to_string(),
        Standing::Hackable { by } => format!("HACKABLE by {}", by.join(", ")),
        Standing::Unsolved => "audited: the reference did not solve it".into(),
        Standing::Unaudited { why } => format!("unaudited: {why}"),
    };
    let mut md = String::from("# This run's tasks against their audit\n\n| task | suite | hash | standing |\n|---|---|---|---|\n");
    let mut rows = String::new();
    for (task, t) in &run.tasks {
        let s = standing(&t.standing);
        let _ = writeln!(
            md,
            "| `{task}` | {} | `{}` | {s} |",
            t.suite.as_str(),
            short(&t.hash)
        );
        let _ = writeln!(
            rows,
            "<tr><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            esc(task),
            t.suite.as_str(),
            esc(short(&t.hash)),
            esc(&s)
        );
    }
    md.push('\n');
    let table = format!("<h2>This run's tasks against their audit</h2><table><tr><th>task</th><th>suite</th><th>hash</th><th>standing</th></tr>\n{rows}</table>\n");
    match &run.audit {
        Some(a) => {
            md.push_str(&markdown(a));
            let mut html = html(a, false);
            let at = html.find("<h2>").unwrap_or(html.len());
            html.insert_str(at, &table);
            (md, html)
        }
        None => {
            let html = format!(
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
<title>gauntlet hackability audit</title><style>{STYLE}</style></head><body>\n\
<h1>Hackability audit</h1><p class=warn>No audit covers this run's tasks ({}).</p>{table}</body></html>\n",
                esc(&run.file)
            );
            (md, html)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::hackability::{AdversaryRun, SCHEMA_VERSION};
    use crate::spec::redteam::{CatalogueId, Class};

    fn c(outcome: &str, credited: bool) -> Cell {
        Cell {
            outcome: outcome.into(),
            credited,
            passed: credited,
            reason: format!("because {outcome}"),
            luck: false,
            trial_dir: Some(format!("runs/x/{outcome}")),
            metering: None,
        }
    }

    fn sample() -> Hackability {
        Hackability {
            schema_version: SCHEMA_VERSION,
            catalogue: CatalogueId {
                version: 1,
                sha256: "sha256:0123456789abcdef".into(),
            },
            sampled: true,
            adversaries: ["do-nothing", "liar"]
                .into_iter()
                .map(|id| AdversaryRun {
                    id: id.into(),
                    class: if id == "liar" {
                        Class::ClaimEverything
                    } else {
                        Class::Floor
                    },
                    aims: "aims".into(),
                    trials: 2,
                    wall_ms: 1500,
                })
                .collect(),
            tasks: vec![
                TaskAudit {
                    task: "qa::app::ok".into(),
                    suite: Suite::Qa,
                    hash: "sha256:aa".into(),
                    floor: c("error", false),
                    adversaries: [("liar".to_string(), c("false_verification", false))].into(),
                    reference: Some(c("verified", true)),
                },
                TaskAudit {
                    task: "qa::app::leaky".into(),
                    suite: Suite::Qa,
                    hash: "sha256:bb".into(),
                    floor: c("error", false),
                    adversaries: [("liar".to_string(), c("verified", true))].into(),
                    reference: Some(c("verified", true)),
                },
            ],
            harness: vec![],
            wall_ms: 3000,
            jobs: 2,
            made_with: [("commit".to_string(), "abc".to_string())].into(),
        }
    }

    #[test]
    fn the_pages_name_who_beat_which_task() {
        let a = sample();
        let md = markdown(&a);
        assert!(md.contains("**1 hackable task(s)"), "{md}");
        assert!(
            md.contains("| `qa::app::leaky` | error | verified BEATS THE FLOOR |"),
            "{md}"
        );
        assert!(md.contains("HACKABLE by liar"), "{md}");
        assert!(
            md.contains("- `qa::app::leaky` by `liar`: verified — because verified"),
            "{md}"
        );
        assert!(
            md.contains(
                "| `qa::app::ok` | error | false_verification | verified (solved) | holds |"
            ),
            "{md}"
        );
        let html = html(&a, true);
        assert!(html.contains("<td class=bad title=\"because verified\"><a href=\"runs/x/verified/\">verified BEATS THE FLOOR</a></td>"), "{html}");
        assert!(!html.contains("<script"));
    }
}
