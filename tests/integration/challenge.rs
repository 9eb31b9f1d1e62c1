//! The challenge suite end to end: real apps, the real reference agent, the scripted
//! proxy, real records; and the harness around them, item by item.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gauntlet::config::{AgentChoice, AgentKind};
use gauntlet::record::challenge::ChallengeRecord;
use gauntlet::score::challenge::{TaskOutcome, Validity};
use gauntlet::spec::challenge::{Profile, RENDERED_PROMPT, SKILLS_DIR};
use gauntlet::spec::{Script, ScriptStep};
use gauntlet::suites::challenge::ChallengeSuite;
use gauntlet::suites::challenge::{execute, Options};

use crate::support;

pub fn loaded() -> ChallengeSuite {
    let cfg = gauntlet::config::Config::default();
    gauntlet::suites::challenge::plan::load(&cfg.challenges_dir, Some(&cfg.apps_dir))
        .unwrap_or_else(|e| panic!("challenges load: {e}"))
}

fn run(
    loaded: &ChallengeSuite,
    id: &str,
    profile: Profile,
    opts: &Options,
    out: &Path,
) -> (ChallengeRecord, PathBuf) {
    run_as(
        support::config(AgentChoice::of(AgentKind::Reference), out),
        loaded,
        id,
        profile,
        opts,
        out,
    )
}

/// One trial of `id` under `profile` with `cfg`'s agent, to its record.
pub fn run_as(
    cfg: gauntlet::config::Config,
    loaded: &ChallengeSuite,
    id: &str,
    profile: Profile,
    opts: &Options,
    out: &Path,
) -> (ChallengeRecord, PathBuf) {
    let c = loaded
        .challenges
        .get(id)
        .unwrap_or_else(|| panic!("no challenge {id}"));
    let app = loaded
        .apps
        .iter()
        .find(|a| a.name == c.manifest.app)
        .expect("app");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (rec, dir) = rt
        .block_on(execute(
            &loaded.challenges,
            c,
            app,
            profile,
            &cfg,
            opts,
            &out.join("run"),
        ))
        .unwrap_or_else(|e| panic!("trial writes its record: {e}"));
    // As the harness does once a challenge trial has left its record.
    gauntlet::report::challenge::write_reports_after_trial(&dir, &rec);
    (rec, dir)
}

/// One trial of `id` under `none` by the hostile `command` agent
/// `tests/fixtures/agents/hostile/<script>` with `args`.
pub fn run_hostile(
    script: &str,
    args: &[&str],
    id: &str,
    out: &Path,
) -> (ChallengeRecord, PathBuf) {
    let path = support::root()
        .join("tests/fixtures/agents/hostile")
        .join(script);
    let mut argv = vec!["sh".to_string(), path.to_string_lossy().into_owned()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let cfg = support::config(AgentChoice::command(argv), out);
    run_as(cfg, &loaded(), id, Profile::None, &Options::default(), out)
}

#[test]
fn every_challenge_loads_with_its_app_and_the_plan_covers_every_profile() {
    let l = loaded();
    let ids: Vec<&str> = l
        .challenges
        .list
        .iter()
        .map(|c| c.manifest.id.as_str())
        .collect();
    assert!(ids.len() >= 3, "{ids:?}");
    for id in ["ledger-reconcile", "notes-cleanup", "tally-report"] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    for c in &l.challenges.list {
        assert!(
            !c.manifest.world.assertions.is_empty(),
            "{}: no world assertions",
            c.manifest.id
        );
        assert!(!c.manifest.report.success_assertions.is_empty());
    }
    let cfg = support::config(
        AgentChoice::of(AgentKind::Reference),
        Path::new("/nonexistent"),
    );
    let names: Vec<String> = gauntlet::suites::challenge::plan::plan(&l, &cfg, None)
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names.len(), ids.len() * 3);
    assert!(names.contains(&"challenge::ledger-reconcile::skills".to_string()));
}

#[test]
fn the_challenge_prompt_is_byte_identical_across_profiles_and_every_layer_is_hashed() {
    let l = loaded();
    for c in &l.challenges.list {
        let on_disk = std::fs::read(c.dir.join(&c.manifest.prompt)).expect("prompt file");
        let rendered: Vec<_> = Profile::ALL
            .iter()
            .map(|p| l.challenges.render(c, *p))
            .collect();
        for r in &rendered {
            assert_eq!(
                r.challenge.text.as_bytes(),
                &on_disk[..],
                "{}",
                c.manifest.id
            );
            assert_eq!(r.challenge.sha256, gauntlet::hash::sha256(&on_disk));
            assert!(r.text.ends_with(&r.challenge.text));
            assert!(r.text.starts_with(r.base.text.trim_end()));
            assert_eq!(r.sha256, gauntlet::hash::sha256(r.text.as_bytes()));
        }
        // Only the profile layer differs.
        assert_eq!(rendered[0].challenge, rendered[2].challenge);
        assert_ne!(rendered[0].profile.sha256, rendered[1].profile.sha256);
        assert_ne!(rendered[0].sha256, rendered[2].sha256);
    }
}

