//! What a trial keeps for a person to read: the proxy's calls, as they passed.

use gauntlet::config::{AgentChoice, AgentKind};
use serde_json::Value;

use super::support;

#[test]
fn a_trial_keeps_every_model_call_as_relayed_hashed_like_raw_evidence() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = support::config(AgentChoice::of(AgentKind::Reference), tmp.path());
    let (rec, dir) = support::run_trial(&support::ledger(), "balance", &cfg);
    let calls = rec.evidence.calls.as_ref().expect("calls kept");
    assert_eq!(calls.path, "agent.calls.jsonl");
    let text = std::fs::read_to_string(dir.join(&calls.path)).expect("calls file");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a json line"))
        .collect();
    assert_eq!(
        lines.len(),
        rec.evidence.usage.len(),
        "one line per metered call"
    );
    for (line, usage) in lines.iter().zip(&rec.evidence.usage) {
        assert_eq!(line["seq"], usage.seq);
        assert_eq!(line["response"]["complete"], true, "{line}");
        assert!(line["response"]["kept"].as_u64() > Some(0), "{line}");
    }
    // The first request carries the rendered prompt; the bodies are those the agent
    // sent and got, never a header.
    let prompt = std::fs::read_to_string(dir.join("prompt.md")).expect("prompt");
    let first_line = prompt.lines().next().expect("a prompt line");
    let request = lines[0]["request"]["body"].as_str().expect("request body");
    assert!(
        request.contains(&first_line.replace('"', "\\\"")),
        "{request}"
    );
    assert!(!text.to_lowercase().contains("authorization"));
    // Hashed like any raw file: an edit is caught by rescore.
    assert!(gauntlet::record::rescore::rescore_file(&dir.join("record.json")).agrees());
    std::fs::write(dir.join(&calls.path), text.replace("balance", "BALANCE")).expect("edit");
    let row = gauntlet::record::rescore::rescore_file(&dir.join("record.json"));
    assert!(!row.agrees());
    assert!(
        row.raw_problems
            .iter()
            .any(|p| p.contains("agent.calls.jsonl")),
        "{:?}",
        row.raw_problems
    );
}

/// A run of one trial of each suite, planned and run as `gauntlet run` does.
fn three_suite_run(out: &std::path::Path) -> std::path::PathBuf {
    let run = out.join("run");
    let cfg = support::config(AgentChoice::of(AgentKind::Reference), out);
    support::run_planned(
        &cfg,
        &[
            "qa::api-ledger::balance",
            "challenge::ledger-reconcile::none",
            "scorecard::memory::p1-1",
        ],
        &run,
    );
    run
}

#[test]
fn every_trial_row_links_to_a_transcript_that_loads_clean_and_whose_links_resolve() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = three_suite_run(tmp.path());
    gauntlet::report::write_report(&run, &run, &Default::default()).expect("report");
    let qa = run.join("qa.api-ledger.balance");
    let page = std::fs::read_to_string(qa.join("transcript.html")).expect("qa transcript");
    // What the agent was asked, every call, the tools, the claim, the gate (targets
    // revealed), the verdict and its rule.
    let prompt = std::fs::read_to_string(qa.join("prompt.md")).expect("prompt");
    let first = prompt
        .lines()
        .find(|l| l.len() > 20)
        .expect("a prompt line");
    assert!(
        page.contains(&gauntlet::report::svg::esc(first)),
        "the prompt is on the page"
    );
    assert!(page.contains("Model calls ("), "{page}");
    assert!(page.contains("tools offered:"));
    assert!(page.contains("Tool calls ("));
    assert!(page.contains("The claim"));
    assert!(page.contains("<td>mutant</td>") && page.contains("<td>app</td>"));
    assert!(page.contains("verified"));
    // The raw-file table lists exactly what rescore verifies.
    let listed = page
        .split("<h2>Raw files</h2>")
        .nth(1)
        .expect("a raw-file table")
        .matches("<tr><td><a ")
        .count();
    let verified = gauntlet::record::raw::verify_record_file(&qa.join("record.json"))
        .expect("record")
        .checked;
    assert_eq!(listed, verified);
    for dir in ["challenge.ledger-reconcile.none", "scorecard.memory.p1-1"] {
        let other = std::fs::read_to_string(run.join(dir).join("transcript.html"))
            .unwrap_or_else(|e| panic!("{dir}: {e}"));
        assert!(other.contains("Model calls ("), "{dir}");
    }
    let scorecard = std::fs::read_to_string(run.join("scorecard.memory.p1-1/transcript.html"))
        .expect("scorecard page");
    assert!(scorecard.contains("Observations"));
    // A challenge's page says it is not audited yet; once audited it shows the audit,
    // which is authoritative, and the one it superseded.
    let ch = run.join("challenge.ledger-reconcile.none");
    let page_of =
        |d: &std::path::Path| std::fs::read_to_string(d.join("transcript.html")).expect("page");
    assert!(page_of(&ch).contains("Not audited yet"));
    use gauntlet::score::challenge::{TaskOutcome, Validity};
    gauntlet::report::challenge::audit(&ch, TaskOutcome::Failed, Validity::Clean, "first look")
        .expect("audit");
    gauntlet::report::challenge::audit(
        &ch,
        TaskOutcome::Success,
        Validity::Contaminated,
        "read <the> answer key",
    )
    .expect("audit again");
    gauntlet::report::write_report(&run, &run, &Default::default()).expect("report after audit");
    let audited = page_of(&ch);
    assert!(
        audited.contains("<th>current (authoritative)</th><td>success</td><td>contaminated</td>"),
        "{audited}"
    );
    assert!(audited.contains("read &lt;the&gt; answer key") && audited.contains("first look"));
    assert!(audited.contains("href=\"manual-audit.yaml\""));

    // The same bytes when rendered again: a projection.
    gauntlet::report::write_report(&run, &run, &Default::default()).expect("again");
    assert_eq!(
        std::fs::read_to_string(qa.join("transcript.html")).expect("again"),
        page
    );

    // In a real browser: the run page and every transcript it links load with no
    // console message, and every link on them resolves to a file.
    let report = run.join("report.html");
    let (dom, console) = support::chromium_load(&report, &tmp.path().join("profile-0"));
    assert!(console.is_empty(), "{console:#?}");
    let linked: Vec<String> = support::hrefs(&dom)
        .into_iter()
        .filter(|h| h.ends_with("transcript.html"))
        .collect();
    assert!(
        linked
            .iter()
            .any(|h| h == "qa.api-ledger.balance/transcript.html"),
        "{linked:?}"
    );
    for (i, href) in linked.iter().enumerate() {
        let page = run.join(href);
        let (dom, console) =
            support::chromium_load(&page, &tmp.path().join(format!("profile-{}", i + 1)));
        assert!(console.is_empty(), "{href}: {console:#?}");
        let here = page.parent().expect("trial dir");
        for link in support::hrefs(&dom) {
            assert!(here.join(&link).exists(), "{href}: a broken link `{link}`");
        }
    }

    // Pages written elsewhere link back into the run for raw files.
    let elsewhere = tmp.path().join("pages");
    gauntlet::report::write_report(&run, &elsewhere, &Default::default()).expect("elsewhere");
    let moved = elsewhere.join("qa.api-ledger.balance/transcript.html");
    let text = std::fs::read_to_string(&moved).expect("moved page");
    for link in support::hrefs(&text) {
        assert!(
            moved.parent().expect("dir").join(&link).exists(),
            "a broken link `{link}`"
        );
    }
}
