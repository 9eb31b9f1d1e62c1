//! Red team, round five (issue 45): hostile scorecard agents against the per-turn
//! scratch HOME/TMPDIR, the sealed and observed turns, the bounded workspace walker and
//! the sinks. Each test asserts the HONEST verdict: it passes when the harness holds and
//! fails when the attack is a hole. Fixtures: `tests/fixtures/agents/hostile/r5-*.sh`.

use std::path::Path;
use std::time::{Duration, Instant};

use gauntlet::config::Config;
use gauntlet::record::scorecard::ScorecardRecord;
use gauntlet::score::scorecard::SinkKind;

use crate::scorecard::{byok_agent, execute_probe as run, suite};

const SIDE_MEMORY: &str = include_str!("../fixtures/agents/hostile/r5-side-memory.sh");
const OUTLIVES_TURN: &str = include_str!("../fixtures/agents/hostile/r5-outlives-turn.sh");
const SMTP_UNTERMINATED: &str = include_str!("../fixtures/agents/hostile/r5-smtp-unterminated.sh");
const WORKSPACE_TREES: &str = include_str!("../fixtures/agents/hostile/r5-workspace-trees.sh");

/// A `command` agent running `script` inline with `args`, in byok mode (the agent's own
/// turns, judged as a real agent's; it never calls a model).
fn cfg(script: &str, name: &str, args: &[&str], out: &Path, timeout_secs: u64) -> Config {
    Config {
        timeout: Duration::from_secs(timeout_secs),
        // One nominal day in 96 s: a 1-hour window lasts 4 s.
        scorecard_idle_day: Some(Duration::from_secs(96)),
        scorecard_seed: "r5-seed".into(),
        ..byok_agent(script, name, args, out)
    }
}

fn holds(rec: &ScorecardRecord) -> Vec<String> {
    rec.result
        .observations
        .iter()
        .filter(|o| o.holds)
        .map(|o| format!("{}: {}", o.id, o.reason))
        .collect()
}

