//! Results pages: snapshots of a fixed synthetic run, bad input, the HTML page in
//! real headless Chromium, publishing, the record schema, the JUnit summary line.

use std::path::{Path, PathBuf};

use gauntlet::config::Mode;
use gauntlet::report::synthetic::SyntheticRun;
use gauntlet::report::{self, load_run, Options, PriceTable, Thresholds};
use gauntlet::spec::CapabilityKind;

use crate::support::*;

/// The fixed synthetic run, written into `dir`.
fn fixed_run(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    SyntheticRun::fixed().write(&run).expect("synthetic run");
    run
}

fn priced(dir: &Path) -> Options {
    let f = dir.join("prices.toml");
    std::fs::write(
        &f,
        "[models.\"synthetic-model\"]\ninput = 3.0\noutput = 15.0\ncached_input = 0.3\n",
    )
    .expect("prices");
    Options {
        prices: PriceTable::load(&f).expect("price table"),
        thresholds: Thresholds::parse_all(&["*=2/3", "api-ledger::balance=3/3"])
            .expect("thresholds"),
    }
}

#[test]
fn report_snapshots_of_a_fixed_synthetic_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = fixed_run(tmp.path());
    let loaded = load_run(&run).expect("loads");
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let pages = report::render(&loaded, &priced(tmp.path()));
    let s = &pages.summary;

    // The figures add up, and the run holds every outcome (or the snapshot proves little).
    let f = &s.run;
    assert_eq!(f.trials, 18);
    assert_eq!(f.verifiable_trials + f.ambiguous_trials, f.trials);
    for o in ["verified", "unverified", "false_verification", "error"] {
        assert!(
            s.trials.iter().any(|t| t.outcome.as_str() == o),
            "no {o} trial"
        );
    }
    assert!(f.cost_usd.is_some_and(|c| c > 0.0));
    assert!(s
        .capabilities
        .iter()
        .any(|c| c.threshold.as_ref().is_some_and(|t| t.met)));
    assert!(s
        .capabilities
        .iter()
        .any(|c| c.threshold.as_ref().is_some_and(|t| !t.met)));

    let mut settings = insta::Settings::clone_current();
    // Found at run time in the repository, not beside a source path fixed at build time
    // (a nextest archive runs in another tree: docs/results.md).
    settings.set_snapshot_path(gauntlet::binaries::repo_root().join("tests/integration/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        // Ids and times vary between real runs; the synthetic run fixes them, and the
        // redactions keep the snapshots about figures.
        let md = pages
            .markdown
            .replace("synthetic-run", "[run id]")
            .replace("0123456789abcdef0123456789abcdef01234567", "[commit]");
        insta::assert_snapshot!("report_fixed_run_md", md);
        let json: serde_json::Value = serde_json::from_str(&pages.json).expect("json");
        insta::assert_json_snapshot!("report_fixed_run_summary_json", json, {
            ".harness.run_ids" => "[run ids]",
            ".harness.commit" => "[commit]",
        });
    });
}

#[test]
fn every_page_states_the_harness_config() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = fixed_run(tmp.path());
    let out = tmp.path().join("pages");
    let pages = report::write_report(&run, &out, &priced(tmp.path())).expect("report");
    let html = std::fs::read_to_string(out.join("report.html")).expect("html");
    let md = std::fs::read_to_string(out.join("report.md")).expect("md");
    let json = std::fs::read_to_string(out.join("summary.json")).expect("json");
    assert_eq!(md, pages.markdown);
    for page in [&html, &md, &json] {
        for needle in [
            "synthetic-model",
            "synthetic",
            "0.0.0-synthetic",
            "0123456789abcdef0123456789abcdef01234567",
            "synthetic-run",
            "byok",
        ] {
            assert!(page.contains(needle), "`{needle}` missing");
        }
    }
    assert!(
        !md.contains("Harness illustration"),
        "a byok run is no illustration"
    );
}

