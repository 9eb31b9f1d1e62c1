//! The scorecard suite end to end: the three scripted profiles of the reference agent
//! (real `gauntlet-agent chat` turns, its real `daemon` in the idle windows, real
//! sinks) through the same driver and scorer as a real run, land in their bands; the
//! leaderboard renders them in its published formats; planted memory and an agent that
//! dies mid-probe are recorded, not crashed on.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use gauntlet::config::{AgentChoice, AgentKind, Config, Mode};
use gauntlet::report::leaderboard::{self, Entry};
use gauntlet::spec::scorecard::{default_dir, load_suite, ScorecardSuite};
use gauntlet::suites::scorecard::{execute, ExecOptions};

use super::support::{self, runtime};

pub fn suite() -> ScorecardSuite {
    load_suite(&default_dir()).expect("challenges/scorecard loads")
}

fn cfg(profile: &str, out: &Path) -> Config {
    Config {
        agent: AgentChoice::of(AgentKind::Reference),
        mode: Mode::Scripted,
        timeout: Duration::from_secs(60),
        out_dir: out.to_path_buf(),
        // One nominal day in 24 s: the 1-hour check window lasts 1 s.
        scorecard_idle_day: Some(Duration::from_secs(24)),
        scorecard_seed: "itest-seed-1".into(),
        scorecard_profile: profile.into(),
        ..Config::default()
    }
}

/// Every probe of the suite, concurrently (each with its own sinks, ports and state
/// directory), into `run_dir`.
fn run_profile(suite: &ScorecardSuite, profile: &str, out: &Path) -> std::path::PathBuf {
    let cfg = cfg(profile, out);
    let run_dir = out.join(profile);
    let rt = runtime();
    rt.block_on(async {
        let runs = suite.probes.iter().map(|p| {
            let (cfg, run_dir) = (&cfg, &run_dir);
            async move {
                execute(suite, p, cfg, run_dir, &ExecOptions::default())
                    .await
                    .unwrap_or_else(|e| panic!("{}: {e}", p.trial_name()))
            }
        });
        futures_util::future::join_all(runs).await
    });
    run_dir
}

/// One probe by the autonomous profile with the agent deadline `timeout`, into
/// `out/run`; the record it must leave, and its directory.
fn run_probe(
    suite: &ScorecardSuite,
    id: &str,
    timeout: Duration,
    out: &Path,
) -> (
    gauntlet::record::scorecard::ScorecardRecord,
    std::path::PathBuf,
) {
    let cfg = Config {
        timeout,
        ..cfg("autonomous", out)
    };
    execute_probe(suite, id, &cfg, out)
}

/// A `command` agent running `script` inline (as `name`, with `args`) in byok mode:
/// the agent's own turns, judged as a real agent's are. It never calls a model, so
/// nothing listens upstream.
pub fn byok_agent(script: &str, name: &str, args: &[&str], out: &Path) -> Config {
    let mut argv = vec!["sh".into(), "-c".into(), script.into(), name.into()];
    argv.extend(args.iter().map(|a| a.to_string()));
    Config {
        agent: AgentChoice::command(argv),
        timeout: Duration::from_secs(30),
        mode: Mode::Byok,
        api_key: Some(gauntlet::config::ApiKey::new("sk-never-used")),
        upstream_url: "http://127.0.0.1:9/v1".into(),
        ..cfg("stub", out)
    }
}

/// One probe of `suite` under `cfg`, into `out/run`: the record it must leave, and its
/// directory.
pub fn execute_probe(
    suite: &ScorecardSuite,
    id: &str,
    cfg: &Config,
    out: &Path,
) -> (
    gauntlet::record::scorecard::ScorecardRecord,
    std::path::PathBuf,
) {
    let probe = suite.probe(id).expect("probe");
    runtime()
        .block_on(execute(
            suite,
            probe,
            cfg,
            &out.join("run"),
            &ExecOptions::default(),
        ))
        .unwrap_or_else(|e| panic!("{id}: a record, not an error: {e}"))
}

fn dims(e: &Entry) -> [u8; 5] {
    let s = &e.scores;
    [s.memory, s.goals, s.continuous, s.initiative, s.world]
}

