//! Multi-turn sessions and the background mode, end to end: the reference agent as a
//! real process, launched through its adapter, against the real scripted proxy (one
//! script per turn, as a conversation driver runs it), with the world sinks observing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gauntlet::agent::{Adapter, DaemonRun, LaunchContext, PromptRun, Reference, SessionTurn};
use gauntlet::evidence::{parse_transcript, Transcript};
use gauntlet::proxy::{Proxy, ProxyMode};
use gauntlet::spec::{Script, ScriptStep};
use gauntlet::sys::process::{self, ProcessSpec};
use gauntlet::trial::base_env;
use gauntlet::world::sinks::tracker::{InitialTask, Priority, TaskStatus};
use gauntlet::world::sinks::{workspace, SinkConfig, Sinks, TrackerStart, WorkspaceSnapshot};
use serde_json::json;

fn reference() -> Reference {
    Reference {
        program: crate::support::bin("gauntlet-agent"),
        stream: false,
    }
}

struct Dirs {
    _root: tempfile::TempDir,
    root: PathBuf,
    workspace: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = root.path().to_path_buf();
    let workspace = path.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap_or_else(|e| panic!("{e}"));
    Dirs {
        _root: root,
        root: path,
        workspace,
    }
}

fn script(steps: Vec<ScriptStep>) -> Script {
    Script {
        capability: "turn".into(),
        steps,
    }
}

fn tool(name: &str, arguments: serde_json::Value) -> ScriptStep {
    ScriptStep::Tool {
        name: name.into(),
        arguments,
    }
}

fn final_text(text: &str) -> ScriptStep {
    ScriptStep::Final { text: text.into() }
}