#[test]
fn scripted_runs_are_marked_as_harness_illustrations() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = tmp.path().join("run");
    SyntheticRun {
        mode: Mode::Scripted,
        ..SyntheticRun::fixed()
    }
    .write(&run)
    .expect("write");
    let pages = report::render(&load_run(&run).expect("load"), &Options::default());
    assert!(pages.summary.illustration);
    assert!(pages.markdown.contains("Harness illustration"));
    assert!(pages.html.contains("Harness illustration"));
}

#[test]
fn an_unpriced_model_costs_unknown_not_zero() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = fixed_run(tmp.path());
    let pages = report::render(&load_run(&run).expect("load"), &Options::default());
    assert_eq!(pages.summary.run.cost_usd, None);
    assert_eq!(pages.summary.run.unpriced_models, vec!["synthetic-model"]);
    assert!(pages
        .markdown
        .contains("unknown (no price for synthetic-model)"));
    assert!(!pages.markdown.contains("$0.000000"));
}

#[test]
fn truncated_and_foreign_files_are_named_and_the_rest_is_reported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = fixed_run(tmp.path());
    // A record cut short, a record that is someone else's JSON, a stray file, a trial
    // that never wrote its record, one whose record is a directory, and a verdict
    // edited by hand.
    let cut = run.join("qa.api-ledger.balance.r1/record.json");
    let text = std::fs::read(&cut).expect("read");
    std::fs::remove_file(&cut).expect("rm");
    std::fs::write(&cut, &text[..text.len() / 2]).expect("truncate");
    let foreign = run.join("qa.api-ledger.health.r2/record.json");
    std::fs::remove_file(&foreign).expect("rm");
    std::fs::write(&foreign, br#"{"name": "not a record"}"#).expect("foreign");
    std::fs::write(run.join("notes.txt"), b"hello").expect("stray");
    std::fs::create_dir(run.join("qa.cli-tally.count-words.r9")).expect("dir");
    std::fs::create_dir_all(run.join("qa.cli-tally.count-words.r8/record.json")).expect("dir");
    let forged = run.join("qa.cli-tally.reject-missing-file.r1/record.json");
    let mut rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&forged).expect("read")).expect("json");
    let was = rec["verdict"]["outcome"].as_str().map(String::from);
    let (to, passed) = if was.as_deref() == Some("verified") {
        ("error", false)
    } else {
        ("verified", true)
    };
    rec["verdict"]["outcome"] = to.into();
    rec["verdict"]["passed"] = passed.into();
    std::fs::remove_file(&forged).expect("rm");
    std::fs::write(&forged, serde_json::to_vec(&rec).expect("ser")).expect("forge");

    let out = tmp.path().join("pages");
    let pages = report::write_report(&run, &out, &Options::default()).expect("report");
    let files: Vec<&str> = pages
        .summary
        .problems
        .iter()
        .map(|p| p.file.as_str())
        .collect();
    assert_eq!(
        files,
        vec![
            "notes.txt",
            "qa.api-ledger.balance.r1/record.json",
            "qa.api-ledger.health.r2/record.json",
            "qa.cli-tally.count-words.r8",
            "qa.cli-tally.count-words.r9",
            "qa.cli-tally.reject-missing-file.r1/record.json",
        ]
    );
    let cause = |f: &str| {
        pages
            .summary
            .problems
            .iter()
            .find(|p| p.file == f)
            .map(|p| p.cause.clone())
            .unwrap_or_default()
    };
    assert!(cause("notes.txt").contains("foreign file"));
    assert!(cause("qa.api-ledger.balance.r1/record.json").contains("not a gauntlet record"));
    assert!(cause("qa.api-ledger.health.r2/record.json").contains("missing field"));
    assert!(cause("qa.cli-tally.reject-missing-file.r1/record.json")
        .contains("does not follow from the evidence"));
    // Named with what it kept, as a trial that never wrote its record is.
    assert!(cause("qa.cli-tally.count-words.r8").contains("record.json/"));
    assert_eq!(pages.summary.run.trials, 18 - 3);
    for f in &files {
        assert!(pages.markdown.contains(f), "{f} not named in report.md");
        assert!(pages.html.contains(f), "{f} not named in report.html");
    }
}