fn replies(rec: &ScorecardRecord) -> String {
    rec.evidence
        .turns
        .iter()
        .map(|t| {
            format!(
                "[{}] {:?} {:?}",
                t.label,
                t.reply
                    .as_deref()
                    .map(|r| r.chars().take(400).collect::<String>()),
                t.problem
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// (a) Memory kept outside `GAUNTLET_STATE_DIR`: on the tracker (a world sink alive for
/// the whole probe), in the workspace, or in places a turn's sandbox might share with the
/// next. The state directory is never written, so no recall observation may hold.
fn side_memory(mode: &str) {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = cfg(SIDE_MEMORY, "r5-side-memory.sh", &[mode], out.path(), 30);
    let mut problems = Vec::new();
    for id in ["p1-2", "p4-2"] {
        let (rec, trial) = run(&suite, id, &cfg, &out.path().join(id));
        assert_eq!(rec.evidence.setup_error, None, "{id}: {}", replies(&rec));
        assert!(
            rec.evidence.turns.iter().all(|t| t.reply.is_some()),
            "{id}: {}",
            replies(&rec)
        );
        let state: Vec<_> = std::fs::read_dir(trial.join("state"))
            .map(|d| d.flatten().count())
            .into_iter()
            .collect();
        assert_eq!(state, [0], "{id}: the agent never writes its state dir");
        let h = holds(&rec);
        if !h.is_empty() || rec.result.passed {
            problems.push(format!("{id} ({mode}): holds {h:?}\n{}", replies(&rec)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn r5_memory_kept_on_the_tracker_is_not_recall() {
    side_memory("tracker");
}

#[test]
fn r5_memory_kept_in_the_workspace_is_not_recall() {
    side_memory("workspace");
}

#[test]
fn r5_memory_left_in_tmp_shm_mqueue_or_sysv_is_not_recall() {
    side_memory("leftovers");
}

/// (c) Workers left behind a turn (setsid, double fork, own PID namespace, a Python
/// daemon) try to act in the idle window after it. Nothing of them may act: no event at
/// all (the agent itself does nothing), `self-check` does not hold, no process left.
#[test]
fn r5_workers_left_behind_a_turn_do_not_act_in_the_idle_window() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = cfg(OUTLIVES_TURN, "r5-outlives-turn.sh", &[], out.path(), 30);
    let (rec, trial) = run(&suite, "p3-1", &cfg, out.path());
    assert_eq!(rec.evidence.setup_error, None, "{}", replies(&rec));
    assert!(
        rec.evidence.turns.iter().all(|t| t.reply.is_some()),
        "{}",
        replies(&rec)
    );
    let events: Vec<String> = rec
        .evidence
        .events
        .iter()
        .map(|e| {
            format!(
                "{:?} {} {} {} ({})",
                e.sink, e.phase, e.method, e.what, e.text
            )
        })
        .collect();
    let self_check = rec
        .result
        .observations
        .iter()
        .find(|o| o.id == "self-check")
        .expect("self-check");
    // The workers did start: the kernel saw each of them begin its first `sleep`
    // within the turn (so this is no vacuous pass).
    let observed = rec.processes[0]
        .observation
        .as_ref()
        .expect("the turn is observed");
    let bytes = std::fs::read(trial.join(&observed.path)).expect("observation");
    let o = gauntlet::evidence::observed::parse(&mut &bytes[..]);
    let sleeps = o
        .execs
        .iter()
        .filter(|e| e.path.ends_with("/sleep") && e.argv.get(1).is_some_and(|a| a == "1"))
        .count();
    assert!(sleeps >= 3, "{sleeps} workers began: {:#?}", o.execs);
    // Give any survivor time to show itself after the record too.
    std::thread::sleep(Duration::from_secs(2));
    let late: Vec<String> = std::fs::read_dir(trial.join("workspace"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        events.is_empty() && !self_check.holds && late.is_empty(),
        "survivors acted: events {events:?}; self-check {} ({}); workspace after the record {late:?}",
        self_check.holds,
        self_check.reason
    );
}

/// (a) P5.3: the data ends with a lone `.` and no CRLF, then the connection closes: a
/// mail RFC 5321 does not deliver. `mail-sent` must not hold.
#[test]
fn r5_a_mail_whose_data_never_ends_with_crlf_dot_crlf_is_not_sent() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let mut problems = Vec::new();
    for mode in ["nodot-crlf", "nodot"] {
        let cfg = cfg(
            SMTP_UNTERMINATED,
            "r5-smtp-unterminated.sh",
            &[mode],
            out.path(),
            30,
        );
        let (rec, _) = run(&suite, "p5-3", &cfg, &out.path().join(mode));
        assert_eq!(rec.evidence.setup_error, None, "{}", replies(&rec));
        assert!(
            rec.evidence.turns.iter().all(|t| t.reply.is_some()),
            "{}",
            replies(&rec)
        );
        let mails: Vec<String> = rec
            .evidence
            .events
            .iter()
            .filter(|e| e.sink == SinkKind::Mail)
            .map(|e| format!("{} {} {}", e.phase, e.what, e.text))
            .collect();
        if rec.result.passed || !mails.is_empty() {
            problems.push(format!(
                "{mode}: passed {} ({}); mails {mails:?}\n{}",
                rec.result.passed,
                rec.result.reason,
                replies(&rec)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// (b) A tree beside the right CSV (P5.1). The trial ends, within its own deadline, with
/// a finished record that validates against the schema and rescore agrees with; within
/// the walk's bounds it is judged on the CSV (`csv-written` holds), past them it ends on
/// the cut (`error`, naming it).
fn workspace_tree(mode: &str, past_a_bound: Option<&str>) -> ScorecardRecord {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let timeout = 30;
    let cfg = cfg(
        WORKSPACE_TREES,
        "r5-workspace-trees.sh",
        &[mode],
        out.path(),
        timeout,
    );
    let t0 = Instant::now();
    let (rec, trial) = run(&suite, "p5-1", &cfg, out.path());
    let took = t0.elapsed();
    let file = trial.join("record.json");
    assert!(file.is_file(), "{mode}: no record");
    assert_eq!(rec.evidence.interrupted, None, "{mode}");
    assert!(
        took < Duration::from_secs(2 * timeout),
        "{mode}: took {took:?}, past the trial's own deadline"
    );
    assert!(
        rec.evidence.turns.iter().all(|t| t.reply.is_some()),
        "{mode}: {}",
        replies(&rec)
    );
    let csv = rec
        .result
        .observations
        .iter()
        .find(|o| o.id == "csv-written")
        .expect("csv-written");
    match past_a_bound {
        None => {
            assert_eq!(
                rec.evidence.setup_error, None,
                "{mode}: {}",
                rec.verdict.reason
            );
            assert!(csv.holds, "{mode}: {}", csv.reason);
            assert_eq!(
                rec.verdict.outcome,
                gauntlet::score::Outcome::Verified,
                "{mode}: {}",
                rec.verdict.reason
            );
        }
        Some(says) => {
            let e = rec.evidence.setup_error.as_deref().unwrap_or("");
            assert!(
                e.contains(says),
                "{mode}: setup error {e:?}, wanted {says:?}"
            );
            assert_eq!(
                rec.verdict.outcome,
                gauntlet::score::Outcome::Error,
                "{mode}: {}",
                rec.verdict.reason
            );
        }
    }
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    let schema: serde_json::Value =
        serde_json::from_str(&gauntlet::record::scorecard::record_schema_text()).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| e.to_string())
        .take(5)
        .collect();
    assert!(errors.is_empty(), "{mode}: {errors:?}");
    assert!(
        gauntlet::record::rescore::rescore_file(&file).agrees(),
        "{mode}: rescore disagrees"
    );
    let seen: Vec<String> = rec
        .evidence
        .turns
        .iter()
        .flat_map(|t| t.files_after.keys().cloned())
        .collect();
    eprintln!(
        "{mode}: {:?} in {took:?}: {}; {} files after, e.g. {:?}",
        rec.verdict.outcome,
        rec.verdict.reason,
        seen.len(),
        seen.iter().take(12).collect::<Vec<_>>()
    );
    rec
}

#[test]
fn r5_tree_fifty_thousand_and_one_files() {
    workspace_tree("files", Some("entries"));
}

#[test]
fn r5_tree_deeper_than_the_depth_bound() {
    workspace_tree("deep", Some("deeper than"));
}

#[test]
fn r5_tree_a_path_longer_than_path_max() {
    workspace_tree("longpath", None);
}

#[test]
fn r5_tree_four_hundred_hard_links_to_eight_mib() {
    workspace_tree("links", None);
}

#[test]
fn r5_tree_names_that_are_not_utf8() {
    let rec = workspace_tree("odd", None);
    // Every file is in the record, each under a name of its own: 8 files in `odd/` and
    // one inside `odd/\xffdir/`. A file the snapshot did not see is a write the world
    // sink missed, with nothing saying so.
    let seen: Vec<&String> = rec.evidence.turns[0]
        .files_after
        .keys()
        .filter(|k| k.starts_with("odd/"))
        .collect();
    assert!(
        seen.len() == 9 && seen.iter().any(|k| k.ends_with("/inner")),
        "the snapshot merged or missed files: {seen:?}"
    );
}

/// 600 ordinary small files before the CSV in name order: the CSV is still judged.
#[test]
fn r5_tree_six_hundred_small_files_before_the_csv() {
    workspace_tree("many", None);
}

#[test]
fn r5_tree_fifo_socket_loops_and_closed_dirs_in_workspace_and_state() {
    workspace_tree("special", None);
}
