//! The real agent CLIs — OpenCode, Claude Code, Codex, pinned in `workspace/` — run
//! offline against the scripted proxy on api-ledger and browser-notes, through the same
//! trial code path as any agent, and must get the verdicts the reference agent gets:
//! `verified` on a verifiable capability, `unverified` on the ambiguous one. Every
//! tool call the script makes must succeed in the CLI's own run, not only in the
//! harness's gate: a test command the CLI's shell cannot find is a failure here.
//!
//! One test per CLI and capability: `clis::<agent>::<capability>`, one per CLI,
//! `clis::<agent>::session-resume`, that its multi-turn sessions resume the
//! conversation (see [`session_resume`]), and `clis::scorecard`: all 15 scorecard
//! probes with each CLI and the reference agent, and their leaderboard (see
//! [`scorecard`]). Where
//! `workspace/node_modules` lacks a CLI the test is listed as ignored, with the reason,
//! except under `CI=true`, where it runs and fails: CI installs the workspace.
//!
//! `cargo test --test clis`; `cargo nextest run -E 'binary(clis)'`.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use gauntlet::agent::{adapter_for, cli, Adapter, LaunchContext, PromptRun, SessionTurn};
use gauntlet::config::{AgentChoice, AgentKind, Config};
use gauntlet::evidence::{parse_claims, ClaimsFound};
use gauntlet::proxy::{Proxy, ProxyMode};
use gauntlet::record::QaRecord;
use gauntlet::score::Outcome;
use gauntlet::spec::LoadedApp;
use gauntlet::spec::{Script, ScriptStep};
use gauntlet::sys::process::{self, ProcessSpec};
use gauntlet::trial::base_env;
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
        agent: || AgentChoice::of(AgentKind::OpenCode),
        bin: "opencode",
        package: "opencode-ai",
        protocol: "chat",
    },
    Cli {
        agent: || AgentChoice::of(AgentKind::ClaudeCode),
        bin: "claude",
        package: "@anthropic-ai/claude-code",
        protocol: "messages",
    },
    Cli {
        agent: || AgentChoice::of(AgentKind::Codex),
        bin: "codex",
        package: "@openai/codex",
        protocol: "responses",
    },
];

/// (app, capability): one verifiable capability and the ambiguous one of the HTTP API,
/// and one of the browser app, whose test is `gauntlet flow run` in the CLI's shell.
const CAPABILITIES: [(&str, &str); 3] = [
    ("api-ledger", "health"),
    ("api-ledger", "prompt-under-load"),
    ("browser-notes", "add-note"),
];

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let mut trials = Vec::new();
    for cli in CLIS {
        for (app, capability) in CAPABILITIES {
            let name = format!("clis::{}::{capability}", (cli.agent)().name());
            let ignored = !cli::installed(cli.bin) && !ci;
            if ignored && args.list {
                // Shown beside `--list`, where the ignore is decided.
                eprintln!(
                    "{name}: ignored: {} is not installed (cd workspace && npm ci)",
                    cli::npm_bin(cli.bin).display()
                );
            }
            trials.push(
                Trial::test(name, move || check(cli, app, capability)).with_ignored_flag(ignored),
            );
        }
    }
    for cli in CLIS {
        let name = format!("clis::{}::session-resume", (cli.agent)().name());
        let ignored = !cli::installed(cli.bin) && !ci;
        if ignored && args.list {
            eprintln!(
                "{name}: ignored: {} is not installed (cd workspace && npm ci)",
                cli::npm_bin(cli.bin).display()
            );
        }
        trials.push(Trial::test(name, move || session_resume(cli)).with_ignored_flag(ignored));
    }
    let ignored = CLIS.iter().any(|c| !cli::installed(c.bin)) && !ci;
    trials.push(Trial::test("clis::scorecard", scorecard).with_ignored_flag(ignored));
    gauntlet::harness::run(args, trials)
}