/// Load `page` in headless Chromium; returns (dumped DOM, console lines).

#[test]
fn the_html_page_loads_in_chromium_with_no_console_message_and_shows_its_charts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = fixed_run(tmp.path());
    let out = tmp.path().join("pages");
    report::write_report(&run, &out, &priced(tmp.path())).expect("report");

    let (dom, console) =
        crate::support::chromium_load(&out.join("report.html"), &tmp.path().join("profile-1"));
    assert!(console.is_empty(), "console: {console:#?}");
    assert!(
        dom.matches("<svg").count() >= 3,
        "charts missing from the DOM"
    );
    assert!(
        dom.contains("<rect") && dom.contains("<circle"),
        "charts have no marks"
    );
    assert!(dom.contains("api-ledger::balance"));

    // The check can fail: the same page with one outside fetch is reported on the
    // console (the page's Content-Security-Policy blocks it).
    let html = std::fs::read_to_string(out.join("report.html")).expect("read");
    let bad = out.join("bad.html");
    std::fs::write(
        &bad,
        html.replace("<h1>", "<img src=\"http://127.0.0.1:9/x.png\"><h1>"),
    )
    .expect("write");
    let (_, console) = crate::support::chromium_load(&bad, &tmp.path().join("profile-2"));
    assert!(!console.is_empty(), "an outside fetch went unnoticed");
}

#[test]
fn publish_is_append_only_and_never_ranks_illustrations() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = tmp.path().join("results");
    let real = fixed_run(tmp.path());
    let scripted = tmp.path().join("scripted");
    SyntheticRun {
        mode: Mode::Scripted,
        ..SyntheticRun::fixed()
    }
    .write(&scripted)
    .expect("write");
    let opts = Options::default();
    let provider: report::provider::Statement = [
        ("server", "llama-cpp-python 0.3.36"),
        ("model_sha256", "b179c952"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let p = report::publish::publish(&real, &results, "real-1", Some(&provider), &opts)
        .expect("publish");
    assert!(p.join("qa.api-ledger.balance.r1/record.json").is_file());
    report::publish::publish(&scripted, &results, "scripted-1", None, &opts).expect("publish");

    // The same label again is refused, and nothing changes.
    let before = std::fs::read(results.join("runs/real-1/qa.api-ledger.balance.r1/record.json"))
        .expect("read");
    let err = report::publish::publish(&scripted, &results, "real-1", None, &opts).unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
    let after = std::fs::read(results.join("runs/real-1/qa.api-ledger.balance.r1/record.json"))
        .expect("read");
    assert_eq!(before, after);
    assert!(report::publish::publish(&real, &results, "Bad Label", None, &opts).is_err());

    let index = std::fs::read_to_string(results.join("published/index.md")).expect("index");
    let (board, illustrations) = index
        .split_once("## Harness illustrations")
        .expect("two sections");
    assert!(
        board.contains("real-1") && !board.contains("scripted-1"),
        "{index}"
    );
    assert!(illustrations.contains("scripted-1"));
    // The falsifier is stated up front, and judged: no reference agent run here.
    assert!(index.contains("## The falsifier"), "{index}");
    assert!(
        index.contains("**Today:** Untested: no real run of the reference agent"),
        "{index}"
    );
    // The publisher's statement is on the run's pages, marked as theirs; the run
    // without one states none.
    for page in ["report.md", "report.html"] {
        let text =
            std::fs::read_to_string(results.join("published/real-1").join(page)).expect("page");
        assert!(
            text.contains("provider: model_sha256 (as the publisher states it)")
                && text.contains("b179c952"),
            "{page}: {text}"
        );
        let text =
            std::fs::read_to_string(results.join("published/scripted-1").join(page)).expect("page");
        assert!(!text.contains("as the publisher states it"), "{page}");
    }
    assert!(results.join("runs/real-1/provider.json").is_file());
    for label in ["real-1", "scripted-1"] {
        for page in ["report.md", "report.html", "summary.json"] {
            assert!(results.join("published").join(label).join(page).is_file());
        }
    }
    // Each published trial has its transcript beside the pages, linking into the kept
    // run for its raw files; the kept run holds evidence only.
    let published = results.join("published/real-1/qa.api-ledger.balance.r1");
    let transcript =
        std::fs::read_to_string(published.join("transcript.html")).expect("published transcript");
    let raw_links: Vec<&str> = transcript
        .split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|h| h.contains("runs/real-1"))
        .collect();
    assert!(!raw_links.is_empty(), "{transcript}");
    for link in raw_links {
        assert!(published.join(link).exists(), "a broken link `{link}`");
    }
    assert!(!results
        .join("runs/real-1/qa.api-ledger.balance.r1/transcript.html")
        .exists());
    // A run with a problem is not published.
    std::fs::write(real.join("stray.txt"), b"x").expect("stray");
    let err = report::publish::publish(&real, &results, "real-2", None, &opts).unwrap_err();
    assert!(err.to_string().contains("stray.txt"), "{err}");
    assert!(!results.join("runs/real-2").exists());
    // A merge manifest that is a link to a host file is refused, never copied.
    std::fs::remove_file(real.join("stray.txt")).expect("unstray");
    let host = tmp.path().join("host-secret");
    std::fs::write(&host, b"host secret").expect("host file");
    std::os::unix::fs::symlink(&host, real.join("merge.json")).expect("link");
    let err = report::publish::publish(&real, &results, "real-3", None, &opts).unwrap_err();
    assert!(err.to_string().contains("merge.json"), "{err}");
    assert!(!results.join("runs/real-3").exists());
}