#[test]
fn profiles_copy_exactly_the_bundle_manifest_files_and_save_the_prompt() {
    let l = loaded();
    let c = l.challenges.get("ledger-reconcile").expect("challenge");
    let listed: Vec<String> = l
        .challenges
        .bundle
        .manifest
        .files
        .iter()
        .map(|f| f.path.clone())
        .collect();
    assert!(!listed.is_empty());
    for profile in Profile::ALL {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("workspace");
        let rendered = l.challenges.render(c, profile);
        gauntlet::suites::challenge::prepare_workspace(&l.challenges, c, profile, &rendered, &ws)
            .expect("prepared");
        assert!(ws.join("transactions.csv").is_file());
        assert_eq!(
            std::fs::read(ws.join(RENDERED_PROMPT)).expect("prompt"),
            rendered.text.as_bytes()
        );
        let skills = ws.join(SKILLS_DIR);
        if profile.supplies_skills() {
            let mut copied: Vec<String> = std::fs::read_dir(&skills)
                .expect("skills dir")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect();
            copied.sort();
            let mut want = listed.clone();
            want.sort();
            assert_eq!(copied, want, "{profile}");
            for f in &l.challenges.bundle.manifest.files {
                let bytes = std::fs::read(skills.join(&f.path)).expect("copied file");
                assert_eq!(
                    gauntlet::hash::sha256(&bytes),
                    format!("sha256:{}", f.sha256)
                );
            }
        } else {
            assert!(!skills.exists(), "none gets no skills");
        }
        // Workspace-relative config.
        let cfg: serde_json::Value =
            serde_json::from_slice(&std::fs::read(ws.join(".agent/trial.json")).expect("config"))
                .expect("json");
        assert_eq!(cfg["prompt"], RENDERED_PROMPT);
        assert!(!cfg
            .to_string()
            .contains(&dir.path().to_string_lossy().into_owned()));
    }
}

#[test]
fn challenge_directories_hold_no_executable_code() {
    let root = gauntlet::spec::challenge::default_root();
    let mut stack = vec![root.clone()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            files += 1;
            use std::os::unix::fs::PermissionsExt;
            let mode = e.metadata().expect("meta").permissions().mode();
            assert_eq!(mode & 0o111, 0, "{} is executable", p.display());
            let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
            assert!(
                ["md", "yaml", "yml", "json", "toml", "csv", "txt"].contains(&ext),
                "{}: `.{ext}` is not a data file",
                p.display()
            );
            let head = std::fs::read(&p).expect("read");
            assert!(!head.starts_with(b"#!"), "{} has a shebang", p.display());
        }
    }
    assert!(files > 10);
}

#[test]
fn the_default_ceiling_is_one_hour_and_configurable() {
    assert_eq!(
        gauntlet::suites::challenge::DEFAULT_TIMEOUT,
        Duration::from_secs(3600)
    );
    assert_eq!(
        gauntlet::config::positive_secs("2.5"),
        Ok(Duration::from_millis(2500))
    );
    for bad in ["0", "-1", "soon", "NaN"] {
        assert!(gauntlet::config::positive_secs(bad).is_err(), "{bad}");
    }
    let cfg = support::config(AgentChoice::of(AgentKind::Reference), Path::new("/x"));
    // The qa deadline is not the challenge ceiling.
    assert_ne!(cfg.timeout, gauntlet::suites::challenge::DEFAULT_TIMEOUT);
}

fn has_sections(report: &str) {
    for s in [
        "## 1. Trial identity and prompt provenance",
        "## 2. Task outcome and provisional evaluation validity",
        "## 3. Duration, tokens and cost",
        "## 4. Tools and commands",
        "## 5. Observed reads and policy findings",
        "## 6. Agent self-report and discrepancies",
        "## 7. Final agent answer",
        "## 8. Manual audit",
    ] {
        assert!(report.contains(s), "missing {s}");
    }
}