#[test]
fn three_profiles_land_in_their_bands_and_the_leaderboard_shows_them() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
    let mut run_dirs = Vec::new();
    for profile in ["stub", "reactive", "autonomous"] {
        let dir = run_profile(&suite, profile, out.path());
        let got = leaderboard::collect(std::slice::from_ref(&dir)).expect("collect");
        assert_eq!(got.len(), 1, "{profile}: one agent run per run dir");
        entries.insert(profile.to_string(), got.into_iter().next().expect("entry"));
        run_dirs.push(dir);
    }
    let (stub, reactive, auto) = (
        &entries["stub"],
        &entries["reactive"],
        &entries["autonomous"],
    );
    assert!(stub.total <= 4.0, "stub: {:?} {}", dims(stub), stub.total);
    assert_eq!(stub.classification, "Stub");
    assert!(
        (5.0..=9.0).contains(&reactive.total),
        "reactive: {:?} {} {:?}",
        dims(reactive),
        reactive.total,
        reactive.notes
    );
    assert_eq!(reactive.classification, "Reactive");
    assert!(
        auto.total >= 15.0 && dims(auto).iter().all(|d| *d >= 3) && auto.autonomous,
        "autonomous: {:?} {} {:?}",
        dims(auto),
        auto.total,
        auto.notes
    );
    for e in entries.values() {
        // Scripted and compressed: shown, never ranked.
        let why = e.unranked.as_deref().unwrap_or("");
        assert!(
            why.contains("scripted") && why.contains("compressed"),
            "{why}"
        );
        assert!(e.evidence.iter().all(|u| u.starts_with("file://")));
        assert_eq!(e.evidence.len(), suite.probes.len());
    }

    // The leaderboard from the three runs, in its published formats.
    let board = out.path().join("board");
    let all = leaderboard::append(&board, leaderboard::collect(&run_dirs).expect("collect"))
        .expect("append");
    assert_eq!(all.len(), 3);
    // Appending the same runs again adds nothing.
    let again = leaderboard::append(&board, leaderboard::collect(&run_dirs).expect("collect"))
        .expect("append");
    assert_eq!(again.len(), 3);
    let md = std::fs::read_to_string(board.join(leaderboard::LEADERBOARD_MD)).expect("md");
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(board.join(leaderboard::LEADERBOARD_JSON)).expect("json"),
    )
    .expect("json parses");
    let mut settings = insta::Settings::clone_current();
    // Found at run time in the repository, not beside a source path fixed at build time
    // (a nextest archive runs in another tree: docs/results.md).
    settings.set_snapshot_path(gauntlet::binaries::repo_root().join("tests/integration/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        insta::assert_snapshot!("scorecard_leaderboard_md", md);
        insta::assert_json_snapshot!("scorecard_leaderboard_json", json, {
            "[].timestamp" => "[timestamp]",
            "[].run_id" => "[run id]",
            "[].evidence[]" => "[record uri]",
        });
    });

    // Every record rescores offline to the same verdict.
    for dir in &run_dirs {
        for f in gauntlet::record::find_records(dir).expect("records") {
            let row = gauntlet::record::rescore::rescore_file(&f);
            assert!(row.agrees(), "{}: {:?}", row.trial, row.derived);
        }
    }
}

#[test]
fn planted_memory_in_a_fresh_agent_is_detected() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let plant = out.path().join("plant");
    std::fs::create_dir_all(&plant).expect("mkdir");
    std::fs::write(
        plant.join("memory.jsonl"),
        "{\"op\":\"remember\",\"key\":\"favorite_color\",\"fact\":\"teal\"}\n",
    )
    .expect("write");
    let probe = suite.probe("p1-1").expect("p1-1");
    let cfg = cfg("autonomous", out.path());
    let (rec, _) = runtime()
        .block_on(execute(
            &suite,
            probe,
            &cfg,
            &out.path().join("run"),
            &ExecOptions {
                plant_state_from: Some(plant),
            },
        ))
        .expect("record");
    assert_eq!(rec.evidence.planted_state, ["memory.jsonl"]);
    assert!(!rec.verdict.passed);
    assert!(
        rec.verdict.reason.contains("planted"),
        "{}",
        rec.verdict.reason
    );
}

#[test]
fn an_agent_that_dies_mid_probe_leaves_a_record_scoring_zero_with_the_reason() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    // Killed at its deadline on the first turn: a hung agent.
    let (rec, dir) = run_probe(&suite, "p1-3", Duration::from_millis(1), out.path());
    assert!(dir.join("record.json").is_file());
    assert!(!rec.verdict.passed);
    // It rescores to the same verdict; a stored verdict flipped to a pass is caught.
    let file = dir.join("record.json");
    assert!(gauntlet::record::rescore::rescore_file(&file).agrees());
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    v["verdict"]["passed"] = serde_json::Value::Bool(true);
    v["result"]["passed"] = serde_json::Value::Bool(true);
    std::fs::write(&file, serde_json::to_vec(&v).expect("json")).expect("tamper");
    assert!(!gauntlet::record::rescore::rescore_file(&file).agrees());
    let err = rec.evidence.setup_error.as_deref().unwrap_or("");
    assert!(err.contains("died at turn `fact-a`"), "{err}");
    assert!(rec.result.observations.iter().all(|o| !o.holds));
    assert!(
        rec.result
            .observations
            .iter()
            .all(|o| o.reason.contains("no reply") || o.reason.contains("never ran")),
        "{:?}",
        rec.result.observations
    );
}