#[test]
fn the_committed_record_schema_is_current() {
    let committed = root().join(gauntlet::record::schema::SCHEMA_PATH);
    let now = gauntlet::record::schema::record_schema_text();
    if std::env::var_os("GAUNTLET_UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(committed.parent().expect("parent")).expect("mkdir");
        std::fs::write(&committed, &now).expect("write schema");
    }
    let on_disk = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        on_disk == now,
        "{} is stale: regenerate it with `GAUNTLET_UPDATE_SCHEMA=1 cargo test --test integration the_committed_record_schema_is_current`",
        committed.display()
    );
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join(gauntlet::record::schema::SCHEMA_PATH))
        .expect("committed schema");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is json");
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

fn assert_valid(v: &jsonschema::Validator, file: &Path) {
    let rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(file).expect("record")).expect("json");
    let errors: Vec<String> = v.iter_errors(&rec).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{}: {errors:#?}", file.display());
}

#[test]
fn records_a_run_writes_validate_against_the_committed_schema() {
    let v = validator();
    // Records of real trials (a real app, a real agent process, the gate).
    let out = tempfile::tempdir().expect("tempdir");
    for agent in ["true-test.sh", "honest-balance.sh", "crashes.sh"] {
        let cfg = config(fixture_agent(agent), &out.path().join(agent));
        let (_, dir) = run_trial(&ledger(), "balance", &cfg);
        assert_valid(&v, &dir.join("record.json"));
    }
    // And every synthetic one.
    let run = fixed_run(out.path());
    for f in gauntlet::record::find_records(&run).expect("records") {
        assert_valid(&v, &f);
    }
    // The check can fail: a record missing its verdict is refused.
    let f = run.join("qa.api-ledger.balance.r1/record.json");
    let mut rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&f).expect("read")).expect("json");
    rec.as_object_mut().expect("object").remove("verdict");
    assert!(!v.is_valid(&rec));
    rec["verdict"] = serde_json::json!({"outcome": "great", "reason": "", "passed": true});
    assert!(!v.is_valid(&rec));
}