#[test]
fn a_scripted_ledger_trial_succeeds_clean_and_the_ledger_really_holds_the_transactions() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let (rec, dir) = run(
        &l,
        "ledger-reconcile",
        Profile::Skills,
        &Options::default(),
        out.path(),
    );
    assert_eq!(
        rec.verdict.task_outcome,
        TaskOutcome::Success,
        "{}",
        rec.verdict.outcome_reason
    );
    assert_eq!(
        rec.verdict.evaluation_validity,
        Validity::Clean,
        "{}",
        rec.verdict.validity_reason
    );
    assert!(rec.verdict.passed && rec.verdict.discrepancies.is_empty());
    // World assertions were observed by the harness, not taken from the report.
    let ops = rec
        .evidence
        .world
        .iter()
        .find(|w| w.id == "ops-balance")
        .expect("observed");
    assert_eq!(
        ops.document.as_ref().and_then(|d| d.get("balance")),
        Some(&serde_json::json!(106049))
    );
    // Provenance.
    let p = &rec.provenance;
    assert_eq!(p.profile, Profile::Skills);
    assert!(p.bundle.as_ref().is_some_and(|b| !b.files.is_empty()));
    assert!(
        p.prompt.base.sha256.starts_with("sha256:")
            && p.prompt.challenge.path.ends_with("challenge-prompt.md")
    );
    assert_eq!(
        gauntlet::hash::sha256(
            &std::fs::read(dir.join(&p.prompt.path)).expect("rendered prompt saved")
        ),
        p.prompt.sha256
    );
    assert_eq!(p.timeout_secs, 3600.0);
    // Normalized evidence: timestamps from the reference agent's stream, paths, counts.
    let calls = &rec.derived.agent_report.tool_calls;
    assert_eq!(calls.len(), 3);
    assert!(calls
        .iter()
        .all(|c| c.started_ms.is_some() && c.ended_ms.is_some()));
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).expect("metrics"))
            .expect("json");
    assert_eq!(m["counts"]["tool_calls"], 3);
    assert_eq!(
        m["counts"]["assistant_steps"], 4,
        "three tool turns and the final answer"
    );
    assert_eq!(m["counts"]["app_commands"], 8);
    assert_eq!(m["counts"]["distinct_paths_read"], 1);
    assert!(m["agent_observed"]["label"]
        .as_str()
        .is_some_and(|s| s.starts_with("agent-observed")));
    assert!(
        m["agent_observed"]["reasoning"].is_null(),
        "missing metrics are null, not zero"
    );
    assert!(m["proxy_metered"]["calls"].as_u64().is_some_and(|n| n >= 4));
    has_sections(&std::fs::read_to_string(dir.join("final-report.md")).expect("report"));
    // Rescore re-derives the same verdict, and catches tampering.
    let row = gauntlet::record::rescore::rescore_file(&dir.join("record.json"));
    assert!(row.agrees(), "{row:?}");
    std::fs::write(
        dir.join("agent.stdout"),
        b"{\"type\":\"final\",\"text\":\"forged\"}\n",
    )
    .expect("tamper");
    let row = gauntlet::record::rescore::rescore_file(&dir.join("record.json"));
    assert!(!row.agrees());
    let table = gauntlet::record::rescore::render_table(&[row]);
    assert!(
        table.contains("does not match its recorded hash"),
        "{table}"
    );
}

#[test]
fn a_scripted_tally_trial_checks_the_report_file_in_the_workspace() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let (rec, _) = run(
        &l,
        "tally-report",
        Profile::None,
        &Options::default(),
        out.path(),
    );
    assert_eq!(
        rec.verdict.task_outcome,
        TaskOutcome::Success,
        "{}",
        rec.verdict.outcome_reason
    );
    assert_eq!(
        rec.verdict.evaluation_validity,
        Validity::Clean,
        "{}",
        rec.verdict.validity_reason
    );
    assert!(rec.verdict.world_assertions.iter().all(|a| a.holds));
}

/// A script that does the ledger task but first reads gauntlet's own source.
fn snooping_script(l: &ChallengeSuite) -> Script {
    let c = l.challenges.get("ledger-reconcile").expect("challenge");
    let mut script = c.script_for(Profile::None).expect("script").clone();
    let src = support::root().join("apps/api-ledger/src/main.rs");
    script.steps.insert(
        0,
        ScriptStep::ReadFile {
            path: src.to_string_lossy().into_owned(),
        },
    );
    script
}

