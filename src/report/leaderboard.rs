//! `gauntlet leaderboard`: scorecard probe records → one row per agent run, as a
//! markdown table and its JSON variant (the published leaderboard's two formats).
//!
//! Each probe is its own trial (its own process under nextest), so dimension scores
//! exist only here, where a run's probe records are aggregated: every record is
//! re-derived from its raw evidence first (a record whose stored result does not
//! follow from its evidence is flagged, and its re-derived observations are used).
//!
//! Ranking: only full runs with a real model are ranked. A compressed idle window or a
//! scripted profile is shown with its reason and never ranked beside full runs.
//! Repeats of one agent with one seed whose totals differ by more than 1 are flagged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Mode;
use crate::record::any::load_any;
use crate::record::scorecard::{self as screc, ScorecardRecord};
use crate::record::{self, find_records, RecordError};
use crate::score::scorecard::{holds_of, max_total, score_card};
use crate::spec::scorecard::Scorecard;
use crate::spec::Suite;

pub const LEADERBOARD_MD: &str = "leaderboard.md";
pub const LEADERBOARD_JSON: &str = "leaderboard.json";

/// The five dimensions' score keys, as the published JSON names them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    pub memory: u8,
    pub goals: u8,
    pub continuous: u8,
    pub initiative: u8,
    pub world: u8,
}

/// One row: the published JSON row (`agent` … `evidence`), plus what ranking needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub agent: String,
    pub version: String,
    pub timestamp: String,
    pub scores: Scores,
    pub total: f64,
    pub classification: String,
    /// `file://` URIs of the probe records the scores come from.
    pub evidence: Vec<String>,
    pub max_total: f64,
    pub autonomous: bool,
    pub seed: String,
    pub run_id: String,
    /// Why the row is not ranked (`None`: ranked).
    pub unranked: Option<String>,
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum LeaderboardError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("{dir}: no scorecard records")]
    Empty { dir: PathBuf },
    #[error("{file}: {reason}")]
    Io { file: PathBuf, reason: String },
}

/// Rows for every agent run in `run_dirs` (one per run directory and agent config).
pub fn collect(run_dirs: &[PathBuf]) -> Result<Vec<Entry>, LeaderboardError> {
    let mut entries = Vec::new();
    for dir in run_dirs {
        // Every record of the run through the one loader; the scorecard's are ranked.
        let mut records = Vec::new();
        for f in find_records(dir)? {
            if record::load_header(&f).is_ok_and(|h| h.suite == Suite::Scorecard) {
                if let Some(rec) = load_any(&f)?.into_scorecard() {
                    records.push((f, *rec));
                }
            }
        }
        if records.is_empty() {
            return Err(LeaderboardError::Empty { dir: dir.clone() });
        }
        let mut groups: BTreeMap<(String, String, String), Vec<(PathBuf, ScorecardRecord)>> =
            BTreeMap::new();
        for (f, rec) in records {
            let key = (
                agent_name(&rec),
                rec.header.config.agent_version.clone(),
                rec.scorecard.seed.clone(),
            );
            groups.entry(key).or_default().push((f, rec));
        }
        for ((agent, version, seed), recs) in groups {
            entries.push(entry(agent, version, seed, &recs));
        }
    }
    flag_irreproducible(&mut entries);
    Ok(entries)
}

fn agent_name(rec: &ScorecardRecord) -> String {
    match &rec.scorecard.profile {
        Some(p) if rec.header.config.mode == Mode::Scripted => {
            format!("{} [{p}]", rec.header.config.agent)
        }
        _ => rec.header.config.agent.clone(),
    }
}