#[test]
fn the_junit_summary_line_carries_the_figures() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = fixed_run(tmp.path());
    let rec =
        gauntlet::record::load(&run.join("qa.api-ledger.balance.r1/record.json")).expect("record");
    let (tin, tout) = rec.tokens();
    let line = gauntlet::record::summary_line(&rec);
    assert_eq!(
        line,
        format!(
            "gauntlet: qa::api-ledger::balance::r1 verdict={} passed={} tokens_in={tin} tokens_out={tout} wall_ms={} reason={:?} record_sha256={}",
            rec.verdict.outcome, rec.verdict.passed, rec.header.wall_ms, rec.verdict.reason,
            gauntlet::record::digest::value_sha256(&rec)
        )
    );
    // The hash the line carries is the hash of the record file as stored.
    let on_disk =
        gauntlet::record::digest::file_sha256(&run.join("qa.api-ledger.balance.r1/record.json"))
            .expect("hash");
    assert!(
        line.ends_with(&format!(" record_sha256={on_disk}")),
        "{line}"
    );
    // One line, so that JUnit system-out keeps it whole and a grep finds it.
    assert!(!line.contains('\n'));
}

#[test]
fn the_committed_illustration_run_rescores_and_is_never_ranked() {
    let results = root().join("results");
    let run = results.join("runs/scripted-illustration-k3");
    let loaded = load_run(&run).expect("committed run loads");
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    assert!(!loaded.records.is_empty());
    let pages = report::render(&loaded, &Options::default());
    assert!(pages.summary.illustration);
    let index = std::fs::read_to_string(results.join("published/index.md")).expect("index");
    let (board, _) = index
        .split_once("## Harness illustrations")
        .expect("two sections");
    assert!(!board.contains("scripted-illustration-k3"), "{index}");
}

/// The first real result (docs/local-model.md): SmolLM2-135M served by llama-cpp-python,
/// the reference agent, every qa capability, K = 3. Whatever the model did, the
/// committed run must stand on its own evidence, be ranked as a real run, state what
/// served the model, and leave the falsifier untested (no rival on that model).
#[test]
fn the_committed_real_run_rescores_is_ranked_and_states_its_provider() {
    let results = root().join("results");
    let label = "smollm2-135m-reference-k3";
    let run = results.join("runs").join(label);
    let rescored = gauntlet::record::rescore::rescore_path(&run).expect("rescore");
    assert!(rescored.ok(), "{:?}", rescored.findings);
    assert_eq!(rescored.rows.len(), 69, "23 qa capabilities x K = 3");
    let loaded = load_run(&run).expect("committed run loads");
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let pages = report::render(&loaded, &Options::default());
    let s = &pages.summary;
    assert!(!s.illustration && !s.unsealed);
    let h = s.harness.as_ref().expect("harness");
    assert_eq!(
        (h.agent.as_str(), h.model.as_str()),
        ("reference", "smollm2-135m")
    );
    assert_eq!((h.n, h.k), (3, 3));
    let provider = s.provider.as_ref().expect("a provider statement");
    assert_eq!(
        provider.get("model_sha256").map(String::as_str),
        Some("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")
    );
    assert!(pages
        .markdown
        .contains("provider: chat_format (as the publisher states it) | chatml-function-calling"));
    let index = std::fs::read_to_string(results.join("published/index.md")).expect("index");
    let (board, _) = index
        .split_once("## Harness illustrations")
        .expect("two sections");
    assert!(board.contains(&format!("[{label}]")), "{index}");
    assert!(
        board.contains("**Today:** Untested on `smollm2-135m`"),
        "{index}"
    );
    let page = std::fs::read_to_string(results.join("published").join(label).join("report.md"))
        .expect("published page");
    assert!(page.contains("model_sha256 (as the publisher states it)"));
}