#[test]
fn reading_product_source_under_none_is_contaminated_yet_the_task_outcome_stands() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let opts = Options {
        script: Some(snooping_script(&l)),
    };
    let (rec, dir) = run(&l, "ledger-reconcile", Profile::None, &opts, out.path());
    assert_eq!(
        rec.verdict.task_outcome,
        TaskOutcome::Success,
        "{}",
        rec.verdict.outcome_reason
    );
    assert_eq!(rec.verdict.evaluation_validity, Validity::Contaminated);
    assert!(!rec.verdict.passed);
    let pol = &rec.derived.policy;
    assert!(pol.escalated_to_product_code);
    assert_eq!(pol.disallowed_reads.len(), 1);
    assert!(pol.disallowed_reads[0].ends_with("apps/api-ledger/src/main.rs"));
    let report = std::fs::read_to_string(dir.join("final-report.md")).expect("report");
    assert!(report.contains("apps/api-ledger/src/main.rs") && report.contains("contaminated"));

    // Under `all` the same read is allowed, and still reported.
    let (rec, _) = run(&l, "ledger-reconcile", Profile::All, &opts, out.path());
    assert_eq!(
        rec.verdict.evaluation_validity,
        Validity::Clean,
        "{}",
        rec.verdict.validity_reason
    );
    assert!(rec.derived.policy.escalated_to_product_code);
    assert_eq!(
        rec.derived.policy.by_category.get("product_source"),
        Some(&1)
    );
}

/// The red team's `copy-answers` reads tally-report's manifest, the answer key, and
/// makes the world it asserts. `all` lets an agent inspect the repository, never read
/// what it is graded by: the trial is contaminated, naming the manifest and why, in the
/// record, metrics.json and final-report.md. The honest reference under `all` stays
/// clean.
#[test]
fn copying_the_answer_key_is_contaminated_even_under_all() {
    let out = tempfile::tempdir().expect("tempdir");
    let root = support::root();
    let l = loaded();
    let argv = [
        "sh".to_string(),
        root.join("redteam/agents/copy-answers.sh")
            .to_string_lossy()
            .into_owned(),
        root.to_string_lossy().into_owned(),
        out.path().join("run").to_string_lossy().into_owned(),
    ];
    let cfg = support::config(AgentChoice::command(argv.to_vec()), out.path());
    let (rec, dir) = run_as(
        cfg,
        &l,
        "tally-report",
        Profile::All,
        &Options::default(),
        out.path(),
    );
    let key = l
        .challenges
        .get("tally-report")
        .expect("challenge")
        .dir
        .join("challenge.yaml");
    let key = key.to_string_lossy();
    let why = "the challenge's answer key";
    assert_eq!(
        rec.verdict.evaluation_validity,
        Validity::Contaminated,
        "{}",
        rec.verdict.validity_reason
    );
    assert!(!rec.verdict.passed);
    // The reason names the first answer key read (the manifest, unless the adversary's
    // walk of what it can see came across another first), and why.
    assert!(
        rec.verdict.validity_reason.contains("no profile allows"),
        "{}",
        rec.verdict.validity_reason
    );
    let observed = rec.derived.observed.as_ref().expect("observed");
    assert!(
        observed
            .answer_keys
            .iter()
            .any(|k| k.path == key && k.why.starts_with(why)),
        "{:?}",
        observed.answer_keys
    );
    let metrics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).expect("metrics"))
            .expect("metrics json");
    let keys = metrics["observed"]["answer_keys"].to_string();
    assert!(keys.contains(&*key) && keys.contains(why), "{keys}");
    let report = std::fs::read_to_string(dir.join("final-report.md")).expect("report");
    assert!(
        report.contains(&format!("`{key}`")) && report.contains(why),
        "{report}"
    );

    // The reference solves it through the app alone, and stays clean under `all`.
    let (rec, _) = run(
        &l,
        "tally-report",
        Profile::All,
        &Options::default(),
        out.path(),
    );
    assert_eq!(
        (rec.verdict.task_outcome, rec.verdict.evaluation_validity),
        (TaskOutcome::Success, Validity::Clean),
        "{} / {}",
        rec.verdict.outcome_reason,
        rec.verdict.validity_reason
    );
}