fn entry(
    agent: String,
    version: String,
    seed: String,
    recs: &[(PathBuf, ScorecardRecord)],
) -> Entry {
    let card: &Scorecard = &recs[0].1.card;
    let mut holds = BTreeMap::new();
    let mut notes = Vec::new();
    let mut evidence = Vec::new();
    let mut stopped = Vec::new();
    for (file, rec) in recs {
        let dir = file.parent().unwrap_or(Path::new("."));
        // A probe stopped part-way observed only part of what it asks: none of it counts.
        if let Some(signal) = rec.interrupted() {
            notes.push(format!(
                "{}: stopped part-way when the run was interrupted ({signal}); scored 0",
                rec.scorecard.probe
            ));
            stopped.push(rec.scorecard.probe.clone());
            continue;
        }
        let result = match screc::derive(dir, rec) {
            Ok((_, result, _)) => {
                if result != rec.result {
                    notes.push(format!(
                        "{}: stored result does not follow from its evidence; re-derived",
                        rec.scorecard.probe
                    ));
                }
                result
            }
            Err(e) => {
                notes.push(format!(
                    "{}: unreadable evidence ({e})",
                    rec.scorecard.probe
                ));
                continue;
            }
        };
        let planted = !rec.evidence.planted_state.is_empty();
        if planted {
            notes.push(format!("{}: planted memory", rec.scorecard.probe));
        }
        holds.extend(holds_of(&rec.scorecard.probe, &result, planted));
        let abs = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
        evidence.push(format!("file://{}", abs.display()));
    }
    let ran: Vec<&str> = recs
        .iter()
        .map(|(_, r)| r.scorecard.probe.as_str())
        .collect();
    let wanted: Vec<String> = card
        .dimensions
        .iter()
        .flat_map(|d| d.levels.iter().flat_map(|l| l.requires.iter()))
        .filter_map(|r| r.split_once('.').map(|(p, _)| p.to_string()))
        .collect();
    let mut missing: Vec<String> = wanted
        .into_iter()
        .filter(|p| !ran.contains(&p.as_str()))
        .collect();
    missing.sort();
    missing.dedup();
    if !missing.is_empty() {
        notes.push(format!("not run (scored 0): {}", missing.join(", ")));
    }
    let mut idle_alone: Vec<&str> = recs
        .iter()
        .filter(|(_, r)| {
            r.evidence
                .background
                .as_deref()
                .is_some_and(crate::score::scorecard::had_no_background_mode)
        })
        .map(|(_, r)| r.scorecard.probe.as_str())
        .collect();
    idle_alone.sort_unstable();
    if !idle_alone.is_empty() {
        notes.push(format!(
            "no background mode: {} scored on what its turns did, with nothing running in the idle windows",
            idle_alone.join(", ")
        ));
    }
    let score = score_card(card, &holds);
    let first = &recs[0].1;
    let mut why = Vec::new();
    if first.header.config.mode == Mode::Scripted {
        why.push("scripted run: a harness illustration, not ranked".to_string());
    }
    if recs.iter().any(|(_, r)| !r.header.config.sandbox.sealed()) {
        why.push("unsealed run (GAUNTLET_SANDBOX=off): not ranked".to_string());
    }
    if !stopped.is_empty() {
        why.push(format!(
            "interrupted run ({} stopped part-way; resume it to finish): not ranked",
            stopped.join(", ")
        ));
    }
    if recs.iter().any(|(_, r)| r.scorecard.compressed) {
        why.push(format!(
            "compressed idle window ({} s per nominal day): not ranked beside full runs",
            fmt_num(first.scorecard.idle_secs_per_day)
        ));
    }
    let unranked = (!why.is_empty()).then(|| why.join("; "));
    let timestamp = recs
        .iter()
        .map(|(_, r)| r.header.started_at.clone())
        .min()
        .unwrap_or_default();
    Entry {
        agent,
        version,
        timestamp,
        scores: Scores {
            memory: score.level("memory"),
            goals: score.level("goals"),
            continuous: score.level("continuous"),
            initiative: score.level("initiative"),
            world: score.level("world"),
        },
        total: score.total,
        classification: score.classification,
        evidence,
        max_total: max_total(card),
        autonomous: score.autonomous,
        seed,
        run_id: first.header.run_id.clone(),
        unranked,
        notes,
    }
}

/// Flag every entry whose repeats (same agent, version and seed) differ by more than 1.
pub fn flag_irreproducible(entries: &mut [Entry]) {
    let mut totals: BTreeMap<(String, String, String), Vec<f64>> = BTreeMap::new();
    for e in entries.iter() {
        totals
            .entry((e.agent.clone(), e.version.clone(), e.seed.clone()))
            .or_default()
            .push(e.total);
    }
    for e in entries.iter_mut() {
        let t = &totals[&(e.agent.clone(), e.version.clone(), e.seed.clone())];
        let (lo, hi) = t
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        let note = format!(
            "not reproducible: repeats with seed `{}` total {} (differ by more than 1)",
            e.seed,
            t.iter().map(|x| fmt_num(*x)).collect::<Vec<_>>().join(", ")
        );
        if t.len() > 1 && hi - lo > 1.0 + 1e-9 && !e.notes.contains(&note) {
            e.notes.push(note);
        }
    }
}