#[test]
fn records_of_other_suites_in_the_run_are_set_aside_not_reported_as_problems() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = fixed_run(tmp.path());
    let before = load_run(&run).expect("load");
    // A real record of another suite, written into the same run directory.
    let suite = gauntlet::spec::scorecard::load_suite(&gauntlet::spec::scorecard::default_dir())
        .expect("scorecard loads");
    let probe = suite
        .probes
        .iter()
        .find(|p| p.trial_name() == "scorecard::world::p5-1")
        .expect("probe p5-1");
    let cfg = config(
        gauntlet::config::AgentChoice::of(gauntlet::config::AgentKind::Reference),
        tmp.path(),
    );
    let (_, other) = runtime()
        .block_on(gauntlet::suites::scorecard::execute(
            &suite,
            probe,
            &cfg,
            &run,
            &gauntlet::suites::scorecard::ExecOptions::default(),
        ))
        .expect("probe record");
    let after = load_run(&run).expect("load");
    assert_eq!(after.records.len(), before.records.len());
    assert_eq!(after.problems, before.problems);
    assert_eq!(
        after.other_suites.get("scorecard"),
        Some(&vec!["scorecard.world.p5-1".to_string()])
    );
    assert!(after
        .other_records
        .iter()
        .any(|r| r.trial == "scorecard::world::p5-1"));

    // The one loader checks every suite's record: a truncated one is a problem, and
    // its trial is not counted as if it had passed.
    std::fs::write(
        other.join("record.json"),
        br#"{"suite": "scorecard", "trial": "scorecard::world::p5-1"}"#,
    )
    .expect("truncate");
    let broken = load_run(&run).expect("load");
    assert!(broken
        .problems
        .iter()
        .any(|p| p.file == "scorecard.world.p5-1/record.json"));
    assert!(!broken
        .other_records
        .iter()
        .any(|r| r.trial == "scorecard::world::p5-1"));
}

/// A run made through a CLI adapter, from the real CLIs' recorded streams: `gauntlet
/// report` and `gauntlet rescore` read each record's stdout with the parser of the
/// agent that produced it (its `config.agent`), so every trial is counted with the
/// verdict it was given. Read as the gauntlet protocol, the same stdout holds no claim
/// and gives another verdict: the check below proves the test can tell the two apart.
#[test]
fn a_run_made_by_the_cli_adapters_reports_and_rescores_with_their_own_parsers() {
    use gauntlet::evidence::streams::AgentKind;
    use gauntlet::evidence::{AgentRun, ProcessEnd, QaEvidence, RawFile};
    use gauntlet::record::rescore::{derive_qa_verdict, rescore_path};
    use gauntlet::record::{self, QaRecord, QaSpecRef};

    let tmp = tempfile::tempdir().expect("tempdir");
    let fixtures = [
        (AgentKind::OpenCode, "opencode-1.18.33.jsonl"),
        (AgentKind::ClaudeCode, "claude-code-2.1.332.jsonl"),
        (AgentKind::Codex, "codex-0.171.0.jsonl"),
    ];
    let raw = |dir: &Path, name: &str, bytes: &[u8]| {
        std::fs::write(dir.join(name), bytes).expect("raw file");
        RawFile {
            path: name.into(),
            bytes: bytes.len() as u64,
            bytes_seen: bytes.len() as u64,
            sha256: gauntlet::hash::sha256(bytes),
        }
    };
    // One run per adapter: a run is made under one config.
    for (kind, file) in fixtures {
        let run = tmp.path().join(kind.name());
        let stream = std::fs::read(root().join("tests/fixtures/streams").join(file))
            .expect("recorded stream");
        // Each adapter's run has its own directory: the trial keeps its one name.
        let trial = "qa::api-ledger::health".to_string();
        let dir = record::create_trial_dir(&run, &trial).expect("trial dir");
        let mut agent = AgentRun::not_started();
        agent.command = vec![kind.name().into()];
        agent.end = ProcessEnd {
            exit_code: Some(0),
            signal: None,
            timed_out: false,
            duration_ms: 1000,
            interrupted: None,
        };
        agent.stdout = raw(&dir, "agent.stdout", &stream);
        agent.stderr = raw(&dir, "agent.stderr", b"");
        let evidence = QaEvidence {
            calls: None,
            prompt: None,
            agent,
            gate: None,
            usage: vec![],
            setup_error: None,
            agent_report: None,
            budget_hit: None,
            world_logs: vec![],
        };
        let spec = QaSpecRef {
            app: "api-ledger".into(),
            capability: "health".into(),
            kind: gauntlet::spec::CapabilityKind::Feature,
            app_content_hash: "sha256:00".into(),
            capability_sha256: "sha256:00".into(),
            script_sha256: None,
            matrix_sha256: None,
        };
        let verdict = derive_qa_verdict(&dir, kind.name(), &spec, &evidence).expect("derive");
        let as_protocol =
            derive_qa_verdict(&dir, AgentKind::Command.name(), &spec, &evidence).expect("derive");
        assert_ne!(
            verdict,
            as_protocol,
            "{}: its stream must read differently from the gauntlet protocol",
            kind.name()
        );
        let rec = QaRecord {
            header: record::Header {
                schema_version: record::SCHEMA_VERSION,
                suite: gauntlet::spec::Suite::Qa,
                trial: trial.clone(),
                run_id: "cli-run".into(),
                gauntlet_version: gauntlet::VERSION.into(),
                started_at: "2026-01-01T00:00:00+00:00".into(),
                finished_at: "2026-01-01T00:00:01+00:00".into(),
                wall_ms: 1000,
                config: gauntlet::record::RecordConfig::of(
                    &config(
                        gauntlet::config::AgentChoice::of(gauntlet::config::AgentKind::Reference),
                        &run,
                    ),
                    kind.name(),
                    format!("{} (recorded)", kind.name()),
                ),
            },
            repeat: 1,
            spec,
            evidence,
            verdict: verdict.clone(),
        };
        record::write_new_json(&dir, record::RECORD_FILE, &rec).expect("record");

        let loaded = load_run(&run).expect("loads");
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.records.len(), 1, "{trial} not counted");
        assert_eq!(loaded.records[0].verdict, verdict, "{trial}");
        let pages = report::render(&loaded, &priced(tmp.path()));
        assert!(
            pages.markdown.contains(&trial) && pages.markdown.contains(kind.name()),
            "{trial} missing from the page"
        );
        let rescored = rescore_path(&run).expect("rescore");
        assert_eq!(rescored.rows.len(), 1);
        let row = &rescored.rows[0];
        assert_eq!(row.derived.as_ref().ok(), row.stored.as_ref(), "{trial}");
        assert!(rescored.ok(), "{:?}", rescored.rows);
    }
}