/// Red team round seven: the same key by other names. The catalogue's
/// `key-by-other-names.sh` reads tally-report's manifest out of the repository's git
/// objects (`git show HEAD:…`, mode `git`), or the reference's recorded run out of its
/// insta snapshot (mode `snap`), and does what it says: the task succeeds. Under `all`
/// both are contaminated, the record and metrics.json naming the path and why; the
/// agent's own script (in `redteam/`) is its runtime, never named.
#[test]
fn the_answer_key_by_another_name_is_contaminated_even_under_all() {
    let out = tempfile::tempdir().expect("tempdir");
    let root = support::root();
    let l = loaded();
    // The catalogue's own adversary (`key-from-git`, `key-from-snapshots`).
    let script = root.join("redteam/agents/key-by-other-names.sh");
    for (mode, key, why) in [
        ("git", root.join(".git"), "the repository's history"),
        (
            "snap",
            root.join("tests/integration/snapshots/streams/reference__tally-report.snap"),
            "the test suite",
        ),
    ] {
        let dir = out.path().join(mode);
        let argv = vec![
            "sh".to_string(),
            script.to_string_lossy().into_owned(),
            root.to_string_lossy().into_owned(),
            mode.to_string(),
        ];
        let cfg = support::config(AgentChoice::command(argv), &dir);
        let (rec, trial) = run_as(
            cfg,
            &l,
            "tally-report",
            Profile::All,
            &Options::default(),
            &dir,
        );
        let v = &rec.verdict;
        // The attack works: what the key says is what the task asks.
        assert_eq!(
            v.task_outcome,
            TaskOutcome::Success,
            "{mode}: {}",
            v.outcome_reason
        );
        assert_eq!(
            v.evaluation_validity,
            Validity::Contaminated,
            "{mode}: {}",
            v.validity_reason
        );
        assert!(!v.passed);
        assert!(
            v.validity_reason.contains("no profile allows"),
            "{mode}: {}",
            v.validity_reason
        );
        let observed = rec.derived.observed.as_ref().expect("observed");
        let read = observed
            .answer_keys
            .iter()
            .find(|k| Path::new(&k.path).starts_with(&key))
            .unwrap_or_else(|| panic!("{mode}: {:?}", observed.answer_keys));
        assert!(read.why.starts_with(why), "{mode}: {}", read.why);
        assert!(
            !observed
                .answer_keys
                .iter()
                .any(|k| Path::new(&k.path) == script),
            "{mode}: the agent's own script is its runtime"
        );
        let metrics = std::fs::read_to_string(trial.join("metrics.json")).expect("metrics");
        assert!(
            metrics.contains(&serde_json::to_string(&read.path).expect("json")),
            "{mode}: {metrics}"
        );
    }
}

/// A shell command whose paths cannot be read out is kept whole in the agent's account;
/// the kernel saw what it opened (the workspace's CSV), so the trial is clean. Without
/// the observation (an unsealed run) nothing shows what it read: unauditable.
#[test]
fn an_opaque_shell_command_is_kept_in_the_account_and_the_observation_decides() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let mut script = l
        .challenges
        .get("ledger-reconcile")
        .and_then(|c| c.script_for(Profile::None))
        .expect("script")
        .clone();
    script.steps.insert(
        0,
        ScriptStep::Shell {
            command: "cat $(ls *.csv)".into(),
            expect: None,
        },
    );
    let opts = Options {
        script: Some(script),
    };
    let (rec, _) = run(&l, "ledger-reconcile", Profile::None, &opts, out.path());
    assert_eq!(
        rec.derived.policy.opaque_shell_commands[0].command,
        "cat $(ls *.csv)"
    );
    assert_eq!(
        rec.verdict.evaluation_validity,
        Validity::Clean,
        "{}",
        rec.verdict.validity_reason
    );
    let observed = rec.derived.observed.as_ref().expect("observed");
    assert!(observed
        .opens
        .iter()
        .any(|o| o.path.ends_with("workspace/transactions.csv")));

    let cfg = gauntlet::config::Config {
        sandbox: gauntlet::config::Sandbox::Off,
        ..support::config(AgentChoice::of(AgentKind::Reference), out.path())
    };
    let (rec, _) = run_as(
        cfg,
        &l,
        "ledger-reconcile",
        Profile::None,
        &opts,
        out.path(),
    );
    assert_eq!(rec.verdict.evaluation_validity, Validity::Unauditable);
    assert!(
        rec.verdict.validity_reason.contains("unsealed"),
        "{}",
        rec.verdict.validity_reason
    );
}