/// An agent that answers nothing (`true`: exits 0, no events) — or, while the command
/// adapter has no session support, cannot be launched at all — scores zero with reasons.
#[test]
fn a_silent_agent_is_recorded_with_reasons_not_crashed_on() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let probe = suite.probe("p4-1").expect("p4-1");
    let cfg = Config {
        agent: AgentChoice::command(vec!["true".into()]),
        ..cfg("autonomous", out.path())
    };
    let (rec, _) = runtime()
        .block_on(execute(
            &suite,
            probe,
            &cfg,
            &out.path().join("run"),
            &ExecOptions::default(),
        ))
        .expect("record");
    assert!(!rec.verdict.passed);
    assert!(rec.result.observations.iter().all(|o| !o.holds));
    assert!(
        rec.evidence.setup_error.is_some()
            || rec.evidence.turns.iter().all(|t| t.problem.is_some()),
        "{:?}",
        rec.evidence
    );
}

/// The reference agent's real daemon, ticking all through the windows but only
/// appending log lines: no continuous-operation observation holds.
#[test]
fn a_background_loop_that_only_logs_scores_nothing() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        scorecard_idle_day: Some(Duration::from_secs(6)),
        ..cfg("log-only", out.path())
    };
    for id in ["p3-1", "p3-2"] {
        let (rec, dir) = execute_probe(&suite, id, &cfg, out.path());
        // The loop really ran and really wrote…
        assert!(
            rec.evidence
                .events
                .iter()
                .any(|e| e.what == "selfcheck.log"),
            "{id}: {:?}",
            rec.evidence.events
        );
        assert!(dir.join("workspace/selfcheck.log").is_file());
        // …and scores nothing.
        let idle = rec
            .result
            .observations
            .iter()
            .find(|o| o.id == "self-check" || o.id == "background-action")
            .expect("idle observation");
        assert!(!idle.holds, "{id}: {}", idle.reason);
        assert!(idle.reason.contains("only log lines"), "{}", idle.reason);
    }
}

#[test]
fn the_committed_scorecard_record_schema_is_current_and_real_records_validate() {
    use gauntlet::record::scorecard::{record_schema_text, SCHEMA_PATH};
    let committed = support::root().join(SCHEMA_PATH);
    let now = record_schema_text();
    if std::env::var_os("GAUNTLET_UPDATE_SCHEMA").is_some() {
        std::fs::write(&committed, &now).expect("write schema");
    }
    let on_disk = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        on_disk == now,
        "{} is stale: regenerate it with `GAUNTLET_UPDATE_SCHEMA=1 cargo test --test integration the_committed_scorecard_record_schema_is_current`",
        committed.display()
    );
    let schema: serde_json::Value = serde_json::from_str(&now).expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    // Records of a memory probe (turns, a new session) and a world probe (sinks), and of
    // a probe whose agent died: every shape a record takes.
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let mut checked = 0;
    for (id, timeout) in [
        ("p1-1", Duration::from_secs(60)),
        ("p5-2", Duration::from_secs(60)),
        ("p1-3", Duration::from_millis(1)),
    ] {
        let (_, dir) = run_probe(&suite, id, timeout, out.path());
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("record.json")).expect("record"))
                .expect("json");
        let errors: Vec<String> = validator
            .iter_errors(&record)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{id}: {errors:?}");
        checked += 1;
    }
    assert_eq!(checked, 3);
}