/// K = 100 repeats over 1,000 trials: every figure is a few values with their
/// intervals, never a hundred values in a cell, and the trial list is folded.
#[test]
fn pages_stay_readable_at_k_100_and_a_thousand_trials_and_every_rate_has_an_interval() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = tmp.path().join("run");
    let kinds = [
        CapabilityKind::Feature,
        CapabilityKind::Negative,
        CapabilityKind::Ambiguous,
    ];
    SyntheticRun {
        apps: (0..2)
            .map(|a| {
                (
                    format!("app-{a}"),
                    (0..5).map(|c| (format!("cap-{c}"), kinds[c % 3])).collect(),
                )
            })
            .collect(),
        repeats: 100,
        ..SyntheticRun::fixed()
    }
    .write(&run)
    .expect("write");
    let pages = report::write_report(&run, &run, &Options::default()).expect("report");
    assert_eq!(pages.summary.trials.len(), 1000);
    let md = &pages.markdown;
    let row = |name: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no `{name}` row"))
            .to_string()
    };
    for name in ["pass@k", "pass^k"] {
        let r = row(name);
        assert_eq!(r.matches("k=").count(), 7, "{r}");
        assert_eq!(
            r.matches('[').count(),
            7,
            "every shown k has its interval: {r}"
        );
    }
    for name in [
        "verified rate (over verifiable capabilities' trials)",
        "false verifications",
        "trials passed",
    ] {
        assert!(row(name).contains('['), "{}", row(name));
    }
    assert!(row("spread across repeats").contains("over 100 repeats"));
    let caps: Vec<&str> = md.lines().filter(|l| l.starts_with("| `app-")).collect();
    assert!(
        caps.iter().any(|l| l.contains("of 100 repeats")),
        "{caps:#?}"
    );
    assert!(
        caps.iter().all(|l| l.len() < 600),
        "a capability row lists every repeat"
    );
    assert!(md.contains("<details><summary>1000 trials</summary>"));
    assert!(pages.html.contains("<details><summary>1000 trials"));
    // The interval follows Wilson's formula on the run's own counts.
    let f = &pages.summary.run;
    let ci = f.verified_rate_ci.expect("an interval");
    let w = gauntlet::score::interval::wilson(f.verified, f.verifiable_trials).expect("wilson");
    assert_eq!(ci, w);
    assert!(ci.low <= f.verified_rate.unwrap_or(0.0) && f.verified_rate.unwrap_or(0.0) <= ci.high);
    // Pages a browser opens at once: a thousand trials cost a row each, not a screen each.
    let transcript = std::fs::read(run.join("qa.app-0.cap-0.r1/transcript.html"))
        .map(|b| b.len())
        .unwrap_or(0);
    eprintln!(
        "1,000 trials, K = 100: report.md {} B, report.html {} B, summary.json {} B, one transcript {} B",
        md.len(),
        pages.html.len(),
        pages.json.len(),
        transcript
    );
    assert!(transcript > 0, "every record has its transcript page");
    assert!(
        pages.html.len() < 1_500 * 1000,
        "{} bytes",
        pages.html.len()
    );
    assert!(md.len() < 1_000 * 1000, "{} bytes", md.len());
}