#[test]
fn a_trial_that_times_out_keeps_its_partial_evidence() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let mut script = l
        .challenges
        .get("ledger-reconcile")
        .and_then(|c| c.script_for(Profile::None))
        .expect("script")
        .clone();
    script.steps.insert(
        1,
        ScriptStep::Shell {
            command: "sleep 60".into(),
            expect: None,
        },
    );
    let opts = Options {
        script: Some(script),
    };
    let cfg = gauntlet::config::Config {
        challenge_timeout_override: Some(Duration::from_secs(4)),
        ..support::config(AgentChoice::of(AgentKind::Reference), out.path())
    };
    let (rec, dir) = run_as(
        cfg,
        &l,
        "ledger-reconcile",
        Profile::None,
        &opts,
        out.path(),
    );
    assert_eq!(
        rec.verdict.task_outcome,
        TaskOutcome::Timeout,
        "{}",
        rec.verdict.outcome_reason
    );
    assert!(rec.evidence.agent.end.timed_out);
    assert_eq!(rec.provenance.timeout_secs, 4.0);
    // The events before the deadline: the read and the started (never finished) sleep.
    let calls = &rec.derived.agent_report.tool_calls;
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[1].status, "pending");
    assert!(
        std::fs::metadata(dir.join("agent.stdout"))
            .expect("stdout")
            .len()
            > 0
    );
    let m = std::fs::read_to_string(dir.join("metrics.json")).expect("metrics");
    assert!(m.contains("killed at the deadline"));
}

#[test]
fn trial_workspaces_are_numbered_and_never_overwritten() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let (_, a) = run(
        &l,
        "tally-report",
        Profile::All,
        &Options::default(),
        out.path(),
    );
    let before = std::fs::read(a.join("record.json")).expect("record");
    let (_, b) = run(
        &l,
        "tally-report",
        Profile::All,
        &Options::default(),
        out.path(),
    );
    assert_ne!(a, b);
    assert!(b
        .to_string_lossy()
        .ends_with("challenge.tally-report.all.2"));
    assert_eq!(
        std::fs::read(a.join("record.json")).expect("record"),
        before
    );
    // The agent ran inside its own trial workspace.
    assert!(b.join("workspace/tally-report.json").is_file());
    assert!(!a.join("workspace/tally-report.json.2").exists());
}

#[test]
fn a_manual_audit_is_authoritative_and_a_second_one_keeps_the_first_in_history() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let (rec, dir) = run(
        &l,
        "tally-report",
        Profile::None,
        &Options::default(),
        out.path(),
    );
    let record_before = std::fs::read(dir.join("record.json")).expect("record");
    let first = gauntlet::report::challenge::audit(
        &dir,
        TaskOutcome::Failed,
        Validity::Clean,
        "report lacks min/max",
    )
    .expect("audit");
    assert!(first.history.is_empty());
    let second = gauntlet::report::challenge::audit(
        &dir,
        TaskOutcome::Success,
        Validity::Unauditable,
        "re-checked",
    )
    .expect("audit");
    assert_eq!(second.history.len(), 1);
    assert_eq!(second.history[0].note, "report lacks min/max");
    let (o, v, audited) = gauntlet::report::challenge::authoritative(&dir, &rec);
    assert_eq!(
        (o, v, audited),
        (TaskOutcome::Success, Validity::Unauditable, true)
    );
    let report = std::fs::read_to_string(dir.join("final-report.md")).expect("report");
    assert!(report.contains(
        "**Authoritative:** task_outcome **success**, evaluation_validity **unauditable**"
    ));
    assert!(report.contains("superseded: failed / clean"));
    let table =
        gauntlet::report::challenge::run_table(dir.parent().expect("run dir")).expect("table");
    assert!(
        table.contains(
            "| challenge::tally-report::none | success | unauditable | yes (authoritative) |"
        ),
        "{table}"
    );
    // The raw record is never touched by an audit.
    assert_eq!(
        std::fs::read(dir.join("record.json")).expect("record"),
        record_before
    );
}

#[test]
fn a_report_that_cannot_be_written_loses_nothing_recorded() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let (rec, dir) = run(
        &l,
        "tally-report",
        Profile::Skills,
        &Options::default(),
        out.path(),
    );
    std::fs::remove_file(dir.join("metrics.json")).expect("rm");
    std::fs::create_dir(dir.join("metrics.json")).expect("block the report with a directory");
    let err = gauntlet::report::challenge::write_reports(&dir, &rec).expect_err("cannot write");
    assert!(err.to_string().contains("metrics.json"), "{err}");
    let kept = gauntlet::record::challenge::load(&dir.join("record.json")).expect("record kept");
    assert!(
        kept.verdict == rec.verdict && kept.evidence == rec.evidence,
        "the record changed"
    );
}

fn gauntlet_cli(args: &[&str], challenges: Option<&Path>, out: &Path) -> std::process::Output {
    let mut cmd = std::process::Command::new(crate::support::bin("gauntlet"));
    cmd.args(args).env("GAUNTLET_OUT", out).env_remove("CARGO");
    if let Some(c) = challenges {
        cmd.env("GAUNTLET_CHALLENGES_DIR", c);
    }
    cmd.output().expect("gauntlet runs")
}

