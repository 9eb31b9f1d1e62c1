//! The real agent CLIs — OpenCode, Claude Code, Codex, pinned in `workspace/` — run
//! offline against the scripted proxy on api-ledger, through the same trial code path
//! as any agent, and must get the verdicts the reference agent gets: `verified` on a
//! verifiable capability, `unverified` on the ambiguous one.
//!
//! One test per CLI and capability: `clis::<agent>::<capability>`. Where
//! `workspace/node_modules` lacks a CLI the test is listed as ignored, with the reason,
//! except under `CI=true`, where it runs and fails: CI installs the workspace.
//!
//! `cargo test --test clis`; `cargo nextest run -E 'binary(clis)'`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use gauntlet::agent::cli;
use gauntlet::config::{AgentChoice, Config};
use gauntlet::evidence::{parse_claims, ClaimsFound};
use gauntlet::record::QaRecord;
use gauntlet::score::Outcome;
use gauntlet::spec::LoadedApp;
use libtest_mimic::{Arguments, Failed, Trial};

/// A CLI under test: how gauntlet names it, its binary, its npm package, and the wire
/// protocol it must have spoken to the proxy.
#[derive(Clone, Copy)]
struct Cli {
    agent: fn() -> AgentChoice,
    bin: &'static str,
    package: &'static str,
    protocol: &'static str,
}

const CLIS: [Cli; 3] = [
    Cli {
        agent: || AgentChoice::OpenCode,
        bin: "opencode",
        package: "opencode-ai",
        protocol: "chat",
    },
    Cli {
        agent: || AgentChoice::ClaudeCode,
        bin: "claude",
        package: "@anthropic-ai/claude-code",
        protocol: "messages",
    },
    Cli {
        agent: || AgentChoice::Codex,
        bin: "codex",
        package: "@openai/codex",
        protocol: "responses",
    },
];

/// One verifiable capability and the ambiguous one.
const CAPABILITIES: [&str; 2] = ["health", "prompt-under-load"];

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let mut trials = Vec::new();
    for cli in CLIS {
        for capability in CAPABILITIES {
            let name = format!("clis::{}::{capability}", (cli.agent)().name());
            let ignored = !cli::installed(cli.bin) && !ci;
            if ignored && args.list {
                // Shown beside `--list`, where the ignore is decided.
                eprintln!(
                    "{name}: ignored: {} is not installed (cd workspace && npm ci)",
                    cli::npm_bin(cli.bin).display()
                );
            }
            trials
                .push(Trial::test(name, move || check(cli, capability)).with_ignored_flag(ignored));
        }
    }
    gauntlet::plan::harness::run(args, trials)
}

fn fail(msg: String) -> Failed {
    eprintln!("Error: {msg}");
    Failed::from(msg)
}