/// A copy of `dir` (files and folders) at `to`.
fn copy_tree(dir: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A scripted tool call that failed is the harness's script failing on this agent,
/// never a low score of it: a memory write that cannot land (its result lacks the
/// `stored` its step expects) and a file write the workspace does not hold afterwards
/// each make the probe an `error` that names the turn and the step, and the record
/// rescores to the same. The mapping regressions this stands for: a state directory
/// the agent's own sandbox keeps read-only (Codex before it was made a writable root),
/// a write tool that refuses (Claude Code's Write on a file it has not read).
#[test]
fn a_scripted_step_whose_tool_failed_is_an_error_not_a_low_score() {
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("scorecard");
    copy_tree(&default_dir(), &dir);
    let profile = dir.join("agents/autonomous/profile.json");
    let text = std::fs::read_to_string(&profile).expect("profile");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    // The memory file where no process may write.
    v["turns"]["p1-1/plant"][0]["shell"]["command"] =
        "printf '%s\\n' 'favorite color: {{color}}' >> /proc/memory.md && echo stored".into();
    // A write that lands outside the workspace's `out/items.csv`.
    v["turns"]["p5-1/write"][0]["write_file"]["path"] = "../outside/items.csv".into();
    std::fs::write(&profile, serde_json::to_vec_pretty(&v).expect("json")).expect("write");
    let suite = load_suite(&dir).expect("the edited suite loads");
    let cfg = cfg("autonomous", out.path());
    for (id, turn, why) in [
        ("p1-1", "plant", "step 0 its result lacks `stored`"),
        ("p5-1", "write", "left no `../outside/items.csv`"),
    ] {
        let (rec, trial) = execute_probe(&suite, id, &cfg, out.path());
        assert_eq!(
            rec.verdict.outcome,
            gauntlet::score::Outcome::Error,
            "{id}: {:?}",
            rec.verdict
        );
        assert!(
            rec.verdict.reason.contains(&format!("turn `{turn}`"))
                && rec.verdict.reason.contains(why),
            "{id}: {}",
            rec.verdict.reason
        );
        assert!(gauntlet::record::rescore::rescore_file(&trial.join("record.json")).agrees());
    }
}

const READS_LEFTOVERS: &str = include_str!("../fixtures/agents/hostile/reads-leftovers.sh");

/// Issue 45: a stateless agent (a `command` script that never writes its state
/// directory) reads every file it can reach under `$HOME`, `$TMPDIR`, its workspace,
/// its cwd, their parents and `/tmp` each turn and answers with what they say. The
/// harness leaves nothing of an earlier turn or session there (HOME and TMPDIR are
/// fresh per turn and removed after it; the workspace holds only what the agent
/// writes), so it recalls nothing: no memory recall (P1.1–P1.3, P2.2's goals), no
/// prior thread (P4.2).
#[test]
fn a_stateless_agent_reading_what_the_harness_left_recalls_nothing() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = Config {
        agent: AgentChoice::command(vec![
            "sh".into(),
            "-c".into(),
            READS_LEFTOVERS.into(),
            "reads-leftovers.sh".into(),
        ]),
        timeout: Duration::from_secs(30),
        ..cfg("stub", out.path())
    };
    let ids = ["p1-1", "p1-2", "p1-3", "p2-2", "p4-2"];
    let run_dir = out.path().join("run");
    let recs = runtime().block_on(async {
        let runs = ids.iter().map(|id| {
            let (suite, cfg, run_dir) = (&suite, &cfg, &run_dir);
            async move {
                let probe = suite.probe(id).expect("probe");
                execute(suite, probe, cfg, run_dir, &ExecOptions::default())
                    .await
                    .unwrap_or_else(|e| panic!("{id}: {e}"))
            }
        });
        futures_util::future::join_all(runs).await
    });
    let mut problems = Vec::new();
    for (id, (rec, trial)) in ids.iter().zip(&recs) {
        // Every turn ran and answered: a zero here is the agent's, not a broken run.
        if let Some(e) = &rec.evidence.setup_error {
            problems.push(format!("{id}: setup error {e}"));
        }
        if rec.evidence.turns.iter().any(|t| t.reply.is_none()) {
            problems.push(format!("{id}: a turn without a reply"));
        }
        let spec = serde_json::to_value(&rec.probe.probe).expect("probe json");
        let kind_of = |oid: &str| -> String {
            spec["observations"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|o| o["id"] == oid)
                .and_then(|o| o["kind"].as_str())
                .unwrap_or("")
                .to_string()
        };
        for o in &rec.result.observations {
            let kind = kind_of(&o.id);
            let memory = ["recall", "prior_thread", "goals_stated", "priority_order"];
            if o.holds && memory.contains(&kind.as_str()) {
                problems.push(format!(
                    "{id}: `{}` ({kind}) holds for a stateless agent: {}",
                    o.id,
                    o.audit
                        .as_deref()
                        .unwrap_or("")
                        .chars()
                        .take(300)
                        .collect::<String>()
                ));
            }
        }
        if rec.result.recall_score > 0 || rec.result.passed {
            problems.push(format!(
                "{id}: scored (recall_score {}, passed {})",
                rec.result.recall_score, rec.result.passed
            ));
        }
        // It never wrote its state directory, and the harness wrote nothing into it or
        // into the workspace (a world sink: only the agent's writes belong there).
        for sub in ["state", "workspace"] {
            let left: Vec<String> = walkdir_files(&trial.join(sub));
            if !left.is_empty() {
                problems.push(format!("{id}: {sub} holds {left:?}"));
            }
        }
        // Every turn's scratch HOME and TMPDIR is gone once the turn is over.
        let scratch = walkdir_files(&trial.join("scratch"));
        if !scratch.is_empty() {
            problems.push(format!("{id}: scratch left behind: {scratch:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every file under `dir` (relative paths), none when it does not exist.
fn walkdir_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap_or(&p);
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out
}

const SPARSE_WORKSPACE: &str = include_str!("../fixtures/agents/hostile/sparse-workspace.sh");

/// Issue 45, item 3: an agent leaves a 1 TiB sparse file in its workspace, which the
/// harness snapshots after every turn. The snapshot must not read it through: the
/// trial ends with a finished record (not interrupted, so no retry on resume), the
/// file recorded by its size and a prefix hash marked as sparse, and the probe judged
/// on what the agent did (it never wrote the CSV: unverified, naming the CSV). No
/// wall-clock threshold here: the trial's own deadline (`timeout`) is the bound.
#[test]
fn a_terabyte_sparse_file_in_the_workspace_is_recorded_by_size_not_read() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = byok_agent(SPARSE_WORKSPACE, "sparse-workspace.sh", &[], out.path());
    let (rec, trial) = execute_probe(&suite, "p5-4", &cfg, out.path());
    let file = trial.join("record.json");
    assert!(file.is_file(), "no record at {}", file.display());
    assert_eq!(rec.evidence.interrupted, None);
    assert_eq!(rec.evidence.setup_error, None, "{:?}", rec.evidence);
    assert_eq!(rec.evidence.turns.len(), 2);
    assert!(rec.evidence.turns.iter().all(|t| t.reply.is_some()));
    assert_eq!(
        rec.verdict.outcome,
        gauntlet::score::Outcome::Unverified,
        "{}",
        rec.verdict.reason
    );
    assert!(
        rec.verdict.reason.contains("does not exist after `first`"),
        "{}",
        rec.verdict.reason
    );
    // The record names the file by its size, hashed by a prefix and marked sparse, in a
    // shape the committed schema describes.
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    let schema: serde_json::Value =
        serde_json::from_str(&gauntlet::record::scorecard::record_schema_text())
            .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    for turn in v["evidence"]["turns"].as_array().expect("turns") {
        let big = &turn["files_after"]["big"];
        assert_eq!(big["bytes"].as_u64(), Some(1 << 40), "{turn}");
        assert_eq!(big["partial"]["why"], "sparse", "{big}");
        assert!(
            big["partial"]["hashed_bytes"]
                .as_u64()
                .is_some_and(|n| n < 1 << 20),
            "{big}"
        );
    }
    // Written once, in the first turn; the second turn's snapshot sees it unchanged.
    let big_events: Vec<(String, String)> = rec
        .evidence
        .events
        .iter()
        .filter(|e| e.what == "big")
        .map(|e| (e.phase.clone(), e.method.clone()))
        .collect();
    assert_eq!(big_events, [("first".to_string(), "write".to_string())]);
    assert!(gauntlet::record::rescore::rescore_file(&file).agrees());
}

/// A scorecard agent that says it mailed a report (a tool call it prints) and runs
/// only `date`: its page shows what the kernel saw each turn execute, and the mail
/// program it never ran (issue 45 item 7).
const CLAIMS_A_MAIL: &str = r#"date >/dev/null
printf '%s\n' '{"type":"tool_call","id":"c1","tool":"shell","input":{"command":"date && sendmail boss@example.com < report.txt"}}'
printf '%s\n' '{"type":"tool_result","id":"c1","tool":"shell","output":"sent"}'
printf '%s\n' '{"type":"final","text":"Mailed the report."}'
"#;

#[test]
fn the_scorecard_page_shows_what_each_process_executed_and_what_it_only_claimed() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = byok_agent(CLAIMS_A_MAIL, "claims-a-mail", &[], out.path());
    let (rec, trial) = execute_probe(&suite, "p1-1", &cfg, out.path());
    assert!(!rec.processes.is_empty());
    for p in &rec.processes {
        let raw = p.observation.as_ref().expect("each process is observed");
        assert!(trial.join(&raw.path).is_file(), "{}", raw.path);
    }
    let page = gauntlet::report::transcript::render(
        &gauntlet::record::any::AnyRecord::Scorecard(Box::new(rec.clone())),
        &trial,
        "",
    );
    let first = &rec.processes[0].label;
    assert!(
        page.contains(&format!("What the kernel saw <code>{first}</code> execute"))
            || page.contains(&format!("What the kernel saw `{first}` execute")),
        "{page}"
    );
    assert!(page.contains("/date"), "the date it ran: {page}");
    assert!(
        page.contains("<code>sendmail</code>"),
        "the mail it never sent: {page}"
    );
    assert!(!page.contains("<code>date</code> in"), "{page}");
    // The observation files are raw files: rescore checks their hashes.
    let record = trial.join("record.json");
    let check = gauntlet::record::raw::verify_record_file(&record).expect("record");
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    assert!(
        check.checked >= rec.processes.len() * 3,
        "{}",
        check.checked
    );
}

/// A scorecard agent that does P5.1 right (the CSV its prompt asks for) after writing
/// 600 small files that come before the CSV in name order (an ordinary workspace: a
/// checkout, `node_modules`).
const MANY_FILES_THEN_THE_CSV: &str = r#"cd "${GAUNTLET_WORKSPACE:-$PWD}" || exit 1
items=$(sed -n 's/.*in this order: //p' "${GAUNTLET_PROMPT_FILE:-/dev/null}" | sed 's/\.$//')
mkdir -p a out
i=0
while [ $i -lt 600 ]; do echo "file $i" > "a/f$(printf %04d $i).txt"; i=$((i+1)); done
{
  echo "id,item"
  n=0
  printf '%s\n' "$items" | tr ',' '\n' | sed 's/^ *//' | while IFS= read -r it; do
    [ -n "$it" ] || continue
    n=$((n+1)); echo "$n,$it"
  done
} > out/items.csv
printf '%s\n' '{"type":"final","text":"Wrote out/items.csv."}'
"#;

/// A turn's record keeps at most so many workspace files, but never leaves out the one
/// the probe is judged on, and says how many it left out (red team, round five: the CSV
/// fell past the first 500 files in name order, and an honest agent failed P5.1).
#[test]
fn a_record_leaving_files_out_keeps_the_judged_file_and_counts_the_rest() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = byok_agent(MANY_FILES_THEN_THE_CSV, "many-files.sh", &[], out.path());
    let (rec, trial) = execute_probe(&suite, "p5-1", &cfg, out.path());
    assert_eq!(rec.evidence.setup_error, None, "{:?}", rec.evidence);
    assert_eq!(
        rec.verdict.outcome,
        gauntlet::score::Outcome::Verified,
        "{}",
        rec.verdict.reason
    );
    let turn = &rec.evidence.turns[0];
    assert!(turn.files_after.contains_key("out/items.csv"));
    assert_eq!(turn.files_after.len(), 501);
    let incomplete = turn.files_incomplete.as_ref().expect("files left out");
    assert_eq!((incomplete.left_out, &incomplete.cut), (100, &None));
    let file = trial.join("record.json");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    assert_eq!(
        v["evidence"]["turns"][0]["files_incomplete"]["left_out"],
        100
    );
    let schema: serde_json::Value =
        serde_json::from_str(&gauntlet::record::scorecard::record_schema_text())
            .expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert!(gauntlet::record::rescore::rescore_file(&file).agrees());
}

/// The hackability audit's P4.1 adversary: it never answers the question, only offers
/// more. Both offers are in its reply, so before P4.1 observed the answer it passed.
const OFFERS_WITHOUT_ANSWERING: &str = r#"printf '%s\n' '{"type":"final","text":"Anything else? Would you like me to do more?"}'
"#;

/// P4.1 is "after answering the last user query, did agent offer a follow-up?": an
/// agent that offers without answering fails it on the `answered` observation, while
/// the autonomous scripted profile, which answers and offers, still passes it.
#[test]
fn p4_1_an_offer_without_the_answer_fails_and_the_autonomous_profile_passes() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = byok_agent(
        OFFERS_WITHOUT_ANSWERING,
        "offers-without-answering",
        &[],
        out.path(),
    );
    let (rec, trial) = execute_probe(&suite, "p4-1", &cfg, &out.path().join("hostile"));
    assert_eq!(rec.evidence.setup_error, None, "{:?}", rec.evidence);
    assert_eq!(
        rec.evidence.turns[0].reply.as_deref(),
        Some("Anything else? Would you like me to do more?")
    );
    assert!(!rec.verdict.passed, "{}", rec.verdict.reason);
    let by_id = |r: &gauntlet::record::scorecard::ScorecardRecord, id: &str| {
        r.result
            .observations
            .iter()
            .find(|o| o.id == id)
            .cloned()
            .unwrap_or_else(|| panic!("no observation `{id}`"))
    };
    let sum = quiz_sum(&rec);
    let answered = by_id(&rec, "answered");
    assert!(!answered.holds);
    assert_eq!(answered.reason, format!("does not answer: no `{sum}`"));
    assert!(
        rec.verdict
            .reason
            .contains(&format!("answered: does not answer: no `{sum}`")),
        "{}",
        rec.verdict.reason
    );
    // What it did offer is still seen: only the answer is missing.
    assert!(by_id(&rec, "anything-else").holds && by_id(&rec, "follow-up").holds);
    assert!(gauntlet::record::rescore::rescore_file(&trial.join("record.json")).agrees());

    let (rec, _) = run_probe(
        &suite,
        "p4-1",
        Duration::from_secs(60),
        &out.path().join("autonomous"),
    );
    assert!(rec.verdict.passed, "{}", rec.verdict.reason);
    let answered = by_id(&rec, "answered");
    assert!(
        answered.holds && answered.reason == format!("answers `{sum}`"),
        "{answered:?}"
    );
    // It answered the question its seed drew, operands and all.
    let bank = gauntlet::spec::scorecard::Bank::from_seed(&rec.scorecard.seed);
    let (a, b) = (bank.get("quiz_a").unwrap(), bank.get("quiz_b").unwrap());
    assert_eq!(
        rec.evidence.turns[0].prompt,
        format!("What is {a} plus {b}?")
    );
    assert!(
        rec.evidence.turns[0]
            .reply
            .as_deref()
            .is_some_and(|r| r.starts_with(&format!("{a} plus {b} is {sum}."))),
        "{:?}",
        rec.evidence.turns[0].reply
    );
}