#[test]
fn the_cli_runs_exactly_one_profile_per_invocation() {
    let out = tempfile::tempdir().expect("tempdir");
    let o = gauntlet_cli(&["challenge", "run", "tally-report"], None, out.path());
    assert_eq!(o.status.code(), Some(2), "a profile is required");
    let o = gauntlet_cli(
        &[
            "challenge",
            "run",
            "tally-report",
            "--instruction-profile",
            "none",
            "--instruction-profile",
            "all",
        ],
        None,
        out.path(),
    );
    assert_eq!(o.status.code(), Some(2), "only one profile");
    let o = gauntlet_cli(
        &[
            "challenge",
            "run",
            "tally-report",
            "--instruction-profile",
            "most",
        ],
        None,
        out.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an instruction profile"));
    let o = gauntlet_cli(
        &[
            "challenge",
            "run",
            "tally-report",
            "--instruction-profile",
            "skills",
        ],
        None,
        out.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: Vec<_> = std::fs::read_dir(out.path())
        .expect("runs")
        .flatten()
        .collect();
    assert_eq!(runs.len(), 1);
    let manifest = gauntlet::record::manifest::MANIFEST_FILE;
    let trials: Vec<String> = std::fs::read_dir(runs[0].path())
        .expect("trials")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // The run's own files: its manifest, its identity and its live mark.
        .filter(|n| {
            n != manifest && n != gauntlet::record::identity::IDENTITY_FILE && !n.starts_with('.')
        })
        .collect();
    assert_eq!(trials, ["challenge.tally-report.skills"]);
    // Planned like any run: its identity says what it ran with.
    assert!(runs[0]
        .path()
        .join(gauntlet::record::identity::IDENTITY_FILE)
        .is_file());
    // The one trial it ran is the one it planned, before it started.
    let planned = gauntlet::record::manifest::read(&runs[0].path())
        .expect("manifest")
        .expect("the run has a manifest");
    let names: Vec<&str> = planned.planned().into_keys().collect();
    assert_eq!(names, ["challenge::tally-report::skills"]);
    let finished: Vec<&str> = planned.finished().map(|(t, _)| t).collect();
    assert_eq!(finished, ["challenge::tally-report::skills"]);
    assert!(planned.entries.iter().take(1).all(|e| e.finished.is_none()));
    let o = gauntlet_cli(&["challenge", "list"], None, out.path());
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        listed.contains("challenge::tally-report::none")
            && listed.contains("challenge::ledger-reconcile::all")
    );
}

#[test]
fn an_invalid_manifest_fails_before_any_workspace_is_created() {
    let out = tempfile::tempdir().expect("tempdir");
    let copy = tempfile::tempdir().expect("tempdir");
    let root = gauntlet::spec::challenge::default_root();
    let status = std::process::Command::new("cp")
        .args([
            "-r",
            &format!("{}/.", root.display()),
            &copy.path().to_string_lossy(),
        ])
        .status()
        .expect("cp");
    assert!(status.success());
    let manifest = copy.path().join("tally-report/challenge.yaml");
    let text = std::fs::read_to_string(&manifest)
        .expect("manifest")
        .replace("version: 1", "version: 9");
    std::fs::write(&manifest, text).expect("write");
    let o = gauntlet_cli(
        &[
            "challenge",
            "run",
            "tally-report",
            "--instruction-profile",
            "none",
        ],
        Some(copy.path()),
        out.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("tally-report/challenge.yaml") && err.contains("version"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(out.path()).expect("out").count(),
        0,
        "no workspace was created"
    );
}

fn ledger_script(l: &ChallengeSuite) -> Script {
    l.challenges
        .get("ledger-reconcile")
        .and_then(|c| c.script_for(Profile::None))
        .expect("script")
        .clone()
}

#[test]
fn a_self_report_that_disagrees_with_the_ledger_is_reported_not_rewritten() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let mut script = ledger_script(&l);
    // Post only the first row, then claim the full result.
    script.steps[1] = ScriptStep::Shell {
        command: "curl -sf -X POST -H 'Content-Type: application/json' -d '{\"account\":\"ops\",\"amount\":120000}' \"$APP_URL/transactions\"".into(),
        expect: None,
    };
    let (rec, dir) = run(
        &l,
        "ledger-reconcile",
        Profile::None,
        &Options {
            script: Some(script),
        },
        out.path(),
    );
    assert_eq!(rec.verdict.task_outcome, TaskOutcome::Failed);
    assert!(
        rec.verdict.outcome_reason.contains("ops-balance"),
        "{}",
        rec.verdict.outcome_reason
    );
    let fields: Vec<&str> = rec
        .verdict
        .discrepancies
        .iter()
        .map(|d| d.field.as_str())
        .collect();
    // One transaction held where six are reported: the ledger's own count disagrees.
    assert_eq!(
        fields,
        [
            "ops_balance",
            "payroll_balance",
            "transactions_posted",
            "task_outcome"
        ]
    );
    assert_eq!(
        rec.verdict.discrepancies[0].observed,
        Some(serde_json::json!(120000))
    );
    // The self-report is kept exactly as the agent wrote it.
    assert_eq!(
        rec.verdict
            .self_report
            .fields
            .as_ref()
            .map(|f| f["ops_balance"].clone()),
        Some(serde_json::json!(106049))
    );
    let report = std::fs::read_to_string(dir.join("final-report.md")).expect("report");
    assert!(
        report.contains("DISCREPANCY `ops_balance`: self-reported 106049, observed 120000"),
        "{report}"
    );
}

#[test]
fn big_tool_outputs_are_bounded_in_metrics_and_the_report_but_kept_raw() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let mut script = ledger_script(&l);
    script.steps.insert(
        0,
        ScriptStep::Shell {
            command: "seq 1 40000".into(),
            expect: None,
        },
    );
    let (_, dir) = run(
        &l,
        "ledger-reconcile",
        Profile::None,
        &Options {
            script: Some(script),
        },
        out.path(),
    );
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("metrics.json")).expect("metrics"))
            .expect("json");
    let call = &m["tool_calls"][0];
    assert!(
        call["output_bytes"].as_u64().is_some_and(|b| b > 10_000),
        "{call}"
    );
    assert!(call["output_preview"]
        .as_str()
        .is_some_and(|p| p.len() <= 512));
    assert!(call["output_sha256"]
        .as_str()
        .is_some_and(|h| h.starts_with("sha256:")));
    let report = std::fs::read_to_string(dir.join("final-report.md")).expect("report");
    assert!(
        !report.contains("\n1500\n") && !report.contains("\\n1500\\n"),
        "tool output leaked into final-report.md"
    );
    let raw = std::fs::read_to_string(dir.join("agent.stdout")).expect("raw");
    assert!(
        raw.contains("\\n1500\\n"),
        "the raw stream keeps the whole output"
    );
}