fn check(cli: Cli, capability: &str) -> Result<(), Failed> {
    if !cli::installed(cli.bin) {
        return Err(fail(format!(
            "{} is not installed; .ci/run installs the pinned CLIs with `npm ci` in workspace/",
            cli::npm_bin(cli.bin).display()
        )));
    }
    let root = gauntlet::binaries::repo_root();
    let app = gauntlet::spec::load_app(&root.join("apps/api-ledger"))
        .map_err(|e| fail(format!("api-ledger: {e}")))?;
    let out = tempfile::tempdir().map_err(|e| fail(format!("tempdir: {e}")))?;

    let (reference, _) = trial(&app, capability, AgentChoice::Reference, out.path())?;
    let (rec, dir) = trial(&app, capability, (cli.agent)(), out.path())?;
    let name = (cli.agent)().name();

    // The same verdict as the reference agent, and the honest best one.
    if rec.verdict.outcome != reference.verdict.outcome || !rec.verdict.passed {
        return Err(fail(format!(
            "{name} on `{capability}`: {} ({}), the reference agent: {} ({}); agent stderr in {}",
            rec.verdict.outcome,
            rec.verdict.reason,
            reference.verdict.outcome,
            reference.verdict.reason,
            dir.join("agent.stderr").display()
        )));
    }
    let expected = if capability == "prompt-under-load" {
        Outcome::Unverified
    } else {
        Outcome::Verified
    };
    assert_eq!(rec.verdict.outcome, expected);

    // The agent's version, as pinned in the lockfile, is in the record.
    let pinned = pinned_version(&root, cli.package)?;
    assert_eq!(rec.config.agent, name);
    assert!(
        rec.config.agent_version.contains(&pinned),
        "record names version `{}`, the lockfile pins {pinned}",
        rec.config.agent_version
    );

    // Its own event stream, normalized, beside the proxy's metering.
    let report = rec
        .evidence
        .agent_report
        .as_ref()
        .ok_or_else(|| fail("no agent_report in the record".into()))?;
    assert_eq!(report.format, name);
    assert!(report.steps >= 1, "no steps: {report:?}");
    assert!(
        report
            .tool_calls
            .iter()
            .any(|c| !c.failed && c.output.as_ref().is_some_and(|o| o.bytes > 0)),
        "no tool call with output: {:?}",
        report.tool_calls
    );
    let last = report
        .texts
        .last()
        .filter(|t| t.is_final)
        .ok_or_else(|| fail("no final text in the report".into()))?;
    assert!(
        matches!(parse_claims(&last.text.text), ClaimsFound::One(c) if c.capability == capability)
    );
    assert!(
        report.unknown_events.is_empty(),
        "unknown events: {:?}",
        report.unknown_events
    );
    assert!(
        report.reported_usage.input_tokens.is_some_and(|t| t > 0),
        "the agent reported no tokens: {:?}",
        report.reported_usage
    );
    let metered: Vec<_> = rec
        .evidence
        .usage
        .iter()
        .filter(|u| u.protocol == cli.protocol && u.status == 200)
        .collect();
    assert!(
        metered.len() >= 2,
        "expected the tool-call and final turns over `{}`, metered: {:?}",
        cli.protocol,
        rec.evidence.usage
    );
    assert!(metered.iter().all(|u| u.input_tokens.is_some()));

    // Rescore reads the stored stdout with the same parser and agrees.
    let row = gauntlet::record::rescore::rescore_file(&dir.join(gauntlet::record::RECORD_FILE));
    assert!(row.agrees(), "rescore: {:?}", row.derived);
    Ok(())
}

fn trial(
    app: &LoadedApp,
    capability: &str,
    agent: AgentChoice,
    out: &Path,
) -> Result<(QaRecord, PathBuf), Failed> {
    let run_dir = out.join(agent.name());
    let cfg = Config {
        agent,
        n: 2,
        // A deadline, not a performance bound: the CLIs start slowly on a busy machine.
        timeout: Duration::from_secs(300),
        gate_timeout: Duration::from_secs(60),
        out_dir: out.to_path_buf(),
        ..Config::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail(format!("tokio runtime: {e}")))?;
    rt.block_on(gauntlet::run::qa::execute(
        app, capability, None, &cfg, &run_dir,
    ))
    .map_err(|e| fail(format!("trial: {e}")))
}

/// The exact version `workspace/package-lock.json` pins for `package`.
fn pinned_version(root: &Path, package: &str) -> Result<String, Failed> {
    let file = root.join("workspace/package-lock.json");
    let text =
        std::fs::read_to_string(&file).map_err(|e| fail(format!("{}: {e}", file.display())))?;
    let lock: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(format!("{}: {e}", file.display())))?;
    lock.pointer(&format!(
        "/packages/node_modules~1{}",
        package.replace('/', "~1")
    ))
    .and_then(|p| p.get("version"))
    .and_then(|v| v.as_str())
    .map(str::to_owned)
    .ok_or_else(|| {
        fail(format!(
            "{}: no pinned version of {package}",
            file.display()
        ))
    })
}