/// The committed index is what `gauntlet publish --regenerate` makes of the committed
/// runs today: a change to the pages (a new section, such as the runs' audits) shows
/// up in `results/published/`, not only in the next run someone publishes.
#[test]
fn the_committed_published_index_is_what_regenerating_the_committed_runs_makes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).expect("results dir");
    std::os::unix::fs::symlink(root().join("results/runs"), results.join("runs"))
        .expect("the committed runs, linked");
    let gauntlet = bin("gauntlet");
    let out = std::process::Command::new(&gauntlet)
        .args(["publish", "--regenerate", "--results"])
        .arg(&results)
        .output()
        .expect("gauntlet runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for page in ["index.md", "index.html"] {
        let made = std::fs::read_to_string(results.join("published").join(page)).expect("made");
        let committed = std::fs::read_to_string(root().join("results/published").join(page))
            .expect("committed");
        assert!(
            made == committed,
            "results/published/{page} is stale: run `cargo run -- publish --regenerate`"
        );
    }
    let index = std::fs::read_to_string(results.join("published/index.md")).expect("index");
    assert!(index.contains("## Hackability"), "{index}");
    // Publishing something and regenerating are one or the other.
    let both = std::process::Command::new(&gauntlet)
        .args(["publish", "--regenerate", "some-run", "--label", "x"])
        .output()
        .expect("gauntlet runs");
    assert_eq!(both.status.code(), Some(2));
}

/// `gauntlet report` of a run the main job already reported, into its own directory:
/// every page the first report wrote there (the audit's pages among them) is the run's
/// own, so the second report names no problem and exits 0 with the same page.
#[test]
fn reporting_a_run_again_in_place_finds_only_its_own_pages() {
    let out = tempfile::tempdir().expect("tempdir");
    let gauntlet = |args: &[&str]| {
        std::process::Command::new(bin("gauntlet"))
            .args(args)
            .env("GAUNTLET_OUT", out.path())
            .env_remove("CARGO")
            .env_remove("NEXTEST_RUN_ID")
            .env_remove("GAUNTLET_RESUME")
            .output()
            .expect("gauntlet runs")
    };
    let ran = gauntlet(&["run", "--jobs", "1", "--filter", "qa::api-ledger::health"]);
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let runs: Vec<PathBuf> = std::fs::read_dir(out.path())
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    let audit_page = run.join(gauntlet::report::hackability::PAGE_HTML);
    assert!(
        audit_page.is_file(),
        "the run's identity carries its audit standing"
    );
    let first = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    let again = gauntlet(&["report", &run.display().to_string()]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr)
    );
    let second = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(!second.contains("## Problems"), "{second}");
    assert_eq!(first, second);
}