/// The answer P4.1's seed drew (`quiz_sum`), from the record's own seed.
fn quiz_sum(rec: &gauntlet::record::scorecard::ScorecardRecord) -> String {
    let bank = gauntlet::spec::scorecard::Bank::from_seed(&rec.scorecard.seed);
    bank.get("quiz_sum")
        .expect("the bank draws quiz_sum")
        .to_string()
}

/// The red team's `canned-words` adversary, the real script of the shipped catalogue.
const CANNED_WORDS: &str = include_str!("../../redteam/agents/canned-words.sh");

/// `canned-words` reads nothing and sends one canned reply to every turn: a leap year's
/// 366, a goals list and both offers. While P4.1 asked a fixed question, its fixed,
/// public answer passed the probe unread; the question is now drawn with the seed
/// (`quiz_a` plus `quiz_b`), so the canned number answers nothing and P4.1 fails on
/// `answered`, the offers still seen.
#[test]
fn p4_1_a_canned_reply_to_every_turn_does_not_answer_the_drawn_question() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let root = support::root();
    let cfg = byok_agent(
        CANNED_WORDS,
        "canned-words.sh",
        &[root.to_str().expect("utf-8 root"), "{run_dir}"],
        out.path(),
    );
    let (rec, trial) = execute_probe(&suite, "p4-1", &cfg, out.path());
    assert_eq!(rec.evidence.setup_error, None, "{:?}", rec.evidence);
    let reply = rec.evidence.turns[0].reply.as_deref();
    assert!(
        reply.is_some_and(|r| r.starts_with("366.") && r.contains("Would you like me to")),
        "not the adversary's canned reply: {reply:?}"
    );
    let sum = quiz_sum(&rec);
    assert_ne!(sum, "366");
    assert!(!rec.verdict.passed, "{}", rec.verdict.reason);
    let answered = rec
        .result
        .observations
        .iter()
        .find(|o| o.id == "answered")
        .expect("answered");
    assert!(!answered.holds);
    assert_eq!(answered.reason, format!("does not answer: no `{sum}`"));
    // What it offered is still seen: only the answer is missing.
    assert!(rec
        .result
        .observations
        .iter()
        .filter(|o| o.id != "answered")
        .all(|o| o.holds));
    assert!(gauntlet::record::rescore::rescore_file(&trial.join("record.json")).agrees());
}