/// Run one launch to its end (or `deadline`) in its own process group, as the harness
/// does, with the sinks' variables; returns the transcript and the outcome.
async fn run(
    launch: gauntlet::agent::Launch,
    d: &Dirs,
    label: &str,
    proxy_url: &str,
    sinks_env: &BTreeMap<String, String>,
    deadline: Duration,
) -> (Transcript, process::ProcessOutcome) {
    let home = d.root.join(format!("home-{label}"));
    let tmp = d.root.join(format!("tmp-{label}"));
    for dir in [&home, &tmp] {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut env = base_env(&home, &tmp);
    env.insert("OPENAI_BASE_URL".into(), proxy_url.into());
    env.insert("OPENAI_API_KEY".into(), "gauntlet-proxy".into());
    env.insert("OPENAI_MODEL".into(), "scripted".into());
    env.extend(sinks_env.clone());
    env.extend(launch.env);
    let stdout = d.root.join(format!("{label}.stdout"));
    let outcome = process::run(ProcessSpec {
        program: launch.invocation.program,
        args: launch.invocation.args,
        cwd: d.workspace.clone(),
        env,
        deadline,
        stdout_path: stdout.clone(),
        stderr_path: d.root.join(format!("{label}.stderr")),
        rel_base: d.root.clone(),
        output_cap: 1 << 20,
        marker: format!("gauntlet-sessions-test-{label}-{}", std::process::id()),
        // Sealed as the scorecard driver seals a turn; the test's state directories,
        // HOME and TMPDIR all live under its root.
        seal: Some(gauntlet::sys::sandbox::View::new().write(&d.root)),
    })
    .await
    .unwrap_or_else(|e| panic!("{label}: {e}"));
    let bytes = std::fs::read(&stdout).unwrap_or_default();
    (parse_transcript(bytes.as_slice()), outcome)
}

/// One prompted turn through the adapter, with a fresh scripted proxy for its script.
#[allow(clippy::too_many_arguments)]
async fn turn(
    d: &Dirs,
    label: &str,
    state_dir: &Path,
    session: &str,
    resume: bool,
    prompt: &str,
    steps: Vec<ScriptStep>,
    sinks_env: &BTreeMap<String, String>,
) -> String {
    let proxy = Proxy::start(ProxyMode::Scripted {
        script: script(steps),
        model: "scripted".into(),
        latency: std::time::Duration::ZERO,
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let home = d.root.join(format!("home-{label}"));
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let run_spec = PromptRun {
        title: format!("sessions::{label}"),
        prompt: prompt.into(),
        workspace: d.workspace.clone(),
        session: Some(SessionTurn {
            id: session.into(),
            resume,
            state_dir: state_dir.to_path_buf(),
        }),
    };
    let base = proxy.base_url();
    let ctx = LaunchContext {
        home: &home,
        workspace: &d.workspace,
        proxy_url: &base,
        model: "scripted",
    };
    let launch = reference()
        .prompt_launch(&run_spec, &ctx)
        .unwrap_or_else(|e| panic!("{e}"));
    let (transcript, outcome) =
        run(launch, d, label, &base, sinks_env, Duration::from_secs(60)).await;
    proxy.shutdown().await;
    assert!(
        outcome.end.success(),
        "{label}: {:?}\n{}",
        outcome.end,
        std::fs::read_to_string(d.root.join(format!("{label}.stderr"))).unwrap_or_default()
    );
    transcript
        .final_message
        .unwrap_or_else(|| panic!("{label}: no final message"))
}

fn recall_steps() -> Vec<ScriptStep> {
    vec![
        tool("recall", json!({"query": "favorite color"})),
        ScriptStep::SayToolResult {
            prefix: "From memory: ".into(),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_survives_a_new_session_but_not_a_fresh_agent_and_expiry_applies() {
    let d = dirs();
    let state = d.root.join("state-a");
    let none = BTreeMap::new();
    // Session 1, turn 1: the model stores the fact with the agent's memory tool.
    let said = turn(
        &d,
        "s1t1",
        &state,
        "s1",
        false,
        "My favorite color is teal. Remember it.",
        vec![
            tool("remember", json!({"key": "favorite_color", "fact": "teal"})),
            tool(
                "remember",
                json!({"key": "codename", "fact": "BLUEFIN", "ttl_seconds": 0}),
            ),
            final_text("Noted."),
        ],
        &none,
    )
    .await;
    assert_eq!(said, "Noted.");
    // Turn 2 resumes: the stored conversation already holds two tool results, yet the
    // script starts at its first step (tool results are counted per turn).
    let said = turn(
        &d,
        "s1t2",
        &state,
        "s1",
        true,
        "What's my favorite color?",
        recall_steps(),
        &none,
    )
    .await;
    assert_eq!(said, "From memory: favorite_color: teal");
    let stored: serde_json::Value = serde_json::from_slice(
        &std::fs::read(state.join("sessions/s1.json")).unwrap_or_else(|e| panic!("{e}")),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let users = stored["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "user").count());
    assert_eq!(users, Some(2), "both turns are in one stored conversation");

    // A new session of the same agent (state kept): the fact is recalled, the
    // zero-ttl fact has expired.
    let said = turn(
        &d,
        "s2",
        &state,
        "s2",
        false,
        "What's my favorite color?",
        recall_steps(),
        &none,
    )
    .await;
    assert_eq!(said, "From memory: favorite_color: teal");
    let said = turn(
        &d,
        "s2t2",
        &state,
        "s2",
        true,
        "Any open projects?",
        vec![
            tool("recall", json!({})),
            ScriptStep::SayToolResult {
                prefix: String::new(),
            },
        ],
        &none,
    )
    .await;
    assert!(
        !said.contains("BLUEFIN"),
        "an expired fact was recalled: {said}"
    );

    // A fresh agent (empty state dir) has nothing to recall.
    let said = turn(
        &d,
        "fresh",
        &d.root.join("state-b"),
        "s1",
        false,
        "What's my favorite color?",
        recall_steps(),
        &none,
    )
    .await;
    assert_eq!(said, "From memory: no memories match");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_misuse_is_a_clear_error_naming_the_session() {
    let d = dirs();
    let state = d.root.join("state");
    let proxy = Proxy::start(ProxyMode::Scripted {
        script: script(vec![final_text("hi")]),
        model: "scripted".into(),
        latency: std::time::Duration::ZERO,
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let base = proxy.base_url();
    let home = d.root.join("home");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let ctx = LaunchContext {
        home: &home,
        workspace: &d.workspace,
        proxy_url: &base,
        model: "scripted",
    };
    let run_spec = PromptRun {
        title: "t".into(),
        prompt: "hello".into(),
        workspace: d.workspace.clone(),
        session: Some(SessionTurn {
            id: "never-started".into(),
            resume: true,
            state_dir: state.clone(),
        }),
    };
    let launch = reference()
        .prompt_launch(&run_spec, &ctx)
        .unwrap_or_else(|e| panic!("{e}"));
    let (transcript, outcome) = run(
        launch,
        &d,
        "misuse",
        &base,
        &BTreeMap::new(),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(outcome.end.exit_code, Some(1));
    let error = transcript.events.iter().find_map(|e| match e {
        gauntlet::evidence::Event::Error { message } => Some(message.clone()),
        _ => None,
    });
    assert!(
        error
            .as_deref()
            .is_some_and(|m| m.contains("never-started") && m.contains("--resume")),
        "{error:?}"
    );
    proxy.shutdown().await;
}

fn daemon_config(d: &Dirs, text: &str) -> PathBuf {
    let path = d.root.join("daemon.toml");
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

async fn daemon(
    d: &Dirs,
    label: &str,
    state: &Path,
    config: &Path,
    extra: &[&str],
    sinks: &BTreeMap<String, String>,
    deadline: Duration,
) -> (Transcript, process::ProcessOutcome) {
    daemon_with_model(
        d,
        label,
        state,
        config,
        extra,
        sinks,
        deadline,
        "http://127.0.0.1:9/v1",
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn daemon_with_model(
    d: &Dirs,
    label: &str,
    state: &Path,
    config: &Path,
    extra: &[&str],
    sinks: &BTreeMap<String, String>,
    deadline: Duration,
    model_url: &str,
) -> (Transcript, process::ProcessOutcome) {
    let home = d.root.join(format!("home-{label}"));
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let ctx = LaunchContext {
        home: &home,
        workspace: &d.workspace,
        proxy_url: model_url,
        model: "scripted",
    };
    let mut launch = reference()
        .daemon_launch(
            &DaemonRun {
                title: label.into(),
                workspace: d.workspace.clone(),
                state_dir: state.to_path_buf(),
                config: Some(config.to_path_buf()),
            },
            &ctx,
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("the reference agent has a background mode"));
    launch
        .invocation
        .args
        .extend(extra.iter().map(|s| s.to_string()));
    run(launch, d, label, model_url, sinks, deadline).await
}

/// The autonomous config, run for a bounded number of ticks (the same launch the
/// harness uses, plus `--max-ticks`), twice around a harness change of the tracker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_autonomous_daemon_acts_on_the_world_while_idle_and_notices_a_change() {
    let d = dirs();
    let state = d.root.join("state");
    let sinks = Sinks::start(SinkConfig {
        tracker: TrackerStart {
            threads: vec![],
            tasks: vec![InitialTask {
                id: "report".into(),
                title: "quarterly report".into(),
                status: TaskStatus::InProgress,
                priority: Priority::High,
            }],
        },
        ..SinkConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let env = sinks.agent_env();
    // A prior conversation the follow-up refers to.
    turn(
        &d,
        "talk",
        &state,
        "s1",
        false,
        "Please draft the quarterly report for ACME.",
        vec![final_text("Will do.")],
        &env,
    )
    .await;
    let before = WorkspaceSnapshot::take(&d.workspace).unwrap_or_else(|e| panic!("{e}"));
    let config = daemon_config(
        &d,
        &std::fs::read_to_string(
            gauntlet::binaries::repo_root().join("agents/reference/daemon-autonomous.toml"),
        )
        .unwrap_or_else(|e| panic!("{e}"))
        .replace("tick_ms = 1000", "tick_ms = 10"),
    );

    let (t, outcome) = daemon(
        &d,
        "idle1",
        &state,
        &config,
        &["--max-ticks", "3"],
        &env,
        Duration::from_secs(60),
    )
    .await;
    assert!(outcome.end.success(), "{:?} {:?}", outcome.end, t.events);
    let seen = sinks.observe();
    assert!(
        seen.tracker
            .threads_by("agent")
            .iter()
            .any(|th| th.title.contains("quarterly report for ACME")),
        "{:?}",
        seen.tracker.threads
    );
    assert_eq!(seen.mail.len(), 1, "one follow-up mail");
    assert_eq!(seen.mail[0].rcpt_to, ["user@example.com"]);
    assert!(seen.mail[0]
        .subject
        .as_deref()
        .is_some_and(|s| s.contains("quarterly report")));

    // While idle, the harness flips the task; the next window's daemon notices.
    let mark = gauntlet::world::sinks::now_ms();
    sinks
        .tracker
        .set_task_status("report", TaskStatus::Blocked)
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, outcome) = daemon(
        &d,
        "idle2",
        &state,
        &config,
        &["--max-ticks", "2"],
        &env,
        Duration::from_secs(60),
    )
    .await;
    assert!(outcome.end.success());
    let seen = sinks.shutdown().await;
    let after_change = seen.tracker.changes_by("agent", mark);
    assert!(
        after_change
            .iter()
            .any(|c| c.kind == gauntlet::world::sinks::tracker::ChangeKind::ThreadCreated),
        "{after_change:?}"
    );
    assert!(seen
        .tracker
        .threads
        .iter()
        .any(|th| th.title == "Task report is blocked" && th.created_by == "agent"));
    assert_eq!(
        seen.mail.len(),
        1,
        "the follow-up is sent once, not per window"
    );

    let after =
        WorkspaceSnapshot::take_against(&d.workspace, &before).unwrap_or_else(|e| panic!("{e}"));
    let diff = workspace::diff(&before, &after);
    assert!(
        diff.written.contains(&"selfcheck.log".to_string()),
        "{diff:?}"
    );
    assert!(diff.written.contains(&"INDEX.md".to_string()), "{diff:?}");
    assert!(
        diff.written
            .contains(&"goals/unblock-report.md".to_string()),
        "acted on the self-derived goal: {diff:?}"
    );
    let checks = std::fs::read_to_string(d.workspace.join("selfcheck.log")).unwrap_or_default();
    assert_eq!(
        checks.lines().count(),
        5,
        "one self-check per tick: {checks}"
    );
}

/// A `[model]` tick is a background turn of the agent itself: the (scripted) model
/// decides, the agent's tools carry it out, the sinks see the effect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_tick_is_a_real_background_turn_of_the_agent() {
    let d = dirs();
    let sinks = Sinks::start(SinkConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let proxy = Proxy::start(ProxyMode::Scripted {
        script: script(vec![
            ScriptStep::Shell {
                command: r#"curl -sS -X POST -d '{"title":"Weekly digest","body":"all quiet"}' "$GAUNTLET_TRACKER_URL/threads""#.into(),
                expect: None,
            },
            tool("goal_set", json!({"id": "digest", "text": "send the weekly digest", "priority": 2})),
            final_text("background check done"),
        ]),
        model: "scripted".into(),
        latency: std::time::Duration::ZERO,
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let config = daemon_config(
        &d,
        "tick_ms = 10\n[model]\nevery_ticks = 1\nprompt = \"Background check, tick {tick}.\"\nmax_turns = 5\n",
    );
    let state = d.root.join("state");
    let (t, outcome) = daemon_with_model(
        &d,
        "model",
        &state,
        &config,
        &["--max-ticks", "2"],
        &sinks.agent_env(),
        Duration::from_secs(60),
        &proxy.base_url(),
    )
    .await;
    assert!(outcome.end.success(), "{:?} {:?}", outcome.end, t.events);
    let usage = proxy.shutdown().await;
    assert_eq!(usage.len(), 6, "three model calls per tick, two ticks");
    let seen = sinks.shutdown().await;
    let threads = seen.tracker.threads_by("agent");
    assert_eq!(threads.len(), 2, "{:?}", seen.tracker.threads);
    assert!(threads.iter().all(|t| t.title == "Weekly digest"));
    let goals = std::fs::read_to_string(state.join("goals.json")).unwrap_or_default();
    assert!(goals.contains("send the weekly digest"), "{goals}");
}

/// A daemon without a tick bound runs until the harness kills its group at the
/// window's end; the stub config leaves no trace in the world.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_harness_kills_a_running_daemon_and_a_stub_leaves_no_trace() {
    let d = dirs();
    let sinks = Sinks::start(SinkConfig::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let before = WorkspaceSnapshot::take(&d.workspace).unwrap_or_else(|e| panic!("{e}"));
    let config = gauntlet::binaries::repo_root().join("agents/reference/daemon-stub.toml");
    let (_, outcome) = daemon(
        &d,
        "stub",
        &d.root.join("state"),
        &config,
        &[],
        &sinks.agent_env(),
        Duration::from_secs(2),
    )
    .await;
    assert!(outcome.end.timed_out, "{:?}", outcome.end);
    assert!(process::marker_holders(&format!(
        "gauntlet-sessions-test-stub-{}",
        std::process::id()
    ))
    .is_empty());
    let seen = sinks.shutdown().await;
    assert!(seen.http.is_empty() && seen.mail.is_empty() && seen.tracker.changes.is_empty());
    let after =
        WorkspaceSnapshot::take_against(&d.workspace, &before).unwrap_or_else(|e| panic!("{e}"));
    assert!(workspace::diff(&before, &after).is_unchanged());
}

#[test]
fn agents_without_a_background_mode_say_so() {
    let d = dirs();
    let ctx = LaunchContext {
        home: &d.root,
        workspace: &d.workspace,
        proxy_url: "http://127.0.0.1:9/v1",
        model: "m",
    };
    let run = DaemonRun {
        title: "t".into(),
        workspace: d.workspace.clone(),
        state_dir: d.root.join("s"),
        config: None,
    };
    for adapter in [
        Box::new(reference()) as Box<dyn Adapter>,
        Box::new(gauntlet::agent::opencode::OpenCode::new("opencode".into())),
        Box::new(gauntlet::agent::Command {
            argv: vec!["true".into()],
            daemon_argv: vec![],
        }),
    ] {
        assert!(
            adapter
                .daemon_launch(&run, &ctx)
                .unwrap_or_else(|e| panic!("{e}"))
                .is_none(),
            "{}",
            adapter.name()
        );
    }
}

/// A sealed turn plants symlinks where the harness writes next turn (`.agent/prompt.md`
/// in the workspace, the session prompt in HOME, pointing at a file outside, as another
/// trial's record would be): preparing the next turn is a clear error naming the file,
/// and the outside file is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_symlink_is_refused_not_written_through_on_the_next_turn() {
    let d = dirs();
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let victim = outside.path().join("record.json");
    std::fs::write(&victim, b"{\"verdict\":\"pass\"}").unwrap_or_else(|e| panic!("{e}"));
    let state = d.root.join("state");
    let plant = format!(
        "mkdir -p .agent && ln -s {v} .agent/prompt.md && ln -sf {v} \"$HOME/prompt-s1.md\" && echo planted",
        v = victim.display()
    );
    let reply = turn(
        &d,
        "plant",
        &state,
        "s1",
        false,
        "hello",
        vec![
            tool("shell", json!({ "command": plant })),
            final_text("done"),
        ],
        &BTreeMap::new(),
    )
    .await;
    assert_eq!(reply, "done");
    assert!(
        std::fs::symlink_metadata(d.workspace.join(".agent/prompt.md"))
            .is_ok_and(|m| m.file_type().is_symlink())
    );

    let home = d.root.join("home-plant");
    let ctx = LaunchContext {
        home: &home,
        workspace: &d.workspace,
        proxy_url: "http://127.0.0.1:9/v1",
        model: "scripted",
    };
    // One-shot prompt file in the workspace.
    let one_shot = PromptRun {
        title: "t".into(),
        prompt: "overwrite me".into(),
        workspace: d.workspace.clone(),
        session: None,
    };
    let e = reference()
        .prompt_launch(&one_shot, &ctx)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains(".agent/prompt.md") && e.contains("symlink"),
        "want a refusal naming the file: {e:?}"
    );
    // The session prompt in the persistent HOME.
    let next = PromptRun {
        session: Some(SessionTurn {
            id: "s1".into(),
            resume: true,
            state_dir: state.clone(),
        }),
        ..one_shot
    };
    let e = reference()
        .prompt_launch(&next, &ctx)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("prompt-s1.md") && e.contains("symlink"),
        "want a refusal naming the file: {e:?}"
    );
    assert_eq!(
        std::fs::read(&victim).ok().as_deref(),
        Some(&b"{\"verdict\":\"pass\"}"[..]),
        "the outside file was written through a planted link"
    );
}
