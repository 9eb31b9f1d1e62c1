//! Event-stream fixtures captured from real runs of the real agent CLIs (OpenCode,
//! Claude Code, Codex; and the reference agent), each normalized by its adapter's
//! parser into the challenge suite's evidence, with the result pinned as an insta
//! snapshot. One test per fixture (datatest-stable): `tests/fixtures/challenge-streams/<agent>/*.jsonl`.
//!
//! The fixtures were produced by `gauntlet challenge run <id> --instruction-profile …`
//! with `GAUNTLET_AGENT=<agent>` against the scripted proxy, fully offline; the file is
//! the trial's `agent.stdout` as written. `killed-mid-run.jsonl` is the head of a real
//! stream, as a timeout leaves it; `snoops-source.jsonl` is a run whose flow also read
//! gauntlet's own source and a test (the policy finding is asserted here).

use std::path::Path;

use gauntlet::evidence::policy::{self, Roots};
use gauntlet::score::challenge::parse_self_report;
use gauntlet::spec::challenge::Profile;

fn normalize(path: &Path, contents: Vec<u8>) -> datatest_stable::Result<()> {
    let agent = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .ok_or("fixture is not under tests/fixtures/challenge-streams/<agent>/")?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("no file name")?;
    let parser = gauntlet::evidence::streams::AgentKind::from_name(agent)
        .map(gauntlet::evidence::streams::parser)
        .ok_or_else(|| format!("no parser for `{agent}`"))?;
    let parsed = parser(&mut &contents[..]);
    let report = &parsed.report;
    let final_message = parsed.transcript.final_message.clone();
    let self_report = parse_self_report(final_message.as_deref());
    if stem == "killed-mid-run" {
        assert!(
            final_message.is_none(),
            "{agent}/{stem}: a killed run has no final message"
        );
        assert!(
            !report.tool_calls.is_empty(),
            "{agent}/{stem}: the calls before the kill are kept"
        );
    } else {
        assert!(
            self_report.fields.is_some(),
            "{agent}/{stem}: {:?}",
            self_report.error
        );
        assert!(report.tool_calls.len() >= 2, "{agent}/{stem}");
        assert!(
            report.tool_calls.iter().all(|c| !c.failed),
            "{agent}/{stem}"
        );
        assert!(
            !report.step_usage.is_empty(),
            "{agent}/{stem}: per-step usage"
        );
    }
    if stem == "snoops-source" {
        // The run read product source and a test under `none`: every CLI's tool-input
        // shape (filePath, file_path, a `bash -lc` command) yields the same finding.
        // The paths are the ones recorded when the fixture was made.
        let roots = Roots {
            workspace: "/nonexistent/trial/workspace".into(),
            skills: "/nonexistent/trial/workspace/.agent/skills".into(),
            trial_dir: "/nonexistent/trial".into(),
            runs_dir: "/nonexistent".into(),
            repo: "/work/w-chal".into(),
            runtime: vec![],
            challenge: None,
        };
        let none = policy::assess(&report.tool_calls, &roots, Profile::None);
        assert_eq!(
            none.disallowed_reads,
            [
                "/work/w-chal/apps/api-ledger/src/main.rs",
                "/work/w-chal/tests/integration/app_ledger.rs"
            ],
            "{agent}"
        );
        assert!(
            none.opaque_shell_commands.is_empty(),
            "{agent}: {:?}",
            none.opaque_shell_commands
        );
        let all = policy::assess(&report.tool_calls, &roots, Profile::All);
        assert!(all.disallowed_reads.is_empty() && all.escalated_to_product_code);
    }
    let snapshot = serde_json::json!({
        "agent_report": report,
        "final_message": final_message,
        "self_report": self_report,
    });
    let mut settings = insta::Settings::clone_current();
    // Found at run time in the repository, not beside a source path fixed at build time
    // (a nextest archive runs in another tree: docs/results.md).
    settings.set_snapshot_path(
        gauntlet::binaries::repo_root().join("tests/integration/snapshots/streams"),
    );
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_json_snapshot!(format!("{agent}__{stem}"), snapshot));
    Ok(())
}

datatest_stable::harness! {
    { test = normalize, root = "tests/fixtures/challenge-streams", pattern = r".*\.jsonl$" },
}