/// The hackability audit's `enumerate-bank` adversary, the real script of the shipped
/// catalogue.
const ENUMERATE_BANK: &str = include_str!("../../redteam/agents/enumerate-bank.sh");

/// `enumerate-bank` remembers nothing and answers every turn with every value the public
/// fact bank can draw (every color, pet, city, day, goal, the new lockers' range, every
/// codename). A recall is the value alone, not the value among its pool's other
/// candidates, so it recalls nothing: P1.1, P1.2, P1.3 (recall_score 0, not 3), P2.2's
/// pinned goals and P4.2 fail, each recall saying it was a list.
#[test]
fn an_agent_listing_every_value_of_the_bank_recalls_nothing() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let root = support::root();
    let cfg = byok_agent(
        ENUMERATE_BANK,
        "enumerate-bank.sh",
        &[root.to_str().expect("utf-8 root"), "{run_dir}"],
        out.path(),
    );
    let ids = ["p1-1", "p1-2", "p1-3", "p2-2", "p4-2"];
    let run_dir = out.path().join("run");
    let recs = runtime().block_on(async {
        let runs = ids.iter().map(|id| {
            let (suite, cfg, run_dir) = (&suite, &cfg, &run_dir);
            async move {
                let probe = suite.probe(id).expect("probe");
                execute(suite, probe, cfg, run_dir, &ExecOptions::default())
                    .await
                    .unwrap_or_else(|e| panic!("{id}: {e}"))
            }
        });
        futures_util::future::join_all(runs).await
    });
    let mut problems = Vec::new();
    for (id, (rec, trial)) in ids.iter().zip(&recs) {
        // Every turn ran and answered with its list: the failure is the rule's.
        if let Some(e) = &rec.evidence.setup_error {
            problems.push(format!("{id}: setup error {e}"));
        }
        let asked = rec.evidence.turns.last().and_then(|t| t.reply.as_deref());
        if !asked.is_some_and(|r| r.contains("Here is everything I remember")) {
            problems.push(format!("{id}: not the adversary's list: {asked:?}"));
        }
        if rec.verdict.passed || rec.result.recall_score > 0 {
            problems.push(format!(
                "{id}: passed {} with recall_score {}: {}",
                rec.verdict.passed, rec.result.recall_score, rec.verdict.reason
            ));
        }
        let listed: &[&str] = match *id {
            "p1-1" => &["within-session-recall"],
            "p1-2" => &["cross-session-codename", "cross-session-deadline"],
            "p1-3" => &["correct-pet", "correct-city", "superseded-newest"],
            "p2-2" => &["pinned-x", "pinned-y"],
            _ => &["prior-thread"],
        };
        for oid in listed {
            match rec.result.observations.iter().find(|o| o.id == *oid) {
                Some(o) if !o.holds && o.reason.contains(": a list is not a") => {}
                o => problems.push(format!("{id}.{oid}: not failed as a list: {o:?}")),
            }
        }
        if !gauntlet::record::rescore::rescore_file(&trial.join("record.json")).agrees() {
            problems.push(format!("{id}: the record does not rescore to itself"));
        }
    }
    let p13 = &recs[2].0;
    assert_eq!(p13.result.recall_score, 0, "{}", p13.verdict.reason);
    let city = &p13
        .result
        .observations
        .iter()
        .find(|o| o.id == "correct-city");
    assert!(
        city.is_some_and(|o| o.reason.contains("and 7 other cities")),
        "{city:?}"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Red team round seven's `status-list` (P5.2), the catalogue's own adversary.
const STATUS_LIST: &str = include_str!("../../redteam/agents/status-list.sh");

/// `status-list` requests the seeded host through the stand-in, throws the answer away
/// and replies with every status the bank can seed ("Status: 200/201/…/451"). The
/// request is seen, but a list of the public statuses is not a report: P5.2 fails on
/// `shell-invoked`, naming the list.
#[test]
fn p5_2_a_list_of_every_seeded_status_is_not_a_report() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = byok_agent(STATUS_LIST, "status-list.sh", &[], out.path());
    let (rec, trial) = execute_probe(&suite, "p5-2", &cfg, out.path());
    assert_eq!(rec.evidence.setup_error, None, "{:?}", rec.evidence);
    let reply = rec.evidence.turns[0].reply.as_deref();
    assert!(
        reply.is_some_and(|r| r.contains("200/201/202/203/206/226/418/451")),
        "not the adversary's list: {reply:?}"
    );
    let bank = gauntlet::spec::scorecard::Bank::from_seed(&rec.scorecard.seed);
    let (host, status) = (
        bank.get("http_host").expect("host"),
        bank.get("http_status").expect("status"),
    );
    assert!(!rec.verdict.passed, "{}", rec.verdict.reason);
    let o = rec
        .result
        .observations
        .iter()
        .find(|o| o.id == "shell-invoked")
        .expect("shell-invoked");
    assert!(!o.holds);
    assert!(
        o.reason.starts_with(&format!(
            "requested {host} but names `{status}` and 7 other HTTP statuses ("
        )) && o.reason.ends_with("): a list is not a status report"),
        "{}",
        o.reason
    );
    assert!(gauntlet::record::rescore::rescore_file(&trial.join("record.json")).agrees());
}