fn fail(msg: String) -> Failed {
    eprintln!("Error: {msg}");
    Failed::from(msg)
}

fn check(cli: Cli, app: &str, capability: &str) -> Result<(), Failed> {
    if !cli::installed(cli.bin) {
        return Err(fail(format!(
            "{} is not installed; .ci/run installs the pinned CLIs with `npm ci` in workspace/",
            cli::npm_bin(cli.bin).display()
        )));
    }
    let root = gauntlet::binaries::repo_root();
    let app = gauntlet::spec::load_app(&root.join("apps").join(app))
        .map_err(|e| fail(format!("{app}: {e}")))?;
    let out = tempfile::tempdir().map_err(|e| fail(format!("tempdir: {e}")))?;

    let (reference, _) = trial(
        &app,
        capability,
        AgentChoice::of(AgentKind::Reference),
        out.path(),
    )?;
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
    assert_eq!(rec.header.config.agent, name);
    assert!(
        rec.header.config.agent_version.contains(&pinned),
        "record names version `{}`, the lockfile pins {pinned}",
        rec.header.config.agent_version
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
    let failed: Vec<_> = report
        .tool_calls
        .iter()
        .filter(|c| c.failed)
        .map(|c| (&c.name, &c.input, c.output.as_ref().map(|o| &o.text)))
        .collect();
    assert!(
        failed.is_empty(),
        "{name}: tool calls failed in the agent's own run: {failed:?}"
    );
    if name == "claude-code" {
        // Offered exactly the tools docs/agents.md names, as its own init event says.
        let stdout = std::fs::read_to_string(dir.join("agent.stdout"))
            .map_err(|e| fail(format!("agent.stdout: {e}")))?;
        let init = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["type"] == "system" && v["subtype"] == "init")
            .ok_or_else(|| fail("no init event in Claude Code's stream".into()))?;
        let mut tools: Vec<&str> = init["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t.as_str()).collect())
            .unwrap_or_default();
        tools.sort_unstable();
        assert_eq!(tools, ["Bash", "Edit", "Glob", "Grep", "Read", "Write"]);
    }
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
    rt.block_on(gauntlet::suites::qa::execute(
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

/// A word no CLI's prompts contain by chance.
fn unique_word(prefix: &str) -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{prefix}-{:012X}", h.finish() & 0xFFFF_FFFF_FFFF)
}

/// What one run of the CLI sent the proxy.
struct Sent {
    /// Request bodies of its model calls, as text.
    bodies: Vec<String>,
}

impl Sent {
    fn any(&self, word: &str) -> bool {
        self.bodies.iter().any(|b| b.contains(word))
    }
}

/// The directories of one agent across its runs: one scratch HOME and workspace, as a
/// scorecard trial has.
struct Dirs {
    root: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
    workspace: PathBuf,
}

/// Turn 1 of a session tells the CLI a marker word; turn 2 of the same session (same
/// id and state directory, `resume`) asks something else, and its model request must
/// carry turn 1's marker: the CLI resumed the conversation. A first turn with a fresh,
/// empty state directory (same id, same HOME) must not carry it: the conversation
/// lives in the state directory, nowhere else. Each run goes through the adapter's
/// `prompt_launch` and `process::run`, as a scorecard turn does, against the scripted
/// proxy, which keeps the request bodies for the check.
fn session_resume(cli: Cli) -> Result<(), Failed> {
    if !cli::installed(cli.bin) {
        return Err(fail(format!(
            "{} is not installed; .ci/run installs the pinned CLIs with `npm ci` in workspace/",
            cli::npm_bin(cli.bin).display()
        )));
    }
    let out = tempfile::tempdir().map_err(|e| fail(format!("tempdir: {e}")))?;
    let result = session_turns(cli, out.path());
    if result.is_err() {
        // The agents' stdout and stderr stay for diagnosis.
        let kept = out.keep();
        eprintln!("kept {}", kept.display());
    }
    result
}

fn session_turns(cli: Cli, root: &Path) -> Result<(), Failed> {
    let agent = (cli.agent)();
    let adapter = adapter_for(&agent);
    let root = root.to_path_buf();
    let dirs = Dirs {
        home: root.join("home"),
        tmp: root.join("tmp"),
        workspace: root.join("workspace"),
        root,
    };
    for d in [&dirs.home, &dirs.tmp, &dirs.workspace] {
        std::fs::create_dir_all(d).map_err(|e| fail(format!("{}: {e}", d.display())))?;
    }
    let state = dirs.root.join("state");
    let fresh = dirs.root.join("state-fresh");
    let id = "session-resume-s1";
    let marker = unique_word("BLUEFIN");
    let (ask, ask_fresh) = (unique_word("TARPON"), unique_word("GROUPER"));

    let first =
        format!("Remember this code word for later: {marker}. Reply with one short sentence.");
    let sent = run_turn(adapter.as_ref(), &dirs, 1, &first, id, false, &state)?;
    if !sent.any(&marker) {
        return Err(fail(format!(
            "turn 1: no model request carries its own prompt's `{marker}`: the proxy did not see it"
        )));
    }

    let second = format!("Question {ask}: which code word did I give you earlier?");
    let sent = run_turn(adapter.as_ref(), &dirs, 2, &second, id, true, &state)?;
    if !sent
        .bodies
        .iter()
        .any(|b| b.contains(&ask) && b.contains(&marker))
    {
        return Err(fail(format!(
            "turn 2 (resume): no model request carries both its prompt's `{ask}` and turn 1's \
             `{marker}`: {} did not resume the conversation ({} requests; agent output in {})",
            agent.name(),
            sent.bodies.len(),
            dirs.root.display()
        )));
    }

    let third = format!("Question {ask_fresh}: which code word did I give you earlier?");
    let sent = run_turn(adapter.as_ref(), &dirs, 3, &third, id, false, &fresh)?;
    if !sent.any(&ask_fresh) {
        return Err(fail(format!(
            "fresh run: no model request carries its own prompt's `{ask_fresh}`"
        )));
    }
    if sent.any(&marker) {
        return Err(fail(format!(
            "fresh run: a model request carries `{marker}` from another state directory: \
             {}'s conversation leaks outside its state directory",
            agent.name()
        )));
    }
    Ok(())
}

/// One run of the CLI as a scorecard turn: its own scripted proxy (final message, plain
/// text), the adapter's launch, the harness's environment; it must end cleanly.
fn run_turn(
    adapter: &dyn Adapter,
    dirs: &Dirs,
    n: u32,
    prompt: &str,
    id: &str,
    resume: bool,
    state_dir: &Path,
) -> Result<Sent, Failed> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail(format!("tokio runtime: {e}")))?;
    rt.block_on(async {
        let model = "gauntlet-scripted";
        let script = Script {
            capability: "session-resume".into(),
            steps: vec![ScriptStep::Final {
                text: "Noted; happy to help.".into(),
            }],
        };
        let proxy = Proxy::start(ProxyMode::Scripted {
            script,
            model: model.into(),
            latency: std::time::Duration::ZERO,
        })
        .await
        .map_err(|e| fail(format!("proxy: {e}")))?;
        proxy.keep_request_bodies();
        let proxy_url = proxy.base_url();
        let run = PromptRun {
            title: format!("clis::{}::session-resume", adapter.name()),
            prompt: prompt.into(),
            workspace: dirs.workspace.clone(),
            session: Some(SessionTurn {
                id: id.into(),
                resume,
                state_dir: state_dir.to_path_buf(),
            }),
        };
        let launch = adapter
            .prompt_launch(
                &run,
                &LaunchContext {
                    home: &dirs.home,
                    workspace: &dirs.workspace,
                    proxy_url: &proxy_url,
                    model,
                },
            )
            .map_err(|e| fail(format!("turn {n}: prompt_launch: {e}")))?;
        // As the scorecard driver: the adapter's variables, then the harness's.
        let mut env: BTreeMap<String, String> = launch.env;
        env.extend(base_env(&dirs.home, &dirs.tmp));
        env.insert("OPENAI_BASE_URL".into(), proxy_url.clone());
        env.insert("OPENAI_API_KEY".into(), "gauntlet-proxy".into());
        env.insert("OPENAI_MODEL".into(), model.into());
        let stem = format!("turn-{n}");
        let outcome = process::run(ProcessSpec {
            program: launch.invocation.program,
            args: launch.invocation.args.clone(),
            cwd: dirs.workspace.clone(),
            env,
            // A deadline, not a performance bound: the CLIs start slowly on a busy machine.
            deadline: Duration::from_secs(300),
            stdout_path: dirs.root.join(format!("{stem}.stdout")),
            stderr_path: dirs.root.join(format!("{stem}.stderr")),
            rel_base: dirs.root.clone(),
            output_cap: 16 * 1024 * 1024,
            marker: format!("{}:{}:{stem}", std::process::id(), dirs.root.display()),
            // Sealed, as the scorecard driver runs a turn.
            seal: Some(
                gauntlet::sys::sandbox::View::new()
                    .write(&dirs.workspace)
                    .write(&dirs.home)
                    .write(&dirs.tmp)
                    .write(state_dir),
            ),
        })
        .await
        .map_err(|e| fail(format!("turn {n}: {e}")))?;
        let bodies: Vec<String> = proxy
            .request_bodies()
            .iter()
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .collect();
        let usage = proxy.shutdown().await;
        if !outcome.end.success() {
            let stderr =
                std::fs::read_to_string(dirs.root.join(&outcome.stderr.path)).unwrap_or_default();
            return Err(fail(format!(
                "turn {n} ({:?}): the agent did not end cleanly: {:?}; usage {usage:?}; stderr: {}",
                launch.invocation.args,
                outcome.end,
                stderr
                    .chars()
                    .rev()
                    .take(2000)
                    .collect::<String>()
                    .chars()
                    .rev()
                    .collect::<String>()
            )));
        }
        if !usage.iter().any(|u| u.status == 200) {
            return Err(fail(format!("turn {n}: no answered model call: {usage:?}")));
        }
        Ok(Sent { bodies })
    })
}

/// What each agent scores on the 15 probes under the scripted autonomous profile
/// (compressed idle), D1..D5 and the total: the reference agent's background mode earns
/// D3 and the rest of D2 and D4; the CLIs have none, so their idle windows pass with
/// nothing running. A mapping regression shows here, or as a script failure, never as
/// a quietly lower row.
const SCORECARD: [(&str, [u8; 5], u8); 4] = [
    ("reference", [4, 4, 4, 4, 4], 20),
    ("opencode", SCORECARD_CLI, SCORECARD_CLI_TOTAL),
    ("claude-code", SCORECARD_CLI, SCORECARD_CLI_TOTAL),
    ("codex", SCORECARD_CLI, SCORECARD_CLI_TOTAL),
];
const SCORECARD_CLI: [u8; 5] = [4, 2, 1, 3, 4];
const SCORECARD_CLI_TOTAL: u8 = 14;

/// The probes only a background mode can pass: an agent without one is left alone in
/// their idle windows.
const NEEDS_BACKGROUND: [&str; 5] = ["p2-1", "p3-1", "p3-2", "p3-3", "p4-3"];

/// The whole scorecard through `gauntlet run --filter scorecard::` (the command a user
/// runs), once per agent — the reference agent and the three CLIs, scripted autonomous
/// profile, the default compressed idle — then `gauntlet leaderboard` over the four
/// runs. Every probe must run; every turn must have its reply recorded and its script
/// carried out by the agent's tools (a failed tool is an error of the script, never a
/// low score); every record must rescore to itself; the mail and HTTP probes must have
/// their sink events; the leaderboard must give one row per agent with the agent's
/// version, every row marked a scripted illustration and unranked, the CLIs' noting
/// they have no background mode, with the scores of [`SCORECARD`].
fn scorecard() -> Result<(), Failed> {
    for c in CLIS {
        if !cli::installed(c.bin) {
            return Err(fail(format!(
                "{} is not installed; .ci/run installs the pinned CLIs with `npm ci` in workspace/",
                cli::npm_bin(c.bin).display()
            )));
        }
    }
    let root = gauntlet::binaries::repo_root();
    let gauntlet_bin = gauntlet::binaries::bin_dir().join("gauntlet");
    let out = tempfile::tempdir().map_err(|e| fail(format!("tempdir: {e}")))?;
    let mut run_dirs = Vec::new();
    for (agent, _, _) in SCORECARD {
        let out_dir = out.path().join(agent);
        let mut cmd = std::process::Command::new(&gauntlet_bin);
        // The caller's configuration stays out: this run is the defaults plus the agent.
        for (key, _) in std::env::vars() {
            if key.starts_with("GAUNTLET_")
                && !matches!(
                    key.as_str(),
                    "GAUNTLET_ROOT" | "GAUNTLET_BIN_DIR" | "GAUNTLET_CHROMIUM"
                )
            {
                cmd.env_remove(key);
            }
        }
        let run = cmd
            .args(["run", "--filter", "scorecard::", "--jobs", "2"])
            .current_dir(&root)
            .env("GAUNTLET_AGENT", agent)
            .env("GAUNTLET_OUT", &out_dir)
            .env("GAUNTLET_SCORECARD_PROFILE", "autonomous")
            .output()
            .map_err(|e| fail(format!("{}: {e}", gauntlet_bin.display())))?;
        let run_dir = std::fs::read_dir(&out_dir)
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.is_dir()))
            .ok_or_else(|| {
                fail(format!(
                    "{agent}: `gauntlet run` left no run directory (exit {:?}): {}",
                    run.status.code(),
                    String::from_utf8_lossy(&run.stderr)
                ))
            })?;
        check_scorecard_run(agent, &run_dir)?;
        run_dirs.push(run_dir);
    }

    let board = out.path().join("leaderboard");
    let lb = std::process::Command::new(&gauntlet_bin)
        .arg("leaderboard")
        .arg("--out")
        .arg(&board)
        .args(&run_dirs)
        .output()
        .map_err(|e| fail(format!("gauntlet leaderboard: {e}")))?;
    if !lb.status.success() {
        return Err(fail(format!(
            "gauntlet leaderboard: {}",
            String::from_utf8_lossy(&lb.stderr)
        )));
    }
    let json = std::fs::read(board.join("leaderboard.json"))
        .map_err(|e| fail(format!("leaderboard.json: {e}")))?;
    let rows: Vec<serde_json::Value> =
        serde_json::from_slice(&json).map_err(|e| fail(format!("leaderboard.json: {e}")))?;
    assert_eq!(rows.len(), 4, "one row per agent: {rows:#?}");
    let md = std::fs::read_to_string(board.join("leaderboard.md"))
        .map_err(|e| fail(format!("leaderboard.md: {e}")))?;
    for (agent, dims, total) in SCORECARD {
        let row = rows
            .iter()
            .find(|r| r["agent"].as_str().is_some_and(|a| a.starts_with(agent)))
            .ok_or_else(|| fail(format!("no leaderboard row for {agent}: {rows:#?}")))?;
        let version = row["version"].as_str().unwrap_or("");
        if let Some(c) = CLIS.iter().find(|c| (c.agent)().name() == agent) {
            let pinned = pinned_version(&root, c.package)?;
            assert!(
                version.contains(&pinned),
                "{agent}: version `{version}`, the lockfile pins {pinned}"
            );
        } else {
            assert!(!version.is_empty(), "{agent}: no version");
        }
        let got: Vec<u64> = ["memory", "goals", "continuous", "initiative", "world"]
            .iter()
            .map(|d| row["scores"][d].as_u64().unwrap_or(99))
            .collect();
        let want: Vec<u64> = dims.iter().map(|&d| u64::from(d)).collect();
        assert_eq!(got, want, "{agent}: D1..D5 (the row: {row:#})");
        assert_eq!(row["total"].as_f64(), Some(f64::from(total)), "{agent}");
        let unranked = row["unranked"].as_str().unwrap_or("");
        assert!(
            unranked.contains("scripted run: a harness illustration"),
            "{agent}: {unranked}"
        );
        let notes = row["notes"].to_string();
        assert_eq!(
            notes.contains("no background mode"),
            agent != "reference",
            "{agent}: {notes}"
        );
        let line = md
            .lines()
            .find(|l| l.contains(&format!("| {agent}")))
            .ok_or_else(|| fail(format!("{agent}: no row in leaderboard.md:\n{md}")))?;
        assert!(
            line.starts_with("| - |") && line.contains(version),
            "{line}"
        );
    }
    Ok(())
}