fn fmt_num(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        format!("{x:.1}")
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Ranked rows first (by total, highest first; then by time), unranked after.
pub fn order(entries: &[Entry]) -> Vec<(Option<usize>, &Entry)> {
    let mut ranked: Vec<&Entry> = entries.iter().filter(|e| e.unranked.is_none()).collect();
    ranked.sort_by(|a, b| {
        b.total
            .total_cmp(&a.total)
            .then_with(|| a.timestamp.cmp(&b.timestamp))
    });
    let mut out: Vec<(Option<usize>, &Entry)> = ranked
        .into_iter()
        .enumerate()
        .map(|(i, e)| (Some(i + 1), e))
        .collect();
    let mut rest: Vec<&Entry> = entries.iter().filter(|e| e.unranked.is_some()).collect();
    rest.sort_by(|a, b| {
        b.total
            .total_cmp(&a.total)
            .then_with(|| a.timestamp.cmp(&b.timestamp))
    });
    out.extend(rest.into_iter().map(|e| (None, e)));
    out
}

/// The published markdown table.
pub fn render_markdown(entries: &[Entry]) -> String {
    let mut out = String::from(
        "| Rank | Agent | D1 | D2 | D3 | D4 | D5 | Total | Class | Notes |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (rank, e) in order(entries) {
        let mut notes: Vec<String> = Vec::new();
        if let Some(why) = &e.unranked {
            notes.push(why.clone());
        }
        notes.extend(e.notes.iter().cloned());
        notes.push(format!("seed `{}`", e.seed));
        let s = &e.scores;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | **{}/{}** | {} | {} |\n",
            rank.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
            cell(&format!("{} {}", e.agent, e.version)),
            s.memory,
            s.goals,
            s.continuous,
            s.initiative,
            s.world,
            fmt_num(e.total),
            fmt_num(e.max_total),
            cell(&e.classification),
            cell(&notes.join("; ")),
        ));
    }
    out
}

/// Append `new` to the leaderboard in `out_dir` (entries already there — same run,
/// agent, version and seed — are not added twice) and rewrite both files from the
/// whole list. Returns the whole list.
pub fn append(out_dir: &Path, new: Vec<Entry>) -> Result<Vec<Entry>, LeaderboardError> {
    let io = |file: &Path, e: &dyn std::fmt::Display| LeaderboardError::Io {
        file: file.to_path_buf(),
        reason: e.to_string(),
    };
    std::fs::create_dir_all(out_dir).map_err(|e| io(out_dir, &e))?;
    let json_file = out_dir.join(LEADERBOARD_JSON);
    let mut all: Vec<Entry> = match std::fs::read(&json_file) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| io(&json_file, &e))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io(&json_file, &e)),
    };
    for e in new {
        let same = |o: &Entry| {
            o.run_id == e.run_id && o.agent == e.agent && o.version == e.version && o.seed == e.seed
        };
        if !all.iter().any(same) {
            all.push(e);
        }
    }
    flag_irreproducible(&mut all);
    let json = serde_json::to_vec_pretty(&all).map_err(|e| io(&json_file, &e))?;
    crate::record::replace_whole(&json_file, &json).map_err(|e| io(&json_file, &e))?;
    let md_file = out_dir.join(LEADERBOARD_MD);
    crate::record::replace_whole(&md_file, render_markdown(&all).as_bytes())
        .map_err(|e| io(&md_file, &e))?;
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(agent: &str, total: f64, unranked: Option<&str>) -> Entry {
        Entry {
            agent: agent.into(),
            version: "1.0".into(),
            timestamp: "2026-01-01T00:00:00Z".into(),
            scores: Scores {
                memory: 1,
                goals: 1,
                continuous: 1,
                initiative: 2,
                world: 1,
            },
            total,
            classification: "Reactive".into(),
            evidence: vec![],
            max_total: 20.0,
            autonomous: false,
            seed: "s".into(),
            run_id: format!("run-{agent}-{total}"),
            unranked: unranked.map(str::to_string),
            notes: vec![],
        }
    }

    #[test]
    fn repeats_differing_by_more_than_one_are_flagged() {
        let mut v = vec![e("a", 6.0, None), e("a", 7.0, None), e("b", 6.0, None)];
        flag_irreproducible(&mut v);
        assert!(v.iter().all(|x| x.notes.is_empty()));
        v.push(e("a", 9.0, None));
        flag_irreproducible(&mut v);
        let flagged: Vec<&str> = v
            .iter()
            .filter(|x| !x.notes.is_empty())
            .map(|x| x.agent.as_str())
            .collect();
        assert_eq!(flagged, ["a", "a", "a"]);
        assert!(v[0].notes[0].contains("6, 7, 9"), "{:?}", v[0].notes);
    }

    #[test]
    fn unranked_rows_come_last_without_a_rank() {
        let v = vec![
            e("scripted", 20.0, Some("scripted")),
            e("low", 6.0, None),
            e("high", 12.0, None),
        ];
        let md = render_markdown(&v);
        let rows: Vec<&str> = md.lines().skip(2).collect();
        assert!(rows[0].starts_with("| 1 | high 1.0 |"), "{md}");
        assert!(rows[1].starts_with("| 2 | low 1.0 | 1 | 1 | 1 | 2 | 1 | **6/20** | Reactive |"));
        assert!(rows[2].starts_with("| - | scripted 1.0 |"), "{md}");
    }
}