#[test]
fn the_committed_challenge_record_schema_is_current() {
    let committed = support::root().join(gauntlet::record::challenge::SCHEMA_PATH);
    let now = gauntlet::record::challenge::record_schema_text();
    if std::env::var_os("GAUNTLET_UPDATE_SCHEMA").is_some() {
        std::fs::write(&committed, &now).expect("write schema");
    }
    let on_disk = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        on_disk == now,
        "{} is stale: regenerate it with `GAUNTLET_UPDATE_SCHEMA=1 cargo test --test integration the_committed_challenge_record_schema_is_current`",
        committed.display()
    );
    // A real record validates against it.
    let out = tempfile::tempdir().expect("tempdir");
    let (_, dir) = run(
        &loaded(),
        "tally-report",
        Profile::None,
        &Options::default(),
        out.path(),
    );
    let rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("record.json")).expect("record"))
            .expect("json");
    let schema: serde_json::Value = serde_json::from_str(&now).expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    let errors: Vec<String> = validator.iter_errors(&rec).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}

/// A record written before schema 2 names the requests that set up the app `seed`, in
/// its evidence and in the manifest it keeps: it loads as the same record and rescores
/// to the verdict it stored.
#[test]
fn a_schema_1_record_naming_the_setup_seed_loads_and_rescores_to_its_verdict() {
    let out = tempfile::tempdir().expect("tempdir");
    let l = loaded();
    let (rec, dir) = run(
        &l,
        "ledger-reconcile",
        Profile::None,
        &Options::default(),
        out.path(),
    );
    let file = dir.join("record.json");
    let new = gauntlet::record::challenge::load(&file).unwrap_or_else(|e| panic!("{e}"));
    let text = support::rewrite_as_schema_1(&file, &[("setup", "seed")]);
    assert!(!text.contains("\"setup\""), "{text}");
    let mut old = gauntlet::record::challenge::load(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(old.header.schema_version, 1);
    old.header.schema_version = new.header.schema_version;
    assert_eq!(old, new);
    let row = gauntlet::record::rescore::rescore_file(&file);
    assert!(row.agrees(), "{row:?}");
    assert_eq!(new.verdict, rec.verdict);
    assert_eq!(
        row.axes.map(|a| a.stored),
        Some(gauntlet::record::challenge::verdict_axes(&rec.verdict))
    );
}