/// One agent's scorecard run: 15 records, each turn replied to and its script carried
/// out, sink events where the probe needs them, and every record rescoring to itself.
fn check_scorecard_run(agent: &str, run_dir: &Path) -> Result<(), Failed> {
    let mut probes = Vec::new();
    for entry in std::fs::read_dir(run_dir)
        .map_err(|e| fail(format!("{}: {e}", run_dir.display())))?
        .flatten()
    {
        let file = entry.path().join(gauntlet::record::RECORD_FILE);
        if !file.is_file() {
            continue;
        }
        let rec = match gauntlet::record::any::load_any(&file) {
            Ok(gauntlet::record::any::AnyRecord::Scorecard(rec)) => rec,
            Ok(_) => continue,
            Err(e) => return Err(fail(format!("{}: {e}", file.display()))),
        };
        let probe = rec.scorecard.probe.clone();
        let where_ = format!("{agent} {probe} ({})", file.display());
        assert_eq!(rec.header.config.agent, agent, "{where_}");
        assert!(
            rec.evidence.setup_error.is_none(),
            "{where_}: {:?}",
            rec.evidence.setup_error
        );
        for t in &rec.evidence.turns {
            assert!(
                t.reply.as_deref().is_some_and(|r| !r.trim().is_empty()),
                "{where_}: turn `{}` has no reply",
                t.label
            );
            assert!(
                t.problem.is_none() && t.script_failure.is_none(),
                "{where_}: turn `{}`: {:?} {:?}",
                t.label,
                t.problem,
                t.script_failure
            );
        }
        let kinds: Vec<String> = rec
            .evidence
            .events
            .iter()
            .map(|e| format!("{:?}", e.sink))
            .collect();
        match probe.as_str() {
            "p5-2" => assert!(
                kinds.iter().any(|k| k == "Http"),
                "{where_}: no HTTP stand-in event: {kinds:?}"
            ),
            "p5-3" => assert!(
                kinds.iter().any(|k| k == "Mail"),
                "{where_}: no SMTP event: {kinds:?}"
            ),
            _ => {}
        }
        let background = rec.evidence.background.as_deref().unwrap_or("");
        if agent != "reference" && NEEDS_BACKGROUND.contains(&probe.as_str()) {
            assert!(
                !rec.verdict.passed,
                "{where_}: passed with nothing running in its idle windows"
            );
            assert!(
                gauntlet::score::scorecard::had_no_background_mode(background),
                "{where_}: {background}"
            );
        } else {
            assert!(rec.verdict.passed, "{where_}: {}", rec.verdict.reason);
        }
        let row = gauntlet::record::rescore::rescore_file(&file);
        assert!(row.agrees(), "{where_}: rescore: {:?}", row.derived);
        probes.push(probe);
    }
    probes.sort();
    assert_eq!(probes.len(), 15, "{agent}: probes recorded: {probes:?}");
    Ok(())
}