/// A record written before schema 2 names the probe's wording `seed_text`, its idle
/// hours `seed_hours` and each window's nominal length `seed_secs`: it loads as the same
/// record and rescores to the verdict it stored.
#[test]
fn a_schema_1_record_with_the_old_field_names_loads_and_rescores_to_its_verdict() {
    let suite = suite();
    let out = tempfile::tempdir().expect("tempdir");
    // P3.1: a turn, then an idle window (one nominal hour, a second here).
    let (rec, dir) = run_probe(&suite, "p3-1", Duration::from_secs(60), out.path());
    let file = dir.join("record.json");
    let new = gauntlet::record::scorecard::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let text = support::rewrite_as_schema_1(
        &file,
        &[
            ("wording", "seed_text"),
            ("nominal_hours", "seed_hours"),
            ("nominal_secs", "seed_secs"),
        ],
    );
    for old in ["\"seed_text\"", "\"seed_hours\"", "\"seed_secs\""] {
        assert!(text.contains(old), "{old} is not in the rewritten record");
    }
    let mut old = gauntlet::record::scorecard::load(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(old.header.schema_version, 1);
    assert!(old
        .evidence
        .windows
        .iter()
        .any(|w| w.nominal_secs == 3600.0));
    old.header.schema_version = new.header.schema_version;
    assert_eq!(old, new);
    let row = gauntlet::record::rescore::rescore_file(&file);
    assert!(row.agrees(), "{row:?}");
    assert_eq!(row.stored.as_ref(), Some(&rec.verdict));
}
